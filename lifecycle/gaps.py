"""How a step writes its records: a write error, or any exception the step did not expect, is that
step's failure, never the run's; a gap is an error.json plus the user's gap count; the dashboard
links what the step wrote."""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import TYPE_CHECKING

from mobilemem.dataset import CandidateQuestion
from mobilemem.errors import describe, error_record
from mobilemem.failure_kinds import FailureKind
from mobilemem.models import raise_if_cancelled
from mobilemem.records import ErrorFile, ErrorLine, ErrorStage, Failure, GapStage, JobFile, RecordBase
from mobilemem.disk import DiskGuard
from mobilemem.rundir import RunDir, append_error, write_record
from lifecycle.outcome import NOT_RUN, StepOutcome

if TYPE_CHECKING:
    from lifecycle.context import RunContext, UserContext

log = logging.getLogger(__name__)


def save(user: UserContext, path: Path, record: RecordBase, stage: ErrorStage, **ids) -> ErrorLine | None:
    """Write one record of a step. A write error (ENOSPC, EACCES, EROFS, text that cannot be
    encoded, ...) is returned as the step's error, recorded in errors.jsonl if that can still be
    written; a full disk stops the run."""
    try:
        write_record(path, record)
    except Exception as exc:  # whatever stops a record from being kept fails its step, and only it
        if isinstance(exc, OSError):
            user.disk.note(exc)
        error = error_record(exc, stage=stage, **ids)
        append_error(user.run, error)
        return error
    return None


def write_failure(unsaved: ErrorLine) -> Failure:
    """A step's failure when one of its records could not be kept (`save`'s error)."""
    return Failure(kind=FailureKind.WRITE_ERROR, message=unsaved.failure.message, error_id=unsaved.id)


async def guarded_step(user: UserContext, stage: ErrorStage, work: Callable[[], Awaitable[StepOutcome]],
                       **ids: str) -> StepOutcome:
    """A task's body: not run once the run stopped starting new work; an exception `work` did not
    expect is the step's failure (`step_failed`; ids: question_id or session_id)."""
    if user.disk.stopped():
        return NOT_RUN
    try:
        return await work()
    except Exception as exc:
        raise_if_cancelled()
        return await step_failed(user, exc, stage, **ids)


async def step_failed(user: UserContext, exc: Exception, stage: ErrorStage, *, question_id: str | None = None,
                      session_id: str | None = None) -> StepOutcome:
    """An exception a step did not expect is that step's failure (DESIGN §8): one errors.jsonl line
    and, for a question, its gap. A question already scored keeps its score (the error is still
    recorded): no question ever has both a score and an error.json."""
    error = error_record(exc, stage=stage, user_id=user.user_id, question_id=question_id, session_id=session_id)
    append_error(user.run, error)
    if isinstance(exc, OSError):
        user.disk.note(exc)
    log.error("%s step of user %s failed: %s", stage, user.user_id, error.failure.message)
    if question_id is None:
        if session_id is not None:
            user.progress.bump(failed_sessions=1)
        return StepOutcome(success=False, failure=error.pointer())
    if user.run.user(user.user_id).question(question_id).metrics.exists():
        return StepOutcome(success=True)
    gap: GapStage = "judge" if stage == "judge" else "answer"
    return await record_gap(user, question_id, gap, error.pointer())


def question_files(user: UserContext, question_id: str, title: str) -> None:
    """The dashboard's link to what this question's step wrote (its folder's files)."""
    folder = user.run.user(user.user_id).question(question_id).job.parent
    user.dashboard.task_files(f"{title} {question_id}", sorted(folder.glob("*.json")))


async def record_gap(user: UserContext, question_id: str, stage: GapStage, failure: Failure | None,
                     reason: str | None = None) -> StepOutcome:
    """Write the question's error.json (the errors.jsonl line is the caller's) and count the gap,
    under `reason` (by default the failure's label)."""
    reason = reason or (failure.label if failure else FailureKind.FAILED)
    try:
        write_record(user.run.user(user.user_id).question(question_id).error, ErrorFile(
            user_id=user.user_id, question_id=question_id, stage=stage, reason=reason, failure=failure))
    except Exception as exc:  # the gap still counts; summarize sees the question without its outcome
        if isinstance(exc, OSError):
            user.disk.note(exc)
        log.error("could not write error.json of %s (%s gap: %s): %s", question_id, stage, reason, describe(exc))
    user.progress.bump(gaps=1)
    return StepOutcome(success=False, failure=failure, gap_stage=stage, gap_reason=reason)


def write_job(job: CandidateQuestion, user: UserContext) -> ErrorLine | None:
    return save(user, user.run.user(user.user_id).question(job.question_id).job,
                JobFile(user_id=job.user_id, question_id=job.question_id, question=job.question),
                stage="answer", user_id=job.user_id, question_id=job.question_id)


def record_orphaned_questions(context: RunContext, user_id: int, error: ErrorLine, reason: str | None = None) -> int:
    """After the user's subflow itself failed (e.g. the Prefect API gave up, or its deployment run
    crashed): each of its questions without an outcome becomes a gap, so it is counted rather than
    silently missing."""
    reason = reason or f"orchestration failed: {error.failure.label}"
    questions = [job.question_id for job in context.scheduled(user_id).questions]
    return record_user_gaps(context.run, user_id, questions, reason, error.pointer(), context.disk)


def record_user_gaps(run: RunDir, user_id: int, question_ids: list[str], reason: str, failure: Failure,
                     disk: DiskGuard | None = None) -> int:
    """Each of the questions without an outcome (metrics.json or error.json) becomes a gap under
    `reason`, at the history stage while the user has no memory; how many did."""
    user = run.user(user_id)
    stage: GapStage = "answer" if user.memory_usage.exists() else "history"
    recorded = 0
    for question_id in question_ids:
        paths = user.question(question_id)
        if paths.metrics.exists() or paths.error.exists():
            continue
        try:
            write_record(paths.error, ErrorFile(user_id=user_id, question_id=question_id, stage=stage,
                                                reason=reason, failure=failure))
            recorded += 1
        except Exception as exc:  # the next question is still recorded
            if isinstance(exc, OSError) and disk is not None:
                disk.note(exc)
            log.error("could not write error.json of %s: %s", question_id, describe(exc))
    return recorded
