"""``EvaluationResult``: what a test asserts on (``assert results.hit_at(5) >= 0.8``).

It is the recorded evaluation (``evaluation/results.py``: ``Evaluation``) with the measures a test
reads, each delegated to the evaluation's one ``Scores`` (``analysis/scores.py``), made on first
use: the API stays what users wrote their tests against, the computing stays in one place.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, fields
from typing import Sequence

import numpy as np

from ..data.labeled import LabeledSet
from ..evaluation.results import Evaluation
from ..ir.measures import Measure
from ..ir.ppi import PPIEstimate
from .causes import Cause, Misses
from .scores import Scores


class MeasureValue(float):
    """A float that remembers what it measured, so a failed assertion can explain itself."""

    measure: str
    result: Evaluation

    def __new__(cls, value: float, measure: str, result: Evaluation) -> "MeasureValue":
        self = super().__new__(cls, value)
        self.measure = measure
        self.result = result
        return self

    def __repr__(self) -> str:
        if math.isnan(self):  # no value (``EvaluationResult.mean`` is None): no number to show
            return f"{self.result.engine} {self.measure} (no value)"
        return f"{self.result.engine} {self.measure}={float(self):.4f}"

    def explain(self, op: str, other: object, limit: int = 5) -> list[str]:
        from .explain import explain

        return explain(self.result, self.measure, float(self), op, other, limit)


@dataclass(eq=False)
class EvaluationResult(Evaluation):
    """One engine's rankings over one labeled set, with the measures a test asserts on."""

    @classmethod
    def of(cls, e: Evaluation) -> "EvaluationResult":
        """``e`` as a result a test asserts on (itself where it is one already)."""
        if isinstance(e, EvaluationResult):
            return e
        return cls(**{f.name: getattr(e, f.name) for f in fields(Evaluation) if f.init})

    @property
    def scores(self) -> Scores:
        return Scores.of(self)

    def per_query(self, measure: "str | Measure") -> dict[str, float]:
        return self.scores.per_query(measure)

    def values(self, measure: "str | Measure") -> np.ndarray:
        return self.scores.values(measure)

    def mean(self, measure: "str | Measure") -> float | None:
        return self.scores.mean(measure)

    def has_value(self, measure: "str | Measure") -> bool:
        return self.scores.has_value(measure)

    def ci(self, measure: str) -> tuple[float, float]:
        return self.scores.ci(measure)

    def ppi(self, measure: "str | Measure") -> PPIEstimate | None:
        return self.scores.ppi(measure)

    def score(self, measure: "str | Measure") -> MeasureValue:
        """The value for an assertion (``assert results.hit_at(5) >= 0.8``): a float that explains
        itself; where the measure has no value (``mean`` is None) a NaN, so the assertion fails
        and its explanation says why, rather than a TypeError comparing None."""
        name = Measure.parse(measure).name
        value = self.mean(name)
        return MeasureValue(math.nan if value is None else value, name, self)

    __getitem__ = score

    def hit_at(self, k: int) -> MeasureValue:
        return self.score(Measure("hit", k))

    def mrr(self, k: int | None = None) -> MeasureValue:
        return self.score(Measure("mrr", k))

    def recall_at(self, k: int) -> MeasureValue:
        return self.score(Measure("recall", k))

    def precision_at(self, k: int) -> MeasureValue:
        return self.score(Measure("precision", k))

    def ndcg_at(self, k: int | None = None) -> MeasureValue:
        return self.score(Measure("ndcg", k))

    def map(self, k: int | None = None) -> MeasureValue:
        return self.score(Measure("map", k))

    def causes(self, k: int) -> dict[str, Cause]:
        return self.scores.causes(k)

    def misses(self, k: int) -> Misses:
        return self.scores.misses(k)

    def worst(self, measure: str, limit: int = 5) -> list[str]:
        return self.scores.worst(measure, limit)

    def evidence_misses(self, k: int) -> Misses:
        return self.scores.evidence_misses(k)

    def no_value_why(self, measure: "str | Measure") -> str | None:
        return self.scores.no_value_why(measure)

    def hit_curve(self, depth: int | None = None) -> list[float]:
        return self.scores.hit_curve() if depth is None else self.scores.hit_curve(depth)

    def tokens_at(self, k: int) -> float:
        return self.scores.tokens_at(k)

    def trial_means(self, measures: Sequence[str]) -> dict[str, list[float]]:
        return self.scores.trial_means(measures)

    def stale_documents(self, k: int) -> dict[str, list[str]]:
        return self.scores.stale_documents(k)

    def stale_queries(self, k: int) -> dict[str, list[str]]:
        return self.scores.stale_queries(k)

    def conflicting_queries(self, k: int) -> dict[str, list[tuple[str, ...]]]:
        return self.scores.conflicting_queries(k)

    def freshness_lines(self, measure: Measure, limit: int = 5) -> list[str]:
        return self.scores.freshness_lines(measure, limit)

    def segment(self, tag: str) -> "EvaluationResult":
        """The same evaluation on the questions carrying ``tag`` only (``data/segments.py``), e.g.
        ``assert results.segment("body-only").hit_at(5) >= 0.8``; an empty one scores NaN."""
        keep = {q.query_id for q in self.labeled.queries if tag in q.tags}
        labeled = LabeledSet(tuple(q for q in self.labeled.queries if q.query_id in keep),
                             name=f"{self.labeled.name}[{tag}]", provenance=self.labeled.provenance)
        return EvaluationResult(self.engine, labeled, tuple(r for r in self.results if r.query_id in keep),
                                self.engine_info, self.depth, self.context,
                                tuple(tuple(r for r in t if r.query_id in keep) for t in self.trial_results),
                                {k: tuple(q for q in v if q in keep) for k, v in self.run_lint.items()},
                                self.freshness, {q: j for q, j in self.judged.items() if q in keep}, self.judge,
                                self.evidence, self.measured)

