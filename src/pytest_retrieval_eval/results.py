"""A run's results as data: per engine, every per-query value of every measure kept, with the
fingerprints that say what was measured. What reports render, baselines compare and the gate
reads, whether it comes from a live session or from a saved ``results.json``.

``results.json`` (format version 1) holds no timestamps or timings, and is written with sorted
keys, so identical inputs give byte-identical files (timings go to ``timing.json``).
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Any, Iterable, Sequence

import numpy as np

from ._textfiles import read_text
from .errors import RetrievalEvalError
from .evaluation import EvaluationResult
from .gate import Row
from .measures import parse_measures
from .metrics import evaluate
from .stats import bootstrap_ci, paired_randomization
from .types import sha256_text

FORMAT = "pytest-retrieval-eval/results"
VERSION = 1
#: Bump when a measure's definition changes: baselines from another definition are refused.
METRICS_DEFINITION = "trec_eval -c semantics; ties by doc id descending; linear-gain ndcg; v1"
METRICS_FINGERPRINT = sha256_text(METRICS_DEFINITION)
#: Kept per query in every results file, so a saved run can be re-gated on any of them.
STANDARD_MEASURES = ("hit@1", "hit@3", "hit@5", "hit@10", "hit@20", "mrr", "ndcg@10", "recall@10",
                     "recall@100", "precision@10", "map")
CURVE_DEPTH = 20


@dataclass
class EngineResults:
    """One engine on one labeled set."""

    engine: str
    labeled: str
    labeled_fingerprint: str
    corpus: str | None
    corpus_fingerprint: str | None
    engine_info: dict[str, Any]
    queries: dict[str, str]  # query id -> question, in labeled-set order
    errors: dict[str, str]
    first_relevant_rank: dict[str, int | None]
    per_query: dict[str, dict[str, float]]  # measure -> query id -> value
    multi_judged: bool = False  # several judged documents or grades per query (qrels-style)
    trials: dict[str, list[float]] = field(default_factory=dict)  # measure -> mean per trial (>= 2 trials)

    @property
    def n(self) -> int:
        return len(self.queries)

    @property
    def key(self) -> tuple[str, str]:
        return (self.engine, self.labeled)

    def values(self, measure: str) -> np.ndarray:
        try:
            per = self.per_query[measure]
        except KeyError:
            raise RetrievalEvalError(
                f"measure {measure} was not recorded for {self.engine}; recorded: {', '.join(sorted(self.per_query))}"
            ) from None
        return np.array([per[q] for q in self.queries], dtype=np.float64)

    def mean(self, measure: str) -> float:
        v = self.values(measure)
        return float(v.mean()) if len(v) else math.nan

    def ci(self, measure: str) -> tuple[float, float]:
        return self._cis.setdefault(measure, bootstrap_ci(self.values(measure)))

    @cached_property
    def _cis(self) -> dict[str, tuple[float, float]]:
        return {}

    def hit_curve(self, depth: int = CURVE_DEPTH) -> list[float]:
        """Hit@k for k = 1..depth, from the rank of the first relevant document."""
        ranks = [r for r in self.first_relevant_rank.values() if r is not None]
        n = max(self.n, 1)
        return [sum(1 for r in ranks if r <= k) / n for k in range(1, depth + 1)]

    def row(self, measures: Sequence[str]) -> Row:
        return Row(self.engine, self.labeled, {m: self.mean(m) for m in measures}, self.n, len(self.errors))

    @classmethod
    def from_evaluation(cls, result: EvaluationResult, measures: Sequence[str]) -> "EngineResults":
        by_id = result.labeled.by_id()
        return cls(
            engine=result.engine,
            labeled=result.labeled.name,
            labeled_fingerprint=result.labeled.fingerprint,
            corpus=result.context.get("corpus"),
            corpus_fingerprint=result.context.get("corpus_fingerprint"),
            engine_info=dict(result.engine_info),
            queries={q.query_id: q.question for q in result.labeled.queries},
            errors=result.errors,
            first_relevant_rank={r.query_id: result.gold_rank(by_id[r.query_id], r) for r in result.results},
            per_query=evaluate(result.labeled.qrels, result.run, list(measures), per_query=True),
            multi_judged=result.labeled.multi_judged,
            trials=result.trial_means(measures) if result.trial_results else {},
        )

    def to_dict(self) -> dict[str, Any]:
        return {
            "engine": self.engine, "engine_info": self.engine_info,
            "labeled": {"name": self.labeled, "fingerprint": self.labeled_fingerprint, "n": self.n,
                        "multi_judged": self.multi_judged},
            "corpus": {"name": self.corpus, "fingerprint": self.corpus_fingerprint},
            "errors": self.errors,
            "trials": self.trials,
            "summary": {m: {"mean": self.mean(m), "ci95": list(self.ci(m))} for m in sorted(self.per_query)},
            "queries": [
                {"id": q, "question": text, "first_relevant_rank": self.first_relevant_rank.get(q),
                 "values": {m: self.per_query[m][q] for m in sorted(self.per_query)}}
                for q, text in self.queries.items()
            ],
        }

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> "EngineResults":
        measures = sorted(d["summary"])
        return cls(
            engine=d["engine"], labeled=d["labeled"]["name"], labeled_fingerprint=d["labeled"]["fingerprint"],
            corpus=d["corpus"]["name"], corpus_fingerprint=d["corpus"]["fingerprint"], engine_info=d["engine_info"],
            queries={q["id"]: q["question"] for q in d["queries"]}, errors=d["errors"],
            first_relevant_rank={q["id"]: q["first_relevant_rank"] for q in d["queries"]},
            per_query={m: {q["id"]: q["values"][m] for q in d["queries"]} for m in measures},
            multi_judged=bool(d["labeled"].get("multi_judged")),
            trials=d.get("trials", {}),
        )


@dataclass(frozen=True)
class Comparison:
    """Engine ``a`` against engine ``b`` on one measure over the same queries."""

    labeled: str
    measure: str
    a: str
    b: str
    delta: float  # mean(a) - mean(b)
    p: float


@dataclass
class RunResults:
    evaluations: list[EngineResults]
    metrics_fingerprint: str = METRICS_FINGERPRINT
    _comparisons: dict = field(default_factory=dict, repr=False)

    def __post_init__(self) -> None:
        self.evaluations = sorted(self.evaluations, key=lambda e: e.key)

    def rows(self, measures: Sequence[str]) -> list[Row]:
        return [e.row(measures) for e in self.evaluations]

    def get(self, engine: str, labeled: str) -> EngineResults | None:
        return next((e for e in self.evaluations if e.key == (engine, labeled)), None)

    def comparisons(self, measures: Sequence[str]) -> list[Comparison]:
        """Every pair of engines on the same labeled set, per measure: a paired test over queries."""
        out = []
        for i, a in enumerate(self.evaluations):
            for b in self.evaluations[i + 1:]:
                if a.labeled != b.labeled or a.labeled_fingerprint != b.labeled_fingerprint:
                    continue
                for m in measures:
                    key = (a.key, b.key, m)
                    if key not in self._comparisons:
                        va, vb = a.values(m), b.values(m)
                        self._comparisons[key] = Comparison(a.labeled, m, a.engine, b.engine,
                                                            float(va.mean() - vb.mean()) if len(va) else math.nan,
                                                            paired_randomization(va, vb))
                    out.append(self._comparisons[key])
        return out

    @classmethod
    def from_evaluations(cls, results: Iterable[EvaluationResult], measures: Iterable[str]) -> "RunResults":
        names = [m.name for m in parse_measures([*STANDARD_MEASURES, *measures])]
        return cls([EngineResults.from_evaluation(r, names) for r in results])

    def to_json(self) -> str:
        doc = {
            "format": FORMAT, "version": VERSION,
            "metrics": {"definition": METRICS_DEFINITION, "fingerprint": self.metrics_fingerprint},
            "evaluations": [e.to_dict() for e in self.evaluations],
        }
        return json.dumps(doc, indent=1, sort_keys=True, ensure_ascii=False, allow_nan=True) + "\n"

    @classmethod
    def load(cls, path: str | Path) -> "RunResults":
        text = read_text(path)
        try:
            doc = json.loads(text)
        except json.JSONDecodeError as exc:
            raise RetrievalEvalError(f"not valid JSON: {exc.msg}", path=path, line=exc.lineno) from None
        if not isinstance(doc, dict) or doc.get("format") != FORMAT:
            raise RetrievalEvalError(f"not a results file (expected \"format\": \"{FORMAT}\")", path=path, field="format")
        if doc.get("version") != VERSION:
            raise RetrievalEvalError(f"unsupported results version {doc.get('version')!r}; this plugin reads {VERSION}",
                                     path=path, field="version")
        try:
            evaluations = [EngineResults.from_dict(e) for e in doc["evaluations"]]
            fingerprint = doc["metrics"]["fingerprint"]
        except (KeyError, TypeError) as exc:
            raise RetrievalEvalError(f"results file is missing {exc}", path=path) from None
        return cls(evaluations, fingerprint)
