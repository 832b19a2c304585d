"""How much an engine moves on its own: with repeated trials (``--retrieval-trials N``), the
questions whose top k changed between identical runs, and the spread of each measure across
the trials. An approximate index (HNSW under concurrent writes, a service behind a load
balancer) need not answer the same twice; a drop smaller than the engine's own spread is not
a regression the gate should fail on (``gate/checks.check_drops`` with ``--retrieval-noise-aware``)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping, Sequence
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

    @property
    def share(self) -> float:
        return len(self.changed) / self.n if self.n else 0.0

    def width(self, measure: str) -> float | None:
        """Highest minus lowest trial mean of ``measure``, when it was measured."""
        found = self.spread.get(measure)
        return None if found is None else found[1] - found[0]

    def to_dict(self) -> dict[str, Any]:
        return {"engine": self.engine, "labeled": self.labeled, "trials": self.trials, "k": self.k,
                "changed_share": self.share, "changed": list(self.changed),
                "spread": {m: {"min": lo, "max": hi, "sd": sd} for m, (lo, hi, sd) in sorted(self.spread.items())}}


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
        sd = (sum((v - mean) ** 2 for v in values) / len(values)) ** 0.5
        spread[m] = (min(values), max(values), sd)
    return Stability(e.engine, e.labeled.name, 1 + len(e.trial_results), k, e.n, changed, spread,
                     {m: tuple(v) for m, v in means.items()})


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
