"""Prediction-powered inference (PPI++) for a mean over questions of a per-query measure.

A judge's grades fill every question's labels cheaply but carry its error; a few questions judged
completely by people measure that error. PPI (Angelopoulos et al. 2023) rectifies the judge's
mean by the judge-minus-human difference on the human questions; PPI++ (Angelopoulos, Duchi,
Zrnic 2023) weighs the judge by a tuned ``lam`` in [0, 1] (0: humans only, 1: plain PPI) so a
weak judge costs little. With ``u`` the N - n questions without human labels::

    estimate = mean_h(Y) + lam * (mean_u(Yhat) - mean_h(Yhat))
    var      = var_h(Y - lam * Yhat) / n + lam**2 * var_u(Yhat) / (N - n)

The questions are treated as a sample of the questions the system will meet, as every other
interval in the report is; that interval also covers the mean over these N questions (it is
wider than the finite-population one by exactly var(Y) / N). Both this interval and the
human-only one are mean +- t(n-1) * standard error from the same plug-in variances, so their
widths compare like with like (t, not normal: n may be 20). ``lam`` is the plug-in minimiser of
the variance, so tuning alone always looks at least as narrow as the humans; the estimate falls
back to the human-only interval unless it is narrower by more than a judge unrelated to the
humans would make it 1 time in 20 (a one-sided 5% test of the judge's slope on the humans,
n - 2 degrees of freedom), when the PPI variance is zero, and for a 0/1 measure (hit@k) on
fewer than ``MIN_BINARY`` human questions. Intervals (and the estimate) are
clipped to the measure's range: the true mean lies in it, so intersecting loses no coverage, and
the clipped estimate is never farther from it.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import lru_cache
from statistics import NormalDist
from typing import Sequence

import numpy as np

from .stats import wilson_ci

LEVEL = 0.95
#: one-sided level of the test that the judge helps beyond chance; below it: human-only
FALLBACK_ALPHA = 0.05
#: fewest human-judged questions on which a 0/1 measure (hit@k) trusts the judge: below it the
#: judge's disagreements with the humans are a handful of counts whose normal interval misses
#: (simulated: 90-92% coverage at 20 questions; 95% at 50), so the human-only Wilson stands
MIN_BINARY = 50
#: how far past its range a value may lie from floating-point rounding alone (then clipped)
ROUNDING = 1e-9


@dataclass(frozen=True)
class PPIEstimate:
    """One measure's prediction-powered mean; ``interval`` is the one to report and gate on."""

    estimate: float
    interval: tuple[float, float]
    human_mean: float
    human_interval: tuple[float, float]
    ppi_interval: tuple[float, float]  # before any fallback, for saying how much wider it was
    n: int
    N: int
    lam: float  # the power-tuned weight of the judge; unused when fell_back
    effective_n: float  # human labels the estimate is worth: n * var_human / var_ppi
    fell_back: bool
    note: str = ""


@lru_cache(maxsize=512)
def _t_quantile(df: int, level: float) -> float:
    """Student t's two-sided ``level`` quantile, numpy-free: bisection on the closed-form CDF
    (Abramowitz & Stegun 26.7.3-4) up to 200 degrees of freedom, Cornish-Fisher above."""
    if df < 1:
        return math.nan
    z = NormalDist().inv_cdf(1 - (1 - level) / 2)
    if df > 200:
        g = [(z ** 3 + z) / 4, (5 * z ** 5 + 16 * z ** 3 + 3 * z) / 96,
             (3 * z ** 7 + 19 * z ** 5 + 17 * z ** 3 - 15 * z) / 384,
             (79 * z ** 9 + 776 * z ** 7 + 1482 * z ** 5 - 1920 * z ** 3 - 945 * z) / 92160]
        return z + sum(gi / df ** (i + 1) for i, gi in enumerate(g))
    lo, hi = 0.0, 1e6
    for _ in range(200):
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if _t_central(mid, df) < level else (lo, mid)
    return (lo + hi) / 2


def _t_central(t: float, df: int) -> float:
    """P(|T| < t) for Student t with ``df`` degrees of freedom."""
    theta = math.atan(t / math.sqrt(df))
    s, c = math.sin(theta), math.cos(theta)
    if df % 2:
        term, total = c, (c if df > 1 else 0.0)
        for k in range(3, df - 1, 2):
            term *= (k - 1) / k * c * c
            total += term
        return 2 / math.pi * (theta + s * total)
    term, total = 1.0, 1.0
    for k in range(2, df - 1, 2):
        term *= (k - 1) / k * c * c
        total += term
    return s * total


def _refuse(name: str, x: np.ndarray, bounds: "tuple[float, float] | None") -> None:
    if x.ndim != 1:
        raise ValueError(f"{name}: one value per question, got shape {x.shape}")
    if np.isnan(x).any() or np.isinf(x).any():
        raise ValueError(f"{name}: {int((~np.isfinite(x)).sum())} value(s) not a number; "
                         "every question needs a value (NaN is no score of 0)")
    if bounds and x.size and (x.min() < bounds[0] - ROUNDING or x.max() > bounds[1] + ROUNDING):
        raise ValueError(f"{name}: values outside the measure's range {bounds}: {x.min():g} .. {x.max():g}")


def ppi_mean(judged: Sequence[float], human: Sequence[float], judged_human: Sequence[float], *,
             binary: bool = False, level: float = LEVEL,
             bounds: "tuple[float, float] | None" = (0.0, 1.0)) -> PPIEstimate:
    """The PPI++ mean of a per-query measure and its interval.

    ``judged``: the measure on judge-filled labels for all N questions (the human-judged ones
    among them); ``human`` and ``judged_human``: for the n completely human-judged questions, the
    measure on human labels and on judge labels, in the same order. ``binary``: the measure is 0
    or 1 per question (``BINARY_FAMILIES``), whose human-only interval is Wilson's as in
    ``mean_ci``. ``bounds`` is the measure's range (None for an unbounded one: nothing clipped)."""
    yhat, y, yh = (np.asarray(v, dtype=np.float64) for v in (judged, human, judged_human))
    for name, x in (("judged", yhat), ("human", y), ("judged_human", yh)):
        _refuse(name, x, bounds)
    if bounds:  # an nDCG of 1 computed as 1.0000000000000002
        yhat, y, yh = (np.clip(x, *bounds) for x in (yhat, y, yh))
    n, N = len(y), len(yhat)
    if binary and not all(np.isin(x, (0.0, 1.0)).all() for x in (yhat, y, yh)):
        raise ValueError("binary: a 0/1 measure's values are 0 or 1 per question")
    if len(yh) != n:
        raise ValueError(f"human and judged_human pair the same questions: {n} and {len(yh)} values")
    if n > N:
        raise ValueError(f"{n} human-judged questions of only {N}: the human ones are among the N")
    row = {k: (v[0].item() if isinstance(v, np.ndarray) else v)
           for k, v in ppi_arrays(y[None, :], yh[None, :], float(yhat.sum()), float((yhat ** 2).sum()), N,
                                  binary=binary, level=level, bounds=bounds).items()}
    return _finish(row, n, N, binary)


def ppi_arrays(y: np.ndarray, yh: np.ndarray, total: float, total_sq: float, N: int, *, binary: bool = False,
               level: float = LEVEL, bounds: "tuple[float, float] | None" = (0.0, 1.0)) -> dict:
    """The arithmetic of ``ppi_mean`` over many human samples at once (one per row), unchecked:
    the coverage simulations draw thousands of samples and call it directly. ``total`` and
    ``total_sq`` are the sum and sum of squares of the judged values over all N. Returns arrays
    (one value per row) of ``est``, ``lam``, ``var_ppi``, ``var_h``, ``helps`` and the reported
    ``low``/``high`` (PPI's where it helps, else the human-only one), ``human_low``/``human_high``."""
    n = y.shape[-1]
    nu = N - n
    shape = y.shape[:-1]
    ybar = y.mean(-1) if n else np.full(shape, math.nan)
    if n < 2:
        nan = np.full(shape, math.nan)
        return {"ybar": ybar, "lam": np.zeros(shape), "est": ybar, "var_ppi": nan, "var_h": nan,
                "helps": np.zeros(shape, dtype=bool), "low": nan, "high": nan, "human_low": nan,
                "human_high": nan, "ppi_low": nan, "ppi_high": nan}
    hbar = yh.mean(-1)
    dy, dh = y - ybar[..., None], yh - hbar[..., None]
    s_yy = (dy * dy).sum(-1) / (n - 1)
    s_hh = (dh * dh).sum(-1) / (n - 1)
    s_yh = (dy * dh).sum(-1) / (n - 1)
    if nu > 0:
        mean_u = (total - yh.sum(-1)) / nu
        sq_u = total_sq - (yh * yh).sum(-1)
        s_uu = np.maximum(sq_u - nu * mean_u ** 2, 0.0) / (nu - 1) if nu > 1 else np.zeros(shape)
        den = s_hh + n / nu * s_uu
        lam = np.clip(np.divide(s_yh, den, out=np.zeros(shape), where=den > 0), 0.0, 1.0)
        est = ybar + lam * (mean_u - hbar)
        var_ppi = np.maximum((s_yy - 2 * lam * s_yh + lam ** 2 * s_hh) / n + lam ** 2 * s_uu / nu, 0.0)
    else:  # every question is human-judged: nothing to predict
        lam, est, var_ppi = np.zeros(shape), ybar, s_yy / n
    var_h = s_yy / n
    # the judge helps beyond chance: its plug-in variance reduction (1 - r^2 of the judge's slope
    # on the humans) beats what an unrelated judge reaches 1 time in 20 (r^2 = F / (n - 2 + F))
    if n > 2:
        t = _t_quantile(n - 2, 1 - 2 * FALLBACK_ALPHA)
        r2 = t * t / (n - 2 + t * t)
        helps = (lam > 0) & (var_ppi > 0) & (var_ppi < (1 - r2) * var_h) & (not binary or n >= MIN_BINARY)
    else:
        helps = np.zeros(shape, dtype=bool)
    q = _t_quantile(n - 1, float(level))
    lo, hi = bounds if bounds is not None else (-math.inf, math.inf)
    ppi_low, ppi_high = np.clip(est - q * np.sqrt(var_ppi), lo, hi), np.clip(est + q * np.sqrt(var_ppi), lo, hi)
    human_low, human_high = np.clip(ybar - q * np.sqrt(var_h), lo, hi), np.clip(ybar + q * np.sqrt(var_h), lo, hi)
    if bounds == (0.0, 1.0):  # Wilson for a 0/1 measure or every human value equal, as mean_ci does
        for i in zip(*np.nonzero((var_h == 0) | binary)):
            human_low[i], human_high[i] = wilson_ci(float(ybar[i]), n, level=level)
    return {"ybar": ybar, "lam": lam, "est": np.where(helps, np.clip(est, lo, hi), ybar), "var_ppi": var_ppi,
            "var_h": var_h, "helps": helps, "low": np.where(helps, ppi_low, human_low),
            "high": np.where(helps, ppi_high, human_high), "human_low": human_low, "human_high": human_high,
            "ppi_low": ppi_low, "ppi_high": ppi_high}


def _finish(row: dict, n: int, N: int, binary: bool) -> PPIEstimate:
    nan2 = (math.nan, math.nan)
    mean = row["ybar"]
    if n < 2:
        note = ("no human-judged question: nothing to correct the judge with" if not n else
                "one human-judged question: no spread to make an interval from")
        return PPIEstimate(mean, nan2, mean, nan2, nan2, n, N, 0.0, float(n), True, note)
    human, ppi = (row["human_low"], row["human_high"]), (row["ppi_low"], row["ppi_high"])
    if row["helps"]:
        eff = n * row["var_h"] / row["var_ppi"]
        return PPIEstimate(row["est"], ppi, mean, human, ppi, n, N, row["lam"], eff, False)
    if n == N:
        why = "every question is human-judged: the human mean is the measure"
    elif binary and n < MIN_BINARY:
        why = f"a 0/1 measure on {n} human-judged questions (under {MIN_BINARY}): human-only interval"
    elif row["var_ppi"] == 0:
        why = "the PPI variance is zero (no spread to measure the judge's error): human-only interval"
    else:
        why = (f"the judge does not narrow the interval beyond chance (PPI {ppi[0]:.3f}-{ppi[1]:.3f}, "
               f"human-only {human[0]:.3f}-{human[1]:.3f}): human-only interval")
    return PPIEstimate(mean, human, mean, human, ppi, n, N, row["lam"], float(n), True, why)
