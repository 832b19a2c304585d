"""One paired comparison of two systems over the same queries: the difference of their means,
the randomization test's p (and, once the family is known, its corrected p), the bootstrap
interval of the per-query difference, how many queries went each way, and the queries that
moved most. Engine pairs in a run, a run against its baseline, and shadow comparisons all read
this one statistic (``ir.stats`` holds the tests it is made of)."""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from typing import Sequence

import numpy as np

from .stats import adjust, paired_difference_ci, paired_randomization

#: the queries a comparison names as having moved most
MOVERS = 5


@dataclass(frozen=True)
class Paired:
    """``a`` against ``b``, query for query."""

    delta: float  # mean(a) - mean(b); nan over no query
    p: float  # two-sided paired randomization test
    ci: tuple[float, float]  # 95% bootstrap interval of the mean per-query difference a - b
    wins: int  # queries where a scores higher
    losses: int
    ties: int
    #: positions of the queries that moved most (largest |a - b| first, then by id), none unmoved
    movers: tuple[int, ...]
    #: p corrected over the family of comparisons it was made in (``corrected``); p until then
    p_adjusted: float = math.nan


def paired(a: Sequence[float], b: Sequence[float], ids: Sequence[str] = (), *, movers: int = MOVERS,
           clusters: Sequence[str] | None = None, interval: bool = True) -> Paired:
    """``a`` and ``b`` are per-query values in one query order; ``ids`` names the queries (the
    tie-break among movers); ``clusters`` each query's conversation, where turns of one are
    compared: the test and the interval then resample conversations, not turns. Without
    ``interval`` the effect size's interval is not made ((nan, nan)): a calibration's reruns,
    judged and never shown, need only the test."""
    x, y = np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)
    diff = x - y
    p = paired_randomization(x, y, clusters=clusters)
    ci = paired_difference_ci(x, y, clusters=clusters) if interval else (math.nan, math.nan)
    return Paired(float(x.mean() - y.mean()) if len(x) else math.nan, p, ci,
                  int((diff > 0).sum()), int((diff < 0).sum()), int((diff == 0).sum()),
                  moved(diff, ids, movers), p)


def moved(diff: Sequence[float], ids: Sequence[str] = (), limit: int = MOVERS) -> tuple[int, ...]:
    """The one definition of "the queries that moved most": positions by |difference|, largest
    first, then by query id; a query that did not move is never one."""
    names = list(ids) or [""] * len(diff)
    order = sorted((i for i in range(len(diff)) if diff[i] != 0), key=lambda i: (-abs(diff[i]), names[i]))
    return tuple(order[:limit])


def corrected(comparisons: Sequence[Paired], method: str = "holm") -> list[Paired]:
    """The same comparisons with their p corrected for the whole family (``ir.stats.adjust``)."""
    return [replace(c, p_adjusted=q) for c, q in zip(comparisons, adjust([c.p for c in comparisons], method))]
