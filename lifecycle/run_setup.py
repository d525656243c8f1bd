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
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from prefect.runtime import flow_run

import mobilemem_judge
from mobilemem.candidates import open_candidate, remembers
from mobilemem.config import config_files, load_config
from mobilemem.records import Config, PlannedQuestion, RunFile, RunRequest, RunState
from mobilemem.dataset import DATASET_REVISION, Dataset, load_dataset
from mobilemem.dataset_identity import DatasetIdentity, first_difference
from mobilemem import fingerprints
from mobilemem.disk import DiskGuard
from mobilemem.errors import ConfigError, MobilememError, error_record
from mobilemem.models import Endpoint, build_chat_model, close_chat_model
from mobilemem.prompts import frozen_hashes
from mobilemem.reuse import EarlierRun
from mobilemem.rundir import RunDir, append_error, read_record, write_record
from mobilemem.run_reader import DamagedFile, NotARunDirectory, RunReader
from lifecycle.context import RunContext, UserContext, register, release, user_context
from lifecycle import run_log
from lifecycle.provenance import candidate_provenance, git_commit, package_versions
from lifecycle.dashboard import Dashboard, RunIdentity, UserProgress

INJECT_CLEANUP_ERROR = "MOBILEMEM_INJECT_CLEANUP_ERROR"
log = logging.getLogger(__name__)
HEARTBEAT_S = 30.0
_PREFLIGHTED: dict[RunRequest, Plan] = {}  # per request, until the flow takes it (`planned`)


@dataclass(frozen=True)
class Plan:
    request: RunRequest
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
    """`<model>-<UTC start, YYYYmmdd-HHMM>`, e.g. `qwen3.8-max-20261201-0713`: the model of the plan
    the command line handed over, else of the configuration the parameters name."""
    request = RunRequest.model_validate(flow_run.parameters)
    plan = _PREFLIGHTED.get(request)
    model = plan.config.model if plan is not None else request.model
    if not model:
        try:
            model = load_config(request.config).model
        except ConfigError:
            model = "mobilemem"
    return f"{model}-{datetime.now(UTC):%Y%m%d-%H%M}"


def overrides(request: RunRequest) -> dict[str, Any]:
    """The flags of the request that override the configuration (defaults < --config < flags)."""
    return {"model": request.model, "user_concurrency": request.user_concurrency,
            "query_concurrency": request.query_concurrency,
            "judge": {"model": request.judge_model} if request.judge_model else None,
            "candidate": {"kind": request.candidate} if request.candidate else None}


def configured(request: RunRequest) -> tuple[Config, RunFile | None]:
    """The request's effective configuration (defaults < --config < flags; a rejudge run's base is the
    earlier run's) and, for a rejudge run, the earlier run's plan."""
    earlier_plan = _rejudged_plan(request.rejudge) if request.rejudge is not None else None
    base = earlier_plan.config.model_dump(mode="json") if earlier_plan else None
    config = load_config(request.config, overrides(request), base=base)
    return config, earlier_plan


def selected(request: RunRequest, config: Config) -> Dataset:
    """The dataset's preflight, of the users and questions the request selects."""
    return load_dataset(request.dataset, users=request.users, limit_questions=request.limit_questions,
                        max_session_images=config.candidate.max_images, image_cache=config.image_cache)


def preflight(request: RunRequest) -> Plan:
    """Everything that can refuse the run, checked before any model request or file write. For a
    `rejudge` run, the earlier run's effective configuration is the base, and it is the one reused."""
    if request.output is None:
        raise ConfigError("a run needs --output")
    rejudge = request.rejudge
    config, earlier_plan = configured(request)
    reuse = [rejudge] if rejudge is not None else list(request.reuse)
    candidate = judge = None
    if not request.simulate:
        candidate, judge = Endpoint.from_env("candidate", config), Endpoint.from_env("judge", config)
    mobilemem_judge.judge_settings(config.judge, judge or Endpoint.simulated("judge", config, "http://x"))
    run = RunDir.for_output(request.output, config.model, config.candidate.kind)
    if run.root.exists() and not run.claim_file.is_file():
        raise ConfigError(f"{run.root} already exists: choose another --output or remove it")
    earlier = _earlier_runs(reuse, request.output, run, "rejudge" if rejudge is not None else "--reuse")
    loaded = selected(request, config)
    if earlier_plan is not None:
        _refuse_another_dataset(rejudge, earlier_plan, loaded)
    run.claim()  # last: a refused start leaves nothing behind
    return Plan(request, config, loaded, run, request.simulate, candidate, judge, earlier, rejudge is not None)


def hand_over(plan: Plan) -> None:
    """The command line's plan, for the flow it starts in this process: preflight runs once."""
    _PREFLIGHTED[plan.request] = plan


def planned(request: RunRequest) -> Plan:
    """The plan the command line handed over for this request, else (a deployment run) preflight's."""
    plan = _PREFLIGHTED.pop(request, None)
    return plan if plan is not None else preflight(request)


def _manifest(plan: Plan) -> RunFile:
    commit, dirty = git_commit()
    return RunFile(
        args=plan.request, config=plan.config, config_files=config_files(plan.request.config),
        package_versions=package_versions(), git_commit=commit,
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


async def open_run(plan: Plan, simulator_url: str | None) -> RunContext:
    config = plan.config
    candidate = plan.candidate or Endpoint.simulated("candidate", config, simulator_url or "")
    judge = plan.judge or Endpoint.simulated("judge", config, simulator_url or "")
    for empty in (plan.run.errors, plan.run.cleanup_errors):
        empty.touch()
    manifest = _manifest(plan)
    write_record(plan.run.run, manifest)
    plan.run.release_claim()
    judge_settings = mobilemem_judge.judge_settings(config.judge, judge)
    write_record(plan.run.judge_settings, judge_settings)
    ingests = remembers(config.candidate.kind)  # no-memory: no session to count as ingested
    context = RunContext(
        run=plan.run, dataset=plan.dataset, config=config,
        candidate_model=build_chat_model(candidate, config.candidate),
        judge_model=build_chat_model(judge, config.judge),
        user_slots=asyncio.Semaphore(config.user_concurrency), query_slots=asyncio.Semaphore(config.query_concurrency),
        subflow_slots=asyncio.Semaphore(config.user_concurrency + 1),
        judge_slots=asyncio.Semaphore(config.judge_concurrency),
        disk=DiskGuard(plan.run.root, config.min_free_disk_mb * 2**20),
        dashboard=Dashboard(RunIdentity.of(manifest), {
            u.user_id: UserProgress(u.user_id, len(u.sessions) if ingests else 0, len(u.questions))
            for u in plan.dataset.users}, task_artifacts=config.dashboard.task_artifacts),
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
