"""Max-drop rules (``[ENGINE:]MEASURE=DELTA``): how far a measure may fall below the baseline."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Iterable

from ..errors import RetrievalEvalError
from .quantities import MEASURE_PATTERN, parse_measure

_DROP = re.compile(rf"^\s*(?:(?P<engine>[^\s:=\[\]]*)(?:\[(?P<segment>[^\]\s]+)\])?\s*:\s*)?(?P<measure>{MEASURE_PATTERN})\s*=\s*"
                   r"(?P<value>(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?)\s*$")


@dataclass(frozen=True)
class MaxDrop:
    """``[ENGINE:]MEASURE=DELTA``: fail when the measure falls more than DELTA below the baseline."""

    measure: str
    delta: float
    engine: str | None = None
    source: str = ""
    #: judged on the questions carrying this tag only (``keyword[body-only]:hit@5=0.05``)
    segment: str | None = None

    @classmethod
    def parse(cls, text: str, *, source: str = "") -> "MaxDrop":
        m = _DROP.match(text or "")
        where = f" (from {source})" if source else ""
        if not m or (m["engine"] == "" and not m["segment"]):
            raise RetrievalEvalError(f"max-drop rule {text!r}{where} does not parse; expected [ENGINE:]MEASURE=DELTA, or "
                                     "[ENGINE][TAG]:MEASURE=DELTA for a segment, e.g. 'hit@5=0.02' or "
                                     "'hybrid:ndcg@10=0.01'")
        delta = float(m["value"])
        if not 0 <= delta < 1:
            raise RetrievalEvalError(f"max-drop rule {text!r}{where} can never fail: measures take values in [0, 1], "
                                     "so a drop is below 1; give a DELTA in [0, 1)")
        measure = parse_measure(m["measure"], f"max-drop rule {text!r}{where}")
        if measure.ppi:
            raise RetrievalEvalError(
                f"max-drop rule {text!r}{where}: a drop is tested question by question against the baseline, and "
                f"{measure.name} has no per-question value; write {measure.with_judgments().name}={m['value']}, or "
                f"a threshold on the estimate's bound ({measure.name}>=VALUE with --retrieval-confidence=lower)")
        return cls(measure.name, delta, m["engine"] or None, source, m["segment"])

    def holds(self, drop: float) -> bool:
        """Whether a fall of ``drop`` (baseline minus now) is within the rule's delta."""
        return drop <= self.delta + 1e-12

    def __str__(self) -> str:
        who = (self.engine or "") + (f"[{self.segment}]" if self.segment else "")
        return f"{who + ':' if who else ''}{self.measure}={self.delta:g}"


def parse_max_drops(items: Iterable[tuple[str, str]]) -> list[MaxDrop]:
    return [MaxDrop.parse(t.strip(), source=s) for t, s in items if t.strip() and not t.strip().startswith("#")]
