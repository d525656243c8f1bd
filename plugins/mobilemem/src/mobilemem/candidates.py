"""The kinds of candidate a run can evaluate (config `candidate.kind`, DESIGN §10) and the one place
a user's candidate is opened. `reme-image` (the default) is ReMe through the plugin
(`mobilemem.reme.candidate`); `no-memory` and `bm25-rag` are the baselines (`mobilemem.baselines`).
The contract they all keep is `mobilemem.candidate`; this module is the only one above both.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, get_args

from mobilemem.records import CandidateKind, CandidatePreset

if TYPE_CHECKING:
    from agentscope.model import ChatModelBase

    from mobilemem.candidate import Candidate

CANDIDATES: tuple[str, ...] = get_args(CandidateKind)


def remembers(kind: CandidateKind) -> bool:
    """False for a candidate that ingests nothing: its users' sessions are not even read into it."""
    return kind != "no-memory"


async def open_candidate(kind: CandidateKind, workspace: Path, model: ChatModelBase, preset: CandidatePreset,
                         dataset_root: Path) -> Candidate:
    """A user's candidate on `users/<uid>/workspace/`, ready for its first session. Each kind is
    imported here, when it is opened: `import mobilemem` stays light."""
    if kind == "reme-image":
        from mobilemem.reme.candidate import open_reme_image

        return await open_reme_image(workspace, model, preset, dataset_root)
    if kind == "no-memory":
        from mobilemem.baselines.no_memory import NoMemory

        return NoMemory(model, preset)
    if kind == "bm25-rag":
        from mobilemem.baselines.bm25_rag import Bm25Rag

        return Bm25Rag(model, preset, workspace, dataset_root)
    raise ValueError(f"not a candidate kind: {kind!r}")
