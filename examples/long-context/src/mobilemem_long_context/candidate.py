"""The Long Context baseline on the candidate contract: ingest keeps each session (no model request);
`build_index` writes them to the workspace; each question is one request with the official
multimodal-memory QA template, `[Retrieved Memories]` = the whole history as transcript lines (each
session headed by its id and time), `[Timestamps]` = the session time of each image sent,
`[Images]` = those images in order. When the history does not fit the preset's `context_size`
(less its `max_tokens`, by AgentScope's estimate) or its `max_images`, the newest turns are kept,
and answer-response.json's `details` says what was cut."""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass, field
from itertools import groupby
from pathlib import Path

from agentscope.message import DataBlock, TextBlock, UserMsg
from agentscope.model import ChatModelBase

from mobilemem.candidate import IndexResponse, IngestResponse
from mobilemem.candidate_tools import ask, image_blocks, read_lines, render_multimodal, turn_line, write_bytes_atomic
from mobilemem.dataset import CandidateQuestion, CandidateSession, CandidateTurn
from mobilemem.errors import MobilememError
from mobilemem.records import AnswerResponse, CandidatePreset, Retrieval, RetrievedChunk, SentImage

from mobilemem_long_context.records import FOLDER, FirstSent, HistoryLine, HistoryWindow
from mobilemem_long_context.window import first_kept

KIND = "long-context"


def header(session: CandidateSession) -> str:
    return f"Session {session.session_id} ({session.event_start_time}):"


@dataclass
class LongContext:
    model: ChatModelBase
    preset: CandidatePreset
    workspace: Path
    dataset_root: Path
    kind: str = KIND
    sessions: list[CandidateSession] = field(default_factory=list)
    turns: list[tuple[CandidateSession, CandidateTurn]] = field(default_factory=list)
    costs: list[int] = field(default_factory=list)  # each turn's estimated tokens (its session's header on its first)
    header_margin: int = 0  # a session cut in the middle is headed too
    _ready: asyncio.Lock = field(default_factory=asyncio.Lock)
    _measured: bool = False

    async def ingest_session(self, session: CandidateSession, timeout_s: float | None) -> IngestResponse:
        self.sessions.append(session)
        return IngestResponse(success=True, answer=f"long-context: session kept ({len(session.turns)} turns), "
                                                   "no model request")

    async def build_index(self) -> IndexResponse:
        started = time.perf_counter()
        text = "".join(HistoryLine(session=s).model_dump_json() + "\n" for s in self.sessions)
        await asyncio.to_thread(write_bytes_atomic, self.workspace / FOLDER / "history.jsonl", text.encode("utf-8"))
        return IndexResponse(documents=len(self.sessions), chunks=sum(len(s.turns) for s in self.sessions),
                             build_seconds=round(time.perf_counter() - started, 4))

    async def _tokens(self, blocks: list) -> int:
        return await self.model.count_tokens([UserMsg(name="user", content=blocks)], None)

    async def _measure(self) -> None:
        """Each turn's estimated cost, once per user (a reused memory is read back from the workspace)."""
        async with self._ready:
            if self._measured:
                return
            path = self.workspace / FOLDER / "history.jsonl"
            if not self.sessions:
                if not path.is_file():
                    raise MobilememError("long-context: the history was not written before the first question")
                self.sessions = [line.session for line in await asyncio.to_thread(read_lines, path, HistoryLine)]
            image_cost = None
            for session in self.sessions:
                for position, turn in enumerate(session.turns):
                    line = turn_line(session, turn) + "\n"
                    cost = await self._tokens([TextBlock(text=(header(session) + "\n" if position == 0 else "") + line)])
                    if turn.image is not None:
                        if image_cost is None:  # AgentScope's estimate for an image is the same for every image
                            blocks = await asyncio.to_thread(image_blocks, self.dataset_root, turn.image.image_id,
                                                             turn.image.path)
                            image_cost = await self._tokens([b for b in blocks if isinstance(b, DataBlock)])
                        cost += image_cost + await self._tokens([TextBlock(text=f"Image ID: {turn.image.image_id}"),
                                                                 TextBlock(text=session.event_start_time + "\n")])
                    self.turns.append((session, turn))
                    self.costs.append(cost)
                self.header_margin = max(self.header_margin, await self._tokens([TextBlock(text=header(session))]))
            self._measured = True

    async def answer_question(self, job: CandidateQuestion) -> AnswerResponse:
        await self._measure()
        frame = await self._tokens([TextBlock(text="".join(render_multimodal(job.question, "", "")))])
        budget = self.preset.context_size - self.preset.max_tokens - frame - self.header_margin
        start, cut_by = first_kept(self.costs, [t.image is not None for _, t in self.turns], budget,
                                   self.preset.max_images)
        sent = self.turns[start:]
        content = await asyncio.to_thread(self._content, job.question, sent)
        window = self._window(budget, await self._tokens(content), sent, cut_by)
        response = await ask(self.model, content, self.preset, self._retrieval(job.question, start, sent))
        return response.model_copy(update={"details": window.model_dump(mode="json")})

    def _content(self, question: str, sent: list[tuple[CandidateSession, CandidateTurn]]) -> list:
        memories = "\n".join(header(session) + "\n" + "\n".join(turn_line(session, t) for _, t in turns)
                             for session, turns in ((s, list(g)) for s, g in groupby(sent, key=lambda p: p[0])))
        images = [(session, turn.image) for session, turn in sent if turn.image is not None]
        before, after = render_multimodal(question, memories, "\n".join(s.event_start_time for s, _ in images))
        content: list = [TextBlock(text=before)]
        for _, image in images:
            content += image_blocks(self.dataset_root, image.image_id, image.path)
        return content + [TextBlock(text=after)]

    def _window(self, budget: int, estimated: int, sent: list[tuple[CandidateSession, CandidateTurn]],
                cut_by: str | None) -> HistoryWindow:
        first = FirstSent(session_id=sent[0][0].session_id, turn=sent[0][1].turn) if sent else None
        return HistoryWindow(
            budget_tokens=budget, estimated_tokens=estimated, image_limit=self.preset.max_images,
            sessions=len(self.sessions), sessions_sent=len({s.session_id for s, _ in sent}),
            turns=len(self.turns), turns_sent=len(sent), images=sum(t.image is not None for _, t in self.turns),
            images_sent=sum(t.image is not None for _, t in sent), cut_by=cut_by, first_sent=first)

    def _retrieval(self, question: str, start: int, sent: list[tuple[CandidateSession, CandidateTurn]]) -> Retrieval:
        """The sessions and images sent, as bm25-rag records its retrieval, so that evidence attribution
        sees what the model was shown (a session sent counts as a hit in it, an image sent as opened)."""
        parts = [(session, list(turns)) for session, turns in groupby(sent, key=lambda p: p[0])]
        images = [SentImage(session_id=s.session_id, turn=t.turn, image_id=t.image.image_id, time=s.event_start_time)
                  for s, t in sent if t.image is not None]
        cut_images = sum(t.image is not None for _, t in self.turns[:start])
        return Retrieval(query=question, k=len(parts), images=images, images_left_out=cut_images, chunks=[
            RetrievedChunk(chunk_id=index, session_id=session.session_id, first_turn=turns[0][1].turn,
                           last_turn=turns[-1][1].turn, score=0.0) for index, (session, turns) in enumerate(parts)])

    async def close(self) -> None:
        return None
