"""Uncertainty over queries: bootstrap confidence intervals and a paired randomization test.

Both are seeded, so the same per-query values always give the same interval and p-value, and
both resample in chunks so memory stays flat with tens of thousands of queries.
"""

from __future__ import annotations

import math
from typing import Sequence

import numpy as np

SEED = 20261130
BOOTSTRAP_RESAMPLES = 1000
RANDOMIZATION_RESAMPLES = 4000
_CHUNK_CELLS = 4_000_000  # resamples x queries held in memory at once


def _chunks(total: int, n: int):
    step = max(1, _CHUNK_CELLS // max(n, 1))
    for start in range(0, total, step):
        yield min(step, total - start)


def bootstrap_ci(values: Sequence[float], *, level: float = 0.95, resamples: int = BOOTSTRAP_RESAMPLES,
                 seed: int = SEED) -> tuple[float, float]:
    """Percentile bootstrap interval of the mean over queries; (nan, nan) with no queries."""
    x = np.asarray(values, dtype=np.float64)
    n = len(x)
    if n == 0:
        return (math.nan, math.nan)
    rng = np.random.default_rng(seed)
    means = np.concatenate([x[rng.integers(0, n, size=(b, n))].mean(axis=1) for b in _chunks(resamples, n)])
    tail = (1.0 - level) / 2.0 * 100.0
    lo, hi = np.percentile(means, [tail, 100.0 - tail])
    return (float(lo), float(hi))


def paired_randomization(a: Sequence[float], b: Sequence[float], *, resamples: int = RANDOMIZATION_RESAMPLES,
                         seed: int = SEED) -> float:
    """Two-sided p-value that ``mean(a) != mean(b)`` over the same queries (Fisher's sign-flip
    randomization test on the per-query differences)."""
    d = np.asarray(a, dtype=np.float64) - np.asarray(b, dtype=np.float64)
    n = len(d)
    if n == 0 or not np.any(d):
        return 1.0
    observed = abs(d.mean()) - 1e-12
    rng = np.random.default_rng(seed)
    extreme = 0
    for size in _chunks(resamples, n):
        signs = rng.integers(0, 2, size=(size, n), dtype=np.int8) * 2 - 1
        extreme += int(np.count_nonzero(np.abs((signs * d).mean(axis=1)) >= observed))
    return (extreme + 1) / (resamples + 1)


# --- many comparisons, effect sizes, power ----------------------------------------------------

CORRECTIONS = ("holm", "bh", "none")
CORRECTION_NAMES = {"holm": "Holm-Bonferroni", "bh": "Benjamini-Hochberg", "none": "no correction"}
POWER = 0.8


def adjust(pvalues: Sequence[float], method: str = "holm") -> list[float]:
    """Adjusted p-values for a family of tests, so ``adjusted < alpha`` controls the family-wise
    error (``holm``: Holm-Bonferroni step-down) or the false discovery rate (``bh``:
    Benjamini-Hochberg step-up) at alpha; ``none`` returns them unchanged. Same values as
    statsmodels' ``multipletests(method="holm" | "fdr_bh")``."""
    if method not in CORRECTIONS:
        raise ValueError(f"unknown correction {method!r}; known: {', '.join(CORRECTIONS)}")
    p = np.asarray(pvalues, dtype=np.float64)
    m = len(p)
    if m == 0 or method == "none":
        return [float(x) for x in p]
    order = np.argsort(p, kind="stable")
    ranked = p[order]
    if method == "holm":
        adj = np.maximum.accumulate((m - np.arange(m)) * ranked)
    else:
        adj = np.minimum.accumulate((m / np.arange(m, 0, -1) * ranked[::-1]))[::-1]
    out = np.empty(m)
    out[order] = np.minimum(adj, 1.0)
    return [float(x) for x in out]


def paired_difference_ci(a: Sequence[float], b: Sequence[float], **kwargs) -> tuple[float, float]:
    """Effect size of ``a`` over ``b``: the percentile bootstrap interval of the mean per-query
    difference (the queries are resampled together, so the pairing is kept)."""
    return bootstrap_ci(np.asarray(a, dtype=np.float64) - np.asarray(b, dtype=np.float64), **kwargs)


def _z(q: float) -> float:
    from statistics import NormalDist

    return NormalDist().inv_cdf(q)


def detectable_drop(values: Sequence[float], *, alpha: float = 0.05, power: float = POWER) -> float:
    """The smallest drop of the mean that a two-sided paired test at ``alpha`` detects with
    ``power``, by the normal approximation ``(z(1-alpha/2) + z(power)) * sd / sqrt(n)``.

    The per-query standard deviation of the paired differences is not known before the run being
    compared exists, so the spread of the values themselves stands in for it: a change that moves
    queries between the values this run already takes. nan with no queries."""
    x = np.asarray(values, dtype=np.float64)
    if len(x) < 2:
        return math.nan
    return (_z(1 - alpha / 2) + _z(power)) * float(x.std(ddof=1)) / math.sqrt(len(x))


def queries_needed(values: Sequence[float], delta: float, *, alpha: float = 0.05, power: float = POWER) -> int:
    """About how many queries (with this run's per-query spread) a drop of ``delta`` needs to be
    detected at ``alpha`` with ``power``: ``((z(1-alpha/2) + z(power)) * sd / delta)^2``."""
    if delta <= 0:
        raise ValueError(f"a drop to detect must be positive, got {delta!r}")
    x = np.asarray(values, dtype=np.float64)
    sd = float(x.std(ddof=1)) if len(x) > 1 else 0.0
    return int(math.ceil(((_z(1 - alpha / 2) + _z(power)) * sd / delta) ** 2))
