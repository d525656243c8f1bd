"""Token F1 and BLEU-1 exactly as MobileMem's evaluator computes them (DESIGN §7).

This module reimplements formulas of ZJUNLP MobileMem, `omni/eval/eval/evaluator.py`
(MIT License, Copyright (c) 2026 ZJUNLP): lower-case; tokens are runs of `[a-z0-9]` and single CJK
ideographs (U+4E00-U+9FFF); F1 = 2PR/(P+R) on multiset overlap, 1.0 when both token lists are
empty; BLEU-1 = clipped unigram precision x brevity penalty exp(1 - |ref|/|pred|) when the
prediction is shorter, no smoothing, 0 for an empty prediction. With several references, the one
with the best F1 + BLEU-1 counts (the first on ties). Pure functions, no I/O.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from dataclasses import dataclass

_TOKEN = re.compile(r"[a-z0-9]+|[\u4e00-\u9fff]")


def tokens(text: str) -> list[str]:
    return _TOKEN.findall(text.lower())


def _overlap(prediction: list[str], reference: list[str]) -> int:
    return sum((Counter(prediction) & Counter(reference)).values())


def token_f1(prediction: str, reference: str) -> float:
    pred, ref = tokens(prediction), tokens(reference)
    if not pred and not ref:
        return 1.0
    common = _overlap(pred, ref)
    if common == 0:
        return 0.0
    precision, recall = common / len(pred), common / len(ref)
    return 2 * precision * recall / (precision + recall)


def bleu1(prediction: str, reference: str) -> float:
    pred, ref = tokens(prediction), tokens(reference)
    if not pred:
        return 0.0
    precision = _overlap(pred, ref) / len(pred)
    penalty = math.exp(1 - len(ref) / len(pred)) if len(pred) < len(ref) else 1.0
    return precision * penalty


@dataclass(frozen=True)
class OverlapScores:
    f1: float
    bleu1: float
    reference: str


def overlap_scores(prediction: str, references: str | list[str]) -> OverlapScores:
    """F1 and BLEU-1 against the best of the references (best F1 + BLEU-1, first on ties)."""
    candidates = [references] if isinstance(references, str) else list(references)
    if not candidates:
        raise ValueError("at least one reference answer is needed")
    best: OverlapScores | None = None
    for reference in candidates:
        scores = OverlapScores(token_f1(prediction, reference), bleu1(prediction, reference), reference)
        if best is None or scores.f1 + scores.bleu1 > best.f1 + best.bleu1:
            best = scores
    assert best is not None
    return best


def score_text(value: float | None) -> str:
    """A score as every command and page shows it: 4 decimals, n/a when no question was scored."""
    return "n/a" if value is None else f"{value:.4f}"
