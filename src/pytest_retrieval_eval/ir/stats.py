"""Uncertainty over queries: confidence intervals (Wilson for measures that are 0 or 1 per query,
bootstrap for graded ones) and a paired randomization test.

Turns of one conversation are not independent (a conversation that goes wrong goes wrong on
every follow-up), so where ``clusters`` names each value's conversation the resampling unit is
the conversation: the bootstrap draws whole conversations (the mean over every turn drawn, a
ratio estimator) and the randomization test flips the sign of a whole conversation's
differences together. A 0/1 measure's interval is Wilson's over what the turns are worth
(``effective_size``: the design effect of the data's own within-conversation correlation), and
the detectable drop and query counts read the same effective number. With every cluster a
singleton (single questions) each function takes exactly today's path, so the numbers are bit
for bit the same.

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
    (``clusters``). A ``binary`` measure (hit@k, the rates) takes Zou and Donner's MOVER (2008)
    from each side's interval as ``mean_ci`` makes it (Wilson over the side's effective number:
    its own design effect), with the correlation of the two means over conversations
    (``_side_correlation``): Newcombe's hybrid score interval for the difference, corrected for
    the pairing within a conversation, which narrows it where a conversation that goes well
    goes well on both sides. A bootstrap of 0/1 values collapses at the bounds (every first turn
    and every follow-up found gives [0, 0] from three conversations). A graded measure takes
    the bootstrap below, and that interval where it collapses to a point inside [0, 1]."""
    x, side = np.asarray(values, dtype=np.float64), np.asarray(first, dtype=bool)
    found = _split_bootstrap(x, side, clusters, level=level, resamples=resamples, seed=seed)
    if math.isnan(found[0]) or not (binary or (found[0] == found[1] and 0.0 <= x.min() and x.max() <= 1.0)):
        return found
    index: dict[str, int] = {}
    codes = np.fromiter((index.setdefault(c, len(index)) for c in clusters), dtype=np.int64, count=len(x))
    (p1, (l1, u1)), (p2, (l2, u2)) = [(float(x[mask].mean()), _side_ci(x[mask], codes[mask], level))
                                      for mask in (side, ~side)]
    r = _side_correlation(x, side, codes)
    d = p1 - p2
    return (max(-1.0, d - math.sqrt(max(0.0, (p1 - l1) ** 2 + (u2 - p2) ** 2 - 2 * r * (p1 - l1) * (u2 - p2)))),
            min(1.0, d + math.sqrt(max(0.0, (u1 - p1) ** 2 + (p2 - l2) ** 2 - 2 * r * (u1 - p1) * (p2 - l2)))))


def _side_ci(x: np.ndarray, codes: np.ndarray, level: float) -> tuple[float, float]:
    """One side's Wilson interval over its effective number (``mean_ci`` on its values)."""
    _, codes = np.unique(codes, return_inverse=True)
    n = float(len(x)) if codes.max() + 1 == len(x) else _effective_size(x, codes, level)
    return wilson_ci(float(x.mean()), n, level=level)


def _side_correlation(x: np.ndarray, side: np.ndarray, codes: np.ndarray) -> float:
    """The correlation of the two sides' means over resamples of whole conversations, by
    linearization: each conversation's residuals ``y - mean * m`` on one side and on the other,
    over the sides' sizes. 0 with fewer than ``MIN_CLUSTERS`` conversations (the guard: the
    sides' intervals are then each conversation once, and no pairing is read) or where a side
    does not vary."""
    c = int(codes.max()) + 1
    if c < MIN_CLUSTERS:
        return 0.0
    e = []
    for mask in (side, ~side):
        sums = np.bincount(codes, weights=np.where(mask, x, 0.0), minlength=c)
        sizes = np.bincount(codes, weights=mask.astype(np.float64), minlength=c)
        e.append((sums - float(x[mask].mean()) * sizes) / mask.sum())
    scale = math.sqrt(float((e[0] ** 2).sum() * (e[1] ** 2).sum()))
    return 0.0 if scale == 0.0 else max(-1.0, min(1.0, float((e[0] * e[1]).sum()) / scale))


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
    measure takes Wilson's interval over the turns' effective number (``effective_size``: the
    design effect the data's own within-conversation correlation gives, with a guard for few
    conversations). It covers at 93-97% for a nominal 95% whether turns are independent or
    strongly correlated, and is hardly wider than Wilson over the turns when they are
    independent (``tests/unit/test_conversation_stats.py``; the figures in docs/gates.md,
    "Conversations, turn by turn"). A graded measure takes the cluster bootstrap; where every conversation's mean is equal and
    in [0, 1], resampling has nothing to vary, and Wilson over the effective number stands in."""
    x = np.asarray(values, dtype=np.float64)
    if len(x) == 0:
        return (math.nan, math.nan)
    mean = float(x.mean())
    codes = grouped(clusters, len(x))
    if codes is not None:
        sizes = np.bincount(codes)
        means = np.bincount(codes, weights=x) / sizes
        if binary or (np.allclose(means, means[0], rtol=0.0, atol=1e-12) and 0.0 <= mean <= 1.0):
            return wilson_ci(mean, _effective_size(x, codes, level), level=level)
        return _cluster_bootstrap(x, codes, level=level, resamples=BOOTSTRAP_RESAMPLES, seed=SEED)
    if binary or (np.all(x == x[0]) and 0.0 <= mean <= 1.0):
        return wilson_ci(mean, len(x), level=level)
    return bootstrap_ci(x, level=level)


#: the fewest conversations whose spread estimates a design effect: 8 degrees of freedom, below
#: which the NCHS data presentation standards flag a design-based estimate as unreliable (Parker
#: et al. 2017). Fewer, and ``effective_size`` counts each conversation once instead.
MIN_CLUSTERS = 9


def _cluster_variance(x: np.ndarray, codes: np.ndarray) -> float:
    """The variance of the mean over every value (a ratio estimator: the sum over clusters of
    their values over the sum of their sizes) by linearization over whole clusters,
    ``C / (C - 1) * sum_c (y_c - mean * m_c)^2 / n^2``: what a survey package reports for a
    mean over a cluster sample (``svymean`` with ``ids=~conversation``), what a cluster
    bootstrap's variance tends to, times C / (C - 1)."""
    sums, sizes = np.bincount(codes, weights=x), np.bincount(codes).astype(np.float64)
    c, n = len(sums), len(x)
    residual = sums - float(x.mean()) * sizes
    return float(c / (c - 1) * (residual * residual).sum() / (n * n))


def design_effect(values: Sequence[float], clusters: Sequence[str] | None) -> float:
    """Kish's design effect of the mean over ``values`` grouped by ``clusters``: the variance of
    the mean over whole clusters (``_cluster_variance``) over the variance it would have if
    every value were independent (variance / n). With clusters of one size m it is Kish's
    ``1 + (m - 1) * ICC`` of the estimated intraclass correlation; with unequal sizes the
    linearization weighs each cluster by its size, as a mean over every turn does. 1 with no
    clusters (or singletons); nan where the values do not vary (nothing to estimate it from)
    and with a single cluster."""
    x = np.asarray(values, dtype=np.float64)
    codes = grouped(clusters, len(x))
    if codes is None:
        return 1.0
    spread = float(x.var())
    if spread == 0.0 or codes.max() == 0:
        return math.nan
    return _cluster_variance(x, codes) / (spread / len(x))


def effective_size(values: Sequence[float], clusters: Sequence[str] | None, *, level: float = 0.95) -> float:
    """What ``values`` grouped by ``clusters`` (turns of conversations) are worth in independent
    values: the interval's n (``mean_ci``), the detectable drop's and the query count's
    (``detectable_drop``, ``queries_needed``). Korn and Graubard's effective sample size with
    the degrees-of-freedom adjustment of Dean and Pagano (2015), as survey software computes it
    (R ``survey::svyciprop``; Stata ``svypd`` for WHO's vaccination coverage surveys)::

        n / deff * (z / t(C - 1))^2,  never more than n

    ``deff`` (``design_effect``) reads the data's own within-conversation correlation: about 1
    where turns are independent (n is then nearly the turns'), up to the mean conversation
    length where a conversation's turns all go one way. The t factor widens it for a design
    effect estimated from C conversations (C - 1 degrees of freedom); capped at n, as NCHS
    truncates a design effect below 1 (a negative correlation does not make turns worth more
    than independent ones). Where every conversation's mean is the same (every turn found,
    every turn missed, or a third of each conversation's turns found), the data show no
    clustering and n is the turns' (NCHS's rule for homogeneous data).

    Guard: with fewer than ``MIN_CLUSTERS`` conversations the correlation cannot be estimated
    (a few conversations that happen to agree look homogeneous, and covered 78% for
    strongly correlated turns in 3 conversations): each conversation then counts once, Kish's
    effective number of clusters (``effective_clusters``), which covers at any correlation.

    Near 0 and 1 with strongly correlated turns it under-covers, as every method does there
    (``survey::svyciprop``'s documentation): 40 conversations whose turns correlate at 0.8 and
    whose true rate is 0.97 have every turn found one time in five, which says nothing of the
    correlation; it covers 76% there (docs/gates.md, "Conversations, turn by turn")."""
    x = np.asarray(values, dtype=np.float64)
    codes = grouped(clusters, len(x))
    if codes is None:
        return float(len(x))
    return _effective_size(x, codes, level)


def _effective_size(x: np.ndarray, codes: np.ndarray, level: float) -> float:
    sizes = np.bincount(codes)
    n, c = len(x), len(sizes)
    if c < MIN_CLUSTERS:
        return effective_clusters(sizes)
    variance = _cluster_variance(x, codes)
    spread = float(x.var())
    if spread == 0.0 or variance <= 1e-15 * spread:  # homogeneous: no clustering to see
        return float(n)
    q = 1 - (1 - level) / 2
    return min(float(n), spread / variance * (_z(q) / t_quantile(q, c - 1)) ** 2)


def t_quantile(q: float, df: int) -> float:
    """Student's t quantile with ``df`` (a positive whole number of) degrees of freedom, exact:
    bisection on the closed-form distribution function for whole degrees of freedom
    (Abramowitz and Stegun 26.7.3-4); past 300 degrees of freedom, Cornish and Fisher's
    expansion around the normal quantile (A&S 26.7.5), within 1e-8 of it there."""
    return _t_quantile(float(q), int(df))


@functools.lru_cache(maxsize=256)
def _t_quantile(q: float, df: int) -> float:
    if df < 1:
        raise ValueError(f"degrees of freedom must be at least 1, got {df}")
    if q < 0.5:
        return -_t_quantile(1 - q, df)
    if df > 300:
        z = _z(q)
        return (z + (z ** 3 + z) / (4 * df) + (5 * z ** 5 + 16 * z ** 3 + 3 * z) / (96 * df ** 2)
                + (3 * z ** 7 + 19 * z ** 5 + 17 * z ** 3 - 15 * z) / (384 * df ** 3))

    def cdf(t: float) -> float:  # P(T <= t) for t >= 0: (1 + A(t | df)) / 2
        theta = math.atan(t / math.sqrt(df))
        s, c2 = math.sin(theta), math.cos(theta) ** 2
        if df % 2:
            term, total = math.cos(theta), 0.0
            if df > 1:
                total = term
                for k in range(3, df - 1, 2):
                    term *= c2 * (k - 1) / k
                    total += term
            a = 2 / math.pi * (theta + s * total)
        else:
            term = total = 1.0
            for k in range(2, df - 1, 2):
                term *= c2 * (k - 1) / k
                total += term
            a = s * total
        return (1 + a) / 2

    lo, hi = 0.0, 1.0
    while cdf(hi) < q:
        lo, hi = hi, hi * 2
    for _ in range(200):
        mid = (lo + hi) / 2
        if mid in (lo, hi):
            break
        lo, hi = (mid, hi) if cdf(mid) < q else (lo, mid)
    return (lo + hi) / 2


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


def detectable_drop(values: Sequence[float], *, alpha: float = 0.05, power: float = POWER,
                    clusters: Sequence[str] | None = None) -> float:
    """The smallest drop of the mean that a two-sided paired test at ``alpha`` detects with
    ``power``, by the normal approximation ``(z(1-alpha/2) + z(power)) * sd / sqrt(n)``.

    The per-query standard deviation of the paired differences is not known before the run being
    compared exists, so the spread of the values themselves stands in for it: a change that moves
    queries between the values this run already takes. With no spread (every value equal, e.g.
    hit@5 = 1.000) that would say 0, so the drop is then the exact one of the sign-flip test
    (``_exact_drop``), never 0. nan with no queries.

    With ``clusters`` (turns of conversations), n is what the turns are worth
    (``effective_size``, the interval's design effect), and the exact drop counts conversations,
    the units the sign-flip test flips."""
    x = np.asarray(values, dtype=np.float64)
    if len(x) < 2:
        return math.nan
    codes = grouped(clusters, len(x))
    sd = float(x.std(ddof=1))
    if sd == 0.0:
        return _exact_drop(len(x) if codes is None else int(codes.max()) + 1, alpha=alpha, power=power)
    n = len(x) if codes is None else _effective_size(x, codes, 0.95)
    return (_z(1 - alpha / 2) + _z(power)) * sd / math.sqrt(n)


def smallest_p(units: int) -> float:
    """The smallest two-sided p-value a sign-flip test over ``units`` can give: every unit moved
    the same way, matched only by its mirror image, 2 of the 2^units sign patterns."""
    return math.ldexp(1.0, 1 - units) if units > 0 else 1.0  # 2 / 2^units, 0.0 past what a float holds


def can_be_significant(units: int, alpha: float) -> bool:
    """Whether a paired sign-flip test over ``units`` (conversations where a set has them, else
    questions) can reach ``alpha`` at all: 5 cannot at 0.05 (2/32 = 0.0625), 6 can (0.031)."""
    return smallest_p(units) < alpha


def _exact_drop(n: int, *, alpha: float, power: float) -> float:
    """With every value equal, a drop moves some queries one way: the sign-flip test flags ``k``
    such changes (and nothing else) at ``p = 2 / 2^k``, so it needs ``k >= k*`` (the fewest with
    ``2 / 2^k* < alpha``, as the gate rejects on ``p < alpha``). The drop is the smallest rate ``r`` of queries lost for which at least
    ``k*`` of ``n`` are lost with ``power`` (binomial), i.e. a rate of r per query moved across the
    full range; 1.0 when even losing every query is not enough."""
    k_star = max(1, math.floor(1 - math.log2(alpha)) + 1)  # 2 / 2^k < alpha: the gate rejects on p < alpha
    if k_star > n:
        return 1.0

    def chance(r: float) -> float:  # P(Binomial(n, r) >= k*)
        return 1.0 - sum(math.comb(n, i) * r ** i * (1 - r) ** (n - i) for i in range(k_star))

    lo, hi = 0.0, 1.0
    for _ in range(60):
        mid = (lo + hi) / 2
        lo, hi = (lo, mid) if chance(mid) >= power else (mid, hi)
    return hi


def queries_needed(values: Sequence[float], delta: float, *, alpha: float = 0.05, power: float = POWER,
                   clusters: Sequence[str] | None = None) -> int:
    """About how many queries (with this run's per-query spread) a drop of ``delta`` needs to be
    detected at ``alpha`` with ``power``: ``((z(1-alpha/2) + z(power)) * sd / delta)^2``; with no
    spread, the fewest for which the exact drop (``_exact_drop``) is at most ``delta``. With
    ``clusters``, turns of conversations like these: the count times the design effect this
    set's turns show (n / ``effective_size``); with no spread, the conversations needed times
    this set's turns per conversation."""
    if delta <= 0:
        raise ValueError(f"a drop to detect must be positive, got {delta!r}")
    x = np.asarray(values, dtype=np.float64)
    codes = grouped(clusters, len(x))
    sd = float(x.std(ddof=1)) if len(x) > 1 else 0.0
    if sd == 0.0 and len(x) > 1:
        per_unit = 1.0 if codes is None else len(x) / (int(codes.max()) + 1)
        if delta >= 1.0:
            return int(math.ceil(2 * per_unit))
        lo, hi = 2, 2
        while _exact_drop(hi, alpha=alpha, power=power) > delta:
            lo, hi = hi, hi * 2
        while lo < hi:
            mid = (lo + hi) // 2
            lo, hi = (lo, mid) if _exact_drop(mid, alpha=alpha, power=power) <= delta else (mid + 1, hi)
        return int(math.ceil(hi * per_unit - 1e-9))
    deff = 1.0 if codes is None else len(x) / _effective_size(x, codes, 0.95)
    return int(math.ceil(((_z(1 - alpha / 2) + _z(power)) * sd / delta) ** 2 * deff))
