"""The files the runner itself writes into `memory/` (DESIGN §4.1).

- `session/dialog/<sid>.jsonl`: one `DialogLine` per turn, verbatim text or Image ID + saved path;
- `session/images/<sid>/<file>`: each image exactly as the model received it (MPO as PNG);
- `daily/<date>/<name>.md`: a note from `daily_write`, with YAML front matter pinned by the runner;
- `daily/<date>.md`: that day's digest, listing its notes with their names and descriptions.
"""

from __future__ import annotations

import base64
import re
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path, PurePosixPath

import yaml

from mobilemem.candidate.workspace import Workspace
from mobilemem.dataset import CandidateSession
from mobilemem.images import ModelImage, image_for_model
from mobilemem.records import DialogLine
from mobilemem.rundir import write_bytes_atomic

MAX_NAME = 80
_UNSAFE = re.compile(r"[^\w-]+")


@dataclass(frozen=True)
class SavedImage:
    image_id: str
    memory_path: str  # memory-relative, e.g. session/images/3_7/photo.png
    image: ModelImage

    @cached_property
    def base64(self) -> str:
        return base64.b64encode(self.image.data).decode("ascii")


def save_images(session: CandidateSession, dataset_root: Path, ws: Workspace) -> dict[int, SavedImage]:
    """Copy the session's images (as the model receives them) into memory; by turn position."""
    saved: dict[int, SavedImage] = {}
    names: dict[str, str] = {}  # saved file name -> Image ID
    folder = ws.images(session.session_id)
    for position, turn in enumerate(session.turns, start=1):
        if turn.image is None:
            continue
        image = image_for_model(dataset_root / turn.image.path, PurePosixPath(turn.image.image_id.replace("\\", "/")).name)
        name, n = image.filename, 1
        while names.get(name, turn.image.image_id) != turn.image.image_id:  # an MPO's .png next to a real .png
            n += 1
            name = f"{PurePosixPath(image.filename).stem}-{n}{PurePosixPath(image.filename).suffix}"
        names[name] = turn.image.image_id
        target = folder / name
        if not target.exists():
            write_bytes_atomic(target, image.data)
        saved[position] = SavedImage(turn.image.image_id, ws.relative(target), image)
    return saved


def dialog_path(ws: Workspace, session_id: str) -> Path:
    return ws.dialog / f"{session_id}.jsonl"


def write_dialog(session: CandidateSession, images: dict[int, SavedImage], ws: Workspace) -> str:
    """Write the session transcript; return its memory-relative path."""
    lines = []
    for position, turn in enumerate(session.turns, start=1):
        saved = images.get(position)
        line = DialogLine(line=position, role=turn.role, time=session.event_start_time, text=turn.text,
                          image_id=saved.image_id if saved else None, saved_as=saved.memory_path if saved else None)
        lines.append(line.model_dump_json(exclude={"schema_version"}))
    path = dialog_path(ws, session.session_id)
    write_bytes_atomic(path, ("\n".join(lines) + "\n").encode("utf-8"))
    return ws.relative(path)


def safe_note_name(name: str) -> str:
    cleaned = _UNSAFE.sub("-", name.strip().lower()).strip("-_.")
    return cleaned[:MAX_NAME].rstrip("-_.") or "note"


@dataclass(frozen=True)
class NoteContext:
    """What the runner pins on every note of one session."""

    date: str  # YYYY-MM-DD of the session start
    session_id: str
    source_conversation: str
    source_images: tuple[str, ...]


def write_note(ws: Workspace, context: NoteContext, name: str, description: str, content: str) -> str:
    """Write a note under the session's date with a free name; return its memory-relative path."""
    for field, value in (("name", name), ("description", description), ("content", content)):
        if not isinstance(value, str):
            raise ValueError(f"daily_write: `{field}` must be text")
    folder = ws.daily / context.date
    base = safe_note_name(name)
    stem, n = base, 1
    while (folder / f"{stem}.md").exists():
        n += 1
        stem = f"{base}-{n}"
    front = {"name": stem, "description": " ".join(description.split()), "session_id": context.session_id,
             "source_conversation": context.source_conversation, "source_images": list(context.source_images)}
    text = "---\n" + yaml.safe_dump(front, allow_unicode=True, sort_keys=False) + "---\n\n" + content.rstrip() + "\n"
    path = folder / f"{stem}.md"
    write_bytes_atomic(path, text.encode("utf-8"))
    return ws.relative(path)


def _front_matter(path: Path) -> dict:
    text = path.read_text(encoding="utf-8")
    if not text.startswith("---\n"):
        return {}
    data = yaml.safe_load(text[4:].split("\n---\n", 1)[0])
    return data if isinstance(data, dict) else {}


def refresh_digest(ws: Workspace, date: str) -> str | None:
    """Rewrite `daily/<date>.md` from that day's notes; None when the day has no note."""
    notes = sorted((ws.daily / date).glob("*.md")) if (ws.daily / date).is_dir() else []
    if not notes:
        return None
    lines = [f"# {date}", ""]
    for note in notes:
        front = _front_matter(note)
        lines.append(f"- [{front.get('name', note.stem)}]({date}/{note.name}) "
                     f"(session {front.get('session_id', '?')}): {front.get('description', '')}")
    path = ws.daily / f"{date}.md"
    write_bytes_atomic(path, ("\n".join(lines) + "\n").encode("utf-8"))
    return ws.relative(path)
