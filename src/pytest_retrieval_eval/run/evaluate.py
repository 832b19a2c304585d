"""Run an engine over a labeled set into the one result model (``results.EvaluationResult``).

Every query is asked, one by one; an exception is recorded against the query (and counted as a
miss) instead of stopping the evaluation or being hidden.
"""

from __future__ import annotations

import threading
import time
from typing import Any, Container, Mapping

from .._secrets import redact
from ..engines.base import DEFAULT_DEPTH, Engine, describe
from ..data.labeled import LabeledSet
from ..ir.runs import dedupe
from ..types import QueryResult
from .results import EvaluationResult


def evaluate_engine(engine: Engine, labeled: LabeledSet, *, depth: int = DEFAULT_DEPTH, name: str | None = None,
                    context: Mapping[str, Any] | None = None, timeout: float | None = None,
                    known_ids: Container[str] | None = None) -> EvaluationResult:
    """Ask ``engine`` every question of ``labeled``. An exception, a malformed answer or (with
    ``timeout``) a call that does not return in time is recorded against its query, a miss.
    ``context`` (the corpus's name and fingerprint) travels with the result into reports; with
    ``known_ids``, ids that are not in the corpus are counted and shown with the engine."""
    results = []
    prepare_error = None
    prepare = getattr(engine, "prepare", None)
    if callable(prepare):  # e.g. embed every question in one batch
        try:
            prepare([q.question for q in labeled.queries])
        except Exception as exc:  # recorded against the engine and shown with it; queries still run
            prepare_error = redact(f"{type(exc).__name__}: {exc}")
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
    if prepare_error is not None:
        info["prepare_error"] = prepare_error
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
