"""Rules whose 95% interval straddles their line: by how much, and how many questions would
settle them (``Unsettled``). The gate reads these to call such a rule inconclusive
(``gate/checks.py``); what is computed here is computed once and kept in the analysis, so a saved
run's ``report`` says the same numbers.

A rule straddles its line when it holds at one end of the interval and not at the other. The
questions that would settle it are the fewest for which, were the true value the estimate and the
spread this run's, the 95% interval would lie on one side of the line with 80% power (``POWER``,
as the detectable drop): for Wilson's interval (a 0/1 measure over single questions) the fewest
``m`` whose interval around the estimate moved ``z(0.8)`` standard errors toward the line still
clears it (exact for Wilson; checked by simulation in the tests); for every other interval (a
bootstrap, over conversations, a paired difference, PPI) the interval's half width scaled as
``1/sqrt(n)``: ``n * ((z(0.975) + z(0.8)) / z(0.975) * half width / distance)^2``."""

from __future__ import annotations

import math
from dataclasses import dataclass
from statistics import NormalDist
from typing import Any, Callable, Mapping, Sequence

from ..ir.measures import Measure
from ..ir.stats import POWER, wilson_ci
from ..rules.drops import MaxDrop
from ..rules.quantities import MeasureQuantity, TurnsQuantity
from ..rules.thresholds import Threshold

#: the z of the intervals' 95% and of 80% power
_Z = NormalDist().inv_cdf(0.975)
_ZB = NormalDist().inv_cdf(POWER)
#: past this many, a count is no advice: said as "more than"
MOST = 10 ** 9


@dataclass(frozen=True)
class Unsettled:
    """One rule on one evaluation whose 95% interval straddles the rule's line."""

    #: the rule as written (``str(rule)``) and the evaluation: its engine (``engine[tag]`` for a
    #: segment's max-drop rule) and labeled set (empty for a segment's, whose diff names none)
    rule: str
    engine: str
    labeled: str
    #: the estimate judged (a measure's mean, a drop) and its 95% interval
    point: float
    interval: tuple[float, float]
    #: the rule's line (its value; a max-drop rule's delta)
    line: float
    #: what the interval rests on: so many ``unit`` (questions, human-judged questions, conversations)
    n: int
    unit: str
    #: how many ``unit`` in all would settle it (``settle_count``); None where the estimate sits
    #: on the line (no number settles it) or past ``MOST``
    needed: int | None

    @property
    def more(self) -> int | None:
        return None if self.needed is None else self.needed - self.n

    def text(self) -> str:
        """``95% interval [0.6999, 0.8876] straddles 0.75 (the estimate 0.0588 above it, the lower
        end 0.0501 below); about 161 more questions (229 in all) would settle it (80% power at the
        spread this run saw)``."""
        lo, hi = self.interval
        upper = self.point < self.line  # the end across the line from the estimate
        far = hi if upper else lo
        said = (f"95% interval [{lo:.4f}, {hi:.4f}] straddles {self.line:g} (the estimate "
                f"{abs(self.point - self.line):.4f} {_side(self.point, self.line)} it, the "
                f"{'upper' if upper else 'lower'} end {abs(far - self.line):.4f} {_side(far, self.line)})")
        if self.needed is None:
            return said + ("; the estimate sits on the line: no number of " + self.unit + " settles it"
                           if self.point == self.line else f"; more than {MOST:,} {self.unit} would settle it")
        return (f"{said}; about {self.more:,} more {self.unit} ({self.needed:,} in all) would settle it "
                f"({POWER:.0%} power at the spread this run saw)")


def _side(x: float, line: float) -> str:
    return "above" if x > line else "below" if x < line else "on"


def straddles(holds: Callable[[float], bool], interval: tuple[float, float]) -> bool:
    """Whether a rule (``holds``: does it hold at this value?) holds at one end of ``interval`` and
    not at the other: the one definition of an interval straddling a rule's line."""
    lo, hi = interval
    return not (math.isnan(lo) or math.isnan(hi)) and holds(lo) != holds(hi)


def settle_count(point: float, interval: tuple[float, float], line: float, n: int, *,
                 wilson: bool = False) -> int | None:
    """How many units (questions, conversations) in all would put the 95% interval on one side of
    ``line`` with 80% power, were the true value ``point`` and the spread this run's (see the
    module's docstring); None with the estimate on the line, or past ``MOST``. ``wilson``: the
    interval is Wilson's over ``n`` at the rate ``point``."""
    distance = abs(point - line)
    if distance == 0 or n < 1:
        return None
    if wilson:
        return _wilson_count(point, line)
    half = (interval[1] - interval[0]) / 2
    needed = n * ((_Z + _ZB) / _Z * half / distance) ** 2
    return max(n + 1, math.ceil(needed)) if needed <= MOST else None


def _wilson_count(rate: float, line: float) -> int | None:
    """The fewest ``m`` for which Wilson's interval at the rate ``z(0.8)`` standard errors from
    ``rate`` toward ``line`` lies wholly on ``rate``'s side of it."""
    toward = 1.0 if line > rate else -1.0
    above = rate > line

    def settles(m: int) -> bool:
        moved = min(1.0, max(0.0, rate + toward * _ZB * math.sqrt(rate * (1 - rate) / m)))
        lo, hi = wilson_ci(moved, m)
        return (lo > line) if above else (hi < line)

    hi = 2
    while not settles(hi):
        hi *= 2
        if hi > MOST:
            return None
    lo = hi // 2
    while lo < hi:
        mid = (lo + hi) // 2
        lo, hi = (lo, mid) if settles(mid) else (mid + 1, hi)
    return hi


def _is_wilson(point: float, interval: tuple[float, float], n: int) -> bool:
    """Is ``interval`` Wilson's at the rate ``point`` over ``n`` (the interval of a 0/1 measure, or
    of one whose values are all equal)?"""
    if not 0.0 <= point <= 1.0 or n < 1:
        return False
    lo, hi = wilson_ci(point, n)
    return abs(lo - interval[0]) < 1e-12 and abs(hi - interval[1]) < 1e-12


def _units(e: Any) -> tuple[int, str]:
    """What an evaluation's intervals rest on: its conversations where its set has them, else its questions."""
    if e.labeled.has_conversations:
        return len(set(e.labeled.clusters.values())), "conversations"
    return e.n, "questions"


def _record(rule: str, engine: str, labeled: str, point: float, interval: tuple[float, float], line: float,
            n: int, unit: str, *, wilson: bool = False) -> Unsettled:
    return Unsettled(rule, engine, labeled, point, (float(interval[0]), float(interval[1])), line, n, unit,
                     settle_count(point, interval, line, n, wilson=wilson))


def unsettled_thresholds(run: Any, rows: Sequence[Any], thresholds: Sequence[Threshold],
                         estimates: Sequence[Any]) -> list[Unsettled]:
    """Each threshold rule on a measure (judged on its interval: ``--retrieval-confidence=lower``)
    over each evaluation of its engine whose interval straddles it; for a ``~ppi`` rule the
    questions are the human-judged ones its estimate rests on."""
    evaluations = {e.key: e for e in run.evaluations}
    out = []
    for t in thresholds:
        if not isinstance(t.quantity, MeasureQuantity) or t.segment:
            continue
        for row in rows:
            point = row.values.get(t.measure)
            if t.engine not in (None, row.engine) or point is None or t.measure not in row.intervals:
                continue
            interval = tuple(row.intervals[t.measure])
            if not straddles(t.holds, interval):
                continue
            e = evaluations.get((row.engine, row.labeled))
            if Measure.parse(t.measure).ppi:
                found = next((x.ppi for x in estimates if (x.engine, x.labeled, x.measure) ==
                              (row.engine, row.labeled, Measure.parse(t.measure).name)), None)
                if found is None:
                    continue
                n, unit = found.n, "human-judged questions"
            else:
                n, unit = _units(e) if e is not None else (row.n, "questions")
            wilson = unit != "conversations" and _is_wilson(point, interval, n)
            out.append(_record(str(t), row.engine, row.labeled, point, interval, t.value, n, unit, wilson=wilson))
    return out


def unsettled_turns(turns: Sequence[Any], thresholds: Sequence[Threshold]) -> list[Unsettled]:
    """Each ``turns.drop`` rule (judged on its interval: ``--retrieval-confidence=lower``) over each
    evaluation's drop whose interval over conversations straddles it."""
    out = []
    for t in thresholds:
        if not isinstance(t.quantity, TurnsQuantity):
            continue
        for x in turns:
            if t.engine not in (None, x.engine) or x.measure != t.quantity.measure.name or math.isnan(x.drop):
                continue
            if straddles(t.holds, x.ci):
                out.append(_record(str(t), x.engine, x.labeled, x.drop, x.ci, t.value, x.conversations, "conversations"))
    return out


def unsettled_drops(run: Any, rules: Sequence[MaxDrop], diffs: Sequence[Any], segments: Sequence[Any] = (), *,
                    alpha: float = 0.05, spreads: Mapping[tuple[str, str], float] | None = None) -> list[Unsettled]:
    """Each max-drop rule (noise-aware: judged with the drop's interval) over each diff the gate
    would fail (beyond the rule's delta, significant at ``alpha`` after correction, beyond the
    engine's ``spreads`` across trials: ``gate/checks.check_drops``) while the 95% interval of
    the drop reaches back within the delta: the only straddle the gate can call inconclusive,
    since a drop within its delta, or within noise, passes.""" 
    evaluations = {e.key: e for e in run.evaluations}
    out = []
    for rule in rules:
        if rule.segment:
            found = [(f"{d.engine}[{d.tag}]", "", d, (d.n, "questions")) for d in segments
                     if d.tag == rule.segment and d.measure == rule.measure and rule.engine in (None, d.engine)]
        else:
            found = [(d.engine, d.labeled, d, _units(evaluations[(d.engine, d.labeled)])
                      if (d.engine, d.labeled) in evaluations else (d.wins + d.losses + d.ties, "questions"))
                     for d in diffs if d.measure == rule.measure and rule.engine in (None, d.engine)]
        for engine, labeled, d, (n, unit) in found:
            drop = d.before - d.after
            lo, hi = d.paired.ci
            interval = (-hi, -lo)  # the interval of the drop: the difference's, turned round
            p = d.paired.p if math.isnan(d.paired.p_adjusted) else d.paired.p_adjusted
            spread = (spreads or {}).get((d.engine.split("[")[0], d.measure))
            within = spread is not None and drop <= spread + 1e-12
            if not rule.holds(drop) and p < alpha and not within and straddles(rule.holds, interval):
                out.append(_record(str(rule), engine, labeled, drop, interval, rule.delta, n, unit))
    return out
