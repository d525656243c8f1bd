"""Uncertainty for the report and `compare`: percentile bootstrap intervals (SciPy) and the exact
McNemar test (statsmodels). Seeded, so the same run files always give the same report."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from scipy.stats import bootstrap

CONFIDENCE = 0.95
RESAMPLES = 2_000
SEED = 20261201


@dataclass(frozen=True)
class Interval:
    """A mean and its 95% bootstrap interval; the bounds are null with fewer than two values."""

    estimate: float | None
    low: float | None
    high: float | None
    n: int


@dataclass(frozen=True)
class McNemar:
    """Paired correctness of two runs on the same questions."""

    n: int
    both: int
    neither: int
    only_a: int  # correct in A, wrong in B
    only_b: int
    p_value: float | None  # exact (binomial) test on the discordant pairs; null when there are none


def _interval(data: tuple[np.ndarray, ...], statistic, paired: bool) -> tuple[float | None, float | None]:
    if len(data[0]) < 2:
        return None, None
    if all(np.all(d == d[0]) for d in data) and not paired:  # nothing varies: the interval is the point
        value = float(data[0][0])
        return value, value
    result = bootstrap(data, statistic, n_resamples=RESAMPLES, confidence_level=CONFIDENCE, method="percentile",
                       paired=paired, vectorized=True, rng=np.random.default_rng(SEED))
    low, high = result.confidence_interval
    return float(low), float(high)


def mean_interval(values: Sequence[float]) -> Interval:
    data = np.asarray(values, dtype=float)
    if data.size == 0:
        return Interval(None, None, None, 0)
    low, high = _interval((data,), lambda x, axis: np.mean(x, axis=axis), paired=False)
    return Interval(float(data.mean()), low, high, int(data.size))


def paired_difference(a: Sequence[float], b: Sequence[float]) -> Interval:
    """mean(b - a) over paired values, with a paired bootstrap interval."""
    first, second = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    if first.shape != second.shape:
        raise ValueError("paired values must have the same length")
    if first.size == 0:
        return Interval(None, None, None, 0)
    if np.array_equal(first, second):
        return Interval(0.0, 0.0, 0.0, int(first.size))
    low, high = _interval((first, second), lambda x, y, axis: np.mean(y - x, axis=axis), paired=True)
    return Interval(float((second - first).mean()), low, high, int(first.size))


def mcnemar_exact(a: Sequence[bool], b: Sequence[bool]) -> McNemar:
    first, second = np.asarray(a, dtype=bool), np.asarray(b, dtype=bool)
    if first.shape != second.shape:
        raise ValueError("paired labels must have the same length")
    both, neither = int(np.sum(first & second)), int(np.sum(~first & ~second))
    only_a, only_b = int(np.sum(first & ~second)), int(np.sum(~first & second))
    p_value = None
    if only_a + only_b:
        # imported here: statsmodels takes about as long to import as the whole report takes to write
        from statsmodels.stats.contingency_tables import mcnemar

        p_value = float(mcnemar([[both, only_a], [only_b, neither]], exact=True).pvalue)
    return McNemar(int(first.size), both, neither, only_a, only_b, p_value)
