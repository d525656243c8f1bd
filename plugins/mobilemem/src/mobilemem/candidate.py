"""The candidate a run evaluates (config `candidate.kind`, DESIGN §10): one object per user with the
steps the tasks run, in order: ingest each session, build the index once, answer each question;
then `close`. `reme-image` (the default) is ReMe through the plugin (`mobilemem.reme.candidate`);
`no-memory` and `bm25-rag` are the baselines (`mobilemem.baselines`). Everything after the
candidate (records, judge, metrics, usage, report, compare) is the same for all three.
`open_candidate` is the one place a user's candidate is opened.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Protocol

from pydantic import BaseModel, ConfigDict

from mobilemem.config import DEFAULT_KIND, CandidateKind, CandidatePreset
from mobilemem.dataset import CandidateQuestion, CandidateSession
from mobilemem.records import AnswerResponse, Failure

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


def remembers(kind: CandidateKind) -> bool:
    """False for a candidate that ingests nothing: its users' sessions are not even read into it."""
    return kind != "no-memory"


class Candidate(Protocol):
    kind: CandidateKind

    async def ingest_session(self, session: CandidateSession, timeout_s: float | None) -> IngestResponse: ...

    async def build_index(self) -> IndexResponse: ...

    async def answer_question(self, job: CandidateQuestion) -> AnswerResponse: ...

    async def close(self) -> None: ...


async def open_candidate(kind: CandidateKind, workspace: Path, model: ChatModelBase, preset: CandidatePreset,
                         dataset_root: Path) -> Candidate:
    """A user's candidate on `users/<uid>/workspace/`, ready for its first session."""
    if kind == DEFAULT_KIND:
        from mobilemem.reme.candidate import open_reme_image  # imported here: `import mobilemem` stays light

        return await open_reme_image(workspace, model, preset, dataset_root)
    from mobilemem.baselines import open_baseline

    return open_baseline(kind, workspace, model, preset, dataset_root)
