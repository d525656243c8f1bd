"""Finding, checking and preparing the dataset's images (DESIGN §3).

A reference such as `image/uid0/camera photos/0_event_0.png` is resolved by (user, basename) only:
its folder parts are published aliases and are never followed. The extracted `image/` folder is
walked once; every file under a `uid<N>` folder is indexed by its name and, for names that
`python -m zipfile -e` decoded as cp437 from GBK bytes, also by the repaired name.
Formats are detected from the bytes. Images go to the model unchanged, except MPO files, which
are sent as their first picture converted to PNG. Preflight decodes every picture that is sent
(frame 0) in full, one per core at a time (`inspect_images`), once per file state (`image_cache`).
Once its header names a supported format, a file is read once: its sha256 (`ImageInfo.sha256`,
the image's identity in fingerprints and run.json) and every check and decode are of those bytes.
"""

from __future__ import annotations

import hashlib
import io
import os
import re
import struct
import unicodedata
import warnings
from collections import defaultdict
from collections.abc import Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath

from PIL import Image

from mobilemem.dataset_text import text_problem
from mobilemem.jpeg_markers import jpeg_structure_problem
from mobilemem.png_data import png_data_problem

SUPPORTED_FORMATS = {"JPEG": "image/jpeg", "PNG": "image/png", "WEBP": "image/webp", "GIF": "image/gif",
                     "MPO": "image/png"}
_PARSED_FORMATS = ["JPEG", "PNG", "WEBP", "GIF"]  # Pillow reads MPO with its JPEG parser
_USER_DIR = re.compile(r"^uid([0-9]+)$")
MAX_SHOWN_REFERENCE = 200  # characters of a reference quoted in a problem
# every core, at most 16 pictures in memory; Pillow releases the GIL while it decodes (bench/README.md)
DECODE_THREADS = min(16, len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1)
# what a broken stream raises (IndexError: PngImagePlugin's verify() on some chunk layouts)
_DECODE_ERRORS = (OSError, ValueError, SyntaxError, EOFError, IndexError, struct.error)


class ImageProblem(Exception):
    """An image reference or file that cannot be used; the message names the reason."""


@dataclass(frozen=True)
class ImageInfo:
    format: str
    width: int
    height: int
    size: int
    sha256: str  # of the bytes that were checked and decoded


@dataclass(frozen=True)
class ModelImage:
    """What the model receives for one image: bytes, media type and the file name to save it as."""

    data: bytes
    media_type: str
    filename: str


@dataclass
class ImageIndex:
    """Extracted image files by (user, normalised basename); built once per dataset."""

    root: Path
    files: dict[tuple[int, str], list[Path]] = field(default_factory=lambda: defaultdict(list))
    escapes: list[Path] = field(default_factory=list)

    def resolve(self, user_id: int, reference: str) -> Path:
        """The one file that `reference` names for `user_id`, or `ImageProblem`."""
        name = reference_basename(reference)
        matches = self.files.get((user_id, name), [])
        if not matches:
            raise ImageProblem(f"image {quoted(reference)} matches no file under uid{user_id}/ in {self.root.name}/")
        if len(matches) > 1:
            listed = ", ".join(sorted(printable(str(p.relative_to(self.root))) for p in matches))
            raise ImageProblem(f"image {quoted(reference)} matches {len(matches)} files: {listed}")
        return matches[0]


def printable(text: str) -> str:
    """`text` with every non-printable character escaped, so a file name stays on its problem's line."""
    return "".join(ch if ch.isprintable() else repr(ch)[1:-1] for ch in text)


def quoted(reference: str) -> str:
    """A reference as quoted in a problem: its repr, cut after `MAX_SHOWN_REFERENCE` characters."""
    if len(reference) <= MAX_SHOWN_REFERENCE:
        return repr(reference)
    return f"{reference[:MAX_SHOWN_REFERENCE]!r}... ({len(reference)} characters)"


def _normal(name: str) -> str:
    return unicodedata.normalize("NFC", name)


def reference_basename(reference: str) -> str:
    """The file name a reference points at; its folder parts are ignored, never followed."""
    if "\x00" in reference or any(ord(ch) < 32 for ch in reference):
        raise ImageProblem(f"image reference {quoted(reference)} contains control characters")
    if problem := text_problem(reference):
        raise ImageProblem(f"image reference {quoted(reference)} {problem}")
    name = reference.replace("\\", "/").rsplit("/", 1)[-1]
    if name in {"", ".", ".."}:
        raise ImageProblem(f"image reference {quoted(reference)} names no file")
    return _normal(name)


def _name_variants(name: str) -> set[str]:
    """The name as extracted, plus GBK names that zipfile decoded as cp437 (no UTF-8 flag)."""
    variants = {_normal(name)}
    try:
        raw = name.encode("cp437")
    except UnicodeEncodeError:
        return variants
    for encoding in ("gbk", "utf-8"):
        try:
            variants.add(_normal(raw.decode(encoding)))
        except UnicodeDecodeError:
            pass
    return variants


def build_index(image_root: Path, dataset_root: Path) -> ImageIndex:
    """Walk `image_root` once (never following links) and index every file under `uid<N>/`."""
    index = ImageIndex(root=image_root)
    real_dataset = dataset_root.resolve()
    for folder, dirs, names in os.walk(image_root, followlinks=False):
        here = Path(folder)
        rel_parts = here.relative_to(image_root).parts
        user_id = next((int(m.group(1)) for part in reversed(rel_parts) if (m := _USER_DIR.match(part))), None)
        for name in [*names, *dirs]:
            path = here / name
            # realpath, unlike Path.resolve() on Python < 3.13, does not raise on a link loop
            if path.is_symlink() and not Path(os.path.realpath(path)).is_relative_to(real_dataset):
                index.escapes.append(path)
                continue
            if name in dirs or user_id is None:
                continue
            for variant in _name_variants(name):
                index.files[(user_id, variant)].append(path)
    return index


def _check_trailer(data: bytes, fmt: str) -> None:
    tail = data[-16:]
    truncated = (
        (fmt in {"JPEG", "MPO"} and b"\xff\xd9" not in tail)
        or (fmt == "PNG" and b"IEND" not in tail)
        or (fmt == "GIF" and not tail.endswith(b";"))
        or (fmt == "WEBP" and int.from_bytes(data[4:8], "little") + 8 > len(data))
    )
    if truncated:
        raise ImageProblem(f"is a truncated {fmt} file (its end marker is missing)")


class _FileBytes(io.BytesIO):
    """A file's bytes, read once, that Pillow quotes by the file's name (as it would quote a path)."""

    def __init__(self, data: bytes, name: str) -> None:
        super().__init__(data)
        self.file_name = name

    def __repr__(self) -> str:
        return repr(self.file_name)


def inspect_image(path: Path) -> ImageInfo:
    """Check that `path` is a complete image of a supported format within Pillow's bomb limit, whose
    picture that is sent (frame 0) decodes in full."""
    with _bomb_warnings_as_errors():
        return _inspect(path)


def inspect_images(paths: Sequence[Path], threads: int | None = None) -> dict[Path, ImageInfo | ImageProblem]:
    """`inspect_image` of every path, `threads` (default `DECODE_THREADS`) at a time: the info, or the problem."""
    Image.init()  # register every plugin before the threads open files
    with _bomb_warnings_as_errors(), ThreadPoolExecutor(max_workers=threads or DECODE_THREADS) as pool:
        return dict(zip(paths, pool.map(_inspect_or_problem, paths), strict=True))


@contextmanager
def _bomb_warnings_as_errors() -> Iterator[None]:
    """Pillow's DecompressionBombWarning raised as an error. The warnings filter is process-wide
    state, so `inspect_images` sets it once around all its threads, never inside one."""
    with warnings.catch_warnings():
        warnings.simplefilter("error", Image.DecompressionBombWarning)
        yield


def _inspect_or_problem(path: Path) -> ImageInfo | ImageProblem:
    try:
        return _inspect(path)
    except ImageProblem as exc:
        return exc


def _inspect(path: Path) -> ImageInfo:
    if path.is_symlink() or not path.is_file():
        raise ImageProblem("is not a regular file")
    if path.stat().st_size == 0:
        raise ImageProblem("is empty (0 bytes)")
    try:
        # no other parser runs; a file is read in full only once one of them accepts its header
        Image.open(path, formats=_PARSED_FORMATS).close()
        data = path.read_bytes()
        with Image.open(_FileBytes(data, path.name), formats=_PARSED_FORMATS) as img:
            fmt, (width, height) = img.format or "", img.size
            if fmt in SUPPORTED_FORMATS:
                _check_trailer(data, fmt)
                _decode(img, data, path.name, fmt)
    except (Image.DecompressionBombError, Image.DecompressionBombWarning) as exc:
        raise ImageProblem(f"exceeds Pillow's decompression-bomb limit: {exc}") from None
    except Image.UnidentifiedImageError as exc:
        other = _signature_format(path)  # named by its signature, never parsed
        raise ImageProblem(_unsupported(other) if other else _unreadable(path, exc)) from None
    except _DECODE_ERRORS as exc:
        raise ImageProblem(_unreadable(path, exc)) from None
    if fmt not in SUPPORTED_FORMATS:
        raise ImageProblem(_unsupported(fmt))
    return ImageInfo(format=fmt, width=width, height=height, size=len(data),
                     sha256=hashlib.sha256(data).hexdigest())


def _decode(img: Image.Image, data: bytes, name: str, fmt: str) -> None:
    """Decode frame 0 in full (never a `draft`): a file can be framed well and still hold a
    broken stream. PNG chunk CRCs and the amount of PNG image data, and the JPEG marker structure,
    are checked as well, since Pillow reads no IDAT CRC, accepts a zlib stream that ends early
    (`mobilemem.png_data`) and does not report the corrupt data libjpeg skips over."""
    try:
        broken = None
        if fmt == "PNG" and not img.tile:
            broken = "has no image data (no IDAT chunk)"  # verify() would raise IndexError
        elif fmt == "PNG":
            with Image.open(_FileBytes(data, name), formats=["PNG"]) as again:
                again.verify()
        elif fmt in {"JPEG", "MPO"}:
            broken = jpeg_structure_problem(data, later_frames=fmt != "MPO")
        if not broken:
            img.load()  # what Pillow finds broken, it names
            broken = png_data_problem(data) if fmt == "PNG" else None
        if broken:
            raise ImageProblem(f"is a corrupt {fmt} file: {printable(name)} {broken}")
    except _DECODE_ERRORS as exc:
        raise ImageProblem(f"is a corrupt {fmt} file: {printable(name)} does not decode "
                           f"({type(exc).__name__}: {printable(str(exc))})") from None


def _unsupported(fmt: str) -> str:
    return f"has format {fmt or 'unknown'}, which is not supported ({', '.join(SUPPORTED_FORMATS)} are)"


def _unreadable(path: Path, exc: Exception) -> str:
    return f"is not a readable image ({type(exc).__name__}: {printable(str(exc).replace(str(path), path.name))})"


def _signature_format(path: Path) -> str | None:
    """The unsupported format whose signature starts the file, judged from its first 16 bytes only:
    Pillow's parsers of other formats never run on dataset bytes (some raise NotImplementedError or
    MemoryError on hostile headers)."""
    with path.open("rb") as handle:
        prefix = handle.read(16)
    Image.init()
    for name, (_factory, accept) in Image.OPEN.items():
        if name in SUPPORTED_FORMATS or accept is None:
            continue
        try:
            verdict = accept(prefix)
        except (IndexError, TypeError, SyntaxError, struct.error):  # what Pillow's own open tolerates
            continue
        if verdict and not isinstance(verdict, str):  # a str is Pillow's warning, not a match
            return name
    return None


def image_for_model(path: Path, name: str | None = None) -> ModelImage:
    """The bytes sent to the model: unchanged, except MPO -> PNG of its first picture.

    `name` is the file name to save it as (default: the file's own name); pass the reference's
    basename so that names zipfile extracted as mojibake are saved under their real name.
    """
    name = name or path.name
    data = path.read_bytes()
    with Image.open(io.BytesIO(data)) as img:
        fmt = img.format or ""
        if fmt != "MPO":
            return ModelImage(data=data, media_type=SUPPORTED_FORMATS[fmt], filename=name)
        img.seek(0)
        frame = img if img.mode in {"RGB", "L"} else img.convert("RGB")
        out = io.BytesIO()
        frame.save(out, format="PNG")
    return ModelImage(data=out.getvalue(), media_type="image/png", filename=f"{PurePosixPath(name).stem}.png")
