"""A user's deployment run as a worker runs it (`--workers`, DESIGN §12): `evaluate_user(user_id,
run_dir)` in a process that does not hold the parent flow, which is how a worker's flow-run process
calls it. It rebuilds the user's context from run.json and this process's environment, and writes
only under users/<uid>/. Here the parent's files are those of the shared fault-free run."""

import asyncio
import shutil
from pathlib import Path

import pytest

from e2e.runs import API_KEY
from flows.mobilemem import evaluate_user
from lifecycle.dashboard import RunIdentity
from lifecycle.deployed_user import UserRunDir
from lifecycle.limits import create_run_limits, delete_run_limits
from mobilemem.records import ErrorFile, ErrorLine, HostFile, MetricsFile, RunFile, UserProgressFile
from mobilemem.rundir import RunDir, read_lines, read_record, write_record

pytestmark = pytest.mark.slow


def _parents_files(run: RunDir, target: Path, **changes) -> RunDir:
    """A run directory holding only what the parent writes before it starts users (run.json, with
    `changes`, and judge-settings.json)."""
    copy = RunDir(target / "run")
    copy.root.mkdir()
    write_record(copy.run, read_record(run.run, RunFile).model_copy(update=changes))
    shutil.copy(run.judge_settings, copy.judge_settings)
    return copy


def _written(run: RunDir) -> set[str]:
    return {str(p.relative_to(run.root)) for p in run.root.rglob("*") if p.is_file()}


@pytest.mark.parametrize(("change", "reason"), [
    ("packages", "worker mismatch: package_versions.reme-ai (0.4.2.0, the parent has 0.0.1)"),
    ("code", "worker mismatch: code_sha256 (this worker's code differs from the parent's)"),
    ("plug-in version", "worker mismatch: candidate.plugin_package (None, the parent has mobilemem-probe==9.9)"),
    ("plug-in missing", "worker mismatch: candidate (candidate 'not-installed-here' is not installed (installed: "),
])
def test_a_worker_that_differs_from_the_parent_makes_each_question_of_its_user_a_mismatch(change, reason,
                                                                                         baseline_run, tmp_path):
    _, run, _, _ = baseline_run
    plan = read_record(run.run, RunFile)
    candidate = plan.config.candidate
    changes = {"packages": {"package_versions": {**plan.package_versions, "reme-ai": "0.0.1"}},
               "code": {"code_sha256": "0" * 64},
               "plug-in version": {"candidate": plan.candidate.model_copy(update={"plugin_package": "mobilemem-probe==9.9"})},
               "plug-in missing": {"config": plan.config.model_copy(update={"candidate": candidate.model_copy(
                   update={"kind": "not-installed-here"})})}}[change]
    copy = _parents_files(run, tmp_path, **changes)
    counts = asyncio.run(evaluate_user(1, copy.root))
    gaps = [read_record(p, ErrorFile) for p in sorted(copy.user(1).root.glob("questions/*/error.json"))]
    assert len(gaps) == 3 and counts == {"answered": 0, "judged": 0, "gaps": 3}
    assert all(g.reason.startswith(reason) for g in gaps) and {g.stage for g in gaps} == {"history"}
    [line] = read_lines(UserRunDir(copy.root, 1).errors, ErrorLine)
    assert line.stage == "run" and reason in line.failure.message
    progress = read_record(copy.user(1).progress, UserProgressFile)
    assert (progress.gaps, progress.finished) == (3, True)
    assert all(name.startswith("users/1/") for name in _written(copy) - {"run.json", "judge-settings.json"})


def test_a_matching_worker_evaluates_its_user_as_the_parent_did(baseline_run, simulator, tmp_path, monkeypatch):
    _, run, _, _ = baseline_run
    copy = _parents_files(run, tmp_path)
    manifest = read_record(copy.run, RunFile)
    monkeypatch.setenv("LLM_API_KEY", API_KEY)
    monkeypatch.setenv("LLM_BASE_URL", simulator.base_url)

    async def as_a_worker():
        limits = await create_run_limits(RunIdentity.of(manifest), manifest.config)  # the parent's part
        try:
            return await evaluate_user(0, copy.root)
        finally:
            await delete_run_limits(limits)

    counts = asyncio.run(as_a_worker())
    assert counts == {"answered": 3, "judged": 3, "gaps": 0}
    for question in (q for q in manifest.questions if q.user_id == 0):
        ours, parents = copy.user(0).question(question.question_id), run.user(0).question(question.question_id)
        assert read_record(ours.metrics, MetricsFile) == read_record(parents.metrics, MetricsFile)
    host = read_record(copy.user(0).host, HostFile)
    assert host.user_id == 0 and host.package_versions == manifest.package_versions
    progress = read_record(copy.user(0).progress, UserProgressFile)
    assert (progress.ingested, progress.index, progress.judged, progress.finished) == (4, "built", 3, True)
    assert read_lines(UserRunDir(copy.root, 0).errors, ErrorLine) == []
    outside = _written(copy) - {"run.json", "judge-settings.json"}
    assert outside and all(name.startswith("users/0/") for name in outside)
    assert API_KEY not in "".join(p.read_text(errors="replace") for p in copy.root.rglob("*") if p.is_file())
