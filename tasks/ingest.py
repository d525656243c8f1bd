"""Prefect task `ingest_session`: one session into the user's candidate (ReMe's memory, or a
baseline's transcript chunks); writes `sessions/<sid>.json`.
A failed session ends its task run Failed (the reason as its message)."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

from prefect import task
from prefect.cache_policies import NO_CACHE

from mobilemem.dataset import CandidateSession
from mobilemem.records import SessionFile
from lifecycle.attempt import attempt
from lifecycle.context import UserContext
from lifecycle.outcome import StepOutcome, reports_state
from lifecycle.gaps import guarded_step, save, write_failure


@task(name="ingest_session", retries=0, task_run_name="ingest-{session.session_id}", cache_policy=NO_CACHE,
      persist_result=False)
@reports_state
async def ingest_session(session: CandidateSession, user: UserContext) -> StepOutcome:
    # a failed session ends the user's history
    outcome = await guarded_step(user, "ingest", lambda: _ingest(session, user), session_id=session.session_id)
    user.collections.ingested(sum(_size(user.dataset_root / t.image.path) for t in session.turns if t.image))
    return outcome


def _size(path: Path) -> int:
    try:
        return path.stat().st_size
    except OSError:  # the session's own record says what went wrong with its image
        return 0


async def _ingest(session: CandidateSession, user: UserContext) -> StepOutcome:
    ids = {"user_id": user.user_id, "session_id": session.session_id,
           "image_paths": [t.image.path for t in session.turns if t.image]}
    tried = await attempt(user, "ingest", lambda: user.candidate.ingest_session(
        session, user.config.candidate.session_timeout_s), **ids)
    response, error, failure = tried.response, tried.error, tried.failure
    record = user.run.user(user.user_id).session(session.session_id)
    unsaved = save(user, record, SessionFile(
        started_at=tried.started, finished_at=datetime.now(UTC), user_id=user.user_id, session_id=session.session_id,
        success=error is None, notes_written=[response.note_path] if response and response.note_path else [],
        answer=response.answer if response else None, trajectory_path=response.trajectory_path if response else None,
        usage=tried.usage, requests=tried.requests, failure=failure), stage="ingest", **ids)
    if unsaved is not None:  # a session without its record is a failed session: the history ends here
        error, failure = unsaved, write_failure(unsaved)
    if error is None:
        user.progress.bump(ingested=1)
    else:
        user.progress.bump(failed_sessions=1)
    user.dashboard.task_files(f"session {session.session_id} of user {user.user_id}", [record])
    return StepOutcome(success=error is None, failure=failure)
