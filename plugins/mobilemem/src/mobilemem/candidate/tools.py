"""The answer agent's three memory tools (DESIGN §4.3), confined to one user's `memory/`.

`bm25_search(query, limit=5)`, `read(path, start_line=None, end_line=None)` and
`read_image(image_id)`. A bad argument raises with a message written for the model; AgentScope
turns it into a tool error the agent sees, and the answer goes on.
"""

from __future__ import annotations

import base64
import io
import json
from dataclasses import dataclass, field
from pathlib import Path

from agentscope.message import Base64Source, DataBlock, TextBlock
from agentscope.tool import FunctionTool, ToolChunk
from PIL import Image

from mobilemem.candidate.agent import allowed_tool
from mobilemem.candidate.index import MemoryIndex
from mobilemem.candidate.workspace import Workspace
from mobilemem.errors import WorkspaceEscape
from mobilemem.images import SUPPORTED_FORMATS
from mobilemem.records import DialogLine

MAX_LIMIT = 20
MAX_QUERY = 2_000
MAX_READ_LINES = 200
MAX_READ_CHARS = 20_000
IMAGE_SUFFIXES = {".png", ".jpg", ".jpeg", ".webp", ".gif"}


@dataclass(frozen=True)
class UserMemory:
    """What the answer tools read: the workspace, its index, and the saved images by Image ID."""

    ws: Workspace
    index: MemoryIndex
    images: dict[str, str]  # Image ID -> memory-relative path

    @classmethod
    def load(cls, ws: Workspace) -> UserMemory:
        images = {}
        for file in sorted(ws.dialog.glob("*.jsonl")):
            for raw in file.read_text(encoding="utf-8").splitlines():
                line = DialogLine.model_validate_json(raw)
                if line.image_id and line.saved_as:
                    images.setdefault(line.image_id, line.saved_as)
        return cls(ws=ws, index=MemoryIndex.load(ws.index), images=images)


def _render_dialog_line(raw: str) -> str:
    line = DialogLine.model_validate_json(raw)
    body = line.text if line.image_id is None else f"Image ID: {line.image_id} (saved as {line.saved_as})"
    return f"[L{line.line} | {line.role} @ {line.time}] {body}"


@dataclass
class MemoryTools:
    memory: UserMemory
    sent_images: dict[str, str] = field(default_factory=dict)  # base64 payload -> memory path

    def function_tools(self) -> list[FunctionTool]:
        return [allowed_tool(self.bm25_search), allowed_tool(self.read), allowed_tool(self.read_image)]

    def bm25_search(self, query: str, limit: int = 5) -> str:
        """Keyword search over your memory notes and session transcripts.

        Args:
            query: the words to look for
            limit: how many hits to return (1 to 20)
        """
        if not isinstance(query, str) or not query.strip():
            raise ValueError("bm25_search needs a non-empty `query` text")
        if len(query) > MAX_QUERY:
            raise ValueError(f"the query is longer than {MAX_QUERY} characters: use a few key words")
        limit = max(1, min(MAX_LIMIT, limit if isinstance(limit, int) else 5))
        hits = self.memory.index.search(query, limit)
        if not hits:
            return f"No memory matched {query!r}. Try other words."
        return "\n\n".join(f"[{n}] {hit.chunk.path}:{hit.chunk.start}-{hit.chunk.end} (score {hit.score:.3f})\n"
                           f"{hit.chunk.text}" for n, hit in enumerate(hits, start=1))

    def read(self, path: str, start_line: int | None = None, end_line: int | None = None) -> str:
        """Read a memory file, or some of its lines (1-based, inclusive).

        Args:
            path: the memory path, e.g. daily/2025-03-15/trip.md or session/dialog/3_7.jsonl
            start_line: the first line to show (default 1)
            end_line: the last line to show (default: up to 200 lines)
        """
        target = self.memory.ws.resolve(path)
        if target.is_dir():
            entries = sorted(self.memory.ws.relative(p) + ("/" if p.is_dir() else "") for p in target.iterdir())
            return "\n".join(entries) or "(empty folder)"
        if not target.is_file():
            raise ValueError(f"no memory file {path!r}: use bm25_search to find paths")
        if target.suffix.lower() in IMAGE_SUFFIXES:
            raise ValueError(f"{path!r} is an image: look at it with read_image")
        lines = target.read_text(encoding="utf-8").splitlines()
        if target.suffix == ".jsonl":
            lines = [_render_dialog_line(raw) for raw in lines]
        return _window(self.memory.ws.relative(target), lines, start_line, end_line)

    def read_image(self, image_id: str) -> ToolChunk:
        """Look at an image the user shared.

        Args:
            image_id: its Image ID as written in notes and transcripts, or its memory path (session/images/...)
        """
        if not isinstance(image_id, str) or not image_id.strip():
            raise ValueError("read_image needs an `image_id`")
        relative = self.memory.images.get(image_id.strip())
        if relative is None:
            try:
                target = self.memory.ws.resolve(image_id.strip())
            except WorkspaceEscape as exc:
                raise ValueError(f"no image with Image ID {image_id[:200]!r} ({exc})") from None
            if not (target.is_file() and target.suffix.lower() in IMAGE_SUFFIXES
                    and self.memory.ws.relative(target).startswith("session/images/")):
                raise ValueError(f"no image with Image ID {image_id[:200]!r}: copy the Image ID exactly from a note")
            relative = self.memory.ws.relative(target)
        return self._image_chunk(image_id.strip(), relative)

    def _image_chunk(self, image_id: str, relative: str) -> ToolChunk:
        data = (self.memory.ws.memory / relative).read_bytes()
        with Image.open(io.BytesIO(data)) as img:
            media_type = SUPPORTED_FORMATS.get(img.format or "", "image/png")
        payload = base64.b64encode(data).decode("ascii")
        self.sent_images[payload] = relative
        return ToolChunk(content=[TextBlock(text=f"Image ID: {image_id} (saved as {relative})"),
                                  DataBlock(source=Base64Source(data=payload, media_type=media_type),
                                            name=Path(relative).name)])


def _window(name: str, lines: list[str], start: int | None, end: int | None) -> str:
    total = len(lines)
    first = max(1, start if isinstance(start, int) else 1)
    last = min(total, end if isinstance(end, int) else first + MAX_READ_LINES - 1, first + MAX_READ_LINES - 1)
    if total == 0 or first > total:
        return f"{name} has {total} lines; nothing at line {first}."
    shown, used = [], 0
    for number in range(first, last + 1):
        text = f"{number:>5}| {lines[number - 1]}"[:MAX_READ_CHARS]
        if used + len(text) > MAX_READ_CHARS and shown:
            last = number - 1
            break
        shown.append(text)
        used += len(text) + 1
    notice = "" if last >= total else \
        f"\n[lines {first}-{last} of {total}; to continue: read(path={json.dumps(name)}, start_line={last + 1})]"
    return "\n".join(shown) + notice
