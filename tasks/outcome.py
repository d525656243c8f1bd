"""What a task returns to its flow: a few ids and a status, never the trajectory or payloads."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict

from mobilemem.records import GapStage


class StepOutcome(BaseModel):
    model_config = ConfigDict(frozen=True)
    success: bool
    reason: str | None = None  # the gap category when it failed
    error_id: str | None = None  # the errors.jsonl line
    answer: str | None = None  # answer_question only: what the judge will read
    gap_stage: GapStage | None = None
