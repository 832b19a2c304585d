"""Engines that hang: a blocking ``async def retrieve`` is cut off by ``--retrieval-timeout`` like a
sync one, and Ctrl-C during a concurrent run whose calls never return ends pytest at once and
leaves no PostgreSQL behind."""

from __future__ import annotations

import asyncio
import threading
import time

import pytest

from pytest_retrieval_eval.data.labeled import LabeledSet
from pytest_retrieval_eval.engines import adapters
from conftest import evaluate_engine
from pytest_retrieval_eval.types import LabeledQuery

QUESTIONS_ASKED = {1: "blocks", 4: "blocks", 6: "awaits"}
LABELED = LabeledSet(tuple(LabeledQuery(f"q{i}", QUESTIONS_ASKED.get(i, f"fine {i}"), {"d": 1}) for i in range(8)),
                     name="s")


# --- a blocking coroutine -------------------------------------------------------------------------

@pytest.mark.parametrize("width", [1, 4])
def test_a_coroutine_that_blocks_its_loop_is_cut_off_and_the_rest_still_answered_once(width):
    release = threading.Event()
    asked = []

    async def search(query, k):
        asked.append(query)
        if query == "blocks":
            release.wait(30)  # blocks the event loop: asyncio.wait_for alone cannot interrupt it
        if query == "awaits":
            await asyncio.sleep(30)  # yields: cancelled on its loop
        return ["d"]

    start = time.perf_counter()
    result = evaluate_engine(adapters.function(search, concurrency=width), LABELED, timeout=0.25)
    took = time.perf_counter() - start
    release.set()
    assert took < 8, took
    errors = {r.query_id: r.error for r in result.results if r.error}
    assert set(errors) == {"q1", "q4", "q6"}, errors
    assert all(e == "EngineTimeout: no answer within 0.25s (--retrieval-timeout)" for e in errors.values())
    assert all(r.doc_ids == ("d",) for r in result.results if not r.error)
    assert sorted(asked) == sorted(q.question for q in LABELED)  # none asked twice, none skipped
