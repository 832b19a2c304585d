"""The recorded run (``evaluation/results.RunResults``) is frozen: what is added to it later
(judgments, coverage, fingerprints, candidates) makes a new run, and the one it was made from
reads as it did, so nothing that read the run before reads something else after."""

from __future__ import annotations

import dataclasses

import pytest

from conftest import results_text
from pytest_retrieval_eval.analysis.result import EvaluationResult
from pytest_retrieval_eval.data.judges import Judge
from pytest_retrieval_eval.data.judgments import Judgment, Judgments
from pytest_retrieval_eval.data.labeled import LabeledSet
from pytest_retrieval_eval.evaluation.judging import with_judgments
from pytest_retrieval_eval.evaluation.results import RunResults
from pytest_retrieval_eval.types import LabeledQuery, QueryResult

LABELED = LabeledSet((LabeledQuery("q1", "alpha?", {"a": 1}), LabeledQuery("q2", "beta?", {"b": 1})), name="set")
JUDGE = Judge("model-a", "p" * 64, 0.0, 1, "127.0.0.1")


def run_of(*engines: str) -> RunResults:
    return RunResults([EvaluationResult(engine, LABELED, (QueryResult("q1", ("c", "a")), QueryResult("q2", ("e", "b"))))
                       for engine in engines])


@pytest.mark.parametrize("name", [f.name for f in dataclasses.fields(RunResults)])
def test_assigning_into_a_recorded_run_raises(name):
    run = run_of("one")
    with pytest.raises(dataclasses.FrozenInstanceError):
        setattr(run, name, getattr(run, name))


def test_a_recorded_run_keeps_its_evaluations_in_engine_order_and_so_does_a_replaced_one():
    run = run_of("two", "one")
    assert [e.engine for e in run.evaluations] == ["one", "two"]
    swapped = dataclasses.replace(run, evaluations=list(reversed(run.evaluations)))
    assert [e.engine for e in swapped.evaluations] == ["one", "two"]


def test_judging_a_run_makes_a_new_run_and_leaves_the_one_it_read_as_it_was():
    run = run_of("one", "two")
    before = results_text(run)
    evaluations = list(run.evaluations)
    judged, used = with_judgments(run, Judgments([Judgment("q1", "c", 3, (3,), "s" * 64, JUDGE),
                                                  Judgment("q2", "e", 2, (2,), "s" * 64, JUDGE)]),
                                  shown_path="j.jsonl")
    assert used is not None and used.used == 2
    assert judged is not run and judged.judgments and judged.evaluations[0].judged == {"q1": {"c": 3}, "q2": {"e": 2}}
    assert results_text(run) == before  # the input's results.json, byte for byte
    assert run.evaluations == evaluations and run.judgments == {}
    assert all(e.judged == {} and e.judge is None for e in run.evaluations)
    assert results_text(judged) != before
