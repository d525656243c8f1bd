"""Thumbnails of the images an answer agent read, for the report's detail view: made from the
user's workspace copy (what the agent saw), shrunk with Pillow and inlined as data: URIs once per
image, within a byte budget so a 1,000-question report stays small (past it, the path is shown)."""

from __future__ import annotations

import base64
import io
from pathlib import Path, PurePosixPath

from PIL import Image, UnidentifiedImageError

from mobilemem.rundir import RunDir

SIZE = (160, 160)
QUALITY = 70
BUDGET_BYTES = 4_000_000
IMAGES_FOLDER = PurePosixPath("session/images")  # where ReMe saved the ingested images


class Thumbnails:
    def __init__(self, run_root: Path, budget_bytes: int = BUDGET_BYTES) -> None:
        self._run = RunDir(run_root)
        self._budget = budget_bytes
        self.uris: dict[str, str] = {}
        self.missing: dict[str, str] = {}  # key -> why no thumbnail
        self.bytes = 0

    def add(self, user_id: int, path: str) -> str:
        """The key of this image's thumbnail (in `uris`, or in `missing` with the reason)."""
        key = f"{user_id}/{path}"
        if key in self.uris or key in self.missing:
            return key
        workspace = self._run.user(user_id).workspace.resolve()
        target = (workspace / path).resolve()
        if not target.is_relative_to(workspace / IMAGES_FOLDER):
            self.missing[key] = "not a saved image of the workspace"
        elif not target.is_file():
            self.missing[key] = "the image is no longer in the workspace"
        elif self.bytes >= self._budget:
            self.missing[key] = "thumbnail left out: the report's image budget is spent"
        else:
            try:
                data = _thumbnail(target)
            except (OSError, UnidentifiedImageError, Image.DecompressionBombError) as exc:
                self.missing[key] = f"cannot be shown: {type(exc).__name__}"
            else:
                self.uris[key] = "data:image/jpeg;base64," + base64.b64encode(data).decode("ascii")
                self.bytes += len(data)
        return key


def _thumbnail(path: Path) -> bytes:
    with Image.open(path) as image:  # an MPO opens at its first picture, the one the agent was shown
        image.draft("RGB", SIZE)  # JPEG: decode at reduced size, much faster for large photos
        picture = image.convert("RGB")
    picture.thumbnail(SIZE)
    out = io.BytesIO()
    picture.save(out, format="JPEG", quality=QUALITY, optimize=True)
    return out.getvalue()
