"""The `no-memory` baseline: nothing is ingested; each question is one request whose user message
is the official text-memory QA template with an empty `[Retrieved Memories]` (exactly
`qa_template.render(question, "")`, no system prompt). It is the floor: a visual question it
answers right leaks its answer."""

from __future__ import annotations

from dataclasses import dataclass

from agentscope.message import TextBlock
from agentscope.model import ChatModelBase

from mobilemem import qa_template
from mobilemem.baselines.ask import ask
from mobilemem.candidate import IndexResponse, IngestResponse
from mobilemem.records import AnswerResponse, CandidateKind, CandidatePreset
from mobilemem.dataset import CandidateQuestion, CandidateSession


def message_text(question: str) -> str:
    return qa_template.render(question, "")


@dataclass
class NoMemory:
    model: ChatModelBase
    preset: CandidatePreset
    kind: CandidateKind = "no-memory"

    async def ingest_session(self, session: CandidateSession, timeout_s: float | None) -> IngestResponse:
        return IngestResponse(success=True, answer="no-memory: nothing is ingested")

    async def build_index(self) -> IndexResponse:
        return IndexResponse(documents=0, chunks=0, build_seconds=0.0)

    async def answer_question(self, job: CandidateQuestion) -> AnswerResponse:
        return await ask(self.model, [TextBlock(text=message_text(job.question))], self.preset)

    async def close(self) -> None:
        return None
