"""Engine against engine on the same labeled set: the paired comparisons the table marks."""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any, Sequence

from ..evaluation.results import RunResults
from ..ir.paired import Paired, corrected, paired
from .scores import Scores


@dataclass(frozen=True)
class Comparison:
    """Engine ``a`` against engine ``b`` on one measure over the same queries."""

    labeled: str
    measure: str
    a: str
    b: str
    #: the paired comparison (``ir.paired``), its p corrected over the run's grid of comparisons
    paired: Paired
    significant: bool = False  # its corrected p is below the run's alpha (``analysis/analyse.significant``)

    delta = property(lambda self: self.paired.delta)  # mean(a) - mean(b)
    p = property(lambda self: self.paired.p)
    #: 95% bootstrap interval of the paired per-query difference a - b (the effect size)
    ci = property(lambda self: self.paired.ci)
    #: p corrected for the family of comparisons made in the run (``correction``)
    p_adjusted = property(lambda self: self.paired.p_adjusted)

    def to_dict(self) -> dict[str, Any]:
        return {"labeled": self.labeled, "measure": self.measure, "a": self.a, "b": self.b, "delta": self.delta,
                "ci95": list(self.ci), "p": self.p, "p_adjusted": self.p_adjusted}


def comparisons(run: RunResults, measures: Sequence[str], correction: str = "holm") -> list[Comparison]:
    """Every pair of engines on the same labeled set, per measure: a paired test over queries
    and the bootstrap interval of the difference; ``p_adjusted`` corrects every p for the whole
    grid (all pairs and measures asked for), since each is one more chance of a false mark.
    A measure an engine has no value of (``mean`` is None: an ids-only engine's ``+evidence``
    twin) is no comparison, neither printed nor counted in the correction.
    The analysis asks once (``analyse``); reports read its."""
    raw = []
    for i, a in enumerate(run.evaluations):
        for b in run.evaluations[i + 1:]:
            if a.labeled.name != b.labeled.name or a.labeled.fingerprint != b.labeled.fingerprint:
                continue
            sa, sb = Scores.of(a), Scores.of(b)
            ids = [q.query_id for q in a.labeled.queries]
            for m in measures:
                if not (sa.has_value(m) and sb.has_value(m)):
                    continue  # no value on one side (an ids-only engine's +evidence): nothing to compare
                raw.append(Comparison(a.labeled.name, m, a.engine, b.engine,
                                      paired(sa.values(m), sb.values(m), ids, clusters=a.clusters())))
    return [replace(c, paired=q) for c, q in zip(raw, corrected([c.paired for c in raw], correction))]
