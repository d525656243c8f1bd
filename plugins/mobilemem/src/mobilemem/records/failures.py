"""The failure sub-record, and errors.jsonl, cleanup-errors.jsonl and error.json."""

from __future__ import annotations

import re
from typing import Any

from pydantic import AwareDatetime, BaseModel, ConfigDict, Field

from mobilemem.failure_kinds import FailureKind, kind_label
from mobilemem.records.base import ErrorStage, GapStage, RecordBase

_HTTP = re.compile(r"HTTP (\d{3})")
# what a gap's reason puts before a failure's category in an error.json reason
_GAP_PREFIXES = ("ingest failed: ", "orchestration failed: ")


class StackFrame(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)
    file: str
    line: int
    function: str


class Failure(BaseModel):
    """Why something failed, in the one shape every record uses (issue 23)."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    kind: FailureKind
    status: int | None = Field(default=None, description="kind 'HTTP status': the status")
    exception: str | None = Field(default=None, description="kind 'exception': the class raised")
    message: str | None = Field(default=None, description="sanitized: no credentials, headers or payloads")
    error_id: str | None = Field(default=None, description="the errors.jsonl line that records it")
    frames: list[StackFrame] = Field(default_factory=list, description="where it happened (repository-relative)")

    @property
    def label(self) -> str:
        """The category it is counted under: 'timeout', 'HTTP 500', 'OSError', ..."""
        return kind_label(self.kind, status=self.status, exception=self.exception)

    @classmethod
    def of_label(cls, label: str, **fields: Any) -> Failure:
        """The failure counted under `label` (a version-1 category string, or a `label`)."""
        if (http := _HTTP.fullmatch(label)) is not None:
            return cls(kind=FailureKind.HTTP_STATUS, status=int(http.group(1)), **fields)
        if label in FailureKind._value2member_map_:
            return cls(kind=FailureKind(label), **fields)
        return cls(kind=FailureKind.EXCEPTION, exception=label, **fields)


def _v1_gap_failure(reason: str, message: str | None, error_id: str | None) -> Failure | None:
    """A version-1 error.json's failure, from the gap category `reason` ('HTTP 500', 'ingest failed: timeout', ...);
    None for a gap no failure caused (neither a message nor an errors.jsonl line)."""
    if message is None and error_id is None:
        return None
    label = next((reason[len(p):] for p in _GAP_PREFIXES if reason.startswith(p)), reason)
    return Failure.of_label(label, message=message, error_id=error_id)


def v1_failure(label: str | None, message: str | None, error_id: str | None, default: str = "failed") -> dict | None:
    """A version-1 record's (category, message, error id) as a Failure's data; None when none is set."""
    if label is None and message is None and error_id is None:
        return None
    return Failure.of_label(label or default, message=message, error_id=error_id).model_dump()


class ErrorLine(RecordBase):
    """One technical error event; `id` is what error.json points at."""

    id: str
    time: AwareDatetime
    stage: ErrorStage
    user_id: int | None = None
    session_id: str | None = None
    question_id: str | None = None
    image_paths: list[str] = Field(default_factory=list, description="dataset-relative")
    failure: Failure = Field(description="its error_id is null: this line is the one others point at")

    def pointer(self) -> Failure:
        """This failure as another record keeps it: pointing at this line, without its frames."""
        return self.failure.model_copy(update={"error_id": self.id, "frames": []})

    @classmethod
    def _from_v1(cls, data: dict[str, Any]) -> dict[str, Any]:
        failure = Failure.of_label(data.pop("error_type"), message=data.pop("reason"), frames=data.pop("frames", []))
        return {**data, "failure": failure.model_dump()}


class ErrorFile(RecordBase):
    """Why a selected question has no score."""

    user_id: int
    question_id: str
    stage: GapStage
    reason: str = Field(description="the gap's category: 'HTTP 500', 'ingest failed: timeout', 'interrupted', ...")
    failure: Failure | None = Field(description="what caused the gap (its errors.jsonl line in error_id); null for "
                                                "a gap no failure caused (a rejudge without the earlier answer)")

    @classmethod
    def _from_v1(cls, data: dict[str, Any]) -> dict[str, Any]:
        failure = _v1_gap_failure(data["reason"], data.pop("detail", None), data.pop("error_id", None))
        return {**data, "failure": failure.model_dump() if failure else None}
