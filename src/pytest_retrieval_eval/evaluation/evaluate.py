"""Run an engine over a labeled set into the one result model (``results.Evaluation``).

Every query is asked; an exception, a malformed answer or a call over the time limit is
recorded against its query (and counted as a miss) instead of stopping the evaluation or being
hidden. Queries can run ``concurrency`` at a time (daemon threads for a sync engine, one event
loop in a daemon thread for an ``async def retrieve``); the results are those of a serial run, in
labeled-set order. Those calls run off the main thread, which only waits: a call that never
returns (even a coroutine that blocks its loop) cannot hold the run past its time limit, and
Ctrl-C ends the run at once, abandoning the calls in flight (a daemon thread never keeps the
process alive) and saying how many there were.
"""

from __future__ import annotations

import asyncio
import contextvars
import functools
import inspect
import queue
import re
import threading
import time
from concurrent.futures import Future
from dataclasses import dataclass, field, replace
from typing import Any, Callable, Container, Iterable, Mapping, Sequence

from .._secrets import redact
from ..data.labeled import LabeledSet
from ..data.text import words
from ..engines.adapters import ranked_ids
from ..data.evidence import evidence_of, first_passages, passage_ranks
from ..engines.adapters import passages_of
from ..engines.base import (DEFAULT_DEPTH, GIVEN_HUMAN_REWRITE, GIVEN_LAST_TURN, GIVEN_LAST_TURN_BASELINE, GIVEN_TURNS,
                            Engine, Prepares, Stages, TurnContext, answer_of, concurrency_of, converses, describe,
                            exact_search_of, is_async, is_staged, takes_turn)
from ..ir.runs import dedupe
from ..types import LabeledQuery, QueryResult, Stage, id_problem
from .._usage import Meter, metering
from .lint import KINDS as RUN_LINT_KINDS, TIE_CUTOFFS
from .results import Evaluation

_CHUNK_ID = re.compile(r"^(?P<doc>.+):(?P<index>\d+)$")

#: one call of an engine: the method and what it is given (a question's text, or a turn's turns so far)
_Request = tuple[Callable[[Any, int], Any], Any]


def requests(engine: Engine, queries: Iterable[LabeledQuery],
             contexts: Sequence[TurnContext | None] | None = None) -> list[_Request]:
    """What each query asks of ``engine``: a turn of a conversation goes to ``retrieve_conversation``
    with the turns so far where the engine has it (``Converses``), told which turn it answers
    where it takes ``turn`` (``contexts``: each query's ``TurnContext``); everything else, and
    every turn asked of an engine without it (the last turn's text alone), goes where a question
    goes."""
    plain = answer_of(engine)
    talk = engine.retrieve_conversation if converses(engine) else None  # type: ignore[attr-defined]
    told = talk is not None and takes_turn(talk)
    queries = list(queries)
    contexts = contexts if contexts is not None else [turn_context(q) for q in queries]
    return [((_told(talk, c) if told and c is not None else talk), q.turns)
            if talk is not None and q.conversation is not None else (plain, q.question)
            for q, c in zip(queries, contexts)]


def turn_context(q: LabeledQuery, recorder: Callable[[str], None] | None = None) -> TurnContext | None:
    """Which turn ``q`` is (``engines.base.TurnContext``); None for a single question."""
    if q.conversation is None:
        return None
    return TurnContext(q.query_id, q.conversation, q.turn, q.rewrite, recorder)


def _told(method: Callable[..., Any], turn: TurnContext) -> Callable[[Any, int], Any]:
    """``method`` with ``turn=`` given, named as ``method`` is (what a message names)."""
    return functools.update_wrapper(functools.partial(method, turn=turn), method)


def evaluate_engine(engine: Engine, labeled: LabeledSet, *, depth: int = DEFAULT_DEPTH, name: str | None = None,
                    context: Mapping[str, Any] | None = None, timeout: float | None = None,
                    known_ids: Container[str] | None = None, concurrency: int = 1, exact: bool = False) -> Evaluation:
    """Ask ``engine`` every question of ``labeled``, ``concurrency`` at a time (an engine's own
    ``concurrency`` attribute wins). ``context`` (the corpus's name and fingerprint) travels with
    the result into reports. With ``known_ids`` (the corpus), chunk ids of the plugin's
    ``doc_id:index`` form are folded into their documents, and other ids that are not in the
    corpus are counted and shown with the engine. With ``exact`` (``--retrieval-exact-check``), every
    question is then asked again of the engine's ``exact_search`` (``_exact_pass``)."""
    prepare_error, prepare_meter, prepare_seconds = None, Meter(), 0.0
    said: list[str | None] = [None] * len(labeled.queries)  # what the engine searched for each turn, where it said
    contexts = [turn_context(q, functools.partial(said.__setitem__, i)) for i, q in enumerate(labeled.queries)]
    ahead = getattr(engine, "prepare_turns", None) if converses(engine) else None  # what it will search, per turn
    if callable(ahead) or (isinstance(engine, Prepares) and callable(engine.prepare)):  # e.g. embed in one batch
        start = time.perf_counter()
        try:
            with metering(prepare_meter):
                if callable(ahead):
                    ahead([(q.turns, c) for q, c in zip(labeled.queries, contexts)])
                else:
                    engine.prepare([q.question for q in labeled.queries])
        except Exception as exc:  # recorded against the engine and shown with it; queries still run
            prepare_error = redact(f"{type(exc).__name__}: {exc}")
        prepare_seconds = time.perf_counter() - start
    width = concurrency_of(engine, concurrency)
    asks = requests(engine, labeled.queries, contexts)
    if is_async(engine):
        answers = _AsyncCalls(engine, depth, timeout, width).run(asks)
    elif width > 1:
        answers = _in_threads(engine, asks, depth, timeout, width)
    else:
        answers = [_ask(engine, ask, depth, timeout) for ask in asks]
    corpus_ids = known_ids
    known_ids = getattr(known_ids, "id_set", known_ids)  # a corpus's ids as a set: asked once per returned id
    unknown: dict[str, None] = {}
    fine: set[str] = set()
    folded = 0
    results = []
    lint: dict[str, list[str]] = {k: [] for k in RUN_LINT_KINDS}
    staged = is_staged(engine)
    plain = answer_of(engine)
    for q, (answer, error, seconds, used), (method, _), rewrite in zip(labeled.queries, answers, asks, said):
        doc_ids: tuple[str, ...] = ()
        stages: tuple[Stage, ...] = ()
        stage_seconds: dict[str, float] = {}
        passages: list[tuple[str, str]] | None = None
        if error is None:
            try:
                if isinstance(answer, Stages) or (staged and (  # a turn's answer may say its stages
                        method == plain or (isinstance(answer, Mapping) and "ranked" in answer))):
                    held = Stages.of(answer)
                    answer = held.ranked
                    stages = _stages(held, q.relevant, known_ids)
                    stage_seconds = {str(n): float(v) for n, v in held.seconds.items()}
                passages = passages_of(answer)
                ids = ranked_ids(answer)
                if known_ids is not None:
                    ids, n = _fold_chunks(ids, known_ids)
                    folded += n
                    if passages is not None:
                        passages = list(zip(_fold_chunks([d for d, _ in passages], known_ids)[0],
                                            (t for _, t in passages)))
                unique = dedupe(ids)
                doc_ids = unique[:depth]
                for kind, found in (("empty", not ids), ("duplicates", len(unique) < len(ids)),
                                    ("unknown_ids", known_ids is not None and any(d not in known_ids for d in doc_ids)),
                                    ("ties", _tied_at_a_cutoff(answer))):
                    if found:
                        lint[kind].append(q.query_id)
                bad = next((problem for d in doc_ids if d not in fine and (problem := id_problem(d))), None)
                if bad is None:
                    fine.update(doc_ids)  # ids repeat across questions: each is checked once
                if bad:  # reports, TREC runs and results.json could not hold it: never written
                    doc_ids = ()
                    raise ValueError(f"retrieve() returned an {bad}")
                if known_ids is not None:
                    unknown.update((d, None) for d in doc_ids if d not in known_ids)
            except Exception as exc:  # a malformed answer: recorded, counted as a miss
                error = redact(f"{type(exc).__name__}: {exc}")
        kept = _within(passages, doc_ids) if error is None and passages is not None else []
        results.append(QueryResult(q.query_id, doc_ids, error, seconds, stages if error is None else (),
                                   stage_seconds if error is None else {},
                                   {m: tuple(v) for m, v in used.to_dict().items()}, len(kept),
                                   passage_ranks(q.relevant, evidence_of(q), kept) if kept else {},
                                   first_passages(q.relevant, kept) if kept else {},
                                   tuple(len(words(text)) for _, text in kept), rewrite))
    info = dict(describe(engine))
    if labeled.has_conversations:  # the report names the engines given the last turn alone
        info["conversation"] = (GIVEN_LAST_TURN_BASELINE if getattr(engine, "last_turn_only", False) else
                                GIVEN_HUMAN_REWRITE if getattr(engine, "oracle", False) is True else
                                GIVEN_TURNS if converses(engine) else GIVEN_LAST_TURN)
    if width > 1:
        info["concurrency"] = width
    if prepare_error is not None:
        info["prepare_error"] = prepare_error
    if folded:
        info["chunk_ids_folded"] = f"{folded} chunk hits (doc_id:index) counted as their documents"
    if unknown:
        sample = list(getattr(corpus_ids, "doc_ids", ()))[:3]
        looks = f"; corpus ids look like {', '.join(sample)}" if sample else ""
        info["unknown_ids"] = (f"{len(unknown)} returned ids are not in the corpus, e.g. "
                               f"{', '.join(list(unknown)[:3])}{looks}")
    measured: dict[str, Any] = {"concurrency": width, "machine": machine(), "prepare_seconds": prepare_seconds}
    if exact:
        results, said, measured["exact_seconds"] = _exact_pass(engine, labeled, results, depth, known_ids)
        info.update(said)
    done = Evaluation(name or engine.name, labeled, tuple(results), info, depth, dict(context or {}),
                            run_lint={k: tuple(v) for k, v in lint.items() if v}, measured=measured,
                            prepare_usage={m: tuple(v) for m, v in prepare_meter.to_dict().items()})
    return _with_unanswerable(done, engine, depth=depth, timeout=timeout, known_ids=known_ids, concurrency=concurrency)


def _with_unanswerable(done: Evaluation, engine: Engine, **asked: Any) -> Evaluation:
    """``done`` with what ``engine`` returned for its set's unanswerable turns (no relevant
    document exists: ``LabeledSet.unanswerable``), asked as every turn is, after the others, and
    kept apart (``Evaluation.unanswerable``): listed, never scored, no run lint of theirs."""
    lost = getattr(done.labeled, "unanswerable", ())
    if not lost:
        return done
    from dataclasses import replace

    alone = LabeledSet(tuple(replace(q, answerable=True) for q in lost), name=done.labeled.name)
    return replace(done, unanswerable=evaluate_engine(engine, alone, name=done.engine, **asked).results)


def _exact_pass(engine: Engine, labeled: LabeledSet, results: list[QueryResult], depth: int,
                known: Container[str] | None) -> tuple[list[QueryResult], dict[str, str], float]:
    """Each question the engine answered asked again of its ``exact_search``, one at a time, after
    every approximate answer (so the two never share a moment of the index's load), its answer
    read as an answer is (chunk ids folded, repeats dropped, ``depth`` kept) into
    ``QueryResult.exact``. A turn the engine was given as a conversation has no exact twin (the
    method takes a question); an exact search that fails leaves that question unmeasured, said in
    ``engine_info`` (``exact_failed``, ``exact_error``). Returns the results, what to add to the
    engine's info, and the pass's seconds."""
    search = exact_search_of(engine)
    if search is None:
        why = "it is async" if callable(getattr(engine, "exact_search", None)) else "it has no exact_search(query, k)"
        return results, {"exact_check": f"not measured: {why}"}, 0.0
    talks = converses(engine)
    known_set = getattr(known, "id_set", known)
    out, failed = [], []
    start = time.perf_counter()
    for q, r in zip(labeled.queries, results):
        if r.errored or (talks and q.conversation is not None):
            out.append(r)
            continue
        try:
            ids = ranked_ids(_materialised(search(q.question, depth)))
            if known_set is not None:
                ids = _fold_chunks(ids, known_set)[0]
            out.append(replace(r, exact=tuple(dedupe(ids)[:depth])))
        except Exception as exc:  # the question goes unmeasured, said with the engine
            failed.append(redact(f"{type(exc).__name__}: {exc}"))
            out.append(r)
    seconds = time.perf_counter() - start
    said = {"exact_failed": f"{len(failed)}/{len(results)}", "exact_error": failed[0][:200]} if failed else {}
    return out, said, seconds


def _within(passages: list[tuple[str, str]], doc_ids: tuple[str, ...]) -> list[tuple[str, str]]:
    """The passages of the documents kept (the first ``depth``), up to the first of another."""
    kept = set(doc_ids)
    out = []
    for doc, text in passages:
        if doc not in kept:
            break
        out.append((doc, text))
    return out


@functools.lru_cache(maxsize=None)
def machine() -> str:
    """What latency was measured on, as a baseline comparison names it: the system, the
    architecture, the count of CPUs and, on Linux, the processor's model (not the host name: a
    CI runner has a new one every run; not ``platform.processor()``, which starts a process)."""
    import os
    import platform

    model = ""
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as f:
            model = next((line.split(":", 1)[1].strip() for line in f if line.startswith("model name")), "")
    except OSError:
        pass
    return f"{platform.system()} {platform.machine()}, {os.cpu_count()} CPUs" + (f", {model}" if model else "")


def _stages(staged: Stages, relevant: Mapping[str, int], known: Container[str] | None) -> tuple[Stage, ...]:
    """Each stage's size and the ranks of the query's relevant documents in it, ids folded as
    the answer's are (chunks to their documents, repeats dropped)."""
    wanted = {d for d, g in relevant.items() if g >= 1}
    out = []
    for kind, group in (("leg", staged.legs), ("step", staged.steps)):
        for name, found in group.items():
            try:
                ids = ranked_ids(found)
            except TypeError as exc:  # said of the stage, not of retrieve()
                raise TypeError(f"retrieve_stages(): {kind} {name!r}: "
                                + str(exc).replace("retrieve() returned", "it holds")) from None
            if known is not None:
                ids, _ = _fold_chunks(ids, known)
            unique = dedupe(ids)
            out.append(Stage(str(name), kind, len(unique),
                             {d: rank for rank, d in enumerate(unique, start=1) if d in wanted}))
    return tuple(out)


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


def _ask(engine: Engine, ask: _Request, depth: int, timeout: float | None) -> tuple[Any, str | None, float, Meter]:
    """(answer, error, seconds, the HTTP calls it made) of one call; the answer is checked
    later, in one place. The clock (monotonic) runs around the engine's call only."""
    used = Meter()
    with metering(used):
        start = time.perf_counter()
        try:
            answer = _call(engine, ask, depth, timeout)
        except Exception as exc:  # recorded, counted as a miss, shown in the report
            return None, redact(f"{type(exc).__name__}: {exc}"), time.perf_counter() - start, used
        return answer, None, time.perf_counter() - start, used


def _in_threads(engine: Engine, questions: list[_Request], depth: int, timeout: float | None,
                width: int) -> list[tuple[Any, str | None, float, Meter]]:
    """Sync calls ``width`` at a time on daemon threads, each taking the next question in order.
    Not a thread pool: its shutdown (and the interpreter's exit) joins every worker, so one call
    that never returns would keep pytest, and its PostgreSQL, alive after Ctrl-C."""
    answers: list[Any] = [None] * len(questions)
    order = iter(range(len(questions)))
    lock = threading.Lock()
    in_flight: set[int] = set()
    finished = threading.Semaphore(0)

    def work() -> None:
        while True:
            with lock:
                i = next(order, None)
                if i is None:
                    return
                in_flight.add(i)
            try:
                answers[i] = _ask(engine, questions[i], depth, timeout)
            except BaseException as exc:  # e.g. SystemExit in an engine: recorded, the run goes on
                answers[i] = None, redact(f"{type(exc).__name__}: {exc}"), 0.0, Meter()
            finally:
                with lock:
                    in_flight.discard(i)
                finished.release()

    for n in range(min(width, len(questions))):
        threading.Thread(target=contextvars.copy_context().run, args=(work,), name=f"retrieve-{engine.name}-{n}",
                         daemon=True).start()
    try:
        for _ in questions:
            finished.acquire()
    except KeyboardInterrupt:
        raise _interrupted(engine, len(in_flight)) from None
    return answers


def _interrupted(engine: Engine, calls: int) -> KeyboardInterrupt:
    return KeyboardInterrupt(f"engine '{engine.name}': interrupted with {calls} calls in flight, abandoned")


def _too_slow(timeout: float | None) -> str:
    return f"no answer within {timeout or 0:g}s (--retrieval-timeout)"


class _Loop:
    """An event loop running in a daemon thread of its own. A coroutine that blocks it (a
    ``time.sleep`` inside ``async def``) blocks only that thread; the caller can walk away."""

    def __init__(self, name: str) -> None:
        self.loop = asyncio.new_event_loop()
        self.stopped = False
        self.thread = threading.Thread(target=self._serve, name=name, daemon=True)
        self.thread.start()

    def _serve(self) -> None:
        asyncio.set_event_loop(self.loop)
        try:
            self.loop.run_forever()
        finally:  # what asyncio.run does on the way out
            tasks = asyncio.all_tasks(self.loop)
            for task in tasks:
                task.cancel()
            self.loop.run_until_complete(asyncio.gather(*tasks, return_exceptions=True))
            self.loop.run_until_complete(self.loop.shutdown_asyncgens())
            self.loop.close()

    def submit(self, coroutine: Any) -> Future:
        return asyncio.run_coroutine_threadsafe(coroutine, self.loop)

    def responsive(self, within: float) -> bool:
        """Whether the loop runs a callback within ``within`` seconds (it is not stuck in a call)."""
        pong = threading.Event()
        self.loop.call_soon_threadsafe(pong.set)
        return pong.wait(within)

    def stop(self) -> None:
        """Ends the loop once it is free; a stuck one is left to its daemon thread."""
        if not self.stopped:
            self.stopped = True
            self.loop.call_soon_threadsafe(self.loop.stop)


@dataclass(eq=False)
class _Call:
    index: int
    loop: _Loop
    since: float  # submitted, then started: the time limit counts from here
    started: bool = False
    task: Any = None  # the asyncio task running the engine's code, once started
    future: Any = None  # for cancelling it
    answer: Any = None  # (answer, error, seconds, meter), handed over by the call itself
    meter: Meter = field(default_factory=Meter)  # the HTTP calls the engine made for it


class _AsyncCalls:
    """An ``async def retrieve`` asked ``width`` calls at a time on one event loop in a daemon
    thread. ``asyncio.wait_for`` ends a call that awaits past the limit; one that blocks the loop
    (never yields) is seen from this thread when the loop stops answering: it is recorded as an
    EngineTimeout, the calls frozen behind it are asked again on a fresh loop, and the stuck loop
    is abandoned. Each call hands its answer over itself: a blocked loop cannot run the callbacks
    that would otherwise carry it."""

    def __init__(self, engine: Engine, depth: int, timeout: float | None, width: int) -> None:
        self.engine, self.depth, self.timeout, self.width = engine, depth, timeout, width
        self.grace = 0.0 if timeout is None else min(1.0, max(0.25, timeout / 2))  # for the loop to end it itself
        self.finished: queue.SimpleQueue[_Call] = queue.SimpleQueue()
        self.loops = [self._new_loop()]

    def _new_loop(self) -> _Loop:
        return _Loop(f"retrieve-{self.engine.name}-loop")

    def run(self, questions: list[_Request]) -> list[tuple[Any, str | None, float, Meter]]:
        self.questions = questions
        self.answers: list[Any] = [None] * len(questions)
        todo = list(range(len(questions)))[::-1]  # popped from the end: labeled-set order
        waiting: set[_Call] = set()
        try:
            while todo or waiting:
                while todo and len(waiting) < self.width:
                    waiting.add(self._submit(todo.pop()))
                try:
                    call = self.finished.get(timeout=self._next_deadline(waiting))
                except queue.Empty:
                    todo += self._overrun(waiting)
                    continue
                if call in waiting:  # else given up or asked again already: too late
                    waiting.discard(call)
                    self.answers[call.index] = call.answer
        except KeyboardInterrupt:
            for loop in self.loops:
                loop.stop()
            raise _interrupted(self.engine, len(waiting)) from None
        self.loops[-1].stop()
        self.loops[-1].thread.join(5)  # the loop's own cleanup (async generators), within reason
        return self.answers

    def _submit(self, index: int) -> _Call:
        call = _Call(index, self.loops[-1], time.perf_counter())
        call.future = call.loop.submit(self._timed(call))
        return call

    async def _timed(self, call: _Call) -> None:
        call.since, call.started = time.perf_counter(), True
        try:
            await asyncio.wait_for(self._traced(call), self.timeout)
        except asyncio.TimeoutError:
            self._hand_over(call, None, f"EngineTimeout: {_too_slow(self.timeout)}")
        except asyncio.CancelledError:  # by the run, which has given up on it already
            raise
        except BaseException as exc:  # e.g. SystemExit in an engine: recorded, the run goes on
            self._hand_over(call, None, redact(f"{type(exc).__name__}: {exc}"))

    async def _traced(self, call: _Call) -> None:
        """The engine's call, answered from inside the task that runs it (wait_for gives it a
        task of its own, which the blocked loop would otherwise never resume)."""
        call.task = asyncio.current_task()
        try:
            with metering(call.meter):  # this task's own context: calls in flight side by side count apart
                method, given = self.questions[call.index]
                answer = method(given, self.depth)
                if inspect.isawaitable(answer):  # a sync retrieve_conversation of an async engine is answered too
                    answer = await answer
        except Exception as exc:
            self._hand_over(call, None, redact(f"{type(exc).__name__}: {exc}"))
        else:
            self._hand_over(call, answer, None)

    def _hand_over(self, call: _Call, answer: Any, error: str | None) -> None:
        if call.answer is None:
            call.answer = answer, error, time.perf_counter() - call.since, call.meter
            self.finished.put(call)

    def _next_deadline(self, calls: Any) -> float | None:
        if self.timeout is None or not calls:
            return None
        limit = self.timeout + self.grace
        return max(0.0, min(c.since for c in calls) + limit - time.perf_counter())

    def _overrun(self, waiting: set[_Call]) -> list[int]:
        """Calls past their limit that the loop did not end: recorded as EngineTimeout. Returns
        the questions to ask again (frozen behind a call that blocks the loop)."""
        now = time.perf_counter()
        late = [c for c in waiting if c.answer is None and now - c.since >= self.timeout + self.grace]
        loop = self.loops[-1]
        if not late:
            return []
        if loop.responsive(self.grace):  # calls that ignore their cancellation; the loop is fine
            for c in late:
                if not c.started:  # queued on a busy loop: its limit counts from its start
                    c.since = now
            self._give_up([c for c in late if c.started], waiting)
            return []
        stuck = asyncio.current_task(loop.loop)
        self._give_up([c for c in waiting if c.task is not None and c.task is stuck]
                      or [c for c in late if c.started] or late, waiting)
        again = []  # the calls frozen behind it: asked again on a fresh loop
        for c in waiting:
            if c.answer is None:
                c.future.cancel()  # one not begun never begins on the stuck loop
                again.append(c.index)
            else:  # answered, its hand-over still queued
                self.answers[c.index] = c.answer
        waiting.clear()
        loop.stop()
        self.loops.append(self._new_loop())
        return sorted(again, reverse=True)

    def _give_up(self, calls: list[_Call], waiting: set[_Call]) -> None:
        now = time.perf_counter()
        for c in calls:
            c.future.cancel()
            waiting.discard(c)
            self.answers[c.index] = None, f"EngineTimeout: {_too_slow(self.timeout)}", now - c.since, c.meter


class EngineTimeout(Exception):
    pass


def _call(engine: Engine, request: _Request, depth: int, timeout: float | None):
    """``engine.retrieve`` (or what ``requests`` chose), in a daemon thread when there is a time
    limit: a hung call is left behind (it cannot be killed) and cannot keep the process from
    exiting. The answer is read into a list inside that thread, so a lazy answer (a generator) is
    also timed."""
    ask, given = request
    if timeout is None:
        return _materialised(_awaited_not(ask(given, depth), ask))
    box: dict[str, Any] = {}

    def run() -> None:
        try:
            box["value"] = _materialised(_awaited_not(ask(given, depth), ask))
        except BaseException as exc:  # handed to the caller
            box["error"] = exc

    worker = threading.Thread(target=contextvars.copy_context().run, args=(run,), name=f"retrieve-{engine.name}",
                              daemon=True)
    worker.start()
    worker.join(timeout)
    if worker.is_alive():
        raise EngineTimeout(_too_slow(timeout))
    if "error" in box:
        raise box["error"]
    return box["value"]


def _awaited_not(answer: Any, ask: Any) -> Any:
    """A sync engine's ``async def retrieve_conversation``: said, never scored as a wrong answer."""
    if inspect.iscoroutine(answer) and getattr(ask, "__name__", "") == "retrieve_conversation":
        answer.close()
        raise TypeError("retrieve_conversation() is async def but retrieve() is not: make both async def, "
                        "or both plain def")
    return answer


def _materialised(answer: Any) -> Any:
    """An iterator read once, here (a generator or ``map`` would otherwise be consumed by a check
    and scored as empty); sequences and mappings as they are."""
    if isinstance(answer, (str, bytes, Mapping, list, tuple)) or answer is None:
        return answer
    if hasattr(answer, "__iter__") and not hasattr(answer, "__len__"):
        return list(answer)
    return answer
