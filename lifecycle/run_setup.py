"""Starting and closing a run: preflight, the manifest files, the models (the run log is
`lifecycle.run_log`; a run that did not end normally is closed by `lifecycle.run_end`).

`preflight` refuses to start (ConfigError / DatasetError) before anything is spent or written.
`open_run` creates the run directory, writes run.json and judge-settings.json, builds the two
models and registers the run's context; `close_run` closes them, recording cleanup errors, and
marks run.json with the final state.
"""

from __future__ import annotations

import asyncio
import gc
import logging
import os
import socket
import subprocess
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from importlib import metadata
from pathlib import Path
from typing import Any

from prefect.runtime import flow_run

import mobilemem_judge
from mobilemem.candidate import open_candidate, remembers
from mobilemem.config import DEFAULT_KIND, Config, config_files, load_config
from mobilemem.dataset import DATASET_REVISION, Dataset, load_dataset
from mobilemem.dataset_identity import DatasetIdentity, first_difference
from mobilemem import fingerprints
from mobilemem.disk import DiskGuard
from mobilemem.errors import ConfigError, MobilememError, error_record
from mobilemem.models import Endpoint, build_chat_model, close_chat_model
from mobilemem.prompts import frozen_hashes
from mobilemem.records import CandidateProvenance, PlannedQuestion, RunFile, RunState
from mobilemem.reme import PLUGIN_NAME
from mobilemem.reme import app as reme_app
from mobilemem.reuse import EarlierRun
from mobilemem.rundir import RunDir, append_error, read_record, write_record
from mobilemem.run_reader import DamagedFile, NotARunDirectory, RunReader
from lifecycle.context import RunContext, UserContext, register, release, user_context
from lifecycle import run_log
from lifecycle.dashboard import Dashboard, RunIdentity, UserProgress

PACKAGES = ("mobilemem-bench", "mobilemem", "mobilemem-judge", "reme-ai", "agentscope", "prefect", "openai", "httpx",
            "pillow", "pydantic", "numpy")
INJECT_CLEANUP_ERROR = "MOBILEMEM_INJECT_CLEANUP_ERROR"
log = logging.getLogger(__name__)
HEARTBEAT_S = 30.0


@dataclass(frozen=True)
class Plan:
    config: Config
    dataset: Dataset
    run: RunDir
    simulate: bool
    candidate: Endpoint | None  # None when simulated: the simulator's address is known only later
    judge: Endpoint | None
    reuse: list[EarlierRun]
    rejudge: bool = False  # reuse every memory and answer, judge again, ask the candidate nothing


def _earlier_runs(paths: list[Path], output: Path, run: RunDir, label: str) -> list[EarlierRun]:
    """Each `--reuse` run opened (run.json read and validated), or a one-line refusal: no run
    directory, a damaged run.json, or an --output (or its run directory) inside or equal to it:
    an earlier run is never written to."""
    earlier = []
    for path in paths:
        source = EarlierRun.open(Path(path), label)
        home = source.run.root.resolve()
        for target in (Path(output), run.root):
            resolved = target.resolve()
            if resolved == home or home in resolved.parents:
                raise ConfigError(f"{label} {path}: --output {output} would write inside that run ({resolved}): "
                                  f"an earlier run is never changed, choose an --output outside it")
        earlier.append(source)
    return earlier


def _rejudged_plan(earlier: Path) -> RunFile:
    try:
        return RunReader.open(earlier).plan
    except (NotARunDirectory, DamagedFile) as exc:
        raise ConfigError(f"rejudge {earlier}: {exc}") from None


def _refuse_another_dataset(earlier: Path, plan: RunFile, dataset: Dataset) -> None:
    """A rejudge compares labels: on another dataset (a gold answer or one image edited, say) a flip
    would be the data's, not the judge's."""
    difference = first_difference(DatasetIdentity.of_run(plan, str(earlier)), dataset.identity(), users=plan.users)
    if difference is not None:
        raise ConfigError(f"rejudge {earlier}: {difference}")


def run_name() -> str:
    """`<model>-<UTC start, YYYYmmdd-HHMM>`, e.g. `qwen3.8-max-20261201-0713`."""
    parameters = flow_run.parameters
    model = parameters.get("model")
    if not model:
        try:
            model = load_config(parameters.get("config")).model
        except ConfigError:
            model = "mobilemem"
    return f"{model}-{datetime.now(UTC):%Y%m%d-%H%M}"


def overrides(model: str | None, user_concurrency: int | None, query_concurrency: int | None,
              judge_model: str | None, candidate: str | None = None) -> dict:
    return {"model": model, "user_concurrency": user_concurrency, "query_concurrency": query_concurrency,
            "judge": {"model": judge_model} if judge_model else None,
            "candidate": {"kind": candidate} if candidate else None}


def preflight(dataset: Path, output: Path, overrides: Mapping[str, Any], config_file: Path | None,
              users: list[int] | None, limit_questions: int | None, simulate: bool,
              reuse: list[Path] | None = None, rejudge: Path | None = None) -> Plan:
    """Everything that can refuse the run, checked before any model request or file write. For a
    `rejudge` run, the earlier run's effective configuration is the base, and it is the one reused."""
    earlier_plan = _rejudged_plan(Path(rejudge)) if rejudge is not None else None
    if rejudge is not None:
        reuse = [Path(rejudge)]
    config = load_config(config_file, overrides, base=earlier_plan.config if earlier_plan else None)
    candidate = judge = None
    if not simulate:
        candidate, judge = Endpoint.from_env("candidate", config), Endpoint.from_env("judge", config)
    mobilemem_judge.judge_settings(config.judge, judge or Endpoint.simulated("judge", config, "http://x"))
    run = RunDir.for_output(output, config.model, config.candidate.kind)
    if run.root.exists() and not run.claim_file.is_file():
        raise ConfigError(f"{run.root} already exists: choose another --output or remove it")
    earlier = _earlier_runs(reuse or [], output, run, "rejudge" if rejudge is not None else "--reuse")
    loaded = load_dataset(dataset, users=users, limit_questions=limit_questions,
                          max_session_images=config.candidate.max_images)
    if earlier_plan is not None:
        _refuse_another_dataset(rejudge, earlier_plan, loaded)
    run.claim()  # last: a refused start leaves nothing behind
    return Plan(config, loaded, run, simulate, candidate, judge, earlier, rejudge is not None)


def _git() -> tuple[str | None, bool | None]:
    root = Path(__file__).resolve().parents[1]
    try:
        commit = subprocess.run(["git", "rev-parse", "HEAD"], cwd=root, capture_output=True, text=True,
                                timeout=10, check=True).stdout.strip()
        dirty = subprocess.run(["git", "status", "--porcelain"], cwd=root, capture_output=True, text=True,
                               timeout=10, check=True).stdout.strip() != ""
        return commit or None, dirty
    except (OSError, subprocess.SubprocessError):
        return None, None


def _versions() -> dict[str, str]:
    versions = {}
    for name in PACKAGES:
        try:
            versions[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            versions[name] = "not installed"
    return versions


def candidate_provenance(config: Config) -> CandidateProvenance:
    """What produced the answers: ReMe through the plugin, or a baseline (no ReMe preset or plugin)."""
    versions, kind = _versions(), config.candidate.kind
    reme = kind == DEFAULT_KIND
    return CandidateProvenance(kind=kind, reme_version=versions["reme-ai"], agentscope_version=versions["agentscope"],
                               preset=reme_app.PRESET if reme else "none", plugin=PLUGIN_NAME if reme else "none",
                               plugin_version=versions["mobilemem"],
                               inject_runtime_state=config.candidate.inject_runtime_state and reme)


def _manifest(plan: Plan, args: dict[str, Any]) -> RunFile:
    commit, dirty = _git()
    return RunFile(
        args={k: str(v) if isinstance(v, Path) else v for k, v in args.items()},
        config=plan.config.model_dump(mode="json"), config_files=config_files(args.get("config")),
        package_versions=_versions(), git_commit=commit,
        git_dirty=dirty, dataset_path=str(plan.dataset.root.resolve()), dataset_revision=DATASET_REVISION,
        data_sha256=plan.dataset.data_sha256, questions_sha256=plan.dataset.questions_sha256,
        images_sha256=dict(plan.dataset.identity().images_sha256 or {}),
        prompt_sha256=frozen_hashes(plan.config.candidate.kind), candidate=candidate_provenance(plan.config), started_at=datetime.now(UTC),
        flow_run_id=flow_run.get_id(), pid=os.getpid(), host=socket.gethostname(), heartbeat_at=datetime.now(UTC),
        simulated=plan.simulate, state="running", users=[u.user_id for u in plan.dataset.users],
        questions=[PlannedQuestion(user_id=j.user_id, question_id=j.question_id, language=j.language,
                                   difficulty=j.difficulty, gold=j.answer)
                   for u in plan.dataset.users for q in u.questions
                   for j in [plan.dataset.judge_questions[q.question_id]]])


async def open_run(plan: Plan, args: dict[str, Any], simulator_url: str | None) -> RunContext:
    config = plan.config
    candidate = plan.candidate or Endpoint.simulated("candidate", config, simulator_url or "")
    judge = plan.judge or Endpoint.simulated("judge", config, simulator_url or "")
    for empty in (plan.run.errors, plan.run.cleanup_errors):
        empty.touch()
    manifest = _manifest(plan, args)
    write_record(plan.run.run, manifest)
    plan.run.release_claim()
    judge_settings = mobilemem_judge.judge_settings(config.judge, judge)
    write_record(plan.run.judge_settings, judge_settings)
    ingests = remembers(config.candidate.kind)  # no-memory: no session to count as ingested
    context = RunContext(
        run=plan.run, dataset=plan.dataset, config=config,
        candidate_model=build_chat_model(candidate, config.candidate),
        judge_model=build_chat_model(judge, config.judge),
        users=asyncio.Semaphore(config.user_concurrency), questions=asyncio.Semaphore(config.query_concurrency),
        judgments=asyncio.Semaphore(config.judge_concurrency),
        disk=DiskGuard(plan.run.root, config.min_free_disk_mb * 2**20),
        dashboard=Dashboard(RunIdentity.of(manifest), {
            u.user_id: UserProgress(u.user_id, len(u.sessions) if ingests else 0, len(u.questions))
            for u in plan.dataset.users}),
        judge_settings=judge_settings, memory_fingerprints=_memory_fingerprints(plan, candidate.model, manifest),
        reuse=plan.reuse, rejudge=plan.rejudge,
        log_handler=run_log.attach(plan.run))
    await context.dashboard.open_run()
    context.heartbeat = asyncio.get_running_loop().create_task(_beat(plan.run), name="mobilemem-heartbeat")
    register(context)
    gc.freeze()  # imports, config and dataset views are permanent: keep them out of every collection
    return context


def _memory_fingerprints(plan: Plan, model: str, manifest: RunFile) -> dict[int, str]:
    return {u.user_id: fingerprints.memory_fingerprint(u, plan.dataset.images_of(u), model,
                                                       plan.config.candidate, manifest.candidate,
                                                       manifest.prompt_sha256, plan.simulate)
            for u in plan.dataset.users}


async def _cleanup(run: RunDir, step, *args) -> None:
    try:
        await step(*args)
    except Exception as exc:
        append_error(run, error_record(exc, stage="cleanup"))


async def _beat(run: RunDir) -> None:
    """run.json's `heartbeat_at`, every HEARTBEAT_S while the run is alive (`summarize` reads it)."""
    while True:
        await asyncio.sleep(HEARTBEAT_S)
        try:
            manifest = read_record(run.run, RunFile)
            write_record(run.run, manifest.model_copy(update={"heartbeat_at": datetime.now(UTC)}))
        except OSError as exc:
            log.warning("heartbeat not written: %s", exc.strerror or exc)


async def open_user(context: RunContext, user_id: int) -> UserContext:
    """The user's candidate on `users/<uid>/workspace/` (for ReMe Image, its ReMe application),
    before the user's first session."""
    preset = context.config.candidate
    candidate = await open_candidate(preset.kind, context.run.user(user_id).workspace, context.candidate_model,
                                     preset, context.dataset.root)
    return user_context(context, user_id, candidate)


async def close_user(user: UserContext) -> None:
    """After the user's last question; a failure to close is a cleanup error."""
    await _cleanup(user.run, user.candidate.close)


async def _injected_failure() -> None:
    raise MobilememError(f"cleanup failure injected by {INJECT_CLEANUP_ERROR}=1")


async def close_run(context: RunContext, state: RunState) -> None:
    """Close the models (cleanup errors go to cleanup-errors.jsonl) and record the final state."""
    if context.heartbeat is not None:
        context.heartbeat.cancel()
    await _cleanup(context.run, close_chat_model, context.candidate_model)
    await _cleanup(context.run, close_chat_model, context.judge_model)
    if os.environ.get(INJECT_CLEANUP_ERROR) == "1":
        await _cleanup(context.run, _injected_failure)
    try:
        manifest = read_record(context.run.run, RunFile)
        write_record(context.run.run, manifest.model_copy(update={"state": state, "finished_at": datetime.now(UTC)}))
    except OSError as exc:  # a full disk: run.json keeps saying `running`; summarize says it is not alive
        log.error("could not record the run's final state %s in run.json: %s", state, exc.strerror or exc)
    await context.dashboard.close()
    release(context.run)
    run_log.detach(context.log_handler)
