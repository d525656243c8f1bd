"""The three built-in candidates, registered as plug-ins like any other (`mobilemem.candidates` entry
points in plugins/mobilemem/pyproject.toml): ReMe Image (`mobilemem.reme.candidate`) and the baselines
(`mobilemem.baselines`). Each is imported when it is opened, so listing or checking the installed
candidates loads neither ReMe nor AgentScope."""

from __future__ import annotations

from mobilemem.candidate import Candidate, CandidateOpening, CandidatePlugin
from mobilemem.prompts import USED_BY, frozen_text


def _texts(kind: str) -> dict[str, str]:
    return {name: frozen_text(name) for name in USED_BY[kind]}


async def _reme_image(opening: CandidateOpening) -> Candidate:
    from mobilemem.reme.candidate import open_reme_image

    return await open_reme_image(opening.workspace, opening.model, opening.preset, opening.dataset_root)


async def _no_memory(opening: CandidateOpening) -> Candidate:
    from mobilemem.baselines.no_memory import NoMemory

    return NoMemory(opening.model, opening.preset)


async def _bm25_rag(opening: CandidateOpening) -> Candidate:
    from mobilemem.baselines.bm25_rag import Bm25Rag

    return Bm25Rag(opening.model, opening.preset, opening.workspace, opening.dataset_root)


REME_IMAGE = CandidatePlugin(open=_reme_image, prompts=_texts("reme-image"))
NO_MEMORY = CandidatePlugin(open=_no_memory, prompts=_texts("no-memory"), remembers=False,
                            requests_per_session=0, requests_per_question=1, answer_reads="nothing")
BM25_RAG = CandidatePlugin(open=_bm25_rag, prompts=_texts("bm25-rag"), requests_per_session=0,
                           requests_per_question=1)
