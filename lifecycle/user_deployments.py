"""The parent's side of `--workers POOL` (DESIGN §12): each user is a run of the deployment
USER_DEPLOYMENT on the pool's workers, started under the parent's user limit and watched to its end.

A start is idempotent (one key per parent run and user), so a start retried after an API error
never runs a user twice. The parent reads the user's progress.json every POLL_S: its counters feed
the dashboard, and its `beat` is the heartbeat. A user run that crashed, failed or was cancelled, or
that is Running but silent for `user_heartbeat_timeout_s` (by the parent's clock: no two machines'
clocks are compared), is cancelled and its unfinished questions become gaps
`orchestration failed: <state>`. Interrupting the parent cancels its user runs. When a user run has
ended, its errors and log (under users/<uid>/) are merged into the run's own files.
"""

from __future__ import annotations

import asyncio
import logging
import shutil
from uuid import UUID

from prefect.client.orchestration import get_client
from prefect.deployments import arun_deployment
from prefect.states import Cancelling

from mobilemem.errors import MobilememError, describe, error_record
from mobilemem.records import ErrorLine, UserProgressFile
from mobilemem.rundir import RunDir, append_error, read_lines, read_record
from lifecycle.context import RunContext
from lifecycle.gaps import record_orphaned_questions
from lifecycle.orchestration import start_patiently
from lifecycle.server_checks import USER_DEPLOYMENT

POLL_S = 1.0  # a finished user frees its slot this late at most
log = logging.getLogger(__name__)


async def evaluate_deployed_user(context: RunContext, user_id: int) -> None:
    """One user as a deployment run, to its end; a run that did not complete is the user's gaps."""
    async with context.user_slots:
        run_id = await start_patiently(lambda: _start(context, user_id), f"the deployment run of user {user_id}")
        try:
            ended = await _watch(context, user_id, run_id)
        except BaseException:  # the parent is interrupted (or failed): its user run stops too
            await asyncio.shield(_cancel(run_id))
            raise
        finally:
            merge_user_files(context.run, user_id)
    if ended is not None:
        reason = f"orchestration failed: {ended}"
        error = error_record(MobilememError(f"the deployment run of user {user_id} ({run_id}) ended: {ended}"),
                             stage="run", user_id=user_id)
        append_error(context.run, error)
        gaps = record_orphaned_questions(context, user_id, error, reason)
        progress = context.dashboard.progress[user_id]
        progress.update(gaps=progress.gaps + gaps, finished=True)


async def _start(context: RunContext, user_id: int) -> UUID:
    parent = context.dashboard.identity.run_id  # the parent flow run's id
    run = await arun_deployment(USER_DEPLOYMENT, parameters={"user_id": user_id, "run_dir": str(context.run.root)},
                                timeout=0, as_subflow=True, idempotency_key=f"{parent}-user-{user_id}")
    log.info("user %s: deployment run %s created", user_id, run.id)
    return run.id


async def _watch(context: RunContext, user_id: int, run_id: UUID) -> str | None:
    """None once the run completed; else how it ended (its state's name, or its silence)."""
    timeout, loop = context.config.user_heartbeat_timeout_s, asyncio.get_running_loop()
    last_beat, heard = None, loop.time()
    async with get_client() as client:
        while True:
            try:
                state = (await client.read_flow_run(run_id)).state
            except Exception as exc:  # the API may be busy: silence is judged by the heartbeat alone
                log.warning("user %s: the state of its run was not read: %s", user_id, describe(exc))
                state = None
            beat = _read_progress(context, user_id)
            if beat != last_beat:
                last_beat, heard = beat, loop.time()
            if state is not None and state.is_final():
                _read_progress(context, user_id)
                return None if state.is_completed() else state.name
            if state is not None and not state.is_running():
                heard = loop.time()  # waiting for a worker is not silence
            elif loop.time() - heard > timeout:
                log.error("user %s: its run %s is silent for %.0f s: cancelled", user_id, run_id, timeout)
                await _cancel(run_id)
                return f"silent for {timeout:.0f} s"
            if state is not None and state.is_running() and not context.dashboard.progress[user_id].started:
                context.dashboard.progress[user_id].start()
            await asyncio.sleep(POLL_S)


def _read_progress(context: RunContext, user_id: int) -> int | None:
    """The user's progress.json into the parent's dashboard; its beat (None while there is none)."""
    try:
        progress = read_record(context.run.user(user_id).progress, UserProgressFile)
    except (OSError, ValueError):  # not written yet, or being replaced on a filesystem without atomic rename
        return None
    context.dashboard.progress[user_id].update(**progress.model_dump(include=UserProgressFile.counters()))
    return progress.beat


async def _cancel(run_id: UUID) -> None:
    try:
        async with get_client() as client:
            await client.set_flow_run_state(run_id, Cancelling(message="cancelled by the evaluation's parent run"),
                                            force=True)
    except Exception as exc:
        log.error("the user run %s was not cancelled: %s", run_id, describe(exc))


def merge_user_files(run: RunDir, user_id: int) -> None:
    """A user run's errors, cleanup errors and log lines, into the run's own files."""
    user = run.user(user_id).root
    for name in ("errors.jsonl", "cleanup-errors.jsonl"):
        try:
            lines = read_lines(user / name, ErrorLine)
        except (OSError, ValueError) as exc:
            log.error("user %s: %s not merged: %s", user_id, name, describe(exc))
            continue
        for line in lines:
            append_error(run, line)
    try:
        if (user / "run.log").is_file():
            with (user / "run.log").open("rb") as source, run.log.open("ab") as target:
                shutil.copyfileobj(source, target)
    except OSError as exc:
        log.error("user %s: run.log not merged: %s", user_id, exc.strerror or exc)
