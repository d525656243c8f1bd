"""errors.jsonl, cleanup-errors.jsonl and error.json."""

from __future__ import annotations

from pydantic import AwareDatetime, BaseModel, ConfigDict, Field

from mobilemem.records.base import ErrorStage, GapStage, RecordBase


class StackFrame(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)
    file: str
    line: int
    function: str


class ErrorLine(RecordBase):
    """One technical error event; `id` is what error.json points at."""

    id: str
    time: AwareDatetime
    stage: ErrorStage
    user_id: int | None = None
    session_id: str | None = None
    question_id: str | None = None
    image_paths: list[str] = Field(default_factory=list, description="dataset-relative")
    error_type: str
    reason: str = Field(description="sanitized: no credentials, headers or payloads")
    frames: list[StackFrame] = Field(default_factory=list)


class ErrorFile(RecordBase):
    """Why a selected question has no score."""

    user_id: int
    question_id: str
    stage: GapStage
    reason: str = Field(description="a short category: 'HTTP 500', 'timeout', 'interrupted', ...")
    detail: str | None = Field(default=None, description="sanitized")
    error_id: str | None = Field(description="id of the errors.jsonl line that caused the gap")
