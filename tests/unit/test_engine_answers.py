"""Engine answers of any shape are read exactly once and scored as what they hold,
or recorded as an error that names the shape; never a silent empty ranking."""

from __future__ import annotations

import numpy as np
import pytest

from conftest import QUESTIONS
from pytest_retrieval_eval.data.labeled import load_questions_cache
from conftest import evaluate_engine

LABELED = load_questions_cache(QUESTIONS)
FIRST = LABELED.queries[0]
GOLD = FIRST.gold[0]


class Answers:
    name = "shapes"

    def __init__(self, make):
        self.make, self.calls = make, 0

    def retrieve(self, query, k):
        self.calls += 1
        return self.make()


def first(make, **kw):
    engine = Answers(make)
    result = evaluate_engine(engine, type(LABELED)((FIRST,), name="one"), **kw)
    assert engine.calls == 1  # asked once, answer read once
    return result.results[0]


@pytest.mark.parametrize("make", [
    lambda: (d for d in [GOLD, "x"]),  # a generator
    lambda: map(str, [GOLD, "x"]),
    lambda: iter([GOLD, "x"]),
    lambda: (GOLD, "x"),
    lambda: np.array([GOLD, "x"]),
    lambda: {GOLD: 2.0, "x": 1.0},
    lambda: [("x", 0.5), (GOLD, np.float32(0.9))],
    lambda: {"x": 1, GOLD: np.int64(3)},
    lambda: __import__("collections").OrderedDict([(GOLD, 1.0)]),
])
def test_every_ordered_shape_is_scored_as_what_it_holds(make):
    r = first(make)
    assert r.error is None and r.doc_ids[0] == GOLD


@pytest.mark.parametrize("make, message", [
    (lambda: None, "returned None"),
    (lambda: {GOLD, "x"}, "returned a set, which has no order"),
    (lambda: frozenset([GOLD]), "returned a frozenset, which has no order"),
    (lambda: GOLD, "returned a single str"),
    (lambda: GOLD.encode(), "returned a single bytes"),
    (lambda: 42, "returned a int, not a sequence of doc ids"),
    (lambda: [GOLD, 7], "item 1 is a int (7), not a doc id string"),
    (lambda: [GOLD, None], "item 1 is a NoneType"),
    (lambda: {GOLD: "high"}, "where '" + GOLD + "' has score 'high', not a number"),
    (lambda: {GOLD: float("nan")}, "has score nan, not a number"),
    (lambda: [(3, 0.5)], "with a int id 3, not a string"),
    (lambda: (x for x in [GOLD, {"id": "x"}]), "item 1 is a dict"),
])
def test_any_other_shape_is_an_error_naming_it(make, message):
    r = first(make)
    assert r.doc_ids == () and message in r.error


def test_a_generator_under_a_time_limit_is_read_inside_the_limit():
    def slow():
        import time
        yield GOLD
        time.sleep(1)
        yield "x"

    r = first(slow, timeout=0.2)
    assert r.error is not None and "no answer within 0.2s" in r.error


def test_an_empty_answer_is_an_empty_ranking_not_an_error():
    r = first(lambda: iter(()))
    assert r.error is None and r.doc_ids == ()
