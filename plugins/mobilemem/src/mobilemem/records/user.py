"""A user's files: sessions, index, memory usage (with the memory's manifest), reuse."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field, field_validator

from mobilemem.records.base import FinishedReason, RecordBase, Timed
from mobilemem.records.failures import Failure, v1_failure
from mobilemem.records.usage import ObservedRequest, Usage, v1_requests


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
    failure: Failure | None = None

    @classmethod
    def _from_v1(cls, data: dict[str, Any]) -> dict[str, Any]:
        failure = v1_failure(data.pop("error_kind", None), data.pop("error", None), data.pop("error_id", None))
        return v1_requests({**data, "failure": failure})


class IndexResponseFile(Timed):
    user_id: int
    success: bool
    documents: int = Field(default=0, description="files in ReMe's keyword index")
    chunks: int = Field(default=0, description="chunks in ReMe's keyword index")
    build_seconds: float | None = None
    failure: Failure | None = None

    @classmethod
    def _from_v1(cls, data: dict[str, Any]) -> dict[str, Any]:
        # version 1 kept a failed build's category in its errors.jsonl line only; a build failed by raising
        failure = v1_failure(None, data.pop("error", None), data.pop("error_id", None), default="exception")
        return {**data, "failure": failure}


MEMORY_PARTS = ("workspace", "sessions", "index-response.json")  # what of users/<uid>/ the memory is


class ManifestEntry(BaseModel):
    """One file of a completed memory: its path under `users/<uid>/`, size and sha256."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    path: str
    size: int = Field(ge=0)
    sha256: str = Field(pattern=r"^[0-9a-f]{64}$")

    @field_validator("path")
    @classmethod
    def _plain(cls, path: str) -> str:
        parts = path.split("/")
        folder = parts[0] in MEMORY_PARTS[:2] and len(parts) > 1
        if not (folder or path == MEMORY_PARTS[2]) or any(p in ("", ".", "..") for p in parts):
            raise ValueError("not a plain path under workspace/ or sessions/, nor index-response.json")
        return path


class MemoryUsageFile(RecordBase):
    user_id: int
    sessions: int
    usage: Usage
    memory_fingerprint: str | None = Field(default=None, description="mobilemem.fingerprints: what built it")
    manifest: list[ManifestEntry] | None = Field(
        default=None, description="mobilemem.memory_manifest: every file of the memory when it completed "
                                  "(sorted by path); absent in runs before issue 22, whose memories are not reused")

    @field_validator("manifest")
    @classmethod
    def _once_each(cls, manifest: list[ManifestEntry] | None) -> list[ManifestEntry] | None:
        if manifest is not None and len({entry.path for entry in manifest}) != len(manifest):
            raise ValueError("a file is listed twice")
        return manifest


class ReusedItem(BaseModel):
    """Where a copied item came from (issue 14): the earlier run and the item's fingerprint."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    run_dir: str
    run_id: str | None = Field(description="the earlier run's parent flow-run id")
    fingerprint: str


class ReuseFile(RecordBase):
    """users/<uid>/reuse.json: what of this user was copied from an earlier run (`--reuse`), and what
    was skipped; absent when nothing was either. Copied files keep their bytes; their usage is not
    this run's."""

    user_id: int
    memory: ReusedItem | None = None
    answers: dict[str, ReusedItem] = Field(default_factory=dict)
    judgments: dict[str, ReusedItem] = Field(default_factory=dict)
    skipped: list[str] = Field(default_factory=list, description="one line per earlier file not reused (damaged, "
                                                                 "a link, differing from its manifest) and what "
                                                                 "was done again instead")
