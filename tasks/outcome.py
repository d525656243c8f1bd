"""What a task returns to its flow (a few ids and a status, never the trajectory or payloads), and
how a task writes its records so that a write error is that step's failure, never the run's."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import TYPE_CHECKING

from pydantic import BaseModel, ConfigDict

from mobilemem.errors import error_record
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


NOT_RUN = StepOutcome(success=False, reason="not run", not_run=True)


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
    await user.progress.bump(gaps=1)
    return StepOutcome(success=False, reason=reason, error_id=error_id, gap_stage=stage)
