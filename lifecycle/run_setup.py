"""Opening and closing a run on Prefect, after its preflight (`lifecycle.run_plan`): the manifest
files, the models (the run log is `lifecycle.run_log`, the heartbeat `lifecycle.heartbeat`; a run
that did not end normally is closed by `lifecycle.run_end`).

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
from datetime import UTC, datetime

from prefect.runtime import flow_run

import mobilemem_judge
from mobilemem.candidates import open_candidate, prompt_hashes, remembers
from mobilemem.config import config_files, load_config
from mobilemem.records import PlannedQuestion, RunFile, RunRequest, RunState
from mobilemem.dataset import DATASET_REVISION
from mobilemem import fingerprints
from mobilemem.disk import DiskGuard
from mobilemem.endpoints import Endpoint
from mobilemem.errors import ConfigError, MobilememError, error_record
from mobilemem.models import build_chat_model, close_chat_model
from mobilemem.rundir import RunDir, append_error, read_record, write_record
from lifecycle.context import RunContext, UserContext, register, release, user_context
from lifecycle import run_log
from lifecycle.heartbeat import beat
from lifecycle.limits import create_run_limits, delete_run_limits, endpoint_gate
from lifecycle.provenance import candidate_provenance, code_digest, git_commit, package_versions, reme_app_config
from lifecycle.dashboard import Dashboard, RunIdentity, UserProgress
from lifecycle.run_plan import Plan, handed_over

INJECT_CLEANUP_ERROR = "MOBILEMEM_INJECT_CLEANUP_ERROR"
log = logging.getLogger(__name__)


def run_name() -> str:
    """`<model>-<UTC start, YYYYmmdd-HHMM>`, e.g. `qwen3.8-max-20261201-0713`: the model of the plan
    the command line handed over, else of the configuration the parameters name."""
    request = RunRequest.model_validate(flow_run.parameters)
    plan = handed_over(request)
    model = plan.config.model if plan is not None else request.model
    if not model:
        try:
            model = load_config(request.config).model
        except ConfigError:
            model = "mobilemem"
    return f"{model}-{datetime.now(UTC):%Y%m%d-%H%M}"


def _manifest(plan: Plan) -> RunFile:
    commit, dirty = git_commit()
    return RunFile(
        args=plan.request, config=plan.config, config_files=config_files(plan.request.config),
        package_versions=package_versions(), git_commit=commit,
        git_dirty=dirty, code_sha256=code_digest(), dataset_path=str(plan.dataset.root.resolve()),
        dataset_revision=DATASET_REVISION, dataset_revision_status=plan.revision_status,
        data_sha256=plan.dataset.data_sha256, questions_sha256=plan.dataset.questions_sha256,
        images_sha256=dict(plan.dataset.identity().images_sha256 or {}),
        prompt_sha256=prompt_hashes(plan.config.candidate.kind), candidate=candidate_provenance(plan.config),
        reme_app_config=reme_app_config(plan.config), started_at=datetime.now(UTC),
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
        candidate_model=build_chat_model(candidate, config.candidate, await endpoint_gate(candidate, config)),
        judge_model=build_chat_model(judge, config.judge, await endpoint_gate(judge, config)),
        user_slots=asyncio.Semaphore(config.user_concurrency), query_slots=asyncio.Semaphore(config.query_concurrency),
        subflow_slots=asyncio.Semaphore(config.user_concurrency + 1), creating_subflow=asyncio.Lock(),
        judge_slots=asyncio.Semaphore(config.judge_concurrency),
        disk=DiskGuard(plan.run.root, config.min_free_disk_mb * 2**20),
        dashboard=Dashboard(RunIdentity.of(manifest), {
            u.user_id: UserProgress(u.user_id, len(u.sessions) if ingests else 0, len(u.questions))
            for u in plan.dataset.users}, task_artifacts=config.dashboard.task_artifacts),
        judge_settings=judge_settings, memory_fingerprints=_memory_fingerprints(plan, candidate.model, manifest),
        reuse=plan.reuse, rejudge=plan.rejudge, workers=plan.request.workers,
        log_handler=run_log.attach(plan.run))
    if context.workers is not None:  # the limits every user run on every worker takes (DESIGN §12)
        context.run_limits = await create_run_limits(context.dashboard.identity, config)
    await context.dashboard.open_run()
    context.heartbeat = asyncio.get_running_loop().create_task(beat(plan.run), name="mobilemem-heartbeat")
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
    if context.run_limits is not None:
        await _cleanup(context.run, delete_run_limits, context.run_limits)
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
