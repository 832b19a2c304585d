"""Behind each freshness column (``freshness.stale_free@k``, ``freshness.conflict_free@k``): the
questions whose top k held a stale document, or two versions of one, per evaluation of a corpus
with versioned documents. What the reports list under the table (``report/table.freshness_lines``),
found once with the analysis."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping, Sequence

from ..ir.measures import Measure
from .scores import Scores


@dataclass(frozen=True)
class FreshnessFinding:
    """One evaluation's questions against one freshness column, in labeled-set order."""

    engine: str
    labeled: str
    #: the column (``freshness.stale_free@5``)
    measure: str
    k: int
    n: int
    #: the corpus's day the versions were read on
    as_of: str
    #: (query id, the stale documents in its top k, or each pair of versions found together as
    #: ``a and b``), for the questions with any
    found: tuple[tuple[str, tuple[str, ...]], ...]
    #: stale document found -> why it is stale
    stale: Mapping[str, str]

    @property
    def stale_free(self) -> bool:
        return Measure.parse(self.measure).family == "freshness.stale_free"


def freshness_findings(run: Any, measures: Sequence[str]) -> list[FreshnessFinding]:
    """Per evaluation with versioned documents and freshness column among ``measures``."""
    fresh = [m for m in map(Measure.parse, measures) if m.freshness]
    out = []
    for e in (e for e in run.evaluations if e.freshness is not None):
        for m in fresh:
            if m.family == "freshness.stale_free":
                found = {q: tuple(docs) for q, docs in Scores.of(e).stale_documents(m.k).items()}
                why = {d: e.freshness.stale[d] for docs in found.values() for d in docs}
            else:
                found = {q: tuple(" and ".join(c) for c in cs) for q, cs in Scores.of(e).conflicting_queries(m.k).items()}
                why = {}
            out.append(FreshnessFinding(e.engine, e.labeled.name, m.name, m.k, e.n, e.freshness.as_of,
                                        tuple(found.items()), why))
    return out
