"""What a labeled set can detect: the smallest drop of each gated measure (``Detectable``), the
max-drop rules asking for less than that, and the sets too small for any paired test to reach
alpha (``Powerless``); made by ``analyse``."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

from ..evaluation.results import Evaluation, RunResults
from ..ir.stats import POWER, can_be_significant, detectable_drop, queries_needed
from ..rules.drops import MaxDrop
from ..rules.thresholds import Threshold, measures_needed
from .scores import Scores


@dataclass(frozen=True)
class Detectable:
    """The smallest drop of ``measure`` the gate can tell from noise for one engine, at the run's
    alpha with 80% power (``ir.stats.detectable_drop``): with a baseline or max-drop rules, at the
    share of alpha one of the ``comparisons`` it corrects over gets (``family_alpha``), as the
    noise-aware gate judges a drop."""

    engine: str
    labeled: str
    measure: str
    drop: float
    n: int
    #: how many comparisons with the baseline the gate corrects this one's p over (1: none)
    comparisons: int = 1

    def __str__(self) -> str:
        return f"{self.engine} {self.measure} {self.drop:.3f}"


@dataclass(frozen=True)
class Powerless:
    """A labeled set too small for a paired test over it to reach ``alpha``: a sign-flip test over
    ``units`` (its conversations, whose turns flip together, else its questions) gives no p
    below 2/2^units (``ir.stats.smallest_p``), so no difference can be significant, and no drop
    is detectable at any size. The reports say this once in place of significance columns and
    detectable drops that cannot move. Single questions fall under the same rule: 5 questions
    cannot reach 0.05 any more than 5 conversations can."""

    labeled: str
    units: int
    #: what the test flips: "conversations" or "questions"
    unit: str
    alpha: float

    def __str__(self) -> str:
        unit = self.unit if self.units != 1 else self.unit[:-1]
        return f"{self.units} {unit}: no difference can be significant at alpha {self.alpha:g}"


def gated_measures(thresholds: Sequence[Threshold], max_drops: Sequence[MaxDrop]) -> list[str]:
    """The measures rules judge, max-drop rules first (none without rules: the table stays short)."""
    return list(dict.fromkeys([d.measure for d in max_drops] + measures_needed(thresholds)))


def family_alpha(alpha: float, comparisons: int, correction: str) -> float:
    """The share of ``alpha`` one of ``comparisons`` corrected p-values gets: Bonferroni's, which
    bounds Holm's first step and Benjamini-Hochberg's from below, so a drop stated detectable at
    it is one the corrected gate catches with the stated power (a calibration checks it:
    ``analysis/calibration.py``); ``alpha`` itself without a correction or with one comparison."""
    return alpha / comparisons if correction != "none" and comparisons > 1 else alpha


def detectable_drops(run: RunResults, measures: Sequence[str], alpha: float, *, comparisons: int = 1,
                     correction: str = "holm") -> list[Detectable]:
    each = family_alpha(alpha, comparisons, correction)
    return [Detectable(e.engine, e.labeled.name, m, detectable_drop(Scores.of(e).values(m), alpha=each,
                                                                         clusters=e.clusters()), e.n,
                       comparisons if each != alpha else 1)
            for e in run.evaluations for m in measures if e.n > 1 and Scores.of(e).has_value(m)
            and can_be_significant(_units(e), each)]  # no drop at all can be told at that share of alpha


def _units(e: Evaluation) -> int:
    """What a paired test over ``e``'s questions flips: its conversations, else its questions."""
    clusters = e.clusters()
    return len(set(clusters)) if clusters is not None else e.n


def underpowered(run: RunResults, max_drops: Sequence[MaxDrop], alpha: float, *, comparisons: int = 1,
                 correction: str = "holm") -> list[str]:
    """A warning per max-drop rule whose delta is below what the labeled set can detect: the gate
    then either misses real drops of that size or (without --retrieval-noise-aware) fails on noise."""
    from .segments import subset

    each = family_alpha(alpha, comparisons, correction)
    shared = f"alpha {alpha:g}" + (f" over {comparisons} comparisons" if each != alpha else "")
    out = []
    for rule in max_drops:
        for e in run.evaluations:
            if (rule.engine and e.engine != rule.engine) or not Scores.of(e).has_value(rule.measure):
                continue  # a measure without a value: the rule fails saying so (``checks.check_drops``)
            ids = [q.query_id for q in e.labeled.queries if rule.segment is None or rule.segment in q.tags]
            values = subset(e, rule.measure, ids)  # a segment rule: its segment's questions
            if len(values) < 2:
                continue
            mdd = detectable_drop(values, alpha=each, clusters=e.clusters(ids))
            if rule.delta < mdd:
                need = (f"a drop of {rule.delta:g} needs about "
                        f"{queries_needed(values, rule.delta, alpha=each, clusters=e.clusters(ids))} "
                        "queries") if rule.delta > 0 else "no number of queries tells any drop at all from noise"
                on = f"{e.labeled.name}[{rule.segment}]" if rule.segment else e.labeled.name
                out.append(f"max-drop rule {rule} is below what it can detect: {e.engine} on {on} can only "
                           f"detect a drop of {mdd:.3f} in {rule.measure} with {len(values)} queries ({POWER:.0%} "
                           f"power, {shared}; from {rule.source}); {need}")
    return out


def powerless_sets(run: RunResults, alpha: float, asked: bool) -> list[Powerless]:
    """Each labeled set of ``run`` (first seen) whose paired tests cannot reach ``alpha``
    (``ir.stats.can_be_significant`` over its conversations, or its questions), where anything
    reads significance: two engines on it compared, or (``asked``) rules or a baseline."""
    engines: dict[str, list] = {}
    for e in run.evaluations:
        engines.setdefault(e.labeled.name, []).append(e)
    out = []
    for name, evaluations in engines.items():
        e = evaluations[0]
        if not e.n or not (asked or len(evaluations) > 1):
            continue
        clusters = e.clusters()
        units, unit = (len(set(clusters)), "conversations") if clusters is not None else (e.n, "questions")
        if not can_be_significant(units, alpha):
            out.append(Powerless(name, units, unit, alpha))
    return out
