"""Rules name every measure the IR core knows (issue 28): parenthesised names in thresholds,
max-drop rules and gain weights, each measure's own range, and comma lists that keep the commas
inside a name."""

from __future__ import annotations

import math

import pytest

from pytest_retrieval_eval import RetrievalEvalError
from pytest_retrieval_eval.rules.drops import MaxDrop
from pytest_retrieval_eval.rules.quantities import ErrorCount, LintCount, MeasureQuantity, RunLintCount, ShadowQuantity
from pytest_retrieval_eval.rules.shadows import parse_weights
from pytest_retrieval_eval.rules.thresholds import Threshold
from pytest_retrieval_eval.ir.measures import Measure


@pytest.mark.parametrize("text, name", [
    ("P(rel=2)@5>=0.3", "precision(rel=2)@5"),
    ("keyword:rbp(p=0.9,rel=1)>=0.2", "rbp(p=0.9,rel=1)"),
    ("nDCG(dcg=exp-log2)@10>=0.1", Measure.parse("nDCG(dcg=exp-log2)@10").name),
])
def test_a_parenthesised_measure_parses_into_a_measure_quantity(text, name):
    rule = Threshold.parse(text)
    assert rule.measure == name and rule.quantity == MeasureQuantity(Measure.parse(name))
    assert Threshold.parse(str(rule)) == rule  # what results.json records reads back


def test_every_quantity_is_typed_once():
    assert isinstance(Threshold.parse("errors<=0").quantity, ErrorCount)
    assert Threshold.parse("lint.truncated<=0").quantity == LintCount("truncated")
    assert Threshold.parse("run.empty<=0").quantity == RunLintCount("empty")
    assert Threshold.parse("shadow.gain>=0").quantity == ShadowQuantity(None)
    assert Threshold.parse("c:shadow.P(rel=2)@5>=-0.1").quantity == ShadowQuantity(Measure.parse("P(rel=2)@5"))


def test_a_count_measure_takes_its_range_from_the_measure():
    assert Threshold.parse("num_rel_ret@5>=2").value == 2  # was refused as "can never pass: [0, 1]"
    with pytest.raises(RetrievalEvalError, match=r"can never pass: num_rel_ret@5 takes values in \[0, inf\)"):
        Threshold.parse("num_rel_ret@5<0")
    with pytest.raises(RetrievalEvalError, match=r"can never pass: hit@5 takes values in \[0, 1\]"):
        Threshold.parse("hit@5>=1.5")


def test_max_drop_rules_and_gain_weights_take_parenthesised_names():
    rule = MaxDrop.parse("keyword:P(rel=2)@5=0.02")
    assert (rule.measure, rule.delta, rule.engine) == ("precision(rel=2)@5", 0.02, "keyword")
    assert parse_weights("rbp(p=0.9,rel=1)=2, recall@5=1") == {"rbp(p=0.9,rel=1)": 2.0, "recall@5": 1.0}
    with pytest.raises(RetrievalEvalError, match="gain weight 'rbp\\(p=0.9\\)' not understood"):
        parse_weights("rbp(p=0.9)")
    assert math.isclose(parse_weights("P(rel=2)@5=0.5")["precision(rel=2)@5"], 0.5)
