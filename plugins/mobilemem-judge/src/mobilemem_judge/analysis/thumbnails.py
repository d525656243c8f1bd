"""Thumbnails of the images an answer agent read, for the report's detail view: made from the
user's workspace copy (what the agent saw), shrunk with Pillow and inlined as data: URIs once per
image, within a byte budget so a 1,000-question report stays small (past it, the path is shown).
Images are registered while the report is read (`add`) and made together (`make`), on a few
threads: Pillow decodes and resizes without holding the GIL."""

from __future__ import annotations

import base64
import io
import os
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path, PurePosixPath

from PIL import Image, UnidentifiedImageError

from mobilemem.run_reader import DamagedFile, RunReader

SIZE = (128, 128)
QUALITY = 65
BUDGET_BYTES = 3_000_000  # about 1,000 photos' thumbnails
IMAGES_FOLDER = PurePosixPath("session/images")  # where ReMe saved the ingested images


class Thumbnails:
    def __init__(self, reader: RunReader, budget_bytes: int = BUDGET_BYTES) -> None:
        self._reader = reader
        self._budget = budget_bytes
        self._pending: dict[str, Path] = {}
        self.uris: dict[str, str] = {}
        self.missing: dict[str, str] = {}  # key -> why no thumbnail
        self.bytes = 0

    def add(self, user_id: int, path: str) -> str:
        """The key under which this image's thumbnail (`uris`) or the reason for none (`missing`) will be."""
        key = f"{user_id}/{path}"
        if key in self._pending or key in self.missing:
            return key
        workspace = self._reader.run.user(user_id).workspace
        relative = PurePosixPath(path)
        if relative.is_absolute() or ".." in relative.parts or not relative.is_relative_to(IMAGES_FOLDER):
            self.missing[key] = "not a saved image of the workspace"
            return key
        try:
            target = self._reader.confined(workspace / relative)
        except FileNotFoundError:
            self.missing[key] = "the image is no longer in the workspace"
        except DamagedFile as exc:
            self.missing[key] = f"not shown: {exc.why}"
        else:
            self._pending[key] = target
        return key

    def make(self) -> None:
        """Make the registered thumbnails, in the order they were first seen, until the budget is spent."""
        keys = list(self._pending)
        with ThreadPoolExecutor(max_workers=min(4, os.cpu_count() or 1)) as pool:
            made = list(pool.map(self._thumbnail_or_reason, (self._pending[k] for k in keys)))
        self._pending.clear()
        for key, result in zip(keys, made):
            if isinstance(result, str):
                self.missing[key] = result
            elif self.bytes + len(result) > self._budget:
                self.missing[key] = "thumbnail left out: the report's image budget is spent"
            else:
                self.uris[key] = "data:image/jpeg;base64," + base64.b64encode(result).decode("ascii")
                self.bytes += len(result)


    def _thumbnail_or_reason(self, path: Path) -> bytes | str:
        try:
            data = self._reader.bytes_of(path)
        except DamagedFile as exc:
            return f"cannot be shown: {exc.why}"
        return _thumbnail(data) if data is not None else "the image is no longer in the workspace"


def _thumbnail(data: bytes) -> bytes | str:
    try:
        with Image.open(io.BytesIO(data)) as image:  # an MPO opens at its first picture, the one the agent was shown
            image.draft("RGB", SIZE)  # JPEG: decode at reduced size, much faster for large photos
            picture = image.convert("RGB")
        picture.thumbnail(SIZE, resample=Image.Resampling.BILINEAR, reducing_gap=2.0)
        out = io.BytesIO()
        picture.save(out, format="JPEG", quality=QUALITY)
        return out.getvalue()
    except (OSError, UnidentifiedImageError, Image.DecompressionBombError) as exc:
        return f"cannot be shown: {type(exc).__name__}"
