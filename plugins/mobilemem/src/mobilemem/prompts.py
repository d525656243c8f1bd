"""The frozen prompt texts shipped in `mobilemem/prompts/` and their sha256 (recorded in run.json)."""

from __future__ import annotations

import hashlib
from functools import cache
from importlib import resources

PROMPT_NAMES = ("auto_memory_system", "auto_memory_session", "answer_system", "answer_tools", "qa_text_memory")


@cache
def prompt(name: str) -> str:
    if name not in PROMPT_NAMES:
        raise KeyError(f"no frozen prompt named {name!r}")
    return resources.files("mobilemem").joinpath("prompts", f"{name}.txt").read_text(encoding="utf-8")


def prompt_hashes() -> dict[str, str]:
    return {name: hashlib.sha256(prompt(name).encode("utf-8")).hexdigest() for name in PROMPT_NAMES}
