"""The names people type for a measure, in trec_eval's, ir_measures' and ranx's spellings: each
parses to one canonical measure, means there what it means here, or is refused with the spelling
that says what is meant. Values are checked against ranx and ir_measures live, and against
their own hand-computed test values."""

from __future__ import annotations

import math

import pytest

from pytest_retrieval_eval import Measure, Qrels, RetrievalEvalError, Run, evaluate
from pytest_retrieval_eval.rules.thresholds import Threshold
from pytest_retrieval_eval.ir.measures import split_measures
from shared_datasets import dataset_path

IR_MEASURES_TEST = dataset_path("ir_measures_test")


@pytest.mark.parametrize(
    "text, name",
    [
        # trec_eval 10
        ("Rprec", "rprec"), ("bpref", "bpref"), ("num_ret", "num_ret"), ("num_rel", "num_rel"),
        ("num_rel_ret", "num_rel_ret"), ("set_P", "set_precision"), ("set_recall", "set_recall"), ("set_F", "set_f"),
        ("P_5", "precision@5"), ("success_10", "hit@10"), ("ndcg_cut_10", "ndcg@10"), ("map_cut_5", "map@5"),
        ("recip_rank", "mrr"),
        # ir_measures
        ("P(rel=2)@5", "precision(rel=2)@5"), ("R(rel=2)@10", "recall(rel=2)@10"), ("AP(rel=3)", "map(rel=3)"),
        ("RR(rel=2)@10", "mrr(rel=2)@10"), ("Success(rel=2)@3", "hit(rel=2)@3"), ("Rprec(rel=2)", "rprec(rel=2)"),
        ("Bpref", "bpref"), ("Judged@10", "judged@10"), ("Judged", "judged"), ("NumRet", "num_ret"),
        ("NumRel", "num_rel"), ("NumRelRet", "num_rel_ret"), ("NumRet(rel=1)", "num_rel_ret"),
        ("NumRet(rel=2)", "num_rel_ret(rel=2)"), ("SetP", "set_precision"), ("SetR", "set_recall"),
        ("SetF", "set_f"), ("SetF(beta=0.5)", "set_f(beta=0.5)"), ("ERR@10", "err@10"),
        ("RBP(p=0.8)", "rbp(p=0.8)"), ("RBP(p=0.9,rel=1)", "rbp(p=0.9,rel=1)"), ("RBP(rel=2, p=0.5)@10", "rbp(p=0.5,rel=2)@10"),
        ("nDCG(dcg=exp-log2)@10", "ndcg(gain=exp)@10"), ("nDCG(dcg=log2)@10", "ndcg@10"), ("P(rel=1)@5", "precision@5"),
        # ranx
        ("hit_rate@5", "hit@5"), ("r-precision", "rprec"), ("precision@5-l2", "precision(rel=2)@5"),
        ("ndcg_burges@10", "ndcg(gain=exp)@10"), ("map@100-l3", "map(rel=3)@100"),
        # the plugin's own, parameters in ir_measures' syntax
        ("ndcg(gain=exp)@10", "ndcg(gain=exp)@10"), ("rbp(p=0.9)", "rbp(p=0.9)"), ("set_f(beta=2,rel=2)", "set_f(beta=2,rel=2)"),
        ("judged@5", "judged@5"), ("err@20", "err@20"), ("num_rel_ret@5", "num_rel_ret@5"),
    ],
)
def test_other_tools_spellings_parse_to_one_canonical_name(text, name):
    measure = Measure.parse(text)
    assert measure.name == name
    assert Measure.parse(measure.name) == measure  # the canonical name reads back as itself


@pytest.mark.parametrize("name", ["hit@5", "mrr", "ndcg@10", "recall@5", "precision@5", "map", "mrr@10", "map@100"])
def test_stored_canonical_names_are_unchanged(name):
    # reports and baselines store these names: they must stay byte-identical
    assert Measure.parse(name).name == name
    assert Measure("hit", 5).name == "hit@5" and Measure("mrr").name == "mrr" and Measure("ndcg", 10) == Measure.parse("nDCG@10")


@pytest.mark.parametrize(
    "text, fragments",
    [
        ("hits@5", ["ranx's hits@k counts", "num_rel_ret@5", "hit@5"]),
        ("HITS@10", ["num_rel_ret@10", "hit@10"]),
        ("rbp", ["rbp(p=0.9)", "RBP(p=0.8)"]),
        ("RBP@10", ["rbp(p=0.9)", "RBP(p=0.8)"]),
        ("rbp.95", ["ranx's RBP", "rbp(p=0.95)", "rbp(p=0.95,rel=1)"]),
        ("rprec@5", ["takes no cutoff"]),
        ("P(rel=0)@5", ["rel must be a whole number >= 1"]),
        ("P(judged_only=1)@5", ["unknown parameter"]),
        ("ndcg(rel=2)@5", ["takes no parameter 'rel'"]),
        ("ndcg(gain=exp2)@5", ["unknown parameter"]),
        ("rbp(p=1.5)", ["between 0 and 1"]),
        ("P(cutoff=5)", ["write the cutoff after the name"]),
        ("f1@5", ["unknown measure 'f1@5'"]),
    ],
)
def test_names_that_would_mean_something_else_are_refused_in_one_line(text, fragments):
    with pytest.raises(RetrievalEvalError) as caught:
        Measure.parse(text)
    message = str(caught.value)
    assert "\n" not in message
    for fragment in fragments:
        assert fragment in message, message


def test_hits_at_5_is_not_silently_binary_anywhere_a_name_is_read():
    qrels = {"q": {"a": 1, "b": 1, "c": 1}}
    run = {"q": ["a", "b", "x", "c"]}
    for read in (lambda: evaluate(qrels, run, ["hits@5"]), lambda: Threshold.parse("hybrid:hits@5>=0.8")):
        with pytest.raises(RetrievalEvalError, match="hit@5"):
            read()
    # the two meanings, each under an unambiguous name
    assert evaluate(qrels, run, ["hit@5", "num_rel_ret@5"]) == {"hit@5": 1.0, "num_rel_ret@5": 3.0}


def test_rules_accept_the_new_measures():
    assert Threshold.parse("hybrid:bpref>=0.3").measure == "bpref"
    assert Threshold.parse("hit_rate@5>=0.8").measure == "hit@5"
    assert Threshold.parse("r-precision>=0.5").measure == "rprec"
    assert Threshold.parse("keyword:judged@10>=0.2").measure == "judged@10"
    assert Threshold.parse("Rprec>=0.4").measure == "rprec"


def test_a_list_of_measures_splits_outside_parentheses():
    assert split_measures("rbp(p=0.9,rel=1), hit@5,set_f(beta=0.5,rel=2),,") == [
        "rbp(p=0.9,rel=1)", "hit@5", "set_f(beta=0.5,rel=2)"]


def test_counts_sum_over_queries_as_trec_eval_does_and_the_rest_average():
    qrels = {"q1": {"a": 1, "b": 1}, "q2": {"c": 1}, "q3": {"d": 2}}
    run = {"q1": ["a", "x", "b"], "q2": ["y"]}  # q3 left out: judged, scores 0, its relevant counted
    got = evaluate(qrels, run, ["num_ret", "num_rel", "num_rel_ret", "num_ret@2", "set_precision"])
    assert got == {"num_ret": 4.0, "num_rel": 4.0, "num_rel_ret": 2.0, "num_ret@2": 3.0,
                   "set_precision": pytest.approx((2 / 3) / 3)}
    assert Measure.parse("num_ret").bounds == (0.0, math.inf) and Measure.parse("bpref").bounds == (0.0, 1.0)
    assert math.isnan(evaluate({}, {}, ["num_ret"])["num_ret"])  # 0 of 0 is not a pass


def test_measure_keeps_its_positional_constructor_and_gains_fields_with_defaults():
    m = Measure("precision", 5)
    assert (m.rel, m.p, m.gain, m.beta) == (None, None, None, None)
    assert Measure("precision", 5, rel=2) == Measure.parse("P(rel=2)@5")
    assert Measure("precision", 5, rel=1) == m  # the default level is not a second identity


# --- ir_measures ---------------------------------------------------------------------------------

def test_evaluate_accepts_ir_measures_measure_objects():
    ir_measures = pytest.importorskip("ir_measures")
    qrels = {"q": {"a": 2, "b": 1, "c": 0}}
    run = {"q": {"a": 3.0, "c": 2.0, "b": 1.0, "x": 0.5}}
    got = evaluate(qrels, run, [ir_measures.P(rel=2) @ 5, ir_measures.nDCG @ 10, ir_measures.RBP,
                                ir_measures.Judged @ 10, ir_measures.NumRelRet, ir_measures.SetF])
    assert list(got) == ["precision(rel=2)@5", "ndcg@10", "rbp(p=0.8)", "judged@10", "num_rel_ret", "set_f"]
    assert got["precision(rel=2)@5"] == pytest.approx(0.2) and got["judged@10"] == pytest.approx(3 / 4)
    assert evaluate(qrels, run, ir_measures.Rprec) == {"rprec": 0.5}


def test_judged_matches_ir_measures_hand_values():
    # ir_measures' tests/test_judged.py, its qrels and run and expected values
    qrels = {"0": {"D0": 0, "D1": 1, "D2": 1, "D3": 2, "D4": 0}, "1": {"D0": 1, "D3": 2, "D5": 2}}
    run = {"0": {"D0": 0.8, "D2": 0.7, "D1": 0.3, "D3": 0.4, "D4": 0.1},
           "1": {"D1": 0.8, "D3": 0.7, "D4": 0.3, "D2": 0.4}}
    expected = {"judged": (1.0, 1 / 4), "judged@1000": (1.0, 1 / 4), "judged@10": (1.0, 1 / 4),
                "judged@3": (1.0, 1 / 3), "judged@1": (1.0, 0.0)}
    got = evaluate(qrels, run, list(expected), per_query=True)
    for name, (zero, one) in expected.items():
        assert got[name] == {"0": pytest.approx(zero), "1": pytest.approx(one)}, name
    # an empty ranking judges nothing
    assert evaluate({"0": {"D0": 1}, "1": {"D0": 1}}, {"0": {"D0": 0.8}, "1": {}}, ["judged", "judged@5"],
                    per_query=True) == {"judged": {"0": 1.0, "1": 0.0}, "judged@5": {"0": 1.0, "1": 0.0}}


@pytest.mark.dataset("ir_measures_test")
def test_rbp_matches_ir_measures_cwl_eval_hand_values():
    qrels, run = Qrels.from_trec(IR_MEASURES_TEST / "cwl.qrels"), Run.from_trec(IR_MEASURES_TEST / "cwl.run")
    # ir_measures' tests/test_cwl_eval.py, from a manual cwl-eval run
    expected = {
        "RBP(p=0.9,rel=1)": {"T1": 0.3501, "T2": 0.3996, "T3": 0.1988},
        "AP": {"T1": 0.7087, "T2": 0.7438, "T3": 0.3068},
        "P@5": {"T1": 0.6000, "T2": 0.6000, "T3": 0.0000},
        "P@10": {"T1": 0.5000, "T2": 0.6000, "T3": 0.4000},
        "RR": {"T1": 1.0000, "T2": 1.0000, "T3": 0.1667},
    }
    for name, values in expected.items():
        got = evaluate(qrels, run, [name], per_query=True)[Measure.parse(name).name]
        assert {q: round(v, 4) for q, v in got.items()} == values, name


def test_err_by_hand():
    # grades 4, 0, 2: stop probabilities 15/16, 0, 3/16
    got = evaluate({"q": {"a": 4, "b": 0, "c": 2}}, {"q": ["a", "b", "c"]}, ["err@1", "err@3"])
    assert got["err@1"] == pytest.approx(15 / 16)
    assert got["err@3"] == pytest.approx(15 / 16 + (1 / 16) * (3 / 16) / 3)


def test_ranx_hits_case_counts_where_hit_is_binary():
    # two queries: 3 and 2 relevant documents in the top 5 -> ranx's hits@5 is 2.5, hit@5 is 1.0
    qrels = {"q1": {"a": 1, "b": 1, "c": 1}, "q2": {"d": 1, "e": 1}}
    run = {"q1": ["a", "x", "b", "c", "y"], "q2": ["d", "e"]}
    assert evaluate(qrels, run, ["hit@5", "num_rel_ret@5"]) == {"hit@5": 1.0, "num_rel_ret@5": 5.0}
    per = evaluate(qrels, run, ["num_rel_ret@5"], per_query=True)["num_rel_ret@5"]
    assert sum(per.values()) / len(per) == 2.5  # ranx averages its hits; trec_eval sums counts


def test_labels_with_one_gold_document_per_question_judge_few():
    generated = Qrels.from_dict({"q1": {"a": 1}, "q2": {"b": 1}})
    pooled = Qrels.from_dict({"q1": {"a": 1, "b": 0, "c": 2}, "q2": {"d": 1, "e": 0}})
    assert generated.judges_few() and generated.judged_per_query() == 1.0
    assert not pooled.judges_few() and pooled.judged_per_query() == 2.5
    # one gold document each: of a full top 5 at most 1/5 is judged (q1); over a ranking of one
    # document the share is of that one, as ir_measures' Judged divides by min(k, retrieved) (q2)
    got = evaluate(generated, {"q1": ["a", "x", "y", "z", "w"], "q2": ["b"]}, ["judged@5"], per_query=True)
    assert got == {"judged@5": {"q1": pytest.approx(0.2), "q2": 1.0}}
