"""A user's files: sessions, index, memory usage, reuse."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

from mobilemem.records.base import FinishedReason, RecordBase, Timed
from mobilemem.records.usage import ObservedRequest, Usage


class SessionFile(Timed):
    user_id: int
    session_id: str
    success: bool
    notes_written: list[str] = Field(default_factory=list, description="the note ReMe reports (workspace-relative)")
    answer: str | None = Field(default=None, description="ReMe's auto_memory answer: the agent's last text, or "
                                                           "its error message when the job failed")
    trajectory_path: str | None = Field(default=None, description="the memory agent's native state "
                                                                   "(workspace-relative)")
    finished_reason: FinishedReason | None = None
    usage: Usage
    requests: list[ObservedRequest]
    error_kind: str | None = None
    error_id: str | None = None
    error: str | None = None


class IndexResponseFile(Timed):
    user_id: int
    success: bool
    documents: int = Field(default=0, description="files in ReMe's keyword index")
    chunks: int = Field(default=0, description="chunks in ReMe's keyword index")
    build_seconds: float | None = None
    error_id: str | None = None
    error: str | None = None


class MemoryUsageFile(RecordBase):
    user_id: int
    sessions: int
    usage: Usage
    memory_fingerprint: str | None = Field(default=None, description="mobilemem.fingerprints: what built it")


class ReusedItem(BaseModel):
    """Where a copied item came from (issue 14): the earlier run and the item's fingerprint."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    run_dir: str
    run_id: str | None = Field(description="the earlier run's parent flow-run id")
    fingerprint: str


class ReuseFile(RecordBase):
    """users/<uid>/reuse.json: what of this user was copied from an earlier run (`--reuse`); absent
    when nothing was. Copied files keep their bytes; their usage is not this run's."""

    user_id: int
    memory: ReusedItem | None = None
    answers: dict[str, ReusedItem] = Field(default_factory=dict)
    judgments: dict[str, ReusedItem] = Field(default_factory=dict)
