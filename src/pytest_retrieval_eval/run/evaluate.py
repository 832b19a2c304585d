"""Run an engine over a labeled set into the one result model (``results.EvaluationResult``).

Every query is asked; an exception, a malformed answer or a call over the time limit is
recorded against its query (and counted as a miss) instead of stopping the evaluation or being
hidden. Queries can run ``concurrency`` at a time (threads for a sync engine, one event loop for
an ``async def retrieve``); the results are those of a serial run, in labeled-set order.
"""

from __future__ import annotations

import asyncio
import inspect
import re
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Container, Mapping

from .._secrets import redact
from ..data.labeled import LabeledSet
from ..engines.adapters import ranked_ids
from ..engines.base import DEFAULT_DEPTH, Engine, describe
from ..ir.runs import dedupe
from ..types import QueryResult, id_problem
from .lint import KINDS as RUN_LINT_KINDS, TIE_CUTOFFS
from .results import EvaluationResult

_CHUNK_ID = re.compile(r"^(?P<doc>.+):(?P<index>\d+)$")


def evaluate_engine(engine: Engine, labeled: LabeledSet, *, depth: int = DEFAULT_DEPTH, name: str | None = None,
                    context: Mapping[str, Any] | None = None, timeout: float | None = None,
                    known_ids: Container[str] | None = None, concurrency: int = 1) -> EvaluationResult:
    """Ask ``engine`` every question of ``labeled``, ``concurrency`` at a time (an engine's own
    ``concurrency`` attribute wins). ``context`` (the corpus's name and fingerprint) travels with
    the result into reports. With ``known_ids`` (the corpus), chunk ids of the plugin's
    ``doc_id:index`` form are folded into their documents, and other ids that are not in the
    corpus are counted and shown with the engine."""
    prepare_error = None
    prepare = getattr(engine, "prepare", None)
    if callable(prepare):  # e.g. embed every question in one batch
        try:
            prepare([q.question for q in labeled.queries])
        except Exception as exc:  # recorded against the engine and shown with it; queries still run
            prepare_error = redact(f"{type(exc).__name__}: {exc}")
    width = max(1, int(getattr(engine, "concurrency", None) or concurrency))
    questions = [q.question for q in labeled.queries]
    if inspect.iscoroutinefunction(getattr(engine, "retrieve", None)):
        answers = asyncio.run(_ask_async(engine, questions, depth, timeout, width))
    elif width > 1:
        with ThreadPoolExecutor(width, thread_name_prefix=f"retrieve-{engine.name}") as pool:
            answers = list(pool.map(lambda question: _ask(engine, question, depth, timeout), questions))
    else:
        answers = [_ask(engine, question, depth, timeout) for question in questions]
    unknown: dict[str, None] = {}
    folded = 0
    results = []
    lint: dict[str, list[str]] = {k: [] for k in RUN_LINT_KINDS}
    for q, (answer, error, seconds) in zip(labeled.queries, answers):
        doc_ids: tuple[str, ...] = ()
        if error is None:
            try:
                ids = ranked_ids(answer)
                if known_ids is not None:
                    ids, n = _fold_chunks(ids, known_ids)
                    folded += n
                unique = dedupe(ids)
                doc_ids = unique[:depth]
                for kind, found in (("empty", not ids), ("duplicates", len(unique) < len(ids)),
                                    ("unknown_ids", known_ids is not None and any(d not in known_ids for d in doc_ids)),
                                    ("ties", _tied_at_a_cutoff(answer))):
                    if found:
                        lint[kind].append(q.query_id)
                bad = next((problem for problem in map(id_problem, doc_ids) if problem), None)
                if bad:  # reports, TREC runs and results.json could not hold it: never written
                    doc_ids = ()
                    raise ValueError(f"retrieve() returned an {bad}")
                if known_ids is not None:
                    unknown.update((d, None) for d in doc_ids if d not in known_ids)
            except Exception as exc:  # a malformed answer: recorded, counted as a miss
                error = redact(f"{type(exc).__name__}: {exc}")
        results.append(QueryResult(q.query_id, doc_ids, error, seconds))
    info = dict(describe(engine))
    if width > 1:
        info["concurrency"] = width
    if prepare_error is not None:
        info["prepare_error"] = prepare_error
    if folded:
        info["chunk_ids_folded"] = f"{folded} chunk hits (doc_id:index) counted as their documents"
    if unknown:
        sample = list(getattr(known_ids, "doc_ids", ()))[:3]
        looks = f"; corpus ids look like {', '.join(sample)}" if sample else ""
        info["unknown_ids"] = (f"{len(unknown)} returned ids are not in the corpus, e.g. "
                               f"{', '.join(list(unknown)[:3])}{looks}")
    return EvaluationResult(name or engine.name, labeled, tuple(results), info, depth, dict(context or {}),
                            run_lint={k: tuple(v) for k, v in lint.items() if v})


def _tied_at_a_cutoff(answer: Any) -> bool:
    """A scored answer (``{id: score}`` or pairs) whose documents at a cutoff and just past it
    share a score: which of them counts in the top k is the tie-break's choice, not the engine's."""
    if isinstance(answer, Mapping):
        scores = list(answer.values())
    elif isinstance(answer, list) and answer and all(isinstance(i, (tuple, list)) and len(i) == 2 for i in answer):
        scores = [s for _, s in answer]
    else:
        return False
    ordered = sorted(scores, reverse=True)
    return any(k < len(ordered) and ordered[k - 1] == ordered[k] for k in TIE_CUTOFFS)


def _fold_chunks(ids: list, known: Container[str]) -> tuple[list, int]:
    """``doc:3`` -> ``doc`` where ``doc:3`` is not a corpus id but ``doc`` is."""
    out, n = [], 0
    for d in ids:
        m = _CHUNK_ID.match(d) if d not in known else None
        if m and m["doc"] in known:
            out.append(m["doc"])
            n += 1
        else:
            out.append(d)
    return out, n


def _ask(engine: Engine, question: str, depth: int, timeout: float | None) -> tuple[Any, str | None, float]:
    """(answer, error, seconds) of one call; the answer is checked later, in one place."""
    start = time.perf_counter()
    try:
        return _call(engine, question, depth, timeout), None, time.perf_counter() - start
    except Exception as exc:  # recorded, counted as a miss, shown in the report
        return None, redact(f"{type(exc).__name__}: {exc}"), time.perf_counter() - start


async def _ask_async(engine: Engine, questions: list[str], depth: int, timeout: float | None,
                     width: int) -> list[tuple[Any, str | None, float]]:
    gate = asyncio.Semaphore(width)

    async def one(question: str) -> tuple[Any, str | None, float]:
        async with gate:
            start = time.perf_counter()
            try:
                answer = await asyncio.wait_for(engine.retrieve(question, depth), timeout)
                return answer, None, time.perf_counter() - start
            except asyncio.TimeoutError:
                return None, f"EngineTimeout: no answer within {timeout:g}s (--retrieval-timeout)", time.perf_counter() - start
            except Exception as exc:
                return None, redact(f"{type(exc).__name__}: {exc}"), time.perf_counter() - start

    return list(await asyncio.gather(*(one(q) for q in questions)))


class EngineTimeout(Exception):
    pass


def _call(engine: Engine, question: str, depth: int, timeout: float | None):
    """``engine.retrieve``, in a daemon thread when there is a time limit: a hung call is left
    behind (it cannot be killed) and cannot keep the process from exiting. The answer is read
    into a list inside that thread, so a lazy answer (a generator) is also timed."""
    if timeout is None:
        return _materialised(engine.retrieve(question, depth))
    box: dict[str, Any] = {}

    def run() -> None:
        try:
            box["value"] = _materialised(engine.retrieve(question, depth))
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


def _materialised(answer: Any) -> Any:
    """An iterator read once, here (a generator or ``map`` would otherwise be consumed by a check
    and scored as empty); sequences and mappings as they are."""
    if isinstance(answer, (str, bytes, Mapping, list, tuple)) or answer is None:
        return answer
    if hasattr(answer, "__iter__") and not hasattr(answer, "__len__"):
        return list(answer)
    return answer
