"""The baselines (DESIGN §10): the simplest candidates on the same contract as ReMe Image, so its
score has a floor and a reference. Neither makes a model request to ingest; each question is one
request with an official MobileMem QA template, under the same model preset.

- `no-memory`: the text-memory template with an empty `[Retrieved Memories]`.
- `bm25-rag`: the user's dialogue turns indexed with bm25s; the multimodal-memory template with
  the top-k transcript chunks and the images they reference (MobileMem's NaiveRAG shape).
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from mobilemem.config import CandidateKind, CandidatePreset

if TYPE_CHECKING:
    from agentscope.model import ChatModelBase

    from mobilemem.candidate import Candidate


def open_baseline(kind: CandidateKind, workspace: Path, model: ChatModelBase, preset: CandidatePreset,
                  dataset_root: Path) -> Candidate:
    if kind == "no-memory":
        from mobilemem.baselines.no_memory import NoMemory

        return NoMemory(model, preset)
    if kind == "bm25-rag":
        from mobilemem.baselines.bm25_rag import Bm25Rag

        return Bm25Rag(model, preset, workspace, dataset_root)
    raise ValueError(f"not a baseline: {kind!r}")
