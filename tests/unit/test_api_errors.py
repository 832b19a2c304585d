"""The Python API. Every constructor given something it cannot use says which
query and which document, never a bare StopIteration or TypeError."""

from __future__ import annotations

import pytest

from pytest_retrieval_eval import Qrels, RetrievalEvalError, Run, evaluate


@pytest.mark.parametrize("scores, message", [
    ({"q1": {"a": 1.0, 3.5: 0.5}}, "query 'q1': doc id 3.5 must be a string, got float"),
    ({"q1": {"a": 1.0, None: 0.5}}, "query 'q1': doc id None must be a string"),
    ({"q1": {"a": 1.0, "b": "high"}}, "score of document 'b' for query 'q1' must be a number, got 'high'"),
    ({"q1": {"a": 1.0, "b": None}}, "score of document 'b' for query 'q1' must be a number, got None"),
    ({"q1": {"a": float("nan")}}, "score of document 'a' for query 'q1' must be a number, got nan"),
    ({"q1": ["a", "b"]}, "query 'q1': expected {doc_id: score}, got list"),
    ({("q", 1): {"a": 1.0}}, "query ('q', 1): query id ('q', 1) must be a string, got tuple"),
])
def test_run_from_dict_names_the_query_and_the_document(scores, message):
    with pytest.raises(RetrievalEvalError) as info:
        Run.from_dict(scores)
    assert message in str(info.value)


def test_whole_number_ids_are_spelled_out_and_ties_break_as_strings():
    run = Run.from_dict({1: {10: 0.5, 9: 0.5, "x": 1.0}})
    assert run["1"] == ("x", "9", "10")  # trec_eval: ties by doc id descending, compared as strings
    assert Run.from_dict({"q": {"b": 1, "a": 1, "c": 2}})["q"] == ("c", "b", "a")


@pytest.mark.parametrize("rankings, message", [
    ({"q1": "abc"}, "query 'q1': expected its doc ids best first (a list), got str"),
    ({"q1": {"a": 1.0}}, "got dict (scores? use Run.from_dict)"),
    ({"q1": ["a", 2.5]}, "query 'q1': doc id 2.5 must be a string"),
    ({"q1": 7}, "query 'q1': expected its doc ids best first (a list), got int"),
])
def test_run_from_ranked_names_the_query_and_the_document(rankings, message):
    with pytest.raises(RetrievalEvalError) as info:
        Run.from_ranked(rankings)
    assert message in str(info.value)


@pytest.mark.parametrize("qrels, message", [
    ({"q1": {"a": "relevant"}}, "field 'q1/a': relevance grade must be an integer"),
    ({"q1": {"a": 1.5}}, "field 'q1/a'"),
    ({"q1": ["a"]}, "query 'q1': expected {doc_id: grade}, got list"),
    ({"q1": {None: 1}}, "query 'q1': doc id None must be a string"),
])
def test_qrels_name_the_query_and_the_document(qrels, message):
    with pytest.raises(RetrievalEvalError) as info:
        Qrels.from_dict(qrels)
    assert message in str(info.value)


def test_evaluate_with_bad_measures_or_inputs_says_so():
    qrels, run = Qrels.from_dict({"q": {"a": 1}}), Run.from_dict({"q": {"a": 1.0}})
    with pytest.raises(RetrievalEvalError, match="unknown measure 'bleu'"):
        evaluate(qrels, run, ["bleu"])
    assert evaluate(qrels, run, ["hit@1"]) == {"hit@1": 1.0}
