"""What the gate reads of each evaluation (``Row``): its means, counts, intervals of the gated
measures, latency and cost figures, and why a value is what it is; made by ``analyse``."""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace
from typing import Mapping, Sequence

from ..evaluation.lint import KINDS as RUN_LINT_KINDS
from ..evaluation.results import Evaluation
from ..ir.measures import Measure
from ..rules.quantities import LatencyQuantity, UsageQuantity
from ..rules.thresholds import Threshold, measures_needed
from .cost import Latency, Usage
from .scores import Scores
from .stability import Stability, widened

#: a spread across trials below this is the rounding of equal means, not a spread
SPREAD_FLOOR = 1e-12


@dataclass(frozen=True)
class Row:
    """What the gate reads of one evaluation: the engine, its values, and the query counts."""

    engine: str
    labeled: str
    #: measure -> its value; None where it has none (``Scores.mean``: an ids-only engine's
    #: ``+evidence`` twin, an unpriced cost, an untimed latency): a rule on it checks nothing
    values: Mapping[str, float | None]
    n: int
    errors: int
    #: measure -> 95% interval (Wilson for hit@k and the rates, else bootstrap), for rules judged
    #: with ``confidence="lower"``
    intervals: Mapping[str, tuple[float, float]] = field(default_factory=dict)
    #: measure -> why it is below its best (freshness: the stale queries), said with a breach
    details: Mapping[str, str] = field(default_factory=dict)


def _why(e: Evaluation, measure: str) -> str:
    lines = [line.strip() for line in Scores.of(e).freshness_lines(Measure.parse(measure), limit=10)]
    return lines[0] + (f" ({'; '.join(lines[1:])})" if len(lines) > 1 else "") if lines else ""


def row_of(e: Evaluation, needed: Sequence[str], gated: Sequence[str], thresholds: Sequence[Threshold],
           moved: Stability | None = None) -> Row:
    """What the gate reads of one evaluation: its means, counts, and why a freshness measure or
    the stale count is what it is. With repeated trials (``moved``), the intervals rules are
    judged on (``gated``) take the engine's run-to-run spread in too (``stability.widened``); a
    calibration's reruns (``analysis/calibration.py``) are judged on rows made as the run's are."""
    stale = dict(e.labeled.provenance.get("stale_left_out") or {})  # id -> what changed
    names = dict(e.labeled.provenance.get("stale_names") or {})  # how messages name text-made ids
    values = {**{m: Scores.of(e).mean(m) for m in needed},
              **{f"run.{k}": float(len(e.run_lint.get(k, ()))) for k in RUN_LINT_KINDS}, "stale": float(len(stale))}
    details = {m: _why(e, m) for m in measures_needed(thresholds) if Measure.parse(m).freshness}
    for m in measures_needed(thresholds):  # a ~ppi rule: the questions people judged, not all n
        if m not in details and (why := Scores.of(e).no_value_why(m)):  # no value: why, as a segment's rule says it
            details[m] = why
        if not Measure.parse(m).ppi:
            continue
        found = Scores.of(e).ppi(m)
        if found is None:
            details[m] = ("no estimate: no question people judged completely to its cutoff" if e.judge is not None
                          else "no estimate: the run reads no judgments (--retrieval-judgments=FILE)")
        else:
            details[m] = (f"from {found.n} of {found.N} questions judged by people"
                          + (f", human-only: {found.note.split(':')[0]}" if found.fell_back else ""))
    if stale:
        details["stale"] = "left out: " + "; ".join(f"{names.get(q, q)} ({', '.join(w)})" for q, w in stale.items())
    intervals = {m: Scores.of(e).ci(m) for m in gated if Scores.of(e).has_value(m)}
    for m, interval in intervals.items():
        sd = moved.spread[m][2] if moved is not None and m in moved.spread else 0.0
        if sd > SPREAD_FLOOR and values[m] is not None:  # trials that agree (a float's rounding aside) widen nothing
            intervals[m] = widened(interval, values[m], sd, Measure.parse(m).bounds)
            details[m] = "; ".join(filter(None, [details.get(m), f"the interval widened by the spread across "
                                                 f"{moved.trials} trials (sd {sd:.4f}, in quadrature)"]))
    return Row(e.engine, e.labeled.name, values, e.n, e.n_errored, intervals, details)


def with_costs(row: Row, thresholds: Sequence[Threshold], latency: Latency | None, usage: Usage | None,
                timed: bool) -> Row:
    """``row`` with the latency (ms) and usage figures its rules judge, None (with why) where the
    run has none: such a rule fails rather than passing unchecked."""
    values, details = dict(row.values), dict(row.details)
    for t in thresholds:
        q = t.quantity
        if isinstance(q, LatencyQuantity):
            if latency is None:
                values[t.measure] = None
                details[t.measure] = ("the run did not time its calls" if timed else
                                      "the run did not time its calls: run with --retrieval-latency")
            else:
                values[t.measure] = latency.ms(q.statistic)
                details[t.measure] = f"measured at {latency.measured_at}"
        elif isinstance(q, UsageQuantity):
            if usage is None:
                values[t.measure] = 0.0  # no HTTP call was counted for the engine: none was made
                details[t.measure] = "the plugin counted no HTTP call for this engine"
                continue
            figure = usage.per_query(q.figure) if q.per == "per_query" else usage.total(q.figure)
            values[t.measure] = None if math.isnan(figure) else figure  # a cost without a price: unknown
            details[t.measure] = (f"{usage.calls} calls, {usage.tokens} tokens over {usage.n} queries"
                                  + (f"; no price for {', '.join(usage.unpriced)} (--retrieval-prices)"
                                     if q.figure == "cost" and usage.unpriced else ""))
    return replace(row, values=values, details=details)
