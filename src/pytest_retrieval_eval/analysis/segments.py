"""Per-segment statistics: one measure over the questions carrying a tag (``data/segments.py``),
per engine, with its interval, the smallest drop it can show, and the engines' paired
comparisons inside the segment, corrected over every segment compared. Computed once, by the
verdict; renderers only read them."""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace
from typing import Any, Mapping, Sequence

import numpy as np

from ..data.segments import HALVES, all_tags, distinct, members
from ..ir.measures import Measure
from ..ir.paired import corrected, paired
from ..ir.stats import BINARY_FAMILIES, detectable_drop, mean_ci
from .scores import Scores

#: ``--retrieval-by`` naming every tag some question carries
EVERY_TAG = "tags"
#: below this many questions a segment's row says it is small
FEW = 20


@dataclass(frozen=True)
class SegmentRow:
    """One segment (a tag, ``not TAG``, or ``all``) of one labeled set on one measure."""

    tag: str
    labeled: str
    measure: str
    queries: tuple[str, ...]
    #: engine -> (mean, 95% interval low, high, the smallest drop the segment can show)
    values: Mapping[str, tuple[float, float, float, float]]
    #: engine -> the engines it beats inside the segment (paired test, p corrected over every segment)
    wins: Mapping[str, tuple[str, ...]] = field(default_factory=dict)

    @property
    def n(self) -> int:
        return len(self.queries)

    @property
    def few(self) -> bool:
        return self.n < FEW

    @property
    def drop(self) -> float:
        """The smallest drop the segment can show for every engine (the largest of theirs, at most
        the measure's range: there it can show none); NaN under two questions."""
        drops = [v[3] for v in self.values.values() if not math.isnan(v[3])]
        return max(drops) if drops else math.nan

    def to_dict(self) -> dict[str, Any]:
        return {"tag": self.tag, "labeled": self.labeled, "measure": self.measure, "n": self.n,
                "engines": {e: {"mean": m, "ci95": [lo, hi], "detectable_drop": d, "beats": list(self.wins.get(e, ()))}
                            for e, (m, lo, hi, d) in sorted(self.values.items())}}


def segments_of(labeled: Any, wanted: Sequence[str]) -> list[tuple[str, list[str]]]:
    """(segment, query ids) to show: each tag asked for (every tag for ``tags``), one name per
    segment (``distinct``: ``turn:1`` is ``first-turn``), each followed by its other half: a plain
    tag's complement (``not body-only``), a turn tag's pair (``HALVES``: ``follow-up`` for
    ``first-turn``, never ``not first-turn``), unless a segment shown holds those very questions;
    a family's values (``length:short``) split the set between them and need none."""
    tags = all_tags(labeled) if EVERY_TAG in wanted else expand(labeled, [t for t in wanted if t != EVERY_TAG])
    named = [(tag, ids) for tag in distinct(tags) if (ids := members(labeled, tag))]
    taken = {tuple(ids) for _, ids in named}
    out = [("all", [q.query_id for q in labeled.queries])]
    for tag, ids in named:
        out.append((tag, ids))
        if tag in HALVES:
            other = (HALVES[tag], members(labeled, HALVES[tag]))
        elif ":" not in tag:
            other = (f"not {tag}", [q.query_id for q in labeled.queries if tag not in q.tags])
        else:
            continue
        if other[1] and tuple(other[1]) not in taken:
            taken.add(tuple(other[1]))
            out.append(other)
    return out


def expand(labeled: Any, wanted: Sequence[str]) -> list[str]:
    """The tags asked for, a family's name (``area``) standing for each of its values
    (``area:network``, ``area:devices`` ...)."""
    found = all_tags(labeled)
    out: list[str] = []
    for tag in wanted:
        family = [t for t in found if ":" in t and t.split(":", 1)[0] == tag] if tag not in found else []
        out += family or [tag]
    return list(dict.fromkeys(out))


def unknown_tags(run: Any, wanted: Sequence[str]) -> list[str]:
    """A line per tag asked for that no question of a labeled set carries (nor a family of that name)."""
    out = []
    for labeled in {e.labeled.fingerprint: e.labeled for e in run.evaluations}.values():
        found = all_tags(labeled)
        for tag in expand(labeled, [t for t in wanted if t != EVERY_TAG]):
            if tag not in found:
                out.append(f"--retrieval-by {tag}: no question of {labeled.name} carries it (tags: "
                           f"{', '.join(found) or 'none'})")
    return out


def subset(e: Any, measure: str, ids: Sequence[str]) -> np.ndarray:
    """``e``'s per-query values of ``measure`` on ``ids``."""
    position = {q.query_id: i for i, q in enumerate(e.labeled.queries)}
    values = Scores.of(e).values(measure)
    return values[[position[q] for q in ids]] if ids else np.zeros(0)


def segment_rows(run: Any, wanted: Sequence[str], measure: str, *, alpha: float = 0.05,
                 correction: str = "holm") -> list[SegmentRow]:
    """Rows for each labeled set of ``run`` and each segment of ``wanted`` (tags, or ``tags``)."""
    if not wanted:
        return []
    binary = Measure.parse(measure).family in BINARY_FAMILIES
    by_set: dict[tuple[str, str], list[Any]] = {}
    for e in run.evaluations:
        by_set.setdefault((e.labeled.name, e.labeled.fingerprint), []).append(e)
    rows, pairs = [], []
    for (name, _), evaluations in by_set.items():
        for tag, ids in segments_of(evaluations[0].labeled, wanted):
            values, arrays = {}, {}
            for e in evaluations:
                v = arrays[e.engine] = subset(e, measure, ids)
                lo, hi = mean_ci(v, binary=binary, clusters=e.clusters(ids))
                low, high = Measure.parse(measure).bounds  # the normal approximation can say more than can fall
                values[e.engine] = (float(v.mean()), lo, hi,
                                    min(detectable_drop(v, alpha=alpha, clusters=e.clusters(ids)), high - low))
            rows.append(SegmentRow(tag, name, measure, tuple(ids), values))
            for i, a in enumerate(evaluations):
                for b in evaluations[i + 1:]:
                    pairs.append((len(rows) - 1, a.engine, b.engine, paired(arrays[a.engine], arrays[b.engine], ids,
                                                                                clusters=a.clusters(ids))))
    wins: dict[int, dict[str, list[str]]] = {}
    for (row, a, b, _), c in zip(pairs, corrected([p[3] for p in pairs], correction)):
        if c.p_adjusted < alpha and c.delta != 0:
            winner, loser = (a, b) if c.delta > 0 else (b, a)
            wins.setdefault(row, {}).setdefault(winner, []).append(loser)
    return [SegmentRow(r.tag, r.labeled, r.measure, r.queries, r.values,
                       {e: tuple(v) for e, v in wins.get(i, {}).items()}) for i, r in enumerate(rows)]


#: the lowest-scoring questions a segment rule's value names
LOWEST = 5


@dataclass(frozen=True)
class SegmentRule:
    """A segment rule's (``[ENGINE][TAG]:MEASURE>=V``) measure over one evaluation's questions
    carrying the tag: what ``gate/checks.check_segments`` judges and words a failure with."""

    #: the rule, as it reads (``Threshold.__str__``)
    rule: str
    engine: str
    labeled: str
    tag: str
    measure: str
    #: the questions carrying the tag, and of how many
    n: int
    of_n: int
    #: the mean over them; None where none carries the tag, or the engine has no value of the measure
    value: float | None = None
    #: why the measure has no value (``EvaluationResult.no_value_why``)
    why: str = ""
    #: the smallest drop the segment can show (``ir.stats.detectable_drop``); NaN for one question
    drop: float = math.nan
    #: the names of the lowest-scoring questions below the best value (the first ``LOWEST``), and how many more
    lowest: tuple[str, ...] = ()
    more: int = 0
    #: the tags the labeled set's questions carry (what a rule on a tag none carries is told)
    tags: tuple[str, ...] = ()


def segment_rules(run: Any, thresholds: Sequence[Any], alpha: float = 0.05) -> list[SegmentRule]:
    """Each segment rule over each evaluation of the engines it names, in rule order (a rule
    given twice, once: the check matches them by how they read)."""
    out = []
    for t in {str(t): t for t in thresholds if t.segment}.values():
        for e in (e for e in run.evaluations if t.engine in (None, e.engine)):
            ids = [q.query_id for q in e.labeled.queries if t.segment in q.tags]
            at = SegmentRule(str(t), e.engine, e.labeled.name, t.segment, t.measure, len(ids), e.n)
            if not ids:
                out.append(replace(at, tags=tuple(sorted({tag for q in e.labeled.queries for tag in q.tags}))))
                continue
            if not Scores.of(e).has_value(t.measure):  # no value: the rule checks nothing, as without a segment
                out.append(replace(at, why=Scores.of(e).no_value_why(t.measure) or ""))
                continue
            values = subset(e, t.measure, ids)
            names = {q.query_id: q.name for q in e.labeled.queries}
            low = [ids[i] for i in sorted(range(len(ids)), key=lambda i: (values[i], i)) if values[i] < 1]
            out.append(replace(at, value=float(values.mean()), drop=detectable_drop(values, alpha=alpha, clusters=e.clusters(ids)),
                               lowest=tuple(names[q] for q in low[:LOWEST]), more=max(len(low) - LOWEST, 0)))
    return out
