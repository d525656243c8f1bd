"""The one rule preflight applies to every text that reaches a file or a request: it can be
encoded as UTF-8 (DESIGN §3).

JSON can spell a lone surrogate (`"\\ud800"`, half of a UTF-16 pair such as a cut emoji). Python
reads it into a `str`, but no UTF-8 encoder writes it: job.json, a request body, a fingerprint or
ReMe's notes would raise mid-run. Where each text is checked: the record models check their own
fields (`mobilemem.dataset_records`: ids, times, question fields, answers, and every key and string
of the evidence, which the judge's request and fingerprint carry), `mobilemem.dataset_checks` the
turns' text, `mobilemem.images` the image references and the paths they resolve to.
"""

from __future__ import annotations

import re
from typing import Any

_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,63}")  # a key shown as `.name` in a path
MAX_SHOWN_KEY = 40


def text_problem(value: str) -> str | None:
    """Why `value` cannot be written as UTF-8, or None."""
    try:
        value.encode("utf-8")
    except UnicodeEncodeError as exc:
        escaped = value[exc.start].encode("unicode_escape").decode("ascii")
        return (f"cannot be encoded as UTF-8: a lone surrogate {escaped} at character {exc.start + 1} "
                "(half of a UTF-16 pair, such as a cut emoji)")
    return None


def text_problems(value: Any, path: str = "") -> list[str]:
    """`text_problem` of every key and string inside `value` (JSON data), each after its path
    (`explanation.image`, `[1]`) when it has one."""
    if isinstance(value, str):
        return [f"{path} {problem}".lstrip() for problem in [text_problem(value)] if problem]
    if isinstance(value, list):
        return [p for i, item in enumerate(value) for p in text_problems(item, f"{path}[{i}]")]
    if not isinstance(value, dict):
        return []
    problems = []
    for key, item in value.items():
        name = f"{path}.{key}".lstrip(".") if _NAME.fullmatch(key) else f"{path}[{_shown_key(key)}]"
        problems += [f"key {name} {p}" for p in [text_problem(key)] if p] + text_problems(item, name)
    return problems


def _shown_key(key: str) -> str:
    shown = repr(key)  # escapes surrogates and control characters
    return shown if len(shown) <= MAX_SHOWN_KEY else f"{shown[:MAX_SHOWN_KEY]}..."


def encodable(value: Any) -> Any:
    """A pydantic after-validator: `value` unchanged, or the first problem (and how many more)."""
    if problems := text_problems(value):
        more = f" (and {len(problems) - 1} more)" if len(problems) > 1 else ""
        raise ValueError(problems[0] + more)
    return value
