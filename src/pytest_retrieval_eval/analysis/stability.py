"""How much an engine moves on its own: with repeated trials (``--retrieval-trials N``), the
questions whose top k changed between identical runs, the questions found in some trials and
not in others (flaky: each one's flip rate), and the spread of each measure across the trials.
An approximate index (HNSW under concurrent writes, a service behind a load balancer, an LLM
rewriter) need not answer the same twice; a drop smaller than the engine's own spread is not
a regression the gate should fail on (``gate/checks.check_drops`` with ``--retrieval-noise-aware``),
and a rule judged on its interval (``--retrieval-confidence=lower``) reads one widened by the
spread (``widened``)."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from statistics import NormalDist
from typing import Any, Mapping, Sequence

import numpy as np

from .scores import Scores


@dataclass(frozen=True)
class Stability:
    engine: str
    labeled: str
    trials: int
    k: int
    n: int
    #: the questions whose top k (in order) differs in some trial from the first trial's
    changed: tuple[str, ...]
    #: measure -> (lowest, highest, standard deviation) of the trials' means
    spread: Mapping[str, tuple[float, float, float]]
    #: measure -> each trial's mean, the first trial first (pass@k of a rule reads them)
    means: Mapping[str, tuple[float, ...]] = None  # type: ignore[assignment]
    #: query id -> in how many trials hit@k found it, for the questions found in some trials and
    #: missed in others (flaky), in labeled-set order
    flaky: Mapping[str, int] = field(default_factory=dict)

    @property
    def share(self) -> float:
        return len(self.changed) / self.n if self.n else 0.0

    def flip_rate(self, query_id: str) -> float:
        """The share of trials whose hit@k for the question differs from the majority's (0 for a
        question found in every trial or in none; at most 0.5)."""
        found = self.flaky.get(query_id)
        return 0.0 if found is None else min(found, self.trials - found) / self.trials

    def width(self, measure: str) -> float | None:
        """Highest minus lowest trial mean of ``measure``, when it was measured."""
        found = self.spread.get(measure)
        return None if found is None else found[1] - found[0]

    def to_dict(self) -> dict[str, Any]:
        return {"engine": self.engine, "labeled": self.labeled, "trials": self.trials, "k": self.k,
                "changed_share": self.share, "changed": list(self.changed),
                "spread": {m: {"min": lo, "max": hi, "sd": sd} for m, (lo, hi, sd) in sorted(self.spread.items())},
                "flaky": {q: {"found": n, "flip_rate": self.flip_rate(q)} for q, n in self.flaky.items()}}


def stability_of(e: Any, k: int, measures: Sequence[str]) -> Stability | None:
    """``e``'s stability at ``k`` over its trials; None when it ran once."""
    if not e.trial_results:
        return None
    changed = tuple(r.query_id for r, *others in zip(e.results, *e.trial_results)
                    if any(tuple(o.doc_ids[:k]) != tuple(r.doc_ids[:k]) or o.error != r.error for o in others))
    means = Scores.of(e).trial_means(list(dict.fromkeys(measures)))
    spread = {}
    for m, values in means.items():
        mean = sum(values) / len(values)
        sd = (sum((v - mean) ** 2 for v in values) / (len(values) - 1)) ** 0.5 if len(values) > 1 else 0.0  # sample sd
        spread[m] = (min(values), max(values), sd)
    hits = np.array([t.values(f"hit@{k}") for t in Scores.of(e).trials()])  # trials x questions
    found = (hits > 0).sum(axis=0)
    flaky = {q.query_id: int(n) for q, n in zip(e.labeled.queries, found) if 0 < n < len(hits)}
    return Stability(e.engine, e.labeled.name, 1 + len(e.trial_results), k, e.n, changed, spread,
                     {m: tuple(v) for m, v in means.items()}, flaky)


#: how many standard deviations either side a 95% interval spans (z at 0.975)
Z95 = NormalDist().inv_cdf(0.975)


def widened(interval: tuple[float, float], point: float, sd: float,
            bounds: tuple[float, float] = (0.0, 1.0)) -> tuple[float, float]:
    """A 95% interval over the questions with the engine's run-to-run spread added: each side's
    half-width and ``Z95 * sd`` (``sd``: of the trials' means) in quadrature, within the measure's
    ``bounds``. It errs wide: the questions' own spread already holds what their flips add when
    the trials vary question by question independently; the quadrature covers an engine whose
    trials move together (an index rebuilt, a model swapped behind a service)."""
    lo, hi = interval
    if math.isnan(lo) or math.isnan(hi) or not sd > 0:
        return interval
    extra = (Z95 * sd) ** 2
    return (max(bounds[0], point - math.sqrt((point - lo) ** 2 + extra)),
            min(bounds[1], point + math.sqrt((hi - point) ** 2 + extra)))


def pass_at_k(n: int, c: int, k: int) -> float:
    """Unbiased estimate, from n trials with c passes, that at least one of k trials passes."""
    from math import comb

    return 1.0 - comb(n - c, k) / comb(n, k)


def pass_hat_k(n: int, c: int, k: int) -> float:
    """Unbiased estimate, from n trials with c passes, that all of k trials pass."""
    from math import comb

    return comb(c, k) / comb(n, k)


@dataclass(frozen=True)
class TrialPass:
    """One rule over one evaluation's repeated trials: how many of them it held in, and pass@k /
    pass^k for k = 1..trials (the chance that at least one, or all, of k trials pass)."""

    engine: str
    labeled: str
    #: the rule, as it reads (``Threshold.__str__``)
    rule: str
    trials: int
    passed: int
    at: tuple[float, ...]
    hat: tuple[float, ...]


def trial_passes(stability: Sequence[Stability], thresholds: Sequence[Any]) -> list[TrialPass]:
    """Per evaluation that ran several trials, each rule on one of its measures, in rule order."""
    out = []
    for st in stability:
        trials, n = st.means or {}, st.trials
        for t in thresholds:
            if t.engine not in (None, st.engine) or t.measure not in trials:
                continue
            c = sum(1 for v in trials[t.measure] if t.holds(v))
            ks = range(1, n + 1)
            out.append(TrialPass(st.engine, st.labeled, str(t), n, c, tuple(pass_at_k(n, c, k) for k in ks),
                                 tuple(pass_hat_k(n, c, k) for k in ks)))
    return out
