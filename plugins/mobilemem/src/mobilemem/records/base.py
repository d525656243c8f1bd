"""The base of every record and the shared literal types.

Schema version 2 (issue 23) puts every failure in one `Failure` sub-record. A version-1 file is
upgraded as it is read: `RecordBase`'s `mode="before"` validator calls the model's `_from_v1` on its
data; a version newer than this runner's is refused in one line."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import AwareDatetime, BaseModel, ConfigDict, model_validator


SCHEMA_VERSION = 2

ErrorStage = Literal["ingest", "index", "answer", "judge", "run", "cleanup"]
GapStage = Literal["history", "index", "answer", "judge"]
RunState = Literal["running", "completed", "interrupted", "interrupted_by_error"]
FinishedReason = Literal["completed", "exceed_max_iters", "interrupted"]
Label = Literal["CORRECT", "WRONG"]
DecidedBy = Literal["json", "embedded_json", "words"]  # which parsing step of the judge reply decided


class RecordBase(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)
    schema_version: Literal[2] = SCHEMA_VERSION

    @model_validator(mode="before")
    @classmethod
    def _upgrade(cls, data: Any) -> Any:
        if not isinstance(data, dict):
            return data
        version = data.get("schema_version", SCHEMA_VERSION)
        if isinstance(version, int) and not isinstance(version, bool) and version > SCHEMA_VERSION:
            raise ValueError(f"schema version {version} is newer than this runner's {SCHEMA_VERSION}: "
                             "read it with a newer mobilemem-bench")
        if version == 1:
            return {**cls._from_v1(dict(data)), "schema_version": SCHEMA_VERSION}
        return data

    @classmethod
    def _from_v1(cls, data: dict[str, Any]) -> dict[str, Any]:
        """A version-1 record's fields in this version's shape (the same, unless a model says otherwise)."""
        return data


class Timed(RecordBase):
    started_at: AwareDatetime
    finished_at: AwareDatetime
