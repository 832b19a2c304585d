"""A sweep's table (``--retrieval-sweep``): every configuration of the grid on one labeled set,
sorted by the sweep's measure, with its interval, the paired difference from the base engine
(p corrected over the grid), its p95 latency and chunk count, what it hands a generator (the
word tokens of its top k passages, for an engine returning passages: a configuration that wins by
returning whole documents shows its cost), and whether it is on the Pareto front: no other
configuration is at least as good on quality and on cost (p95 latency; index size; tokens handed)
and better on one. Computed once (the verdict holds it); renderers only read it."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Mapping, Sequence

from ..ir.paired import corrected, paired
from .scores import Scores
from ..evaluation.results import RunResults


@dataclass(frozen=True)
class SweepPoint:
    engine: str
    settings: tuple[tuple[str, str], ...]
    value: float
    ci: tuple[float, float]
    delta: float  # value - the base's (0 for the base)
    p: float
    p_adjusted: float
    p95_ms: float  # NaN: not timed
    chunks: int | None
    base: bool
    front_latency: bool = False
    front_size: bool = False
    #: word tokens of the top ``SweepTable.tokens_k`` passages, mean per question; NaN: ids only
    tokens: float = math.nan
    front_tokens: bool = False

    def to_dict(self) -> dict[str, Any]:
        return {"engine": self.engine, "settings": [list(kv) for kv in self.settings], "value": self.value, "ci95": list(self.ci),
                "delta": self.delta, "p": self.p, "p_adjusted": self.p_adjusted,
                "p95_ms": None if math.isnan(self.p95_ms) else self.p95_ms, "chunks": self.chunks, "base": self.base,
                "front": [name for name, on in (("latency", self.front_latency), ("size", self.front_size),
                                                ("tokens", self.front_tokens)) if on],
                **({} if math.isnan(self.tokens) else {"tokens": self.tokens})}


@dataclass(frozen=True)
class SweepTable:
    base: str
    labeled: str
    measure: str
    keys: tuple[str, ...]
    points: tuple[SweepPoint, ...]  # best first
    missing: tuple[str, ...] = ()  # configurations of the grid with no evaluation on this labeled set
    #: the top k whose passages' tokens ``SweepPoint.tokens`` counts (the measure's cutoff, else 5)
    tokens_k: int = 5
    #: configurations without a value of the measure (an ids-only one's ``+evidence`` twin): no point,
    #: no comparison; all of them where the base has none
    no_value: tuple[str, ...] = ()

    @property
    def handed(self) -> bool:
        """Some configuration returns passages, so what it hands a generator is known."""
        return any(not math.isnan(p.tokens) for p in self.points)

    def to_dict(self) -> dict[str, Any]:
        return {"base": self.base, "labeled": self.labeled, "measure": self.measure, "keys": list(self.keys),
                "points": [p.to_dict() for p in self.points], "missing": list(self.missing),
                **({"no_value": list(self.no_value)} if self.no_value else {}),
                **({"tokens_k": self.tokens_k} if self.handed else {})}


#: the top k whose passages count as handed to a generator when the measure has no cutoff
TOKENS_K = 5


def front(points: Sequence[tuple[float, float]]) -> list[bool]:
    """For each (quality, cost) pair (quality higher is better, cost lower), whether no other pair
    dominates it; a pair with an unknown (NaN) cost is on no front."""
    out = []
    for i, (q, c) in enumerate(points):
        if math.isnan(c) or math.isnan(q):
            out.append(False)
            continue
        out.append(not any(j != i and not math.isnan(c2) and q2 >= q and c2 <= c and (q2 > q or c2 < c)
                           for j, (q2, c2) in enumerate(points)))
    return out


def sweep_tables(run: RunResults, sweeps: Sequence, latency: Mapping[tuple[str, str], Any], correction: str = "holm"
                 ) -> list[SweepTable]:
    """One table per sweep and labeled set its base was evaluated on."""
    from ..ir.measures import Measure

    tables = []
    for base, measure, grid in sweeps:
        k = Measure.parse(measure).k or TOKENS_K
        keys = tuple(k for k, _ in grid[0][1]) if grid else ()
        for b in (e for e in run.evaluations if e.engine == base):
            found = [(run.get(name, b.labeled.name), name, values) for name, values in grid]
            present = [(e, name, values) for e, name, values in found
                       if e is not None and e.labeled.fingerprint == b.labeled.fingerprint]
            unvalued = tuple(name for e, name, _ in present if not (Scores.of(e).has_value(measure) and Scores.of(b).has_value(measure)))
            present = [x for x in present if x[1] not in unvalued]
            ids = [q.query_id for q in b.labeled.queries]
            tests = corrected([paired(Scores.of(e).values(measure), Scores.of(b).values(measure), ids, clusters=b.clusters()) for e, name, _ in present
                               if name != base], correction)
            rows, tested = [], iter(tests)
            for e, name, values in present:
                test = None if name == base else next(tested)
                lat = latency.get(e.key)
                rows.append(dict(engine=name, settings=tuple(values), value=Scores.of(e).mean(measure), ci=Scores.of(e).ci(measure),
                                 delta=0.0 if test is None else test.delta, p=math.nan if test is None else test.p,
                                 p_adjusted=math.nan if test is None else test.p_adjusted,
                                 p95_ms=lat.ms("p95") if lat is not None else math.nan,
                                 chunks=e.engine_info.get("chunks") if isinstance(e.engine_info.get("chunks"), int)
                                 else None, base=name == base, tokens=Scores.of(e).tokens_at(k)))
            on_latency = front([(r["value"], r["p95_ms"]) for r in rows])
            on_size = front([(r["value"], math.nan if r["chunks"] is None else float(r["chunks"])) for r in rows])
            on_tokens = front([(r["value"], r["tokens"]) for r in rows])
            points = [SweepPoint(**r, front_latency=a, front_size=s, front_tokens=t)
                      for r, a, s, t in zip(rows, on_latency, on_size, on_tokens)]
            # best first; ties in the grid's own order (the values as given, not as strings)
            points.sort(key=lambda p: -p.value if not math.isnan(p.value) else math.inf)
            tables.append(SweepTable(base, b.labeled.name, measure, keys, tuple(points),
                                     tuple(name for e, name, _ in found if e is None), k, unvalued))
    return tables
