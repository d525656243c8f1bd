"""The frozen texts the plugin adds to ReMe, and their sha256 (recorded in run.json).

The official MobileMem QA template, the plugin's ReMe manifest (jobs and their tool
descriptions) and the answer step's prompts. Everything else the candidate's model reads is ReMe's own.
"""

from __future__ import annotations

import hashlib
from functools import cache
from importlib import resources

FROZEN_TEXTS = ("prompts/qa_text_memory.txt", "reme/plugin.yaml", "reme/answer_step.yaml")


@cache
def frozen_text(name: str) -> str:
    if name not in FROZEN_TEXTS:
        raise KeyError(f"no frozen text named {name!r}")
    return resources.files("mobilemem").joinpath(name).read_text(encoding="utf-8")


def frozen_hashes() -> dict[str, str]:
    return {name: hashlib.sha256(frozen_text(name).encode("utf-8")).hexdigest() for name in FROZEN_TEXTS}
