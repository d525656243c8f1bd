"""`mobilemem-manifest.json`, the dataset's manifest of file hashes (`mobilemem.dataset_manifest`):
written into the dataset folder by `plan --write-manifest`, verified by every preflight that finds it."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from mobilemem.records.base import RecordBase

# run.json's dataset_revision_status: "declared" (the runner's pinned revision, taken on trust) or
# "verified" (a manifest in the folder listed every release file, and preflight found each one as listed)
RevisionStatus = Literal["declared", "verified"]


class DatasetFileEntry(BaseModel):
    """One release file as the manifest lists it."""

    model_config = ConfigDict(extra="forbid", frozen=True, strict=True)
    path: str = Field(min_length=1, description="relative to the folder holding data.jsonl, '/'-separated")
    size: int = Field(ge=0, description="bytes")
    sha256: str = Field(pattern=r"^[0-9a-f]{64}$")


class DatasetManifestFile(RecordBase):
    dataset: str = Field(description="the release, e.g. zjunlp/MobileMem-Omni")
    revision: str = Field(min_length=1, description="the revision the writer declared the files to be")
    files: list[DatasetFileEntry] = Field(description="data.jsonl, questions.jsonl, image.zip when present and "
                                                      "every file under image/, in path order")
