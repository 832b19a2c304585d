"""A measure across the history's records (``archive/history.py``): one point per record and
evaluation with its 95% interval, and the series it belongs to (one engine on one labeled set,
corpus, description and judge, by their fingerprints). A record's own analysis holds its
intervals; one from before analyses were kept has its interval made here. ``report/trend.py``
only draws the points."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Sequence
from .scores import Scores


@dataclass(frozen=True)
class TrendPoint:
    engine: str
    #: ``ENGINE on LABELED``: the legend's name of its series
    label: str
    #: (label, then the fingerprints of what it measured): a new series where one changes
    series: tuple
    #: the record's commit (10 characters), ``no commit`` outside a repository
    commit: str
    dirty: bool
    #: the record's file name: its time to the microsecond, what orders the points
    order: str
    mean: float
    ci: tuple[float, float]


def trend_points(records: Sequence[Any], measure: str, engine: str | None = None,
                 skipped: list[str] | None = None) -> list[TrendPoint]:
    """One point per record and evaluation (of ``engine`` alone, where named) with a value of
    ``measure``. A record that cannot be read is left out, said in ``skipped`` (once)."""
    from ..errors import RetrievalEvalError
    from .analyse import Analysis

    out = []
    for r in records:
        try:
            run = r.run()
            analysis = Analysis.from_dict(r.results.get("analysis"))  # the record's own intervals
        except RetrievalEvalError as exc:
            said = f"{exc}; left out of the trend"
            if skipped is not None and said not in skipped:
                skipped.append(said)
            continue
        for e in run.evaluations:
            if engine is not None and e.engine != engine:
                continue
            key = f"{e.engine} on {e.labeled.name}"
            fp = r.fingerprints.get("engines", {}).get(key, {})
            mean = Scores.of(e).mean(measure)
            if mean is None:  # no value (an ids-only engine's +evidence twin): no point
                continue
            lo, hi = analysis.interval(e.key, measure) if analysis is not None else (math.nan, math.nan)
            if math.isnan(lo):  # a record from before analyses were kept
                lo, hi = Scores.of(e).ci(measure)
            out.append(TrendPoint(e.engine, key, (key, *sorted(fp.items())), (r.commit or "")[:10] or "no commit",
                                  bool(r.git.get("dirty")), r.path.name, mean, (lo, hi)))
    return out
