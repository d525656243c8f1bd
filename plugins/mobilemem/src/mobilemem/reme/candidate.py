"""The default candidate, ReMe Image: the user's ReMe application (`mobilemem.reme.app`) and the
plugin's jobs, as the steps of `mobilemem.candidate.Candidate`. Nothing here re-does a ReMe step."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from agentscope.model import ChatModelBase
from reme.application import Application

from mobilemem.candidate import IndexResponse, IngestResponse
from mobilemem.records import AnswerResponse, CandidateKind, CandidatePreset
from mobilemem.dataset import CandidateQuestion, CandidateSession
from mobilemem.reme import answer, app, ingest


@dataclass
class ReMeImage:
    app: Application
    preset: CandidatePreset
    dataset_root: Path
    kind: CandidateKind = "reme-image"

    async def ingest_session(self, session: CandidateSession, timeout_s: float | None) -> IngestResponse:
        return await ingest.ingest_session(self.app, session, self.dataset_root, timeout_s)

    async def build_index(self) -> IndexResponse:
        return await app.build_index(self.app)

    async def answer_question(self, job: CandidateQuestion) -> AnswerResponse:
        return await answer.answer_question(self.app, job, self.preset)

    async def close(self) -> None:
        await self.app.close()


async def open_reme_image(workspace: Path, model: ChatModelBase, preset: CandidatePreset,
                          dataset_root: Path) -> ReMeImage:
    return ReMeImage(await app.open_user_app(workspace, model, preset), preset, dataset_root)
