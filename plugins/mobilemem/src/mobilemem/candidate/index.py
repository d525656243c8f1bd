"""BM25 over one user's memory (DESIGN §4.2): daily notes, digests and the original session text.

Built once per user after the last session, persisted under `workspace/index/`, and searched by the
answer agent's `bm25_search`. Markdown files are chunked by section (long sections in slices),
session dialogs by groups of lines rendered `[role @ time] text` (image lines by their Image ID).
Every chunk remembers its memory-relative path and 1-based line range. No model request is made.
"""

from __future__ import annotations

import json
import re
import time
from dataclasses import dataclass
from pathlib import Path

import bm25s
import numpy as np
from pydantic import BaseModel, ConfigDict, TypeAdapter

from mobilemem.candidate.workspace import Workspace

SECTION_MAX_LINES = 40
DIALOG_GROUP_LINES = 8
_CJK = re.compile(r"([\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff])")
_WORD = re.compile(r"[^\W_]+")


def tokenize(text: str) -> list[str]:
    """Lower-cased words; every CJK ideograph is a token of its own."""
    return _WORD.findall(_CJK.sub(r" \1 ", text.lower()))


class Chunk(BaseModel):
    model_config = ConfigDict(frozen=True)
    path: str
    start: int
    end: int
    text: str


class IndexResponse(BaseModel):
    model_config = ConfigDict(frozen=True)
    documents: int
    chunks: int
    build_seconds: float


@dataclass(frozen=True)
class Hit:
    chunk: Chunk
    score: float


_CHUNKS = TypeAdapter(list[Chunk])


def _slices(path: str, lines: list[str], first: int, last: int) -> list[Chunk]:
    """Lines first..last (1-based, inclusive) as chunks of at most SECTION_MAX_LINES."""
    chunks = []
    for start in range(first, last + 1, SECTION_MAX_LINES):
        end = min(last, start + SECTION_MAX_LINES - 1)
        text = "\n".join(lines[start - 1:end]).strip()
        if text:
            chunks.append(Chunk(path=path, start=start, end=end, text=text))
    return chunks


def markdown_chunks(path: str, text: str) -> list[Chunk]:
    lines = text.splitlines()
    starts = [1] + [n for n, line in enumerate(lines, 1) if line.startswith("#") and n > 1]
    bounds = zip(starts, [*(s - 1 for s in starts[1:]), len(lines)], strict=True)
    return [chunk for first, last in bounds if first <= last for chunk in _slices(path, lines, first, last)]


def _dialog_line(raw: str) -> str:
    record = json.loads(raw)
    body = record.get("text") if record.get("text") is not None else f"Image ID: {record.get('image_id')}"
    return f"[{record.get('role')} @ {record.get('time')}] {body}"


def dialog_chunks(path: str, text: str) -> list[Chunk]:
    lines = [_dialog_line(raw) for raw in text.splitlines() if raw.strip()]
    return [Chunk(path=path, start=start, end=min(len(lines), start + DIALOG_GROUP_LINES - 1),
                  text="\n".join(lines[start - 1:start - 1 + DIALOG_GROUP_LINES]))
            for start in range(1, len(lines) + 1, DIALOG_GROUP_LINES)]


def collect_chunks(ws: Workspace) -> tuple[int, list[Chunk]]:
    documents, chunks = 0, []
    for file in sorted(ws.daily.rglob("*.md")):
        documents += 1
        chunks += markdown_chunks(ws.relative(file), file.read_text(encoding="utf-8"))
    for file in sorted(ws.dialog.glob("*.jsonl")):
        documents += 1
        chunks += dialog_chunks(ws.relative(file), file.read_text(encoding="utf-8"))
    return documents, chunks


class MemoryIndex:
    """A built BM25 index and its chunks."""

    def __init__(self, retriever: bm25s.BM25 | None, chunks: list[Chunk]) -> None:
        self._retriever = retriever
        self.chunks = chunks

    @classmethod
    def build(cls, ws: Workspace) -> tuple[MemoryIndex, IndexResponse]:
        started = time.perf_counter()
        documents, chunks = collect_chunks(ws)
        retriever = None
        if chunks:
            retriever = bm25s.BM25()
            retriever.index([tokenize(c.text) or ["\u2205"] for c in chunks], show_progress=False)
        index = cls(retriever, chunks)
        index.save(ws.index)
        return index, IndexResponse(documents=documents, chunks=len(chunks),
                                    build_seconds=round(time.perf_counter() - started, 4))

    def save(self, folder: Path) -> None:
        folder.mkdir(parents=True, exist_ok=True)
        (folder / "chunks.json").write_bytes(_CHUNKS.dump_json(self.chunks))
        if self._retriever is not None:
            self._retriever.save(str(folder / "bm25"))

    @classmethod
    def load(cls, folder: Path) -> MemoryIndex:
        chunks = _CHUNKS.validate_json((folder / "chunks.json").read_bytes())
        retriever = bm25s.BM25.load(str(folder / "bm25")) if chunks else None
        return cls(retriever, chunks)

    def search(self, query: str, limit: int = 5) -> list[Hit]:
        tokens = tokenize(query)
        if self._retriever is None or not tokens or limit < 1:
            return []
        k = min(limit, len(self.chunks))
        ids, scores = self._retriever.retrieve([tokens], k=k, show_progress=False, n_threads=1)
        return [Hit(chunk=self.chunks[int(i)], score=float(s))
                for i, s in zip(ids[0], scores[0], strict=True) if np.isfinite(s) and s > 0]
