"""Run an engine over a labeled set and score it: the object a test asserts on.

Every query is asked, one by one; an exception is recorded against the query (and counted as a
miss) instead of stopping the evaluation or being hidden.
"""

from __future__ import annotations

import math
import threading
import time
from dataclasses import dataclass, field
from typing import Any, Container, Mapping, Sequence

from ._secrets import redact
from .engines.base import Engine, describe
from .labeled import LabeledSet
from .measures import Measure
from .metrics import evaluate
from .runs import Run, dedupe
from .types import LabeledQuery, QueryResult

#: How deep an engine is asked by default: enough for recall@100 and every table column.
DEFAULT_DEPTH = 100


def evaluate_engine(engine: Engine, labeled: LabeledSet, *, depth: int = DEFAULT_DEPTH, name: str | None = None,
                    context: Mapping[str, Any] | None = None, timeout: float | None = None,
                    known_ids: Container[str] | None = None) -> "EvaluationResult":
    """Ask ``engine`` every question of ``labeled``. An exception, a malformed answer or (with
    ``timeout``) a call that does not return in time is recorded against its query, a miss.
    ``context`` (the corpus's name and fingerprint) travels with the result into reports; with
    ``known_ids``, ids that are not in the corpus are counted and shown with the engine."""
    results = []
    prepare = getattr(engine, "prepare", None)
    if callable(prepare):  # e.g. embed every question in one batch
        try:
            prepare([q.question for q in labeled.queries])
        except Exception:
            pass  # not fatal here: each query then fails (and is recorded) on its own
    unknown: dict[str, None] = {}
    for q in labeled.queries:
        start = time.perf_counter()
        try:
            ranked = _call(engine, q.question, depth, timeout)
            if isinstance(ranked, (str, bytes)) or not all(isinstance(d, str) for d in ranked):
                raise TypeError(f"retrieve() must return a sequence of doc id strings, got {ranked!r:.80}")
            doc_ids = dedupe(ranked)[:depth]
            error = None
            if known_ids is not None:
                unknown.update((d, None) for d in doc_ids if d not in known_ids)
        except Exception as exc:  # recorded, counted as a miss, shown in the report
            doc_ids, error = (), redact(f"{type(exc).__name__}: {exc}")
        results.append(QueryResult(q.query_id, doc_ids, error, time.perf_counter() - start))
    info = dict(describe(engine))
    if unknown:
        info["unknown_ids"] = f"{len(unknown)} returned ids are not in the corpus, e.g. {', '.join(list(unknown)[:3])}"
    return EvaluationResult(name or engine.name, labeled, tuple(results), info, depth, dict(context or {}))


class EngineTimeout(Exception):
    pass


def _call(engine: Engine, question: str, depth: int, timeout: float | None):
    """``engine.retrieve``, in a daemon thread when there is a time limit: a hung call is left
    behind (it cannot be killed) and cannot keep the process from exiting."""
    if timeout is None:
        return engine.retrieve(question, depth)
    box: dict[str, Any] = {}

    def run() -> None:
        try:
            box["value"] = engine.retrieve(question, depth)
        except BaseException as exc:  # handed to the caller
            box["error"] = exc

    worker = threading.Thread(target=run, name=f"retrieve-{engine.name}", daemon=True)
    worker.start()
    worker.join(timeout)
    if worker.is_alive():
        raise EngineTimeout(f"no answer within {timeout:g}s (--retrieval-timeout)")
    if "error" in box:
        raise box["error"]
    return box["value"]


class MeasureValue(float):
    """A float that remembers what it measured, so a failed assertion can explain itself."""

    measure: str
    result: "EvaluationResult"

    def __new__(cls, value: float, measure: str, result: "EvaluationResult") -> "MeasureValue":
        self = super().__new__(cls, value)
        self.measure = measure
        self.result = result
        return self

    def __repr__(self) -> str:
        return f"{self.result.engine} {self.measure}={float(self):.4f}"

    def explain(self, op: str, other: object, limit: int = 5) -> list[str]:
        r = self.result
        lines = [
            f"{r.engine}: {self.measure} = {float(self):.4f}, expected {op} {other} "
            f"(n={r.n} queries, {r.n_errored} errored, labeled set {r.labeled.name})"
        ]
        misses = r.worst(self.measure, limit)
        if misses:
            lines.append(f"worst-scoring queries on {self.measure}:")
            lines.extend("  " + m for m in misses)
        return lines


@dataclass
class EvaluationResult:
    """One engine's rankings over one labeled set, with measures computed on demand."""

    engine: str
    labeled: LabeledSet
    results: tuple[QueryResult, ...]
    engine_info: Mapping[str, Any] = field(default_factory=dict)
    depth: int = DEFAULT_DEPTH
    context: Mapping[str, Any] = field(default_factory=dict)
    #: results of repeated trials after the first (``--retrieval-trials``), same query order
    trial_results: tuple[tuple[QueryResult, ...], ...] = ()
    _values: dict[str, dict[str, float]] = field(default_factory=dict, repr=False)
    _run: Run | None = field(default=None, repr=False, compare=False)

    @property
    def n(self) -> int:
        return len(self.labeled)

    @property
    def n_errored(self) -> int:
        return sum(1 for r in self.results if r.errored)

    @property
    def errors(self) -> dict[str, str]:
        return {r.query_id: r.error for r in self.results if r.error is not None}

    @property
    def run(self) -> Run:
        if self._run is None:  # results are set once; per-measure scoring asks many times
            self._run = Run.from_ranked({r.query_id: r.doc_ids for r in self.results}, name=self.engine)
        return self._run

    def trial_means(self, measures: Sequence[str]) -> dict[str, list[float]]:
        """Per measure, the mean of every trial (the first included)."""
        out: dict[str, list[float]] = {m: [] for m in measures}
        for results in (self.results, *self.trial_results):
            run = Run.from_ranked({r.query_id: r.doc_ids for r in results})
            for m, v in evaluate(self.labeled.qrels, run, list(measures)).items():
                out[m].append(v)
        return out

    def per_query(self, measure: "str | Measure") -> dict[str, float]:
        name = Measure.parse(measure).name
        if name not in self._values:
            self._values[name] = evaluate(self.labeled.qrels, self.run, [name], per_query=True)[name]
        return self._values[name]

    def score(self, measure: "str | Measure") -> MeasureValue:
        """Mean over the labeled set; NaN when it is empty (0 of 0 passes no threshold)."""
        name = Measure.parse(measure).name
        values = self.per_query(name)
        mean = sum(values.values()) / len(values) if values else math.nan
        return MeasureValue(mean, name, self)

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

    def gold_rank(self, query: LabeledQuery, result: QueryResult) -> int | None:
        """1-based rank of the first relevant document, None when none was retrieved."""
        for rank, doc in enumerate(result.doc_ids, start=1):
            if query.relevant.get(doc, 0) >= 1:
                return rank
        return None

    def worst(self, measure: str, limit: int = 5) -> list[str]:
        """One line per worst-scoring query (below the best possible value), worst first."""
        values = self.per_query(measure)
        by_id = self.labeled.by_id()
        rows = []
        for r in self.results:
            v = values.get(r.query_id, 0.0)
            if v >= 1.0:
                continue
            rank = self.gold_rank(by_id[r.query_id], r)
            rows.append((v, -(rank or math.inf), r.query_id, r, rank))
        rows.sort(key=lambda row: row[:3])
        lines = []
        for v, _, qid, r, rank in rows[:limit]:
            q = by_id[qid]
            question = q.question if len(q.question) <= 70 else q.question[:67] + "..."
            where = f"rank {rank}" if rank else "not retrieved"
            got = r.error if r.error else (", ".join(r.doc_ids[:3]) or "nothing")
            lines.append(
                f"{qid} ({measure}={v:.3f}) {question!r} gold: {', '.join(q.gold)} ({where}); "
                f"{'error' if r.error else 'top 3'}: {got}"
            )
        return lines

    # --- serialisation: how results cross process boundaries (xdist) and reach reports ---

    def to_record(self) -> dict[str, Any]:
        return {
            "engine": self.engine,
            "engine_info": dict(self.engine_info),
            "depth": self.depth,
            "context": dict(self.context),
            "labeled": {
                "name": self.labeled.name,
                "fingerprint": self.labeled.fingerprint,
                "queries": [[q.query_id, q.question, dict(q.relevant)] for q in self.labeled.queries],
            },
            "results": [[r.query_id, list(r.doc_ids), r.error, r.seconds] for r in self.results],
            "trials": [[[r.query_id, list(r.doc_ids), r.error, r.seconds] for r in t] for t in self.trial_results],
        }

    @classmethod
    def from_record(cls, record: Mapping[str, Any]) -> "EvaluationResult":
        lab = record["labeled"]
        labeled = LabeledSet(
            tuple(LabeledQuery(qid, question, relevant) for qid, question, relevant in lab["queries"]),
            name=lab["name"],
        )
        def rebuild(rows):
            return tuple(QueryResult(qid, tuple(ids), error, seconds) for qid, ids, error, seconds in rows)

        return cls(record["engine"], labeled, rebuild(record["results"]), record.get("engine_info", {}),
                   record.get("depth", DEFAULT_DEPTH), record.get("context", {}),
                   tuple(rebuild(t) for t in record.get("trials", [])))

    @property
    def key(self) -> tuple[str, str]:
        """Identity within a session: the same engine on the same labeled set is one evaluation."""
        return (self.engine, self.labeled.fingerprint)

