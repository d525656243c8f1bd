"""The `bm25-rag` baseline (MobileMem's NaiveRAG shape, DESIGN §10). Ingest makes no model request:
each session's turns become transcript chunks (`transcript.py`); after the last session they are
indexed once with bm25s and written to `workspace/bm25-rag/` (chunks.jsonl and the index). Each
question is one request: the official multimodal-memory QA template, `[Retrieved Memories]` = the
top-k chunks with a positive score (best first), `[Timestamps]` = the session time of each image
those chunks reference, in order, `[Images]` = those images, each after its Image ID (the file's
bytes, not resized; an MPO as the PNG of its first frame), at most the preset's `max_images`."""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass, field
from pathlib import Path

import bm25s
from agentscope.message import TextBlock
from agentscope.model import ChatModelBase

from mobilemem.baselines.transcript import memory_text, session_chunks, tokens
from mobilemem.candidate import IndexResponse, IngestResponse
from mobilemem.candidate_tools import ask, image_blocks, render_multimodal
from mobilemem.records import (
    AnswerResponse,
    CandidateKind,
    CandidatePreset,
    Retrieval,
    RetrievedChunk,
    SentImage,
    TranscriptChunkLine,
)
from mobilemem.dataset import CandidateQuestion, CandidateSession
from mobilemem.errors import MobilememError
from mobilemem.rundir import read_lines, write_bytes_atomic

FOLDER = "bm25-rag"


@dataclass
class Bm25Rag:
    model: ChatModelBase
    preset: CandidatePreset
    workspace: Path
    dataset_root: Path
    kind: CandidateKind = "bm25-rag"
    chunks: list[TranscriptChunkLine] = field(default_factory=list)
    index: bm25s.BM25 | None = None  # None once built: no chunk to retrieve
    built: bool = False

    async def ingest_session(self, session: CandidateSession, timeout_s: float | None) -> IngestResponse:
        new = session_chunks(session, self.preset.chunk_turns, len(self.chunks))
        self.chunks += new
        return IngestResponse(success=True, answer=f"bm25-rag: {len(new)} transcript chunks, no model request")

    async def build_index(self) -> IndexResponse:
        started = time.perf_counter()
        self.index, self.built = await asyncio.to_thread(self._build), True
        return IndexResponse(documents=len({c.session_id for c in self.chunks}), chunks=len(self.chunks),
                             build_seconds=round(time.perf_counter() - started, 4))

    def _build(self) -> bm25s.BM25 | None:
        folder = self.workspace / FOLDER
        folder.mkdir(parents=True, exist_ok=True)
        write_bytes_atomic(folder / "chunks.jsonl",
                           "".join(c.model_dump_json() + "\n" for c in self.chunks).encode("utf-8"))
        if not self.chunks:
            return None
        index = bm25s.BM25()
        index.index([tokens(c.text) or [""] for c in self.chunks], show_progress=False)
        index.save(str(folder / "index"), show_progress=False)
        return index

    def _load(self) -> None:
        """The index a reused memory brought along (`--reuse` copies the workspace, not this object)."""
        folder = self.workspace / FOLDER
        if not (folder / "chunks.jsonl").is_file():
            raise MobilememError("bm25-rag: the index was not built before the first question")
        self.chunks = read_lines(folder / "chunks.jsonl", TranscriptChunkLine)
        self.index = bm25s.BM25.load(str(folder / "index")) if self.chunks else None
        self.built = True

    def _retrieve(self, question: str) -> list[tuple[TranscriptChunkLine, float]]:
        if not self.built:
            self._load()
        if self.index is None:
            return []
        k = min(self.preset.top_k, len(self.chunks))
        found, scores = self.index.retrieve([tokens(question) or [""]], k=k, show_progress=False)
        return [(self.chunks[int(i)], float(s)) for i, s in zip(found[0], scores[0]) if s > 0]

    def _content(self, job: CandidateQuestion) -> tuple[list, Retrieval]:
        """The request's content blocks (the rendered template around the images) and what it holds."""
        hits = self._retrieve(job.question)
        referenced = [(chunk, image) for chunk, _ in hits for image in chunk.images]
        sent = referenced[:self.preset.max_images]
        before, after = render_multimodal(job.question, "\n\n".join(memory_text(c) for c, _ in hits),
                               "\n".join(chunk.time for chunk, _ in sent))
        content: list = [TextBlock(text=before)]
        for _, image in sent:
            content += image_blocks(self.dataset_root, image.image_id, image.path)
        content.append(TextBlock(text=after))
        retrieval = Retrieval(
            query=job.question, k=self.preset.top_k,
            chunks=[RetrievedChunk(chunk_id=c.chunk_id, session_id=c.session_id, first_turn=c.first_turn,
                                   last_turn=c.last_turn, score=round(s, 6)) for c, s in hits],
            images=[SentImage(session_id=c.session_id, turn=i.turn, image_id=i.image_id, time=c.time) for c, i in sent],
            images_left_out=len(referenced) - len(sent))
        return content, retrieval

    async def answer_question(self, job: CandidateQuestion) -> AnswerResponse:
        content, retrieval = await asyncio.to_thread(self._content, job)  # file reads: off the event loop
        return await ask(self.model, content, self.preset, retrieval)

    async def close(self) -> None:
        return None
