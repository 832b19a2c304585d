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
