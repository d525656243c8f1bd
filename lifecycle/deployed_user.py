"""One user evaluated as a run of the deployment `mobilemem-user/evaluate-user` on a worker
(`--workers`, DESIGN §12): its context rebuilt from run.json and the worker's own environment
(credentials), after checking that this process would evaluate exactly what the parent planned.

It writes only under `users/<uid>/`: host.json first, progress.json every PROGRESS_S (its counters,
and the heartbeat the parent watches), its errors and log (`UserRunDir`), and the user's records.
The heartbeat is a thread of its own: a library call that holds the event loop for minutes is
bounded by the step's own budget, and must not make a live run look dead to the parent.
When this worker differs from the parent (code, packages, dataset, questions, images, prompts, judge
settings, or an environment that cannot build the models), every question of the user is a gap
`worker mismatch: <field>` and nothing is asked of any model.
"""

from __future__ import annotations

import asyncio
import logging
import os
import socket
import threading
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

from prefect.runtime import flow_run

import mobilemem_judge
from mobilemem import fingerprints
from mobilemem.candidates import plugin_package, prompt_hashes, remembers
from mobilemem.dataset import Dataset, load_dataset
from mobilemem.disk import DiskGuard
from mobilemem.endpoints import Endpoint
from mobilemem.errors import ConfigError, DatasetError, MobilememError, error_record
from mobilemem.models import build_chat_model, close_chat_model
from mobilemem.records import HostFile, JudgeSettingsFile, RunFile, UserProgressFile
from mobilemem.reuse import EarlierRun
from mobilemem.rundir import RunDir, append_error, read_record, write_record
from lifecycle import run_log
from lifecycle.context import RunContext, register, release
from lifecycle.dashboard import Dashboard, RunIdentity, UserProgress
from lifecycle.gaps import record_user_gaps
from lifecycle.limits import endpoint_gate, run_limits
from lifecycle.provenance import code_digest, git_commit, package_versions

PROGRESS_S = 2.0
MISMATCH = "worker mismatch"
log = logging.getLogger(__name__)


@dataclass(frozen=True)
class UserRunDir(RunDir):
    """The run directory as a user's deployment run on a worker sees it (`--workers`, DESIGN §12):
    its errors, cleanup errors and log go to `users/<uid>/`, the only folder it writes; the parent
    merges them into the run's own files when the user's run has ended."""

    user_id: int = 0

    @property
    def log(self) -> Path:
        return self.user(self.user_id).root / "run.log"

    @property
    def errors(self) -> Path:
        return self.user(self.user_id).root / "errors.jsonl"

    @property
    def cleanup_errors(self) -> Path:
        return self.user(self.user_id).root / "cleanup-errors.jsonl"


@dataclass
class DeployedUser:
    run: UserRunDir
    manifest: RunFile
    user_id: int
    context: RunContext | None  # None when this worker does not match the parent (`mismatch`)
    mismatch: str | None
    heartbeat: threading.Thread | None = None
    stop: threading.Event = field(default_factory=threading.Event)
    log_handler: logging.Handler | None = None


def _mismatch(manifest: RunFile, user_id: int, dataset: Dataset) -> str | None:
    """The first field in which this worker's evaluation would differ from the parent's plan."""
    if (commit := git_commit()[0]) != manifest.git_commit:
        return f"git_commit ({commit or 'none'}, the parent has {manifest.git_commit or 'none'})"
    if code_digest() != manifest.code_sha256:  # uncommitted changes to the code itself
        return "code_sha256 (this worker's code differs from the parent's)"
    versions = package_versions()
    for name, version in manifest.package_versions.items():
        if versions.get(name) != version:
            return f"package_versions.{name} ({versions.get(name)}, the parent has {version})"
    kind = manifest.config.candidate.kind
    try:
        package, prompts = plugin_package(kind), prompt_hashes(kind)
    except ConfigError as exc:  # the plug-in is not installed here, or does not load
        return f"candidate ({exc})"
    if package != manifest.candidate.plugin_package:
        return f"candidate.plugin_package ({package}, the parent has {manifest.candidate.plugin_package})"
    identity = dataset.identity()
    for name, mine, theirs in (("data_sha256", dataset.data_sha256, manifest.data_sha256),
                                ("questions_sha256", dataset.questions_sha256, manifest.questions_sha256),
                                ("images_sha256", identity.images_sha256.get(str(user_id)),
                                 manifest.images_sha256.get(str(user_id))),
                                ("prompt_sha256", prompts,
                                 manifest.prompt_sha256)):
        if mine != theirs:
            return name
    planned = [q.question_id for q in manifest.questions if q.user_id == user_id]
    if [q.question_id for u in dataset.users for q in u.questions] != planned:
        return "questions"
    return None


def _dataset(manifest: RunFile, user_id: int) -> Dataset:
    request, config = manifest.args, manifest.config
    return load_dataset(Path(manifest.dataset_path), users=[user_id], limit_questions=request.limit_questions,
                        max_session_images=config.candidate.max_images, image_cache=config.image_cache)


def _earlier_runs(manifest: RunFile) -> list[EarlierRun]:
    request = manifest.args
    if request.rejudge is not None:
        return [EarlierRun.open(request.rejudge, "rejudge")]
    return [EarlierRun.open(path) for path in request.reuse]


async def _context(run: UserRunDir, manifest: RunFile, user_id: int, dataset: Dataset) -> RunContext | str:
    """The user's context on this worker, or the mismatch that forbids it."""
    config = manifest.config
    try:
        candidate, judge = Endpoint.from_env("candidate", config), Endpoint.from_env("judge", config)
        reuse = _earlier_runs(manifest)
    except ConfigError as exc:
        return f"environment ({exc})"
    judge_settings = mobilemem_judge.judge_settings(config.judge, judge)
    if judge_settings != read_record(run.judge_settings, JudgeSettingsFile):
        return "judge-settings.json"
    [user] = dataset.users
    progress = UserProgress(user_id, len(user.sessions) if remembers(config.candidate.kind) else 0, len(user.questions))
    query_slots, judge_slots = run_limits(RunIdentity.of(manifest), config)  # the parent created them
    fingerprint = fingerprints.memory_fingerprint(user, dataset.images_of(user), candidate.model, config.candidate,
                                                  manifest.candidate, manifest.prompt_sha256, manifest.simulated)
    return RunContext(
        run=run, dataset=dataset, config=config,
        candidate_model=build_chat_model(candidate, config.candidate, await endpoint_gate(candidate, config)),
        judge_model=build_chat_model(judge, config.judge, await endpoint_gate(judge, config)),
        user_slots=asyncio.Semaphore(1), subflow_slots=asyncio.Semaphore(1), creating_subflow=asyncio.Lock(),
        query_slots=query_slots, judge_slots=judge_slots,
        disk=DiskGuard(run.root, config.min_free_disk_mb * 2**20),
        dashboard=Dashboard(RunIdentity.of(manifest), {user_id: progress}, task_artifacts=config.dashboard.task_artifacts),
        judge_settings=judge_settings, memory_fingerprints={user_id: fingerprint},
        reuse=reuse, rejudge=manifest.args.rejudge is not None)


def _host(run: UserRunDir, user_id: int) -> None:
    commit, _ = git_commit()
    write_record(run.user(user_id).host, HostFile(
        user_id=user_id, host=socket.gethostname(), pid=os.getpid(), worker=os.environ.get("PREFECT__WORKER_NAME"),
        flow_run_id=flow_run.get_id(), started_at=datetime.now(UTC), git_commit=commit,
        package_versions=package_versions()))


async def open_deployed_user(run_dir: Path, user_id: int) -> DeployedUser:
    """host.json and the heartbeat first, then the checks and the context."""
    run = UserRunDir(Path(run_dir), user_id)
    manifest = read_record(run.run, RunFile)
    _host(run, user_id)
    deployed = DeployedUser(run, manifest, user_id, context=None, mismatch=None, log_handler=run_log.attach(run))
    deployed.heartbeat = threading.Thread(target=_beat, args=(deployed,), name="mobilemem-user-heartbeat", daemon=True)
    deployed.heartbeat.start()
    try:
        dataset = await asyncio.to_thread(_dataset, manifest, user_id)
        found = _mismatch(manifest, user_id, dataset) or await _context(run, manifest, user_id, dataset)
    except DatasetError as exc:
        found = f"dataset ({str(exc).splitlines()[0]})"
    except BaseException:  # e.g. the Prefect API refused the limits: the run fails, the parent records the gaps
        await close_deployed_user(deployed)
        raise
    if isinstance(found, str):
        deployed.mismatch = found
        _record_mismatch(deployed)
    else:
        deployed.context = found
        register(found)  # the steps find the run's context by its directory, as in the parent's process
        await found.dashboard.open_run(all_users=False)
    return deployed


def _record_mismatch(deployed: DeployedUser) -> None:
    reason = f"{MISMATCH}: {deployed.mismatch}"
    log.error("user %s is not evaluated on this worker: %s", deployed.user_id, reason)
    error = error_record(MobilememError(reason), stage="run", user_id=deployed.user_id)
    append_error(deployed.run, error)
    questions = [q.question_id for q in deployed.manifest.questions if q.user_id == deployed.user_id]
    record_user_gaps(deployed.run, deployed.user_id, questions, reason, error.pointer())


def _progress_file(deployed: DeployedUser, beat: int) -> UserProgressFile:
    now = datetime.now(UTC)
    if deployed.mismatch is not None:  # every question is a gap
        gaps = sum(q.user_id == deployed.user_id for q in deployed.manifest.questions)
        return UserProgressFile(user_id=deployed.user_id, beat=beat, at=now, index="not run", gaps=gaps,
                                finished=True)
    if deployed.context is None:  # still checking and opening
        return UserProgressFile(user_id=deployed.user_id, beat=beat, at=now)
    progress = deployed.context.dashboard.progress[deployed.user_id]
    return UserProgressFile(user_id=deployed.user_id, beat=beat, at=now,
                            **{name: getattr(progress, name) for name in UserProgressFile.counters()})


def _beat(deployed: DeployedUser) -> None:
    """Until stopped: progress.json every PROGRESS_S (the write is the heartbeat)."""
    beat = 0
    while True:
        _write_progress(deployed, beat)
        beat += 1
        if deployed.stop.wait(PROGRESS_S):
            return


def _write_progress(deployed: DeployedUser, beat: int) -> None:
    try:
        write_record(deployed.run.user(deployed.user_id).progress, _progress_file(deployed, beat))
    except OSError as exc:
        log.warning("progress.json not written: %s", exc.strerror or exc)


async def close_deployed_user(deployed: DeployedUser) -> None:
    """The models closed (cleanup errors recorded), the last progress written, the log detached."""
    if deployed.heartbeat is not None:
        deployed.stop.set()
        await asyncio.to_thread(deployed.heartbeat.join)
    context = deployed.context
    if context is not None:
        for model in (context.candidate_model, context.judge_model):
            try:
                await close_chat_model(model)
            except Exception as exc:
                append_error(deployed.run, error_record(exc, stage="cleanup", user_id=deployed.user_id))
        await context.dashboard.close()
        release(context.run)
    _write_progress(deployed, 10**9)  # final: larger than any beat
    run_log.detach(deployed.log_handler)
