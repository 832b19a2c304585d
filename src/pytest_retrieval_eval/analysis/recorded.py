"""What results.json shows people of each evaluation beside its source of truth: each recorded
measure's value and every question's, and with repeated trials each trial's mean. Made once with
the analysis, so writing a run's results.json (``archive/saved.py``), live or from a saved run,
evaluates no measure."""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any, Mapping, Sequence

from ..evaluation.results import RunResults
from ..ir.measures import Measure
from .scores import Scores


@dataclass(frozen=True)
class Recorded:
    """One evaluation's recorded values (``evaluation/record_json.evaluation_to_dict`` writes them)."""

    engine: str
    labeled: str
    #: measure -> its value (``EvaluationResult.mean``); None where it has none
    means: Mapping[str, float | None]
    #: measure -> each trial's mean, the first trial first (``--retrieval-trials``); empty with one
    trials: Mapping[str, tuple[float, ...]]
    #: measure -> each question's value, in result order; None where the engine has no value of
    #: it. A ``~ppi`` estimate, made over the questions, has none per question. Not written with
    #: the analysis: results.json holds them once, under each question, and a reading restores
    #: them from there (``restored``)
    values: Mapping[str, tuple[float, ...] | None] = field(default_factory=dict)


def recorded_of(e: Any, measures: Sequence[str]) -> Recorded:
    """``e``'s recorded values of ``measures``."""
    values: dict[str, tuple[float, ...] | None] = {}
    for m in (m for m in measures if not Measure.parse(m).ppi):
        found = Scores.of(e).per_query(m) if Scores.of(e).has_value(m) else None
        values[m] = None if found is None else tuple(found.get(r.query_id, 0.0) for r in e.results)
    return Recorded(e.engine, e.labeled.name, {m: Scores.of(e).mean(m) for m in measures},
                    {m: tuple(v) for m, v in Scores.of(e).trial_means(measures).items()}, values)


def restored(recorded: Sequence[Recorded], run: RunResults) -> tuple[Recorded, ...] | None:
    """``recorded`` (read back without its per-question values) with them, from what each
    evaluation of ``run`` recorded under its questions (``Evaluation.recorded_values``); None
    where one has a value the file did not record for every question (a file of another metrics
    definition): the analysis is then made again, never half read."""
    out = []
    for x in recorded:
        e = run.get(x.engine, x.labeled)
        if e is None:
            return None
        values: dict[str, tuple[float, ...] | None] = {}
        for m, mean in x.means.items():
            if Measure.parse(m).ppi:
                continue
            if mean is None:
                values[m] = None
            elif m in e.recorded_values:
                values[m] = tuple(e.recorded_values[m][r.query_id] for r in e.results)
            else:
                return None
        out.append(replace(x, values=values))
    return tuple(out)
