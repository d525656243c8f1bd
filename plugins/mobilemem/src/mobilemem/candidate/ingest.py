"""auto_memory: one fresh agent writes the memory notes of one session (DESIGN §4.1).

The runner first saves the session's images and transcript into `memory/`, then renders the
session as one user message that interleaves, in turn order, `[L<n> | <role> @ <time>] <text>`
lines and, for image turns, an `Image ID: <id> (saved as <path>)` line followed by the image
itself. The agent's only tool is `daily_write(name, description, content)`; the note's date,
session and sources are pinned by the runner. Usage is the caller's: its scope sees every request.
"""

from __future__ import annotations

import logging
from pathlib import Path

from agentscope.message import Base64Source, DataBlock, TextBlock, UserMsg
from agentscope.model import ChatModelBase
from pydantic import BaseModel, ConfigDict

from mobilemem.candidate.agent import allowed_tool, build_agent, reply_outcome, save_trajectory
from mobilemem.candidate.memory_files import (
    NoteContext,
    SavedImage,
    refresh_digest,
    save_images,
    write_dialog,
    write_note,
)
from mobilemem.candidate.workspace import Workspace
from mobilemem.config import CandidatePreset
from mobilemem.dataset import CandidateSession
from mobilemem.errors import describe
from mobilemem.models import MODEL_CALL_ERRORS, failure_kind, raise_if_cancelled
from mobilemem.prompts import prompt
from mobilemem.records import FinishedReason

log = logging.getLogger(__name__)


class IngestResponse(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)
    success: bool
    notes_written: list[str]
    finished_reason: FinishedReason | None
    trajectory_path: str | None
    error_kind: str | None = None
    error: str | None = None


def render_session(session: CandidateSession, images: dict[int, SavedImage], transcript: str) -> UserMsg:
    """The session as one multimodal user message (text lines and images in turn order)."""
    header = prompt("auto_memory_session").strip().format(
        session_id=session.session_id, start=session.event_start_time, end=session.event_end_time,
        transcript=transcript)
    blocks: list[TextBlock | DataBlock] = []
    lines = [header]
    for position, turn in enumerate(session.turns, start=1):
        prefix = f"[L{position} | {turn.role} @ {session.event_start_time}]"
        saved = images.get(position)
        if saved is None:
            lines.append(f"{prefix} {turn.text}")
            continue
        lines.append(f"{prefix} Image ID: {saved.image_id} (saved as {saved.memory_path})")
        blocks.append(TextBlock(text="\n".join(lines)))
        blocks.append(DataBlock(source=Base64Source(data=saved.base64, media_type=saved.image.media_type),
                                name=saved.image.filename))
        lines = []
    if lines:
        blocks.append(TextBlock(text="\n".join(lines)))
    return UserMsg(name="user", content=blocks)


def _daily_write_tool(ws: Workspace, context: NoteContext, written: list[str]):
    def daily_write(name: str, description: str, content: str) -> str:
        """Save one memory note about this session.

        Args:
            name: a short file name for the note, e.g. kayaking-at-lisbon-harbour
            description: one line saying what the note is about
            content: the note itself, in Markdown
        """
        path = write_note(ws, context, name, description, content)
        written.append(path)
        return f"Saved {path}."

    return allowed_tool(daily_write)


async def ingest_session(session: CandidateSession, dataset_root: Path, ws: Workspace, model: ChatModelBase,
                         preset: CandidatePreset) -> IngestResponse:
    """Write the session into memory with a fresh auto_memory agent.

    A model call that fails (HTTP error, timeout, broken stream) or an interrupted reply gives
    `success=False`; any other exception propagates to the caller.
    """
    images = save_images(session, dataset_root, ws)
    transcript = write_dialog(session, images, ws)
    context = NoteContext(date=session.event_start_time[:10], session_id=session.session_id,
                          source_conversation=transcript,
                          source_images=tuple(dict.fromkeys(s.memory_path for s in images.values())))
    written: list[str] = []
    agent = build_agent("auto_memory", prompt("auto_memory_system"), model,
                        [_daily_write_tool(ws, context, written)], preset)
    trajectory = ws.trajectories / f"ingest-{session.session_id}.json"
    finished, error, kind = None, None, None
    try:
        reply = await agent.reply(render_session(session, images, transcript))
        raise_if_cancelled()
        finished, error = reply_outcome(reply)
        kind = finished if error else None
    except MODEL_CALL_ERRORS as exc:
        raise_if_cancelled()  # a request cut short by an interrupt is not a failure
        error, kind = describe(exc), failure_kind(exc)
    finally:
        refresh_digest(ws, context.date)
        save_trajectory(agent, trajectory, {s.base64: s.memory_path for s in images.values()})
        agent.state.context.clear()  # the agent is cyclic garbage: free its images now, not at the next full GC
    log.debug("session %s: %d notes, %s", session.session_id, len(written), finished or error)
    return IngestResponse(success=error is None, notes_written=written, finished_reason=finished,
                          trajectory_path=trajectory.relative_to(ws.root).as_posix(), error_kind=kind, error=error)
