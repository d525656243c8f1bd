"""The base of every record and the shared literal types."""

from __future__ import annotations

from typing import Literal

from pydantic import AwareDatetime, BaseModel, ConfigDict


SCHEMA_VERSION = 1

ErrorStage = Literal["ingest", "index", "answer", "judge", "run", "cleanup"]
GapStage = Literal["history", "index", "answer", "judge"]
RunState = Literal["running", "completed", "interrupted", "interrupted_by_error"]
FinishedReason = Literal["completed", "exceed_max_iters", "interrupted"]
Label = Literal["CORRECT", "WRONG"]
DecidedBy = Literal["json", "embedded_json", "words"]  # which parsing step of the judge reply decided


class RecordBase(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)
    schema_version: Literal[1] = SCHEMA_VERSION


class Timed(RecordBase):
    started_at: AwareDatetime
    finished_at: AwareDatetime
