"""The isolated MobileMem judge: the only component that ever sees reference answers and evidence.

It imports the judge view of `mobilemem.dataset`, `mobilemem.records` and `mobilemem.models`,
never `mobilemem.candidate`; `mobilemem` never imports this package. Its names load on first use
(PEP 562), so the analysis side (`mobilemem_judge.analysis`) does not pay for the model client.
"""

from __future__ import annotations

import importlib

_EXPORTS = {
    "DEFAULT_RUBRIC": "rubric", "RUBRICS": "rubric", "fill": "rubric", "rubric_sha256": "rubric",
    "rubric_text": "rubric", "Judgment": "judge", "judge_answer": "judge", "ParsedLabel": "parse",
    "parse_label": "parse", "judge_settings": "settings", "judgment_fingerprint": "fingerprint",
}

__all__ = sorted(_EXPORTS)


def __getattr__(name: str):
    if name not in _EXPORTS:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(f"{__name__}.{_EXPORTS[name]}"), name)
