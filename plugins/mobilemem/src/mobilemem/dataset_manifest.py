"""The dataset's manifest of file hashes, `mobilemem-manifest.json` in the folder holding data.jsonl
(DESIGN §3): the revision its writer declared and, for every release file (data.jsonl,
questions.jsonl, image.zip when present, every file under image/), its path relative to that
folder, its size and its sha256.

`write_manifest` (`plan --write-manifest`) lists the folder as it is. `verify` is preflight's: with
no manifest the revision is "declared" (the runner's pinned revision, taken on trust); with one,
the manifest must be of the runner's revision, every file it lists must be there as a regular file
(no symbolic link on the way) of the listed size and sha256, and no other file may be under image/
(nor an unlisted image.zip): then "verified". Anything else, a damaged or linked manifest too, is a
`ManifestMismatch`: one line naming the file, before anything is written. "Verified" means the files
are those the manifest's writer hashed (nothing here reaches the Hub): write it right after
downloading the pinned revision.

No file is hashed twice: data.jsonl's and questions.jsonl's hashes are preflight's, and so is every
image preflight checked (`Dataset.image_sha256`: hashed from the bytes it decoded, or the image
cache's); the other files' come from `image_cache.file_hashes` (read once per file state).
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

from mobilemem.dataset import DATASET_ID, DATASET_REVISION, Dataset
from mobilemem.errors import ManifestMismatch
from mobilemem.image_cache import file_hashes
from mobilemem.images import printable
from mobilemem.records import DatasetFileEntry, DatasetManifestFile, RevisionStatus
from mobilemem.rundir import RunDir, write_record
from mobilemem.run_reader import DamagedFile, RunReader

MANIFEST_FILE = "mobilemem-manifest.json"
TOP_FILES = ("data.jsonl", "questions.jsonl", "image.zip")
DIFFERS = "the dataset differs from its manifest"


@dataclass
class _Listing:
    """The release files of a dataset folder, as relative '/'-separated paths."""

    files: list[str] = field(default_factory=list)  # regular files
    irregular: dict[str, str] = field(default_factory=dict)  # path -> what it is instead (a link: never followed)


def _classify(path: Path, relative: str, listing: _Listing) -> None:
    if path.is_symlink():
        listing.irregular[relative] = "a symbolic link"
    elif path.is_file():
        listing.files.append(relative)
    elif not path.is_dir():
        listing.irregular[relative] = "not a regular file"


def _listing(root: Path) -> _Listing:
    listing = _Listing()
    for name in TOP_FILES:
        if os.path.lexists(root / name):
            _classify(root / name, name, listing)
    image = root / "image"
    if image.is_symlink():
        listing.irregular["image"] = "a symbolic link"
    elif image.is_dir():
        for folder, folders, names in os.walk(image):  # a link to a folder is listed, never entered
            for name in (*folders, *names):
                _classify(Path(folder) / name, (Path(folder) / name).relative_to(root).as_posix(), listing)
    listing.files.sort()
    return listing


def _hashes(dataset: Dataset, paths: list[str], use_cache: bool) -> dict[str, str]:
    """sha256 per path: preflight's where it took one, else `image_cache.file_hashes`."""
    known = {"data.jsonl": dataset.data_sha256, "questions.jsonl": dataset.questions_sha256, **dataset.image_sha256}
    hashed = file_hashes([dataset.root / p for p in paths if p not in known], dataset.root, use_cache=use_cache)
    return {p: known[p] if p in known else hashed[dataset.root / p] for p in paths}


def write_manifest(dataset: Dataset, *, use_cache: bool = True) -> DatasetManifestFile:
    """Write `mobilemem-manifest.json` of the folder as it is now (atomically), with the runner's revision."""
    listing = _listing(dataset.root)
    if listing.irregular:
        path, what = min(listing.irregular.items())
        raise ManifestMismatch(f"cannot write {MANIFEST_FILE}: {printable(path)} is {what} (a manifest lists "
                               "regular files only)")
    for path in listing.files:
        try:
            path.encode("utf-8")
        except UnicodeEncodeError:  # a name whose bytes are not UTF-8 (os.walk kept them as surrogates)
            raise ManifestMismatch(f"cannot write {MANIFEST_FILE}: the name {printable(path)} is not UTF-8") from None
    hashes = _hashes(dataset, listing.files, use_cache)
    manifest = DatasetManifestFile(dataset=DATASET_ID, revision=DATASET_REVISION, files=[
        DatasetFileEntry(path=p, size=os.lstat(dataset.root / p).st_size, sha256=hashes[p]) for p in listing.files])
    write_record(dataset.root / MANIFEST_FILE, manifest)
    return manifest


def read_manifest(root: Path) -> DatasetManifestFile | None:
    """The folder's manifest, None without one; damaged or a link: ManifestMismatch."""
    try:
        return RunReader(RunDir(root)).maybe(root / MANIFEST_FILE, DatasetManifestFile)  # never follows a link
    except DamagedFile as exc:
        raise ManifestMismatch(f"{MANIFEST_FILE}: {exc.why}; write it again with `plan --write-manifest`, "
                               "or remove it") from None


def _structure(listed: dict[str, DatasetFileEntry], listing: _Listing, root: Path) -> list[str]:
    """What differs before any hash: links, missing, unlisted files and sizes."""
    present = set(listing.files)
    problems = []
    for path, entry in listed.items():
        link = next((p for p in listing.irregular if path == p or path.startswith(p + "/")), None)
        if link is not None:
            problems.append(f"{path}: {'reached through ' + link + ', ' if link != path else ''}"
                            f"{listing.irregular[link]} ({MANIFEST_FILE} lists regular files only)")
        elif path not in present:
            problems.append(f"{path}: missing ({MANIFEST_FILE} lists it)")
        elif (size := os.lstat(root / path).st_size) != entry.size:
            problems.append(f"{path}: {size:,} bytes, {MANIFEST_FILE} lists {entry.size:,}")
    unlisted = [*(p for p in listing.files if p not in listed), *(p for p in listing.irregular if p not in listed)]
    return problems + [f"{printable(p)}: not listed in {MANIFEST_FILE}" for p in sorted(unlisted)]


def verify(dataset: Dataset, *, use_cache: bool = True) -> RevisionStatus:
    """The dataset's revision status: verified when its folder holds a manifest it matches, declared
    without one; a mismatch is a ManifestMismatch naming the first file that differs."""
    manifest = read_manifest(dataset.root)
    if manifest is None:
        return "declared"
    if (manifest.dataset, manifest.revision) != (DATASET_ID, DATASET_REVISION):
        raise ManifestMismatch(f"{MANIFEST_FILE} is of {manifest.dataset} revision {manifest.revision}; this "
                               f"runner evaluates {DATASET_ID} revision {DATASET_REVISION}")
    listed = {entry.path: entry for entry in manifest.files}
    problems = _structure(listed, _listing(dataset.root), dataset.root)
    if not problems:
        hashes = _hashes(dataset, list(listed), use_cache)
        problems = [f"{p}: sha256 {hashes[p]}, {MANIFEST_FILE} lists {e.sha256}" for p, e in listed.items()
                    if hashes[p] != e.sha256]
    if problems:
        more = f" (and {len(problems) - 1} more)" if len(problems) > 1 else ""
        raise ManifestMismatch(f"{DIFFERS}: {problems[0]}{more}")
    return "verified"
