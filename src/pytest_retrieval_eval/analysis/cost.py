"""What an evaluation cost besides its quality: the wall time of the engine's calls (per query,
and per stage where the engine timed its stages) and the HTTP calls and tokens the plugin counted
for it (``_usage.py``), priced where the run has prices. Computed once per evaluation (the
verdict holds them); renderers only read them.

Percentiles are numpy's default (linear between the two nearest calls). A latency figure says
what it was measured at (questions in flight, the machine), because a p95 at concurrency 8 on a
laptop is not the p95 at concurrency 1 on a CI runner; comparisons say when those differ.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from typing import Any, Mapping, Sequence

from .._defaults import LATENCY_STATISTICS, USAGE_FIGURES
from ..evaluation.results import Evaluation

#: what a latency rule or column can name; USAGE_FIGURES: calls, tokens (input + output) or cost,
#: per query or in total (both kept in _defaults, which the rule parser reads at start)
STATISTICS = LATENCY_STATISTICS


@dataclass(frozen=True)
class Latency:
    """One evaluation's call times in seconds: the statistics over its queries (errored ones
    too: a timeout is latency), per stage where timed, and what they were measured at."""

    engine: str
    labeled: str
    n: int
    figures: Mapping[str, float]  # STATISTICS -> seconds
    concurrency: int
    machine: str
    prepare_seconds: float = 0.0
    #: stage name -> {p50, p95} seconds, for the stages the engine timed
    stages: Mapping[str, Mapping[str, float]] = None  # type: ignore[assignment]

    def ms(self, statistic: str) -> float:
        return self.figures[statistic] * 1000.0

    @property
    def measured_at(self) -> str:
        return f"concurrency {self.concurrency}, {self.machine}"

    def to_dict(self) -> dict[str, Any]:
        return {"engine": self.engine, "labeled": self.labeled, "n": self.n, "concurrency": self.concurrency,
                "machine": self.machine, "prepare_seconds": self.prepare_seconds,
                "seconds": dict(self.figures), "stages": {k: dict(v) for k, v in (self.stages or {}).items()}}


def _statistics(values: Sequence[float]) -> dict[str, float]:
    import numpy as np

    if not len(values):
        return {s: math.nan for s in STATISTICS}
    a = np.asarray(values, dtype=np.float64)
    p50, p95, p99 = np.percentile(a, [50, 95, 99])
    return {"p50": float(p50), "p95": float(p95), "p99": float(p99), "max": float(a.max()), "mean": float(a.mean())}


def latency_of(e: Evaluation) -> Latency | None:
    """The evaluation's latency; None when it was not timed (a file saved without latency)."""
    measured = e.measured or {}
    if "concurrency" not in measured:
        return None
    stage_names = list(dict.fromkeys(n for r in e.results for n in r.stage_seconds))
    stages = {}
    for name in stage_names:
        found = [r.stage_seconds[name] for r in e.results if name in r.stage_seconds]
        figures = _statistics(found)
        stages[name] = {"p50": figures["p50"], "p95": figures["p95"]}
    return Latency(e.engine, e.labeled.name, len(e.results), _statistics([r.seconds for r in e.results]),
                   int(measured["concurrency"]), str(measured.get("machine", "")),
                   float(measured.get("prepare_seconds", 0.0)), stages)


# --- calls, tokens and prices ------------------------------------------------------------------

#: a dated snapshot's suffix: ``-2024-07-18`` (OpenAI), ``-20241022`` / ``@20241022``
#: (Anthropic, Vertex), ``-0613`` (older OpenAI)
_DATED = re.compile(r"[-@](?:\d{4}-\d{2}-\d{2}|20\d{6}|(?:0[1-9]|1[0-2])(?:0[1-9]|[12]\d|3[01]))$")


def priced_under(model: str, prices: Sequence[Sequence[Any]]) -> tuple[str, tuple[float, float]] | None:
    """(the price's name, (input, output) dollars per million tokens) of a call's ``model``
    (``_usage.model_key``): the model asked for first (what the team configured and priced),
    then its undated base (``gpt-4o-mini`` for ``gpt-4o-mini-2024-07-18``), then the name the
    answer reported and its base, and only then the default (``*``); None without one."""
    from .._usage import model_names

    table = {p[0]: (float(p[1]), float(p[2])) for p in prices}
    for name in model_names(model):
        for candidate in (name, _DATED.sub("", name)):
            if candidate in table:
                return candidate, table[candidate]
    return ("*", table["*"]) if "*" in table else None


@dataclass(frozen=True)
class Usage:
    """One evaluation's HTTP calls and tokens (its queries' and its ``prepare``'s), per model,
    and their cost where every model with tokens has a price (else NaN, naming the unpriced)."""

    engine: str
    labeled: str
    n: int
    by_model: Mapping[str, tuple[int, int, int]]  # model -> (calls, input tokens, output tokens)
    cost: float
    unpriced: tuple[str, ...] = ()
    #: model -> the name its price was found under, where that is another (``priced_under``)
    priced_as: Mapping[str, str] = field(default_factory=dict)

    @property
    def calls(self) -> int:
        return sum(v[0] for v in self.by_model.values())

    @property
    def tokens(self) -> int:
        return sum(v[1] + v[2] for v in self.by_model.values())

    def total(self, figure: str) -> float:
        return float(getattr(self, figure))

    def per_query(self, figure: str) -> float:
        return self.total(figure) / self.n if self.n else math.nan

    def to_dict(self) -> dict[str, Any]:
        return {"engine": self.engine, "labeled": self.labeled, "n": self.n, "calls": self.calls,
                "tokens": self.tokens, "by_model": {m: list(v) for m, v in sorted(self.by_model.items())},
                "cost": None if math.isnan(self.cost) else self.cost, "unpriced": list(self.unpriced),
                "per_query": {f: (None if math.isnan(v := self.per_query(f)) else v) for f in USAGE_FIGURES},
                **({"priced_as": dict(sorted(self.priced_as.items()))} if self.priced_as else {})}


def usage_of(e: Evaluation, prices: Sequence[Sequence[Any]] = ()) -> Usage | None:
    """The evaluation's calls and tokens; None when the plugin counted no HTTP call for it."""
    from .._usage import summed

    by_model = summed(e.prepare_usage, *(r.usage for r in e.results))
    if not by_model:
        return None
    cost, unpriced, priced_as = priced(by_model, prices)
    return Usage(e.engine, e.labeled.name, len(e.results), {m: tuple(v) for m, v in by_model.items()},
                 cost, unpriced, priced_as)


def priced(by_model: Mapping[str, Sequence[int]],
           prices: Sequence[Sequence[Any]]) -> tuple[float, tuple[str, ...], dict[str, str]]:
    """(dollars, the models with tokens but no price, model -> the name it was priced under
    where that is another) of ``model -> (calls, input, output)``; NaN dollars where any model
    is unpriced: the cost is unknown, not lower."""
    cost, unpriced, priced_as = 0.0, [], {}
    for model, (_, given, output) in sorted(by_model.items()):
        found = priced_under(model, prices)
        if found is None:
            if given or output:
                unpriced.append(model)
            continue
        name, price = found
        if name != model and (given or output):
            priced_as[model] = name
        cost += (given * price[0] + output * price[1]) / 1e6
    return (math.nan if unpriced else cost), tuple(unpriced), priced_as


@dataclass(frozen=True)
class RunUsage:
    """The run's HTTP calls in all: every engine's first trial, and what no question claims
    (``outside``: later trials, ingestion, generation, judging), priced together."""

    calls: int
    tokens: int
    cost: float
    unpriced: tuple[str, ...]
    outside: Mapping[str, Sequence[int]]
    #: model -> the name its price was found under, where that is another (``priced_under``)
    priced_as: Mapping[str, str] = field(default_factory=dict)


def run_usage(evaluations: Sequence[Any], outside: Mapping[str, Sequence[int]],
              prices: Sequence[Sequence[Any]] = ()) -> RunUsage | None:
    """None when the run made no HTTP call the plugin counted."""
    from .._usage import summed

    outside = summed(dict(outside), *(dict(e.trial_usage) for e in evaluations))
    engines = summed(*(dict(e.prepare_usage) for e in evaluations), *(r.usage for e in evaluations for r in e.results))
    every = summed(engines, outside)
    if not every:
        return None
    cost, unpriced, priced_as = priced(every, prices)
    return RunUsage(sum(r[0] for r in every.values()), sum(r[1] + r[2] for r in every.values()), cost, unpriced,
                    outside, priced_as)
