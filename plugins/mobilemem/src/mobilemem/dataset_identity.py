"""Which dataset a run evaluated, and the first way two runs' datasets differ (issue 22).

run.json records the sha256 of data.jsonl and questions.jsonl and, per scheduled user, the sha256
of that user's images (`images_digest`: the canonical JSON of the sorted (dataset-relative path,
content sha256) pairs of the images its sessions show; preflight hashed the bytes it decoded).
Two datasets that differ only in the pixels of one image differ in that user's hash. A run made
before the image hashes were recorded has none: whether its images are the same cannot be told.

`first_difference` is the one check of "same dataset" (`compare`; `rejudge` against the earlier
run). This module reads records only: the judge imports it without the candidate or the dataset
loader.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from mobilemem.records import RunFile


def images_digest(images: Iterable[tuple[str, str]]) -> str:
    """sha256 of the canonical JSON of the sorted, distinct (path, sha256) pairs."""
    canonical = json.dumps(sorted({(path, sha) for path, sha in images}), separators=(",", ":"),
                           ensure_ascii=False)
    return hashlib.sha256(canonical.encode("utf-8")).hexdigest()


@dataclass(frozen=True)
class DatasetIdentity:
    where: str  # the run directory or dataset folder, as a difference names it
    data_sha256: str
    questions_sha256: str
    images_sha256: Mapping[str, str] | None  # user id (as a string) -> images_digest; None: not recorded

    @classmethod
    def of_run(cls, run: RunFile, where: str) -> DatasetIdentity:
        """An earlier run's identity; a run of users without image hashes predates them."""
        recorded = bool(run.images_sha256) or not run.users
        return cls(where, run.data_sha256, run.questions_sha256, run.images_sha256 if recorded else None)


def first_difference(earlier: DatasetIdentity, later: DatasetIdentity,
                     users: Iterable[int] | None = None) -> str | None:
    """The first way `later`'s dataset differs from `earlier`'s, in one line, or None when they
    are the same. The image hashes compared are those of `users` (each must be in both), by
    default those of every user present in both."""
    for name in ("data_sha256", "questions_sha256"):
        if getattr(earlier, name) != getattr(later, name):
            return (f"the runs evaluated different datasets: {name} differs: {getattr(earlier, name)} in "
                    f"{earlier.where} vs {getattr(later, name)} in {later.where}")
    for side in (earlier, later):
        if side.images_sha256 is None:
            return (f"{side.where} was made before image hashes were recorded: cannot tell whether the images "
                    f"are the same")
    old_images, new_images = earlier.images_sha256 or {}, later.images_sha256 or {}
    checked = ([str(u) for u in users] if users is not None
               else sorted(old_images.keys() & new_images.keys(), key=lambda u: (len(u), u)))  # numeric order of ids
    for user in checked:
        for where, side in ((earlier.where, old_images), (later.where, new_images)):
            if user not in side:
                return f"{where} has no image hash of user {user}: cannot tell whether its images are the same"
        if old_images[user] != new_images[user]:
            return (f"the runs evaluated different datasets: the images of user {user} differ: images_sha256 "
                    f"{old_images[user]} in {earlier.where} vs {new_images[user]} in {later.where}")
    return None
