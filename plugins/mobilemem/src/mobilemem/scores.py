"""The scores of summary.json (DESIGN §7), overall and by language and difficulty.

The headline (`Score`): accuracy, F1 and BLEU-1 over the one scored set (answered and judged).
The secondary figure (`OfficialScore`): the official MobileMem evaluator's accounting, where every
expected question is in the denominator and a question that is not scored (a gap of any stage,
not_run, damaged) counts as label 0, F1 0, BLEU-1 0.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Sequence
from typing import TypeVar

from mobilemem.outcomes import Outcome
from mobilemem.records import MetricsFile, OfficialAccounting, OfficialScore, PlannedQuestion, Score

S = TypeVar("S")


def mean(values: list[float]) -> float | None:
    return sum(values) / len(values) if values else None


def _scored(outcomes: Sequence[Outcome]) -> list[MetricsFile]:
    return [o.metrics for o in outcomes if o.scored and o.metrics]


def headline(outcomes: Sequence[Outcome]) -> Score:
    scored = _scored(outcomes)
    return Score(expected=len(outcomes), scored=len(scored), accuracy=mean([float(m.llm_judge) for m in scored]),
                 f1=mean([m.f1 for m in scored]), bleu1=mean([m.bleu1 for m in scored]))


def official(outcomes: Sequence[Outcome]) -> OfficialScore:
    scored, expected = _scored(outcomes), len(outcomes)

    def over_expected(values: list[float]) -> float | None:
        return sum(values) / expected if expected else None

    return OfficialScore(expected=expected, scored=len(scored), not_scored=expected - len(scored),
                         accuracy=over_expected([float(m.llm_judge) for m in scored]),
                         f1=over_expected([m.f1 for m in scored]), bleu1=over_expected([m.bleu1 for m in scored]))


def by(outcomes: Sequence[Outcome], key: Callable[[PlannedQuestion], object],
       score: Callable[[Sequence[Outcome]], S]) -> dict[str, S]:
    """`score` of each group of questions sharing `key` (its text), sorted by name."""
    groups: dict[str, list[Outcome]] = defaultdict(list)
    for outcome in outcomes:
        groups[str(key(outcome.planned))].append(outcome)
    return {name: score(group) for name, group in sorted(groups.items())}


def language(planned: PlannedQuestion) -> str:
    return planned.language


def difficulty(planned: PlannedQuestion) -> str | None:
    return planned.difficulty


def official_accounting(outcomes: Sequence[Outcome]) -> OfficialAccounting:
    return OfficialAccounting(overall=official(outcomes), by_language=by(outcomes, language, official),
                              by_difficulty=by(outcomes, difficulty, official))
