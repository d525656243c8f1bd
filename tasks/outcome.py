"""What a task returns to its flow: a few ids and a status, never the trajectory or payloads."""

from __future__ import annotations

from typing import TYPE_CHECKING

from pydantic import BaseModel, ConfigDict

from mobilemem.records import ErrorFile, GapStage
from mobilemem.rundir import write_record

if TYPE_CHECKING:
    from tasks.context import UserContext


class StepOutcome(BaseModel):
    model_config = ConfigDict(frozen=True)
    success: bool
    reason: str | None = None  # the gap category when it failed
    error_id: str | None = None  # the errors.jsonl line
    answer: str | None = None  # answer_question only: what the judge will read
    gap_stage: GapStage | None = None


async def record_gap(user: UserContext, question_id: str, stage: GapStage, reason: str, error_id: str | None,
                     detail: str | None = None) -> StepOutcome:
    """Write the question's error.json (the errors.jsonl line is the caller's) and count the gap."""
    write_record(user.run.user(user.user_id).question(question_id).error, ErrorFile(
        user_id=user.user_id, question_id=question_id, stage=stage, reason=reason, detail=detail,
        error_id=error_id))
    await user.progress.bump(gaps=1)
    return StepOutcome(success=False, reason=reason, error_id=error_id, gap_stage=stage)
