"""The verified-image cache (`mobilemem.image_cache`): outside every run directory and dataset, one
file per dataset root under the user's cache folder. Only images that passed every check are in
`images`; `files` holds the plain hashes of the dataset's other files (the manifest's,
`mobilemem.dataset_manifest`)."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from mobilemem.records.base import RecordBase


class CachedImage(BaseModel):
    """One image that passed preflight's checks, and the file state it was checked in."""

    model_config = ConfigDict(extra="forbid", frozen=True, strict=True)
    size: int = Field(gt=0)
    mtime_ns: int
    ctime_ns: int  # changed by every write, and never set back by utime (cp -p, rsync -t, touch -r)
    format: Literal["JPEG", "PNG", "WEBP", "GIF", "MPO"]
    width: int = Field(gt=0)
    height: int = Field(gt=0)
    sha256: str = Field(pattern=r"^[0-9a-f]{64}$")


class CachedFile(BaseModel):
    """The sha256 of one file in the state it was hashed in (no image check: a hash only)."""

    model_config = ConfigDict(extra="forbid", frozen=True, strict=True)
    size: int = Field(ge=0)
    mtime_ns: int
    ctime_ns: int
    sha256: str = Field(pattern=r"^[0-9a-f]{64}$")


class ImageCacheFile(RecordBase):
    dataset_root: str = Field(description="the resolved folder holding data.jsonl")
    checks: str = Field(description="digest of the checking code, Pillow's version and its bomb limit: "
                                    "entries made by other checks are never trusted")
    images: dict[str, CachedImage] = Field(description="path relative to the dataset root -> its check")
    files: dict[str, CachedFile] = Field(default_factory=dict, description="path relative to the dataset root -> "
                                         "its hash, for files hashed without an image check")
