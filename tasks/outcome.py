"""What a task returns to its flow (a few ids and a status, never the trajectory or payloads), as
the Prefect state its task run ends in, and how a task writes its records so that a write error is
that step's failure, never the run's.

A step that failed ends its task run `Failed` (the sanitized reason is the state's message), a step
the run no longer started ends `Cancelled`, a question blocked by its user's history or index ends
in a Cancelled-type state named for that gap; the StepOutcome rides along as the state's data, and
the flow reads it back with `run_step`. A task's own exception is never a gap: it propagates."""

from __future__ import annotations

import functools
import logging
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from prefect.client.schemas.objects import StateType
from prefect.states import Cancelled, Completed, Failed, State
from pydantic import BaseModel, ConfigDict

from mobilemem.errors import error_record, sanitize
from mobilemem.records import ErrorFile, ErrorLine, ErrorStage, GapStage, RecordBase
from mobilemem.rundir import append_error, write_record

if TYPE_CHECKING:
    from tasks.context import UserContext

log = logging.getLogger(__name__)
WRITE_ERROR = "write error"


class StepOutcome(BaseModel):
    model_config = ConfigDict(frozen=True)
    success: bool
    reason: str | None = None  # the gap category when it failed
    error_id: str | None = None  # the errors.jsonl line
    answer: str | None = None  # answer_question only: what the judge will read
    gap_stage: GapStage | None = None
    not_run: bool = False  # the run had stopped starting new work (a full disk): nothing was attempted
    detail: str | None = None  # the sanitized one-line reason of a failure
    blocked: bool = False  # a question skipped because its user's history or index failed

    def message(self) -> str:
        text = f"{self.reason}: {self.detail}" if self.detail and self.detail != self.reason else str(self.reason)
        return sanitize(" ".join(text.split()))


NOT_RUN = StepOutcome(success=False, reason="not run", not_run=True)


def as_state(outcome: StepOutcome) -> State:
    """The final state of the task run that produced `outcome`."""
    if outcome.success:
        return Completed(data=outcome)
    if outcome.not_run:
        return Cancelled(message="not run: the run had stopped starting new work", data=outcome)
    if outcome.blocked:
        return State(type=StateType.CANCELLED, name=f"{(outcome.gap_stage or 'history').capitalize()} gap",
                     message=outcome.message(), data=outcome)
    return Failed(message=outcome.message(), data=outcome)


def reports_state(step: Callable[..., Awaitable[StepOutcome]]) -> Callable[..., Awaitable[State]]:
    """Under `@task`: the step's StepOutcome becomes its task run's final state."""
    @functools.wraps(step)
    async def reported(*args: Any, **kwargs: Any) -> State:
        return as_state(await step(*args, **kwargs))
    return reported


async def run_step(task: Any, *args: Any) -> StepOutcome:
    """Run a `reports_state` task and return its StepOutcome (a task's own exception propagates)."""
    state = await task(*args, return_state=True)
    result = await state.aresult(raise_on_failure=False)
    if isinstance(result, BaseException):
        raise result
    return result


def save(user: UserContext, path: Path, record: RecordBase, stage: ErrorStage, **ids) -> ErrorLine | None:
    """Write one record of a step. A write error (ENOSPC, EACCES, EROFS, ...) is returned as the
    step's error, recorded in errors.jsonl if that can still be written; a full disk stops the run."""
    try:
        write_record(path, record)
    except OSError as exc:
        user.disk.note(exc)
        error = error_record(exc, stage=stage, **ids)
        append_error(user.run, error)
        return error
    return None


def question_files(user: UserContext, question_id: str, title: str) -> None:
    """The dashboard's link to what this question's step wrote (its folder's files)."""
    folder = user.run.user(user.user_id).question(question_id).job.parent
    user.dashboard.task_files(f"{title} {question_id}", sorted(folder.glob("*.json")))


async def record_gap(user: UserContext, question_id: str, stage: GapStage, reason: str, error_id: str | None,
                     detail: str | None = None) -> StepOutcome:
    """Write the question's error.json (the errors.jsonl line is the caller's) and count the gap."""
    try:
        write_record(user.run.user(user.user_id).question(question_id).error, ErrorFile(
            user_id=user.user_id, question_id=question_id, stage=stage, reason=reason, detail=detail,
            error_id=error_id))
    except OSError as exc:  # the gap still counts; summarize sees the question without its outcome
        user.disk.note(exc)
        log.error("could not write error.json of %s (%s gap: %s): %s", question_id, stage, reason, exc.strerror)
    user.progress.bump(gaps=1)
    return StepOutcome(success=False, reason=reason, error_id=error_id, gap_stage=stage, detail=detail,
                       blocked=stage in ("history", "index"))
