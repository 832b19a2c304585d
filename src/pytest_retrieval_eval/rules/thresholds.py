"""Threshold rules (``[ENGINE:]MEASURE>=VALUE``, ``[ENGINE][TAG]:MEASURE>=VALUE``) and the
measures they make a run record."""

from __future__ import annotations

import math
import operator
import re
from dataclasses import dataclass, field
from typing import Iterable

from ..errors import RetrievalEvalError
from .quantities import (COUNT_TYPES, MEASURE_PATTERN, LatencyQuantity, MeasureQuantity, Quantity, ShadowQuantity,
                         TurnsQuantity, parse_quantity)

_OPS = {">=": operator.ge, ">": operator.gt, "<=": operator.le, "<": operator.lt}
_RULE = re.compile(
    rf"^\s*(?:(?P<engine>[^\s:<>=\[\]]*)(?:\[(?P<segment>[^\]\s]+)\])?\s*:\s*)?(?P<measure>{MEASURE_PATTERN})\s*"
    r"(?P<op>>=|<=|>|<)\s*(?P<value>[-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?)\s*(?P<unit>ms|s)?\s*$"
)


@dataclass(frozen=True)
class Threshold:
    measure: str  # the quantity's canonical name (a measure, or one of COUNTS, lint.*, run.*, shadow.*)
    op: str
    value: float
    engine: str | None = None
    source: str = ""
    #: what ``measure`` names, parsed once (from ``measure`` when not given)
    quantity: Quantity = field(default=None, compare=False, repr=False)  # type: ignore[assignment]
    #: judged on the questions carrying this tag only (``hybrid[body-only]:hit@5>=0.9``)
    segment: str | None = None

    def __post_init__(self) -> None:
        if self.quantity is None:
            object.__setattr__(self, "quantity", parse_quantity(self.measure))

    @classmethod
    def parse(cls, text: str, *, source: str = "") -> "Threshold":
        m = _RULE.match(text or "")
        where = f" (from {source})" if source else ""
        if not m or (m["engine"] == "" and not m["segment"]):
            raise RetrievalEvalError(
                f"threshold {text!r}{where} does not parse; expected [ENGINE:]MEASURE>=VALUE, or "
                "[ENGINE][TAG]:MEASURE>=VALUE for a segment, e.g. 'hit@5>=0.8', 'keyword:mrr>=0.5', "
                "'hybrid[body-only]:hit@5>=0.9' or 'errors<=0'"
            )
        quantity = parse_quantity(m["measure"], f"threshold {text!r}{where}")
        if m["segment"] and not isinstance(quantity, MeasureQuantity):
            raise RetrievalEvalError(f"threshold {text!r}{where}: a segment rule judges a measure, not {quantity.name}")
        if m["segment"] and quantity.measure.ppi:
            raise RetrievalEvalError(f"threshold {text!r}{where}: a segment's questions are too few to correct the "
                                     f"judge with; write {quantity.measure.with_judgments().name} for the segment")
        value = float(m["value"])
        if isinstance(quantity, LatencyQuantity):
            if not m["unit"]:
                raise RetrievalEvalError(f"threshold {text!r}{where}: say the unit of a latency, e.g. "
                                         f"'{quantity.name}<={m['value']}ms' or '{quantity.name}<={m['value']}s'")
            value = value * 1000.0 if m["unit"] == "s" else value
        elif m["unit"]:
            raise RetrievalEvalError(f"threshold {text!r}{where}: only a latency takes a unit; {quantity.name} "
                                     "is a plain number")
        rule = cls(quantity.name, m["op"], value, m["engine"] or None, source, quantity, m["segment"])
        problem = rule.vacuous()
        if problem:
            raise RetrievalEvalError(f"threshold {text!r}{where} {problem}")
        return rule

    def vacuous(self) -> str | None:
        """Why the rule decides nothing (its value is outside what the quantity can take, or at
        its edge the wrong way), or None. The quantity says its range (``Measure.bounds``: most
        measures lie in [0, 1]; counts are whole numbers >= 0)."""
        low, high = self.quantity.bounds
        v, op = self.value, self.op
        never_fails = (op == ">=" and v <= low) or (op == ">" and v < low) or (op == "<=" and v >= high) or (
            op == "<" and v > high)
        never_passes = (op == ">=" and v > high) or (op == ">" and v >= high) or (op == "<=" and v < low) or (
            op == "<" and v <= low)
        whole = isinstance(self.quantity, COUNT_TYPES)
        span = (f"whole numbers >= {low:g}" if whole else f"[{low:g}, inf)") if high == math.inf else f"[{low:g}, {high:g}]"
        if never_fails:
            return f"can never fail: {self.measure} takes values in {span}"
        if never_passes:
            return f"can never pass: {self.measure} takes values in {span}"
        return None

    def __str__(self) -> str:
        value = f"{self.value:g}" + getattr(self.quantity, "unit", "")
        who = (self.engine or "") + (f"[{self.segment}]" if self.segment else "")
        return f"{who + ':' if who else ''}{self.measure}{self.op}{value}"

    def holds(self, value: float) -> bool:
        return not math.isnan(value) and _OPS[self.op](value, self.value)


def parse_thresholds(items: Iterable[tuple[str, str]]) -> list[Threshold]:
    """``(text, source)`` pairs; blank lines and ``#`` comments (ini files) are skipped."""
    out = []
    for text, source in items:
        text = text.strip()
        if text and not text.startswith("#"):
            out.append(Threshold.parse(text, source=source))
    return out


def measures_needed(thresholds: Iterable[Threshold]) -> list[str]:
    """The measures rules judge per engine (not counts, not shadow deltas)."""
    return [t.measure for t in thresholds if isinstance(t.quantity, MeasureQuantity)]


def shadow_measures(thresholds: Iterable[Threshold]) -> list[str]:
    """The measures whose shadow deltas rules judge (``shadow.recall@5>=0``)."""
    return [t.quantity.measure.name for t in thresholds
            if isinstance(t.quantity, ShadowQuantity) and t.quantity.measure is not None]


def judges_shadows(thresholds: Iterable[Threshold]) -> bool:
    return any(isinstance(t.quantity, ShadowQuantity) for t in thresholds)


def turn_measures(thresholds: Iterable[Threshold]) -> list[str]:
    """The measures whose drop from first turns to follow-ups rules judge (``turns.drop.hit@5<=0.2``)."""
    return [t.quantity.measure.name for t in thresholds if isinstance(t.quantity, TurnsQuantity)]

