"""One user's memory workspace (DESIGN §4) and the confinement of every tool path to `memory/`.

    workspace/
      memory/                     what the tools may read
        daily/<YYYY-MM-DD>.md     the day's digest (runner-written)
        daily/<YYYY-MM-DD>/*.md   notes written by auto_memory
        session/dialog/<sid>.jsonl
        session/images/<sid>/<file>
      index/                      the BM25 index (runner-only)
      trajectories/               native AgentScope state (never readable by tools)

Paths given by a model are memory-relative (`daily/...`, optionally prefixed `memory/`). Anything
else — absolute paths, `..`, URLs such as `file://`, percent-encoded escapes, backslashes, control
characters, or a symlink whose target leaves `memory/` — raises `WorkspaceEscape`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from mobilemem.errors import WorkspaceEscape

MAX_TOOL_PATH = 1_000
_URL = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*:")
_ENCODED = re.compile(r"%[0-9A-Fa-f]{2}")


@dataclass(frozen=True)
class Workspace:
    root: Path

    @property
    def memory(self) -> Path:
        return self.root / "memory"

    @property
    def daily(self) -> Path:
        return self.memory / "daily"

    @property
    def dialog(self) -> Path:
        return self.memory / "session" / "dialog"

    def images(self, session_id: str) -> Path:
        return self.memory / "session" / "images" / session_id

    @property
    def index(self) -> Path:
        return self.root / "index"

    @property
    def trajectories(self) -> Path:
        return self.root / "trajectories"

    def create(self) -> Workspace:
        for folder in (self.daily, self.dialog, self.memory / "session" / "images", self.trajectories):
            folder.mkdir(parents=True, exist_ok=True)
        return self

    def relative(self, path: Path) -> str:
        """The memory-relative name of a file inside `memory/` (what tools show and accept)."""
        return path.relative_to(self.memory).as_posix()

    def resolve(self, name: str) -> Path:
        """The file inside `memory/` that a tool argument names, or `WorkspaceEscape`."""
        if not isinstance(name, str) or not name.strip():
            raise WorkspaceEscape("give a memory path such as daily/2025-03-15.md")
        if len(name) > MAX_TOOL_PATH:
            raise WorkspaceEscape(f"path is longer than {MAX_TOOL_PATH} characters")
        if any(ord(ch) < 32 or ord(ch) == 127 for ch in name):
            raise WorkspaceEscape("path contains control characters")
        if _URL.match(name):
            raise WorkspaceEscape(f"URLs are not memory paths: {name[:80]!r}")
        if _ENCODED.search(name):
            raise WorkspaceEscape("percent-encoded paths are not accepted")
        if "\\" in name:
            raise WorkspaceEscape("use '/' between folders")
        pure = PurePosixPath(name.strip())
        if pure.is_absolute() or name.startswith("~"):
            raise WorkspaceEscape("absolute paths are not accepted: use a path inside memory/")
        if ".." in pure.parts:
            raise WorkspaceEscape("'..' is not accepted in memory paths")
        parts = pure.parts[1:] if pure.parts[:1] == ("memory",) else pure.parts
        target = self.memory.joinpath(*parts)
        if not target.resolve().is_relative_to(self.memory.resolve()):
            raise WorkspaceEscape("that path leads outside memory/")
        return target
