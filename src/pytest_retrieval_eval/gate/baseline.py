"""Compare a run with a saved baseline: deltas, wins/losses/ties over queries, the biggest
per-query movers, and a paired test that says whether a delta is beyond noise.

Runs are only compared when they measured the same thing: the same corpus, the same labeled
set and the same metric definitions (by fingerprint). Otherwise the comparison is refused,
unless forced, and the refusal says which fingerprint differs.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace
from typing import Sequence

from ..run.results import EvaluationResult, RunResults
from ..ir.stats import adjust, paired_difference_ci, paired_randomization

MOVERS = 5


@dataclass(frozen=True)
class Mover:
    query_id: str
    question: str
    before: float
    after: float


@dataclass(frozen=True)
class MeasureDiff:
    engine: str
    labeled: str
    measure: str
    before: float
    after: float
    wins: int
    losses: int
    ties: int
    p: float
    movers: tuple[Mover, ...]
    #: 95% bootstrap interval of the paired per-query difference now - baseline (the effect size)
    ci: tuple[float, float] = (math.nan, math.nan)
    #: p corrected over every diff of the comparison (the noise-aware gate reads this one)
    p_adjusted: float = math.nan

    @property
    def delta(self) -> float:
        return self.after - self.before

    def describe(self) -> str:
        return (f"{self.engine}: {self.measure} {self.before:.4f} -> {self.after:.4f} ({self.delta:+.4f}; "
                f"{self.wins} up, {self.losses} down, {self.ties} same; p={self.p:.3g}, corrected {self.p_adjusted:.3g}; "
                f"95% CI [{self.ci[0]:+.3f}, {self.ci[1]:+.3f}])")


@dataclass
class BaselineComparison:
    diffs: list[MeasureDiff] = field(default_factory=list)
    refusals: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    correction: str = "holm"


def _fingerprint_problems(now: EvaluationResult, base: EvaluationResult) -> list[str]:
    out = []
    if now.labeled.fingerprint != base.labeled.fingerprint:
        out.append(f"labeled set {now.labeled.name} fingerprint {base.labeled.fingerprint[:12]} -> "
                   f"{now.labeled.fingerprint[:12]}")
    if now.corpus_fingerprint != base.corpus_fingerprint:
        out.append(f"corpus fingerprint {str(base.corpus_fingerprint)[:12]} -> {str(now.corpus_fingerprint)[:12]}")
    return out


def diff_engine(now: EvaluationResult, base: EvaluationResult, measure: str) -> MeasureDiff:
    questions = {q.query_id: q.question for q in now.labeled.queries}
    before = base.per_query(measure)
    known = base.labeled.by_id()
    shared = [q for q in questions if q in known]
    after = now.per_query(measure)
    a = [after.get(q, 0.0) for q in shared]
    b = [before.get(q, 0.0) for q in shared]
    pairs = list(zip(shared, b, a))
    p_value = paired_randomization(a, b)
    moved = sorted((p for p in pairs if p[1] != p[2]), key=lambda p: (-abs(p[2] - p[1]), p[0]))
    return MeasureDiff(
        engine=now.engine, labeled=now.labeled.name, measure=measure,
        before=base.mean(measure), after=now.mean(measure),
        wins=sum(1 for _, x, y in pairs if y > x), losses=sum(1 for _, x, y in pairs if y < x),
        ties=sum(1 for _, x, y in pairs if y == x), p=p_value,
        movers=tuple(Mover(q, questions[q], x, y) for q, x, y in moved[:MOVERS]),
        ci=paired_difference_ci(a, b), p_adjusted=p_value,
    )


def compare(now: RunResults, base: RunResults, measures: Sequence[str], *, force: bool = False,
            correction: str = "holm") -> BaselineComparison:
    """Every engine of ``now`` against its baseline on ``measures``; the p-values are corrected
    over all of those diffs (every engine and measure is one more chance of a false alarm)."""
    out = BaselineComparison()
    if now.metrics_fingerprint != base.metrics_fingerprint:
        out.refusals.append(f"metric definitions differ (fingerprint {base.metrics_fingerprint[:12]} -> "
                            f"{now.metrics_fingerprint[:12]})")
    for e in now.evaluations:
        b = base.get(*e.key)
        if b is None:
            out.notes.append(f"{e.engine} on {e.labeled.name} has no baseline (new engine or labeled set)")
            continue
        problems = _fingerprint_problems(e, b)
        if problems:
            out.refusals.append(f"{e.engine}: " + "; ".join(problems))
        out.diffs += [diff_engine(e, b, m) for m in measures]
    for b in base.evaluations:
        if now.get(*b.key) is None:
            out.notes.append(f"{b.engine} on {b.labeled.name} is in the baseline but was not evaluated now")
    if out.refusals and force:
        out.notes += [f"compared although {r} (--retrieval-baseline-force)" for r in out.refusals]
        out.refusals = []
    elif out.refusals:
        out.diffs = []
    adjusted = adjust([d.p for d in out.diffs], correction)
    out.diffs = [replace(d, p_adjusted=q) for d, q in zip(out.diffs, adjusted)]
    out.correction = correction
    return out
