"""Per-segment statistics: one measure over the questions carrying a tag (``data/segments.py``),
per engine, with its interval, the smallest drop it can show, and the engines' paired
comparisons inside the segment, corrected over every segment compared. Computed once, by the
verdict; renderers only read them."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Mapping, Sequence

import numpy as np

from ..data.segments import all_tags, members
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
    """(segment, query ids) to show: each tag asked for (every tag for ``tags``), then for a
    plain tag its complement (``not body-only``); a family's values (``length:short``) split
    the set between them and need none."""
    tags = all_tags(labeled) if EVERY_TAG in wanted else expand(labeled, [t for t in wanted if t != EVERY_TAG])
    out = [("all", [q.query_id for q in labeled.queries])]
    for tag in tags:
        ids = members(labeled, tag)
        if not ids:
            continue
        out.append((tag, ids))
        if ":" not in tag:
            rest = [q.query_id for q in labeled.queries if tag not in q.tags]
            if rest:
                out.append((f"not {tag}", rest))
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
                values[e.engine] = (float(v.mean()), lo, hi, min(detectable_drop(v, alpha=alpha), high - low))
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
