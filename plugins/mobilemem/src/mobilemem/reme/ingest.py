"""Ingest one session with ReMe's `auto_memory` job (DESIGN §4.1).

Every turn becomes one AgentScope message with the turn's role, a stable id (`<sid>-t<turn>`,
which names ReMe's saved attachment files) and the session's start time as its timestamp. A text
turn carries its text verbatim; an image turn carries `Image ID: <original path>` and the image
itself (the file's bytes, not resized; an MPO as the PNG of its first frame).
"""

from __future__ import annotations

import asyncio
import base64
import logging
from pathlib import Path, PurePosixPath

from agentscope.message import Base64Source, DataBlock, Msg, TextBlock
from pydantic import BaseModel, ConfigDict
from reme.application import Application

from mobilemem.dataset import CandidateSession, CandidateTurn
from mobilemem.images import image_for_model
from mobilemem.models import raise_if_cancelled

log = logging.getLogger(__name__)


class IngestResponse(BaseModel):
    """What ReMe's auto_memory job returned."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    success: bool
    answer: str
    error_kind: str | None = None  # "interrupted" when the memory agent's reply was cut short
    note_path: str | None = None
    created: bool | None = None
    modified: bool | None = None


def _content(turn: CandidateTurn, dataset_root: Path) -> list[TextBlock | DataBlock]:
    if turn.image is None:
        return [TextBlock(text=turn.text or "")]
    name = PurePosixPath(turn.image.image_id.replace("\\", "/")).name
    image = image_for_model(dataset_root / turn.image.path, name)
    return [TextBlock(text=f"Image ID: {turn.image.image_id}"),
            DataBlock(source=Base64Source(data=base64.b64encode(image.data).decode("ascii"),
                                          media_type=image.media_type), name=image.filename)]


def session_messages(session: CandidateSession, dataset_root: Path) -> list[Msg]:
    return [Msg(id=f"{session.session_id}-t{turn.turn}", name=turn.role, role=turn.role,
                content=_content(turn, dataset_root), created_at=session.event_start_time)
            for turn in session.turns]


async def ingest_session(app: Application, session: CandidateSession, dataset_root: Path) -> IngestResponse:
    """One `auto_memory` call for the session. A failed job gives `success=False` with ReMe's
    message as `answer` (a reason, never memory), and so does an interrupted reply."""
    messages = await asyncio.to_thread(session_messages, session, dataset_root)
    try:
        response = await app.run_job("auto_memory", session_id=session.session_id, messages=messages,
                                     date=session.event_start_time[:10], include_images=True)
    except asyncio.CancelledError:
        raise_if_cancelled()  # the run is being interrupted: not a failure of this session
        return IngestResponse(success=False, answer="the memory agent's reply was interrupted",
                              error_kind="interrupted")
    metadata = response.metadata
    log.debug("session %s: success=%s note=%s", session.session_id, response.success, metadata.get("path"))
    return IngestResponse(success=response.success, answer=str(response.answer or ""),
                          note_path=metadata.get("path"), created=metadata.get("created"),
                          modified=metadata.get("modified"))
