"""The published Long Context baseline of MobileMem as a mobilemem-bench candidate plug-in: entry point
`long-context` in the group `mobilemem.candidates` (pyproject.toml), evaluated with
`--candidate long-context`. The candidate is `candidate.LongContext`."""

from __future__ import annotations

from mobilemem.candidate import Candidate, CandidateOpening, CandidatePlugin
from mobilemem.prompts import MULTIMODAL_TEMPLATE, frozen_text  # light: listing plug-ins loads no AgentScope


async def _open(opening: CandidateOpening) -> Candidate:
    from mobilemem_long_context.candidate import LongContext  # AgentScope is loaded when a user is opened

    return LongContext(opening.model, opening.preset, opening.workspace, opening.dataset_root)


PLUGIN = CandidatePlugin(open=_open, prompts={MULTIMODAL_TEMPLATE: frozen_text(MULTIMODAL_TEMPLATE)},
                         requests_per_session=0, requests_per_question=1, answer_reads="history")
