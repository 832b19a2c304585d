"""Uncertainty over queries: confidence intervals (Wilson for measures that are 0 or 1 per query,
bootstrap for graded ones) and a paired randomization test.

Turns of one conversation are not independent (a conversation that goes wrong goes wrong on
every follow-up), so where ``clusters`` names each value's conversation the resampling unit is
the conversation: the bootstrap draws whole conversations (the mean over every turn drawn, a
ratio estimator) and the randomization test flips the sign of a whole conversation's
differences together. With every cluster a singleton (single questions) each function takes
exactly today's path, so the numbers are bit for bit the same.

The resampling ones are seeded, so the same per-query values always give the same interval and p-value, and
both resample in chunks so memory stays flat with tens of thousands of queries.
"""

from __future__ import annotations

import functools
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


def grouped(clusters: Sequence[str] | None, n: int) -> np.ndarray | None:
    """Each value's cluster as an index 0..C-1 (first-seen order), or None when there is nothing
    to group (no clusters, or every cluster a singleton): the caller then resamples values."""
    if clusters is None:
        return None
    if len(clusters) != n:
        raise ValueError(f"one cluster per value: {len(clusters)} clusters for {n} values")
    index: dict[str, int] = {}
    codes = np.fromiter((index.setdefault(c, len(index)) for c in clusters), dtype=np.int64, count=n)
    return None if len(index) == n else codes


def bootstrap_ci(values: Sequence[float], *, level: float = 0.95, resamples: int = BOOTSTRAP_RESAMPLES,
                 seed: int = SEED, clusters: Sequence[str] | None = None) -> tuple[float, float]:
    """Percentile bootstrap interval of the mean over queries; (nan, nan) with no queries.
    ``clusters`` (one per value: its conversation) draws whole clusters with replacement, the
    statistic the mean over every value drawn."""
    x = np.asarray(values, dtype=np.float64)
    n = len(x)
    if n == 0:
        return (math.nan, math.nan)
    codes = grouped(clusters, n)
    if codes is not None:
        return _cluster_bootstrap(x, codes, level=level, resamples=resamples, seed=seed)
    means = np.concatenate([x[idx].mean(axis=1) for idx in _draws(n, resamples, seed)])
    tail = (1.0 - level) / 2.0 * 100.0
    lo, hi = np.percentile(means, [tail, 100.0 - tail])
    return (float(lo), float(hi))


def _cluster_bootstrap(x: np.ndarray, codes: np.ndarray, *, level: float, resamples: int,
                       seed: int) -> tuple[float, float]:
    """The percentile interval of the ratio estimator sum(values drawn) / count(values drawn)
    over resamples of whole clusters (``codes``: each value's cluster 0..C-1)."""
    sums, counts = np.bincount(codes, weights=x), np.bincount(codes).astype(np.float64)
    c = len(sums)
    rng = np.random.default_rng(seed)
    means = np.concatenate([sums[idx].sum(axis=1) / counts[idx].sum(axis=1)
                            for idx in (rng.integers(0, c, size=(b, c)) for b in _chunks(resamples, c))])
    tail = (1.0 - level) / 2.0 * 100.0
    lo, hi = np.percentile(means, [tail, 100.0 - tail])
    return (float(lo), float(hi))


def split_difference_ci(values: Sequence[float], first: Sequence[bool], clusters: Sequence[str], *,
                        level: float = 0.95, resamples: int = BOOTSTRAP_RESAMPLES, seed: int = SEED,
                        binary: bool = False) -> tuple[float, float]:
    """The interval of mean(values where ``first``) - mean(values elsewhere) over conversations
    (``clusters``). A ``binary`` measure (hit@k, the rates) takes Newcombe's hybrid score interval
    from each side's Wilson interval over its effective number of conversations (as ``mean_ci``
    does for one mean): a bootstrap of 0/1 values collapses at the bounds (every first turn and
    every follow-up found gives [0, 0] from three conversations). A graded measure takes the
    bootstrap below, and Newcombe's interval where it collapses to a point inside [0, 1].
    Newcombe's ignores the pairing within a conversation, which only widens it."""
    x, side = np.asarray(values, dtype=np.float64), np.asarray(first, dtype=bool)
    found = _split_bootstrap(x, side, clusters, level=level, resamples=resamples, seed=seed)
    if math.isnan(found[0]) or not (binary or (found[0] == found[1] and 0.0 <= x.min() and x.max() <= 1.0)):
        return found
    index: dict[str, int] = {}
    codes = np.fromiter((index.setdefault(c, len(index)) for c in clusters), dtype=np.int64, count=len(x))
    sizes = [np.bincount(codes[mask]) for mask in (side, ~side)]  # each conversation's turns on that side
    (p1, n1), (p2, n2) = [(float(x[mask].mean()), effective_clusters(m[m > 0])) for mask, m in zip((side, ~side), sizes)]
    (l1, u1), (l2, u2) = wilson_ci(p1, n1, level=level), wilson_ci(p2, n2, level=level)
    d = p1 - p2
    return (max(-1.0, d - math.sqrt((p1 - l1) ** 2 + (u2 - p2) ** 2)),
            min(1.0, d + math.sqrt((u1 - p1) ** 2 + (p2 - l2) ** 2)))


def _split_bootstrap(values: Sequence[float], first: Sequence[bool], clusters: Sequence[str], *,
                     level: float, resamples: int, seed: int) -> tuple[float, float]:
    """Percentile interval of mean(values where ``first``) - mean(values elsewhere) by
    resampling whole ``clusters``: a conversation drawn brings its first turn and its
    follow-ups together, so the two means stay paired within it (a conversation that goes
    badly throughout moves both, not the drop). Resamples drawing no value of one side are left
    out; (nan, nan) when a side is empty."""
    x, side = np.asarray(values, dtype=np.float64), np.asarray(first, dtype=bool)
    n = len(x)
    if n == 0 or side.all() or not side.any():
        return (math.nan, math.nan)
    index: dict[str, int] = {}
    codes = np.fromiter((index.setdefault(c, len(index)) for c in clusters), dtype=np.int64, count=n)
    c = len(index)
    parts = [(np.bincount(codes, weights=np.where(mask, x, 0.0), minlength=c),
              np.bincount(codes, weights=mask.astype(np.float64), minlength=c)) for mask in (side, ~side)]
    rng = np.random.default_rng(seed)
    drops = []
    for b in _chunks(resamples, c):
        idx = rng.integers(0, c, size=(b, c))
        with np.errstate(invalid="ignore", divide="ignore"):
            (s1, n1), (s2, n2) = [(s[idx].sum(axis=1), k[idx].sum(axis=1)) for s, k in parts]
            drops.append(s1 / n1 - s2 / n2)
    found = np.concatenate(drops)
    found = found[np.isfinite(found)]
    if not len(found):
        return (math.nan, math.nan)
    tail = (1.0 - level) / 2.0 * 100.0
    lo, hi = np.percentile(found, [tail, 100.0 - tail])
    return (float(lo), float(hi))


#: Families whose per-query value is 0 or 1 by definition (hit@k/success, the freshness rates),
#: whatever the observed values: their interval is Wilson's, which keeps width at 0 and at 1.
BINARY_FAMILIES = frozenset({"hit", "freshness.stale_free", "freshness.conflict_free"})


def effective_clusters(sizes: Sequence[int]) -> float:
    """Kish's effective number of clusters of these sizes, (sum m)^2 / sum m^2: the number of
    conversations when they are of one length, fewer when a few long ones hold most turns. What
    ``n`` values are worth when each cluster's values are perfectly correlated."""
    m = np.asarray(sizes, dtype=np.float64)
    return float(m.sum() ** 2 / (m * m).sum())


def wilson_ci(rate: float, n: float, *, level: float = 0.95) -> tuple[float, float]:
    """Wilson score interval of a rate over ``n`` queries; unlike the bootstrap (or the normal
    interval) it does not collapse to a point at 0 or 1: 29 of 29 gives [0.883, 1]."""
    if n <= 0 or math.isnan(rate):
        return (math.nan, math.nan)
    z = _z(1 - (1 - level) / 2)
    centre = (rate + z * z / (2 * n)) / (1 + z * z / n)
    half = z / (1 + z * z / n) * math.sqrt(rate * (1 - rate) / n + z * z / (4 * n * n))
    return (max(0.0, centre - half), min(1.0, centre + half))


def mean_ci(values: Sequence[float], *, binary: bool, level: float = 0.95,
            clusters: Sequence[str] | None = None) -> tuple[float, float]:
    """The interval of the mean over queries: Wilson for a ``binary`` measure; the bootstrap for a
    graded one, except when every value is equal and in [0, 1], where resampling has nothing to
    vary and Wilson at that value stands in (a [0, 1] measure's variance is at most
    mean * (1 - mean), the binary case). Counts with every value equal keep the point.

    With ``clusters`` that are not all singletons (turns of conversations), a ``binary``
    measure takes Wilson's interval over the conversations' effective number,
    ``effective_clusters`` (each conversation counted once, as if its turns were perfectly
    correlated). A design effect estimated from the data would be narrower where turns are
    independent, but a few dozen conversations estimate it badly and not at all at 0 or 1, and
    the percentile bootstrap of a 0/1 mean under-covers near the bounds: 21 of 22 turns got a
    higher lower end than 22 of 22. Wilson over conversations is monotone in the rate, the same
    for a segment of one turn per conversation as over questions, wider for correlated turns,
    and covers (``tests/unit/test_conversation_stats.py``). A graded measure takes the cluster
    bootstrap; where every conversation's mean is equal and in [0, 1], resampling has nothing to
    vary, and Wilson over the effective number stands in."""
    x = np.asarray(values, dtype=np.float64)
    if len(x) == 0:
        return (math.nan, math.nan)
    mean = float(x.mean())
    codes = grouped(clusters, len(x))
    if codes is not None:
        sizes = np.bincount(codes)
        means = np.bincount(codes, weights=x) / sizes
        if binary or (np.allclose(means, means[0], rtol=0.0, atol=1e-12) and 0.0 <= mean <= 1.0):
            return wilson_ci(mean, effective_clusters(sizes), level=level)
        return _cluster_bootstrap(x, codes, level=level, resamples=BOOTSTRAP_RESAMPLES, seed=SEED)
    if binary or (np.all(x == x[0]) and 0.0 <= mean <= 1.0):
        return wilson_ci(mean, len(x), level=level)
    return bootstrap_ci(x, level=level)


def paired_randomization(a: Sequence[float], b: Sequence[float], *, resamples: int = RANDOMIZATION_RESAMPLES,
                         seed: int = SEED, clusters: Sequence[str] | None = None) -> float:
    """Two-sided p-value that ``mean(a) != mean(b)`` over the same queries (Fisher's sign-flip
    randomization test on the per-query differences). ``clusters``: a whole cluster's
    differences flip together (under the null a conversation's turns are exchangeable between
    the systems as a block, not turn by turn)."""
    d = np.asarray(a, dtype=np.float64) - np.asarray(b, dtype=np.float64)
    n = len(d)
    if n == 0 or not np.any(d):
        return 1.0
    codes = grouped(clusters, n)
    if codes is not None:  # the sum per cluster flips as one; the mean is over every query
        sums = np.bincount(codes, weights=d)
        return _flips(sums, abs(sums.sum()) - 1e-12 * n, 1.0, resamples, seed)
    return _flips(d, abs(d.mean()) - 1e-12, float(n), resamples, seed)


def _flips(units: np.ndarray, observed: float, divisor: float, resamples: int, seed: int) -> float:
    """The sign-flip p-value: the share of ``resamples`` random sign patterns over ``units``
    whose statistic (the signed units' sum over ``divisor``: n for their mean, 1 for their sum)
    is at least ``observed`` in size, the observed pattern counted among them (so a p-value is
    never 0). One matrix-vector product per chunk of patterns: an elementwise product and a
    mean took 1.8 times as long at 2,000 queries (the analysis of a large run does 84)."""
    extreme = 0
    for signs in _sign_patterns(len(units), resamples, seed):
        extreme += int(np.count_nonzero(np.abs((signs @ units) / divisor) >= observed))
    return (extreme + 1) / (resamples + 1)


#: the most sign patterns (resamples x units) or bootstrap draws kept between calls: 12 MB of each
_KEPT_CELLS = 1_500_000


def _draws(n: int, resamples: int, seed: int):
    """The bootstrap's resamples of ``n`` values, chunk by chunk (``bootstrap_ci``): kept like the
    sign patterns where there are few enough, drawn anew otherwise."""
    if n * resamples <= _KEPT_CELLS:
        return _kept_draws(n, resamples, seed)
    return _drawn(n, resamples, seed)


def _drawn(n: int, resamples: int, seed: int):
    rng = np.random.default_rng(seed)
    for b in _chunks(resamples, n):
        yield rng.integers(0, n, size=(b, n))


@functools.lru_cache(maxsize=2)
def _kept_draws(n: int, resamples: int, seed: int) -> tuple[np.ndarray, ...]:
    kept = tuple(_drawn(n, resamples, seed))
    for idx in kept:
        idx.flags.writeable = False
    return kept


def _sign_patterns(n: int, resamples: int, seed: int):
    """The random sign patterns of ``_flips``, chunk by chunk: the same every time for the same
    ``(n, resamples, seed)``, so where there are few enough (``_KEPT_CELLS``) they are drawn once
    and kept (``_kept_patterns``). Drawing them was 90% of a test's time over 300 questions, and
    the analysis of a run tests every measure of every engine over the same questions (a
    calibration, ``analysis/calibration.py``, hundreds of reruns of it)."""
    if n * resamples <= _KEPT_CELLS:
        return _kept_patterns(n, resamples, seed)
    return _drawn_patterns(n, resamples, seed)


def _drawn_patterns(n: int, resamples: int, seed: int):
    rng = np.random.default_rng(seed)
    for size in _chunks(resamples, n):
        yield (rng.integers(0, 2, size=(size, n), dtype=np.int8) * 2 - 1).astype(np.float64)


@functools.lru_cache(maxsize=2)
def _kept_patterns(n: int, resamples: int, seed: int) -> tuple[np.ndarray, ...]:
    kept = tuple(_drawn_patterns(n, resamples, seed))
    for signs in kept:
        signs.flags.writeable = False
    return kept


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
    difference (the queries are resampled together, so the pairing is kept; with ``clusters``,
    whole conversations)."""
    return bootstrap_ci(np.asarray(a, dtype=np.float64) - np.asarray(b, dtype=np.float64), **kwargs)


def _z(q: float) -> float:
    from statistics import NormalDist

    return NormalDist().inv_cdf(q)


def detectable_drop(values: Sequence[float], *, alpha: float = 0.05, power: float = POWER) -> float:
    """The smallest drop of the mean that a two-sided paired test at ``alpha`` detects with
    ``power``, by the normal approximation ``(z(1-alpha/2) + z(power)) * sd / sqrt(n)``.

    The per-query standard deviation of the paired differences is not known before the run being
    compared exists, so the spread of the values themselves stands in for it: a change that moves
    queries between the values this run already takes. With no spread (every value equal, e.g.
    hit@5 = 1.000) that would say 0, so the drop is then the exact one of the sign-flip test
    (``_exact_drop``), never 0. nan with no queries."""
    x = np.asarray(values, dtype=np.float64)
    if len(x) < 2:
        return math.nan
    sd = float(x.std(ddof=1))
    if sd == 0.0:
        return _exact_drop(len(x), alpha=alpha, power=power)
    return (_z(1 - alpha / 2) + _z(power)) * sd / math.sqrt(len(x))


def _exact_drop(n: int, *, alpha: float, power: float) -> float:
    """With every value equal, a drop moves some queries one way: the sign-flip test flags ``k``
    such changes (and nothing else) at ``p = 2 / 2^k``, so it needs ``k >= k*`` (the fewest with
    ``2 / 2^k* <= alpha``). The drop is the smallest rate ``r`` of queries lost for which at least
    ``k*`` of ``n`` are lost with ``power`` (binomial), i.e. a rate of r per query moved across the
    full range; 1.0 when even losing every query is not enough."""
    k_star = max(1, math.ceil(1 - math.log2(alpha)))
    if k_star > n:
        return 1.0

    def chance(r: float) -> float:  # P(Binomial(n, r) >= k*)
        return 1.0 - sum(math.comb(n, i) * r ** i * (1 - r) ** (n - i) for i in range(k_star))

    lo, hi = 0.0, 1.0
    for _ in range(60):
        mid = (lo + hi) / 2
        lo, hi = (lo, mid) if chance(mid) >= power else (mid, hi)
    return hi


def queries_needed(values: Sequence[float], delta: float, *, alpha: float = 0.05, power: float = POWER) -> int:
    """About how many queries (with this run's per-query spread) a drop of ``delta`` needs to be
    detected at ``alpha`` with ``power``: ``((z(1-alpha/2) + z(power)) * sd / delta)^2``; with no
    spread, the fewest for which the exact drop (``_exact_drop``) is at most ``delta``."""
    if delta <= 0:
        raise ValueError(f"a drop to detect must be positive, got {delta!r}")
    x = np.asarray(values, dtype=np.float64)
    sd = float(x.std(ddof=1)) if len(x) > 1 else 0.0
    if sd == 0.0 and len(x) > 1:
        if delta >= 1.0:
            return 2
        lo, hi = 2, 2
        while _exact_drop(hi, alpha=alpha, power=power) > delta:
            lo, hi = hi, hi * 2
        while lo < hi:
            mid = (lo + hi) // 2
            lo, hi = (lo, mid) if _exact_drop(mid, alpha=alpha, power=power) <= delta else (mid + 1, hi)
        return hi
    return int(math.ceil(((_z(1 - alpha / 2) + _z(power)) * sd / delta) ** 2))


def cohen_kappa(a: Sequence[object], b: Sequence[object]) -> float:
    """Cohen's kappa of two raters over the same items: (observed - chance agreement) / (1 -
    chance), chance from each rater's own label shares. 1 is full agreement, 0 what chance gives;
    NaN with no item, and with one label used by both raters throughout (chance is then 1)."""
    if len(a) != len(b):
        raise ValueError(f"two raters of the same items: {len(a)} and {len(b)} labels")
    n = len(a)
    if not n:
        return math.nan
    observed = sum(x == y for x, y in zip(a, b)) / n
    labels = set(a) | set(b)
    chance = sum((sum(x == lab for x in a) / n) * (sum(y == lab for y in b) / n) for lab in labels)
    return math.nan if chance == 1.0 else (observed - chance) / (1.0 - chance)


def fleiss_kappa(table: Sequence[Sequence[int]]) -> float:
    """Fleiss' kappa of several raters: ``table`` has a row per item and a column per category,
    each cell the raters who put the item there (every row the same number of raters, two or
    more). (mean observed agreement per item - chance agreement from the pooled category shares)
    / (1 - chance); 1 is full agreement, 0 what chance gives; NaN with no item, and when every
    rating falls in one category (chance is then 1). Fleiss (1971)."""
    rows = [list(map(int, r)) for r in table]
    if not rows:
        return math.nan
    raters = {sum(r) for r in rows}
    if len(raters) != 1 or next(iter(raters)) < 2:
        raise ValueError(f"every item rated by the same number of raters (two or more): got {sorted(raters)}")
    n, items = raters.pop(), len(rows)
    observed = sum((sum(x * x for x in r) - n) / (n * (n - 1)) for r in rows) / items
    chance = sum((sum(r[j] for r in rows) / (items * n)) ** 2 for j in range(len(rows[0])))
    return math.nan if chance >= 1.0 - 1e-15 else (observed - chance) / (1.0 - chance)


def kendall_tau(a: Sequence[float], b: Sequence[float]) -> float:
    """Kendall's tau-a between two scorings of the same items (engines' means under two sets of
    labels): 1 when they order every pair alike, -1 when they reverse every pair; NaN under two items."""
    n = len(a)
    if n != len(b):
        raise ValueError(f"two scorings of the same items: {n} and {len(b)} values")
    if n < 2:
        return math.nan
    score = 0
    for i in range(n):
        for j in range(i + 1, n):
            score += int(np.sign(a[i] - a[j]) * np.sign(b[i] - b[j]))
    return score / (n * (n - 1) / 2)
