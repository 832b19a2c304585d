import math

import pytest

from pytest_retrieval_eval import RetrievalEvalError
from pytest_retrieval_eval.analysis.rows import Row
from pytest_retrieval_eval.gate.checks import check
from pytest_retrieval_eval.rules.thresholds import Threshold, parse_thresholds


@pytest.mark.parametrize(
    "text, expected",
    [
        ("hit@5>=0.8", Threshold("hit@5", ">=", 0.8)),
        (" keyword : MRR >= .5 ", Threshold("mrr", ">=", 0.5, "keyword")),
        ("hybrid:nDCG@10>0.61", Threshold("ndcg@10", ">", 0.61, "hybrid")),
        ("errors<=0", Threshold("errors", "<=", 0.0)),
        ("keyword:errors<3", Threshold("errors", "<", 3.0, "keyword")),
    ],
)
def test_parse(text, expected):
    assert Threshold.parse(text) == expected


@pytest.mark.parametrize("text", ["hit@5", "hit@5 >= ", ">= 0.5", "hit@5 => 0.5", "a:b:hit@5>=1", "hit@5>=0.5x"])
def test_parse_errors(text):
    with pytest.raises(RetrievalEvalError, match="does not parse"):
        Threshold.parse(text)


def test_ini_lines_skip_blanks_and_comments():
    rules = parse_thresholds([("", "ini"), ("# comment", "ini"), ("mrr>=0.1", "ini")])
    assert [str(r) for r in rules] == ["mrr>=0.1"]


def rows():
    return [
        Row("keyword", "set", {"hit@5": 0.4, "mrr": 0.3}, 10, 0),
        Row("hybrid", "set", {"hit@5": 0.9, "mrr": 0.7}, 10, 2),
    ]


def test_check_applies_unscoped_rules_to_every_engine_and_scoped_rules_to_one():
    breaches = check([Threshold("hit@5", ">=", 0.5, source="cli")], rows())
    assert [(b.engine, b.value) for b in breaches] == [("keyword", 0.4)]
    assert check([Threshold("hit@5", ">=", 0.5, "hybrid")], rows()) == []
    breaches = check([Threshold("errors", "<=", 0, source="cli")], rows())
    assert [(b.engine, b.value) for b in breaches] == [("hybrid", 2.0)]


def test_boundaries_are_inclusive_only_for_inclusive_operators():
    assert check([Threshold("hit@5", ">=", 0.4)], rows()[:1]) == []
    assert len(check([Threshold("hit@5", ">", 0.4)], rows()[:1])) == 1


def test_nan_never_passes_and_unknown_engines_are_breaches():
    empty = [Row("keyword", "set", {"hit@5": math.nan}, 0, 0)]
    assert len(check([Threshold("hit@5", ">=", 0.0)], empty)) == 1
    assert len(check([Threshold("hit@5", "<=", 1.0)], empty)) == 1
    [b] = check([Threshold("hit@5", ">=", 0.1, "bm25", source="cli")], rows())
    assert "no evaluation of engine 'bm25' was recorded (evaluated: hybrid, keyword)" in str(b)
