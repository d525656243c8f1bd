"""The frozen texts each candidate adds to what its model reads, and their sha256 (run.json).

ReMe Image: the official MobileMem QA template, the plugin's ReMe manifest (jobs and their tool
descriptions) and the answer step's prompts; everything else its model reads is ReMe's own. The
baselines (DESIGN §10): `no-memory` the same text-memory QA template, `bm25-rag` the official
multimodal-memory QA template. A candidate's fingerprints and run.json cover its own texts only.
"""

from __future__ import annotations

import hashlib
from functools import cache
from importlib import resources

from mobilemem.records import DEFAULT_KIND

TEXT_TEMPLATE = "prompts/qa_text_memory.txt"
MULTIMODAL_TEMPLATE = "prompts/qa_multimodal_memory.txt"
FROZEN_TEXTS = (TEXT_TEMPLATE, "reme/plugin.yaml", "reme/answer_step.yaml", MULTIMODAL_TEMPLATE)
USED_BY = {DEFAULT_KIND: FROZEN_TEXTS[:3], "no-memory": (TEXT_TEMPLATE,), "bm25-rag": (MULTIMODAL_TEMPLATE,)}


@cache
def frozen_text(name: str) -> str:
    if name not in FROZEN_TEXTS:
        raise KeyError(f"no frozen text named {name!r}")
    return resources.files("mobilemem").joinpath(name).read_text(encoding="utf-8")


def frozen_hashes(kind: str = DEFAULT_KIND) -> dict[str, str]:
    """sha256 of every frozen text the candidate `kind` sends."""
    return {name: hashlib.sha256(frozen_text(name).encode("utf-8")).hexdigest() for name in USED_BY[kind]}
