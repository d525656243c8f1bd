"""The contract of the candidate a run evaluates (DESIGN §10): the public interface a memory system
implements to be evaluated, by the built-ins (ReMe Image, no-memory, bm25-rag) and by any plug-in.

A plug-in is an entry point in the group `mobilemem.candidates` whose name is its kind (`--candidate
NAME`) and whose object is a `CandidatePlugin`. For each user the runner calls `open` with a
`CandidateOpening`, then on the object it returns, in order: `ingest_session` for every session in
time order (unless `remembers` is false), `build_index` once, `answer_question` for every question
(several at once), and `close`. Each step returns its record: `IngestResponse`, `IndexResponse`,
`AnswerResponse` (`mobilemem.records`); the runner writes them into the run directory with the usage it
observed on the model's requests. A step that raises, or returns `success=False`, is that step's
technical gap: never retried, never scored. A plug-in sees the candidate views only (sessions as the
dialogue shows them, the question's text): never a reference answer, evidence or question type.
How the registry finds and opens plug-ins is `mobilemem.candidates`; `examples/long-context/` is one.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Literal, Protocol

from pydantic import BaseModel, ConfigDict

from mobilemem.records import AnswerResponse, CandidateKind, CandidatePreset, Failure
from mobilemem.dataset import CandidateQuestion, CandidateSession

if TYPE_CHECKING:
    from agentscope.model import ChatModelBase


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



@dataclass(frozen=True)
class CandidateOpening:
    """What a user's candidate is opened with."""

    workspace: Path  # users/<uid>/workspace/: the candidate's own folder (its memory, kept in the run)
    model: ChatModelBase  # the candidate model (AgentScope); every request through it is observed and counted
    preset: CandidatePreset  # config `candidate`: request settings, context and image limits, budgets
    dataset_root: Path  # a session image's `path` is relative to it


@dataclass(frozen=True)
class CandidatePlugin:
    """What an entry point of the group `mobilemem.candidates` names."""

    open: Callable[[CandidateOpening], Awaitable[Candidate]]
    # the texts the candidate adds to what its model reads (name -> text): their sha256 go into run.json's
    # prompt_sha256 and into every memory fingerprint, so an edit to one is never reused as the same memory
    prompts: Mapping[str, str] = field(default_factory=dict)
    remembers: bool = True  # False: nothing is ingested (the user's sessions are not even read into it)
    # `plan`'s request estimate: model requests per session and per question; None = the ReMe agents'
    # iteration counts (`plan --iterations-per-session/--iterations-per-question`)
    requests_per_session: int | None = None
    requests_per_question: int | None = None
    # `plan`'s prompt estimate of what each answer request carries besides the question: "retrieved" (the
    # memory read back, an assumed fixed amount), "history" (the user's whole transcript, up to the preset's
    # context_size) or "nothing"
    answer_reads: Literal["retrieved", "history", "nothing"] = "retrieved"
