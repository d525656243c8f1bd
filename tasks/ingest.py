"""Prefect task `ingest_session`: one session into the user's candidate (ReMe's memory, or a
baseline's transcript chunks); writes `sessions/<sid>.json`.
A failed session ends its task run Failed (the reason as its message)."""

from __future__ import annotations

import gc
from datetime import UTC, datetime

from prefect import task
from prefect.cache_policies import NO_CACHE

from mobilemem import usage
from mobilemem.dataset import CandidateSession
from mobilemem.errors import FailureKind, error_record, failure_record
from mobilemem.models import raise_if_cancelled
from mobilemem.records import Failure, SessionFile
from mobilemem.rundir import append_error
from lifecycle.context import UserContext
from lifecycle.outcome import NOT_RUN, WRITE_ERROR, StepOutcome, reports_state
from lifecycle.step_records import save, step_failed


@task(name="ingest_session", retries=0, task_run_name="ingest-{session.session_id}", cache_policy=NO_CACHE,
      persist_result=False)
@reports_state
async def ingest_session(session: CandidateSession, user: UserContext) -> StepOutcome:
    if user.disk.stopped():
        return NOT_RUN
    try:
        outcome = await _ingest(session, user)
    except Exception as exc:  # the session failed: the user's history ends here
        raise_if_cancelled()
        outcome = await step_failed(user, exc, "ingest", session_id=session.session_id)
        user.progress.bump(failed_sessions=1)
    # A session's messages and HTTP exchanges (tens of MB of images) are reference cycles; without a
    # collection here they pile up between rare full collections (bench/README.md, peak RSS).
    gc.collect()
    return outcome


async def _ingest(session: CandidateSession, user: UserContext) -> StepOutcome:
    ids = {"user_id": user.user_id, "session_id": session.session_id,
           "image_paths": [t.image.path for t in session.turns if t.image]}
    started, response, error, kind = datetime.now(UTC), None, None, None
    with usage.scope() as scope:
        try:
            response = await user.candidate.ingest_session(session, user.config.candidate.session_timeout_s)
        except Exception as exc:
            raise_if_cancelled()
            error = error_record(exc, stage="ingest", **ids)
            kind = usage.failure_category(scope.requests) or error.failure.label
    if response is not None and not response.success:  # ReMe's job failed: its answer is the reason
        kind = (response.failure.label if response.failure else None) or usage.failure_category(scope.requests) or FailureKind.JOB_FAILED
        error = failure_record(stage="ingest", error_type=kind, reason=response.answer or FailureKind.FAILED,
                               frames=usage.failure_frames(scope.requests), **ids)
    if error is not None:
        append_error(user.run, error)
        user.disk.probe()
    record = user.run.user(user.user_id).session(session.session_id)
    unsaved = save(user, record, SessionFile(
        started_at=started, finished_at=datetime.now(UTC), user_id=user.user_id, session_id=session.session_id,
        success=error is None, notes_written=[response.note_path] if response and response.note_path else [],
        answer=response.answer if response else None,
        trajectory_path=response.trajectory_path if response else None, usage=scope.usage(), requests=scope.requests,
        failure=Failure.of_label(kind, message=error.failure.message, error_id=error.id) if error and kind else None),
        stage="ingest", **ids)
    if unsaved is not None:  # a session without its record is a failed session: the history ends here
        error, kind = unsaved, WRITE_ERROR
    if error is None:
        user.progress.bump(ingested=1)
    else:
        user.progress.bump(failed_sessions=1)
    user.dashboard.task_files(f"session {session.session_id} of user {user.user_id}", [record])
    return StepOutcome(success=error is None, reason=kind, error_id=error.id if error else None,
                       detail=error.failure.message if error else None)
