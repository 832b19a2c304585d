"""Hit@k for k = 1..``CURVE_DEPTH`` per evaluation, the run's and the baseline's: what the Hit@k
chart draws (``report/plot.py``), computed once with the analysis."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..evaluation.results import CURVE_DEPTH
from .scores import Scores


@dataclass(frozen=True)
class Curve:
    """One evaluation's hit@1 .. hit@``CURVE_DEPTH`` (``EvaluationResult.hit_curve``)."""

    engine: str
    labeled: str
    values: tuple[float, ...]


def curves_of(run: Any, depth: int = CURVE_DEPTH) -> tuple[Curve, ...]:
    """Every evaluation's curve, in run order; none for no run."""
    if run is None:
        return ()
    return tuple(Curve(e.engine, e.labeled.name, tuple(Scores.of(e).hit_curve(depth))) for e in run.evaluations)
