"""The `bm25-rag` baseline's corpus: each session's dialogue cut into chunks of consecutive turns
(`chunk_turns`, never across sessions), each turn one line `[role @ time] text`, an image turn as
`Image ID: <original path>` (the image itself is sent only when its chunk is retrieved), and the
tokens bm25s indexes: lower-cased words, and for Chinese, Japanese or Korean text (written without
spaces) every character and every pair of adjacent characters."""

from __future__ import annotations

import re

from mobilemem.dataset import CandidateSession, CandidateTurn
from mobilemem.records import ChunkImage, TranscriptChunkLine

_CJK = "\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af"
_TOKEN = re.compile(rf"[{_CJK}]+|[^\W_{_CJK}]+")
_IS_CJK = re.compile(rf"[{_CJK}]")


def tokens(text: str) -> list[str]:
    found: list[str] = []
    for run in _TOKEN.findall(text.lower()):
        if _IS_CJK.match(run):
            found += list(run) + [run[i:i + 2] for i in range(len(run) - 1)]
        else:
            found.append(run)
    return found


def turn_line(session: CandidateSession, turn: CandidateTurn) -> str:
    """`[role @ session time] text`, an image turn as `Image ID: <original path>`."""
    return f"[{turn.role} @ {session.event_start_time}] " + (
        f"Image ID: {turn.image.image_id}" if turn.image else (turn.text or ""))


def session_chunks(session: CandidateSession, chunk_turns: int, first_id: int) -> list[TranscriptChunkLine]:
    chunks = []
    for start in range(0, len(session.turns), chunk_turns):
        turns = session.turns[start:start + chunk_turns]
        lines = [turn_line(session, t) for t in turns]
        chunks.append(TranscriptChunkLine(
            chunk_id=first_id + len(chunks), session_id=session.session_id, time=session.event_start_time,
            first_turn=turns[0].turn, last_turn=turns[-1].turn, text="\n".join(lines),
            images=[ChunkImage(turn=t.turn, image_id=t.image.image_id, path=t.image.path) for t in turns if t.image]))
    return chunks


def memory_text(chunk: TranscriptChunkLine) -> str:
    """A retrieved chunk as `[Retrieved Memories]` shows it: its session and time, then its turns."""
    return f"Session {chunk.session_id} ({chunk.time}), turns {chunk.first_turn}-{chunk.last_turn}:\n{chunk.text}"
