"""The verified-image cache: an unchanged dataset is verified in seconds (DESIGN §3, preflight).

An image that passed every check (`inspect_image`) is recorded with the state of its file:
(path relative to the dataset root, size, mtime_ns, ctime_ns) -> format, width, height, sha256.
A later preflight that finds the same state takes the recorded result instead of reading and
decoding the file again; any other state, and every problem, is checked again. The contract is
the file system's: a write changes mtime and ctime, and ctime cannot be set back (`touch -r`,
`cp -p` and `rsync -t` restore mtime only). A file whose mtime or ctime is within `SETTLE_NS`
of the check is not recorded: a second write in the same timestamp tick would leave both
unchanged. Config `image_cache: false` checks every image again (and refreshes the cache).
`file_hashes` does the same for plain hashes (the dataset manifest's files, `dataset_manifest`):
a file in a recorded state (a verified image's, or one hashed before) is not read again.

The cache lives outside the dataset and every run directory: `$MOBILEMEM_CACHE_DIR`, else
`$XDG_CACHE_HOME/mobilemem`, else `~/.cache/mobilemem`; one `ImageCacheFile` per dataset root
(`images-<sha256 of the resolved root>.json`). It is tied to the checks that made it
(`checks_digest`: the checking code, Pillow's version and bomb limit). A file that is damaged,
a link, of another dataset or a newer schema is ignored (one warning) and replaced on the next
write. Writes are atomic (`rundir.write_record`: a temporary file renamed over the name, so a
link there is replaced, never followed).
"""

from __future__ import annotations

import hashlib
import logging
import os
import stat
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import PIL
from PIL import Image
from pydantic import ValidationError

from mobilemem import images, jpeg_markers, png_data
from mobilemem.images import ImageInfo, ImageProblem, inspect_images, printable
from mobilemem.records import CachedFile, CachedImage, ImageCacheFile
from mobilemem.rundir import write_record

log = logging.getLogger(__name__)
SETTLE_NS = 2_000_000_000
_FileState = tuple[int, int, int]  # size, mtime_ns, ctime_ns
Checked = ImageInfo | ImageProblem


@dataclass(frozen=True)
class ImageVerification:
    results: dict[Path, Checked]
    from_cache: int  # results taken from the cache, their files neither read nor decoded
    decoded: int


def cache_dir() -> Path:
    """`$MOBILEMEM_CACHE_DIR`, else `$XDG_CACHE_HOME/mobilemem` (an absolute one), else `~/.cache/mobilemem`."""
    if explicit := os.environ.get("MOBILEMEM_CACHE_DIR"):
        return Path(explicit)
    xdg = os.environ.get("XDG_CACHE_HOME", "")
    return (Path(xdg) if os.path.isabs(xdg) else Path.home() / ".cache") / "mobilemem"


def cache_file(root: Path) -> Path:
    digest = hashlib.sha256(os.fsencode(root.resolve())).hexdigest()[:32]
    return cache_dir() / f"images-{digest}.json"


def checks_digest() -> str:
    """What a recorded verdict depends on besides the bytes: the checking code, Pillow, its bomb limit."""
    digest = hashlib.sha256(f"{PIL.__version__}|{Image.MAX_IMAGE_PIXELS}".encode())
    for module in (images, jpeg_markers, png_data):
        digest.update(Path(module.__file__ or "").read_bytes())
    return digest.hexdigest()


def verify_images(paths: Sequence[Path], root: Path, *, use_cache: bool = True) -> ImageVerification:
    """`inspect_images` of `paths` (files under the dataset folder `root`), taking each result
    whose file state the cache recorded, and recording the new successes."""
    started = time.time_ns()
    states = {p: _state(p) for p in paths}
    try:
        file, checks = cache_file(root), checks_digest()
    except (OSError, RuntimeError, KeyError) as exc:  # no home folder, say: no cache
        log.warning("image cache unavailable (%s): every image is checked", exc)
        return ImageVerification(inspect_images(paths), 0, len(paths))
    cache = _load(file, root, checks)
    cached = cache.images  # without use_cache, kept for the images this run does not check
    keys = {p: p.relative_to(root).as_posix() for p in paths}
    results: dict[Path, Checked] = {}
    for path in paths if use_cache else ():
        entry = cached.get(keys[path])
        if entry is not None and states[path] == (entry.size, entry.mtime_ns, entry.ctime_ns):
            results[path] = ImageInfo(format=entry.format, width=entry.width, height=entry.height,
                                      size=entry.size, sha256=entry.sha256)
    misses = [p for p in paths if p not in results]
    results.update(inspect_images(misses))
    fresh = {keys[p]: entry for p in misses if (entry := _entry(results[p], states[p], _state(p), started))
             and _encodable(keys[p])}
    checked = {keys[p] for p in misses}
    if fresh or not checked.isdisjoint(cached):
        kept = {key: entry for key, entry in cached.items() if key not in checked}
        _save(file, cache.model_copy(update={"images": {**kept, **fresh}}))
    log.info("%d images: %d verified by the image cache, %d decoded", len(paths), len(paths) - len(misses),
             len(misses))
    return ImageVerification({p: results[p] for p in paths}, len(paths) - len(misses), len(misses))


def file_hashes(paths: Sequence[Path], root: Path, *, use_cache: bool = True) -> dict[Path, str]:
    """The sha256 of each of `paths` (regular files under the dataset folder `root`): the cache's
    hash of a file in the state it recorded (an image it verified, or a file hashed here before),
    else the bytes hashed now, and recorded when the file is settled (as a verified image is)."""
    started = time.time_ns()
    try:
        file, checks = cache_file(root), checks_digest()
    except (OSError, RuntimeError, KeyError) as exc:
        log.warning("image cache unavailable (%s): every file is hashed", exc)
        return {p: _sha256(p) for p in paths}
    cache, states = _load(file, root, checks), {p: _state(p) for p in paths}
    keys = {p: p.relative_to(root).as_posix() for p in paths}
    hashes = {}
    for path in paths if use_cache else ():
        known = cache.images.get(keys[path]) or cache.files.get(keys[path])
        if known is not None and states[path] == (known.size, known.mtime_ns, known.ctime_ns):
            hashes[path] = known.sha256
    misses = [p for p in paths if p not in hashes]
    fresh = {}
    for path in misses:
        hashes[path], before = _sha256(path), states[path]
        if before is not None and _settled(before, _state(path), started) and _encodable(keys[path]):
            fresh[keys[path]] = CachedFile(size=before[0], mtime_ns=before[1], ctime_ns=before[2], sha256=hashes[path])
    if fresh:
        _save(file, cache.model_copy(update={"files": {**cache.files, **fresh}}))
    log.info("%d files: %d hashes from the image cache, %d hashed", len(paths), len(paths) - len(misses), len(misses))
    return hashes


def _sha256(path: Path) -> str:
    with path.open("rb") as handle:
        return hashlib.file_digest(handle, "sha256").hexdigest()


def _state(path: Path) -> _FileState | None:
    """The file's (size, mtime_ns, ctime_ns), or None when it is no regular file (a problem either way)."""
    try:
        found = os.lstat(path)
    except OSError:
        return None
    return (found.st_size, found.st_mtime_ns, found.st_ctime_ns) if stat.S_ISREG(found.st_mode) else None


def _settled(before: _FileState | None, after: _FileState | None, started: int) -> bool:
    """The file did not change while it was read, and its last change is older than `SETTLE_NS`."""
    return before is not None and before == after and max(before[1], before[2]) <= started - SETTLE_NS


def _entry(checked: Checked, before: _FileState | None, after: _FileState | None,
           started: int) -> CachedImage | None:
    """What to record of a check: a success of a settled file (`_settled`) of the size checked."""
    if not isinstance(checked, ImageInfo) or not _settled(before, after, started) or checked.size != before[0]:
        return None
    return CachedImage(size=before[0], mtime_ns=before[1], ctime_ns=before[2], format=checked.format,
                       width=checked.width, height=checked.height, sha256=checked.sha256)


def _encodable(key: str) -> bool:
    try:
        key.encode("utf-8")
    except UnicodeEncodeError:  # a name that is not UTF-8 on disk (refused later; no JSON key)
        return False
    return True


def _load(file: Path, root: Path, checks: str) -> ImageCacheFile:
    """The cache, or an empty one (one warning) when the file cannot be trusted."""
    empty = ImageCacheFile(dataset_root=str(root.resolve()), checks=checks, images={})
    try:
        fd = os.open(file, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0))
    except FileNotFoundError:
        return empty
    except OSError as exc:  # a link (ELOOP), no permission
        log.warning("image cache %s ignored (%s): every image is checked", printable(str(file)), exc.strerror or exc)
        return empty
    try:
        with os.fdopen(fd, "rb") as handle:
            cache = ImageCacheFile.model_validate_json(handle.read())
    except (OSError, ValidationError) as exc:
        reason = exc.errors()[0]["msg"] if isinstance(exc, ValidationError) and exc.errors() else exc
        log.warning("image cache %s ignored (not a readable cache file: %s): every image is checked",
                    printable(str(file)), printable(str(reason)[:200]))
        return empty
    if cache.dataset_root != str(root.resolve()):
        log.warning("image cache %s ignored (it is of %s): every image is checked", printable(str(file)),
                    printable(cache.dataset_root))
        return empty
    if cache.checks != checks:  # other checking code, Pillow or bomb limit: nothing in it is a verdict of these
        log.info("image cache %s was made by other image checks: every image is checked", printable(str(file)))
        return empty
    return cache


def _save(file: Path, cache: ImageCacheFile) -> None:
    try:
        write_record(file, cache)
    except OSError as exc:  # best effort: the next preflight checks these images again
        log.warning("could not write the image cache %s (%s)", printable(str(file)), exc.strerror or exc)
