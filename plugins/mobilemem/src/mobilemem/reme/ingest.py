"""Ingest one session with ReMe's `auto_memory` job (DESIGN §4.1).

Every turn becomes one AgentScope message with the turn's role, a stable id (`<sid>-t<turn>`,
`mobilemem.message_ids`; it names ReMe's saved attachment files) and the session's start time as
its timestamp. A text turn carries its text verbatim; an image turn carries `Image ID: <original
path>` and the image itself (the file's bytes, not resized; an MPO as the PNG of its first frame).
"""

from __future__ import annotations

import asyncio
import base64
import logging
from pathlib import Path, PurePosixPath

from agentscope.message import Base64Source, DataBlock, Msg, TextBlock
from reme.application import Application

from mobilemem import usage
from mobilemem.candidate import IngestResponse
from mobilemem.dataset import CandidateSession, CandidateTurn
from mobilemem.failure_kinds import FailureKind
from mobilemem.images import image_for_model
from mobilemem.message_ids import message_id
from mobilemem.models import within_budget
from mobilemem.records import Failure

log = logging.getLogger(__name__)


def _content(turn: CandidateTurn, dataset_root: Path, msg_id: str, time: str) -> list[TextBlock | DataBlock]:
    stamp = {"created_at": time, "finished_at": time}  # the dataset's time, not the wall clock
    if turn.image is None:
        return [TextBlock(id=f"{msg_id}-text", text=turn.text or "", **stamp)]
    name = PurePosixPath(turn.image.image_id.replace("\\", "/")).name
    image = image_for_model(dataset_root / turn.image.path, name)
    return [TextBlock(id=f"{msg_id}-text", text=f"Image ID: {turn.image.image_id}", **stamp),
            DataBlock(id=f"{msg_id}-image", source=Base64Source(data=base64.b64encode(image.data).decode("ascii"),
                                                                media_type=image.media_type),
                      name=image.filename, **stamp)]


def session_messages(session: CandidateSession, dataset_root: Path) -> list[Msg]:
    """The session's turns as AgentScope messages; every id and time is derived from the dataset,
    so two runs hand ReMe the same messages (and ReMe names the saved images the same)."""
    messages = []
    for turn in session.turns:
        msg_id = message_id(session.session_id, turn.turn)
        messages.append(Msg(id=msg_id, name=turn.role, role=turn.role, created_at=session.event_start_time,
                            content=_content(turn, dataset_root, msg_id, session.event_start_time)))
    return messages


async def ingest_session(app: Application, session: CandidateSession, dataset_root: Path,
                         timeout_s: float | None = None) -> IngestResponse:
    """One `auto_memory` call for the session. A failed job gives `success=False` with ReMe's
    message as `answer` (a reason, never memory), and so does an interrupted reply or one that
    exceeds the wall-clock budget `timeout_s`."""
    messages = await asyncio.to_thread(session_messages, session, dataset_root)
    states = _trajectories(app)
    before = set(states.glob("*.jsonl"))
    response, failure, requests = await within_budget(
        lambda: app.run_job("auto_memory", session_id=session.session_id, messages=messages,
                            date=session.event_start_time[:10], include_images=True),
        timeout_s, what="session", over=FailureKind.TIMEOUT, interrupted="the memory agent's reply was interrupted")
    if failure is not None or response is None:
        return IngestResponse(success=False, answer=failure.message if failure else "failed", failure=failure)
    failed = usage.failure_category(requests)
    if response.success and failed is not None:
        return IngestResponse(success=False, failure=Failure.of_label(failed),
                              answer=f"the memory was written although one of its requests failed ({failed})")
    metadata = response.metadata
    log.debug("session %s: success=%s note=%s", session.session_id, response.success, metadata.get("path"))
    dumped = sorted(p.relative_to(states.parents[1]).as_posix() for p in set(states.glob("*.jsonl")) - before)
    answer = str(response.answer or "")
    failure = None if response.success else Failure.of_label(failed or FailureKind.JOB_FAILED, message=answer or None)
    return IngestResponse(success=response.success, answer=answer, failure=failure,
                          note_path=metadata.get("path"), created=metadata.get("created"),
                          modified=metadata.get("modified"), trajectory_path=dumped[0] if len(dumped) == 1 else None)


def _trajectories(app: Application) -> Path:
    """Where ReMe's agent wrapper dumps agent states. ReMe's auto_memory does not report which file
    it wrote; a user's sessions are ingested one at a time, so the one new file is this session's."""
    return app.context.components["agent_wrapper"]["bench"].session_path
