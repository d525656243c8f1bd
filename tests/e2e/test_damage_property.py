"""Property (issue 22): any single-file corruption of an earlier run E (truncated at a random offset,
or one byte flipped) never makes a command that reads E raise, prints a traceback, or changes E;
and what the corruption reached is never counted as if it were intact."""

import os
import re
import shutil
import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

from damage import copy_run, snapshot
from e2e.runs import summary
from cli import main
from mobilemem.records import AnswerResponseFile, JobFile, JudgmentFile, MemoryUsageFile, MetricsFile, ReuseFile
from mobilemem.rundir import RunDir, read_record

pytestmark = pytest.mark.slow
EXAMPLES = settings(max_examples=int(os.environ.get("MOBILEMEM_DAMAGE_EXAMPLES", "20")), deadline=None,
                    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
COMMAND_EXITS = {"summarize": {0, 1}, "report": {0, 1}, "compare": {0, 1}}
SCORED_RECORDS = {"answer-response.json": AnswerResponseFile, "judgment.json": JudgmentFile,
                  "metrics.json": MetricsFile}


def corruptions():
    """(a record of the runner or any file, index of the file, truncate or flip, a position as a
    fraction of the file): the workspace holds most files, so records are drawn half of the time."""
    return st.tuples(st.booleans(), st.integers(min_value=0), st.sampled_from(["truncate", "flip"]),
                     st.floats(min_value=0, max_value=1, exclude_max=True))


def corrupt(root: Path, choice: tuple[bool, int, str, float], within: str = "") -> Path:
    """Corrupt one non-empty file of the run, of those whose run-relative path starts with `within`
    (and those at the top) when given."""
    records_only, index, how, where = choice
    files = sorted(p for p in root.rglob("*") if p.is_file() and not p.is_symlink() and p.stat().st_size
                   and not (records_only and "workspace" in p.relative_to(root).parts)
                   and (p.parent == root or p.relative_to(root).as_posix().startswith(within)))
    path = files[index % len(files)]
    data = bytearray(path.read_bytes())
    offset = int(where * len(data))
    if how == "truncate":
        del data[offset:]
    else:
        data[offset] ^= 0xFF
    path.write_bytes(bytes(data))
    return path


@pytest.fixture(scope="module")
def pristine(baseline_run, tmp_path_factory) -> RunDir:
    """A copy of the CLI's fault-free sample run, with its summary and report as the CLI wrote them."""
    code, run, _, _ = baseline_run
    assert code == 0
    return RunDir(copy_run(run.root, tmp_path_factory.mktemp("pristine") / "E"))


@EXAMPLES
@given(choice=corruptions())
def test_summarize_report_and_compare_survive_any_single_file_corruption(pristine, choice, capsys):
    with tempfile.TemporaryDirectory() as scratch:
        earlier = RunDir(copy_run(pristine.root, Path(scratch) / "E"))
        damaged = corrupt(earlier.root, choice)
        name = damaged.relative_to(earlier.root).as_posix()
        for command in ("summarize", "report"):
            code = main([command, str(earlier.root)])
            err = capsys.readouterr().err
            assert code in COMMAND_EXITS[command], (name, command, err)
            assert all(line.startswith("mobilemem: ") for line in err.splitlines()), (name, command, err)
        before = snapshot(earlier.root)  # summarize and report write into their run; compare does not
        code = main(["compare", str(pristine.root), str(earlier.root), "--out", scratch])
        err = capsys.readouterr().err
        assert snapshot(earlier.root) == before
        assert code in COMMAND_EXITS["compare"] and all(line.startswith("mobilemem: ") for line in err.splitlines())
        if name == "run.json" and code == 1:
            return
        record = SCORED_RECORDS.get(damaged.name)
        if record is not None and "/questions/" in name and not _still_valid(damaged, record):
            s = summary(earlier)  # summarize wrote it: the damaged question is named and not scored
            assert any(line.startswith(name + ": ") for line in s.damaged), (name, s.damaged)
            assert s.scored == summary(pristine).scored - 1
        shutil.rmtree(earlier.root)


def _still_valid(path: Path, model) -> bool:
    """A truncation of the final newline, say, leaves a record intact."""
    try:
        model.model_validate_json(path.read_bytes())
    except ValueError:
        return False
    return True


# each example is three runs: no shrinking (a failure prints its corruption, which is enough to replay it)
REUSE_EXAMPLES = settings(EXAMPLES, max_examples=int(os.environ.get("MOBILEMEM_REUSE_DAMAGE_EXAMPLES", "4")),
                          phases=[Phase.explicit, Phase.reuse, Phase.generate])


def _quiet(err: str) -> bool:
    """Only the runner's own one-line messages (a refusal, a skipped file) and its progress lines."""
    return all(re.match(r"mobilemem: |\d\d:\d\d:\d\d user \d+: ", line) for line in err.splitlines() if line.strip())


def _not_reused(pristine: RunDir, name: str, damaged: Path, reused: ReuseFile | None) -> None:
    """What the corruption reached (`name`, run-relative) was built, answered or judged again, not
    copied. An answer agent's state written after the memory completed is no part of the memory."""
    manifest = read_record(pristine.user(0).memory_usage, MemoryUsageFile).manifest or []
    in_memory = name in {"users/0/" + entry.path for entry in manifest}
    if in_memory or name == "users/0/memory_usage.json" and not _still_valid(damaged, MemoryUsageFile):
        assert reused is None or reused.memory is None, (name, reused)
    if "/questions/" in name:
        question = name.split("/questions/")[1].split("/")[0]
        records = {"answer-response.json": AnswerResponseFile, "job.json": JobFile}
        if damaged.name in records and not _still_valid(damaged, records[damaged.name]):
            assert reused is None or question not in reused.answers, (name, reused)
        if damaged.name in ("judgment.json", "metrics.json") and not _still_valid(damaged,
                                                                                SCORED_RECORDS[damaged.name]):
            assert reused is None or question not in reused.judgments, (name, reused)


@REUSE_EXAMPLES
@given(choice=corruptions())
def test_plan_reuse_and_rejudge_survive_any_single_file_corruption(pristine, sample_root, simulator, choice,
                                                                     monkeypatch, capsys):
    """User 0's files (and the run's own) only: the new runs evaluate user 0, so what it reaches matters."""
    monkeypatch.setenv("LLM_API_KEY", "sk-damage-property")
    monkeypatch.setenv("LLM_BASE_URL", simulator.base_url)
    with tempfile.TemporaryDirectory() as scratch:
        earlier = RunDir(copy_run(pristine.root, Path(scratch) / "E"))
        damaged = corrupt(earlier.root, choice, within="users/0/")
        before = snapshot(earlier.root)
        code = main(["plan", "--dataset", str(sample_root), "--users", "0", "--reuse", str(earlier.root)])
        assert code in (0, 1) and _quiet(capsys.readouterr().err)
        simulator.reset()
        code = main(["--dataset", str(sample_root), "--output", f"{scratch}/reuse", "--users", "0",
                     "--reuse", str(earlier.root)])
        err = capsys.readouterr().err
        assert code in (0, 1) and _quiet(err), err
        if code == 0:
            new = RunDir.for_output(Path(scratch) / "reuse", "qwen3.8-max")
            assert summary(new).scored == summary(new).expected == 3
            reused = read_record(new.user(0).reuse, ReuseFile) if new.user(0).reuse.is_file() else None
            _not_reused(pristine, damaged.relative_to(earlier.root).as_posix(), damaged, reused)
        simulator.reset()
        code = main(["rejudge", str(earlier.root), "--output", f"{scratch}/rejudge"])
        err = capsys.readouterr().err
        assert code in (0, 1, 4) and _quiet(err), err
        assert snapshot(earlier.root) == before
        simulator.reset()
