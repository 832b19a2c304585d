"""What a shadow comparison is given: its ``CANDIDATE:BASELINE`` pair and the gain weights
(``analysis/shadow.py`` computes the comparisons)."""

from __future__ import annotations

import math

from ..errors import RetrievalEvalError
from ..ir.measures import Measure, split_measures


def parse_weights(text: str) -> dict[str, float]:
    """``recall@5=2,ndcg@5=1`` -> canonical measure name -> weight (positive numbers), by name."""
    weights: dict[str, float] = {}
    for item in split_measures(text):  # a comma inside rbp(p=0.9,rel=1) stays with the name
        name, sep, raw = item.rpartition("=")  # the last '=': rbp(p=0.9)=2
        try:
            value = float(raw) if sep else math.nan
        except ValueError:
            value = math.nan
        if not value > 0 or math.isinf(value):
            raise RetrievalEvalError(f"gain weight {item.strip()!r} not understood; expected MEASURE=WEIGHT with a "
                                     "positive weight, e.g. 'recall@5=2,ndcg@5=1'")
        weights[Measure.parse(name).name] = value
    if not weights:
        raise RetrievalEvalError("gain weights are empty; expected e.g. 'recall@5=2,ndcg@5=1'")
    return dict(sorted(weights.items()))  # one order, as results.json keeps them


def parse_pair(text: str, source: str = "") -> tuple[str, str]:
    """``CANDIDATE:BASELINE`` -> the two engine names."""
    candidate, sep, baseline = (text or "").partition(":")
    candidate, baseline = candidate.strip(), baseline.strip()
    where = f" (from {source})" if source else ""
    if not sep or not candidate or not baseline or ":" in baseline:
        raise RetrievalEvalError(f"shadow {text!r}{where} not understood; expected CANDIDATE:BASELINE, e.g. "
                                 "'hybrid-rerank:hybrid'")
    if candidate == baseline:
        raise RetrievalEvalError(f"shadow {text!r}{where} compares an engine with itself")
    return candidate, baseline
