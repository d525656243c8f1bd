"""The contract of the candidate a run evaluates (DESIGN §10): one object per user with the steps
the tasks run, in order: ingest each session, build the index once, answer each question; then
`close`, and the records those steps return. Every kind keeps it (ReMe Image and the baselines);
which kinds there are, and how one is opened, is `mobilemem.candidates`. Everything after the
candidate (records, judge, metrics, usage, report, compare) is the same for all of them.
"""

from __future__ import annotations

from typing import Protocol

from pydantic import BaseModel, ConfigDict

from mobilemem.records import AnswerResponse, CandidateKind, Failure
from mobilemem.dataset import CandidateQuestion, CandidateSession


class IngestResponse(BaseModel):
    """What ingesting one session gave: for ReMe, what its auto_memory job returned."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    success: bool
    answer: str
    failure: Failure | None = None  # its kind ("interrupted": the memory agent's reply was cut short)
    note_path: str | None = None
    trajectory_path: str | None = None  # the memory agent's native state that ReMe dumped
    created: bool | None = None
    modified: bool | None = None


class IndexResponse(BaseModel):
    model_config = ConfigDict(frozen=True)
    documents: int  # files (ReMe) or sessions (bm25-rag) in the keyword index
    chunks: int
    build_seconds: float


def cap_answer(text: str, cap: int) -> tuple[str, int | None]:
    """`text` cut to at most `cap` UTF-8 bytes (on a character boundary), and its size if it was cut:
    a longer answer is recorded, and judged, cut to `max_answer_bytes`."""
    data = text.encode("utf-8")
    return (text, None) if len(data) <= cap else (data[:cap].decode("utf-8", "ignore"), len(data))


class Candidate(Protocol):
    kind: CandidateKind

    async def ingest_session(self, session: CandidateSession, timeout_s: float | None) -> IngestResponse: ...

    async def build_index(self) -> IndexResponse: ...

    async def answer_question(self, job: CandidateQuestion) -> AnswerResponse: ...

    async def close(self) -> None: ...

