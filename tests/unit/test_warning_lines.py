"""A warning is found by a line-oriented grep (``grep warning: ci.log``): the first line of each,
as the terminal wraps it within 88 columns, names its subject and what was found; the figures and
the advice follow."""

from __future__ import annotations

import pytest

from conftest import QUESTIONS
from pytest_retrieval_eval.data.judges import Judge
from pytest_retrieval_eval.data.labeled import load_questions_cache
from conftest import evaluate_engine
from pytest_retrieval_eval.evaluation.judging import JudgmentsUsed
from pytest_retrieval_eval.evaluation.results import RunResults
from pytest_retrieval_eval.analysis.set_signal import metadata_baseline, warnings as set_warnings
from pytest_retrieval_eval.analysis.power import underpowered
from pytest_retrieval_eval.gate.checks import check_drops
from pytest_retrieval_eval.rules.drops import MaxDrop
from pytest_retrieval_eval.report.terminal import WIDTH, _fitted

LABELED = load_questions_cache(QUESTIONS)
GOLD = {q.question: q.gold[0] for q in LABELED}


class Ranked:
    """Gold first for every question, or second behind another document (``second``)."""

    def __init__(self, name, second=False):
        self.name, self.second = name, second

    def retrieve(self, query, k):
        gold = GOLD[query]
        other = "battery-care" if gold != "battery-care" else "account-deletion"
        return [other, gold] if self.second else [gold, other]


def first_line(warning: str) -> str:
    """The line a grep finds: the first of the warning as the default summary prints it."""
    lines = _fitted(f"warning: {warning}", False)
    assert all(len(line) <= WIDTH for line in lines) or len(lines) == 1
    return lines[0]


def test_an_underpowered_max_drop_rule_says_so_on_its_first_line():
    run = RunResults([evaluate_engine(Ranked("hybrid-rerank", second=True), LABELED)])
    [said] = underpowered(run, [MaxDrop.parse("hybrid-rerank:hit@1=0.01", source="--retrieval-max-drop")], 0.05)
    line = first_line(said)
    assert line.startswith("warning: max-drop rule hybrid-rerank:hit@1=0.01 ")
    assert "below what it can detect" in line, said


def test_a_set_that_rewards_naming_the_document_says_so_on_its_first_line():
    run = RunResults([evaluate_engine(e, LABELED) for e in (Ranked("keyword"), Ranked("vector"))])
    [said] = set_warnings(metadata_baseline(run, "hit@5"))
    line = first_line(said)
    assert line.startswith("warning: labeled set") and "rewards naming the document" in line, said


class Diff:
    engine, measure, before, after, p, p_adjusted, losses, wins, movers = ("hybrid-rerank", "ndcg@10", 0.8123, 0.7011,
                                                                           0.001, 0.002, 4, 0, ())

    def day_note(self):
        return ""


def test_a_drop_within_the_engines_own_spread_says_so_on_its_first_line():
    rule = [MaxDrop.parse("hybrid-rerank:ndcg@10=0.05", source="--retrieval-max-drop")]
    _, [said] = check_drops(rule, [Diff()], noise_aware=True, alpha=0.05, spreads={("hybrid-rerank", "ndcg@10"): 0.2})
    line = first_line(said)
    assert line.startswith("warning: hybrid-rerank: ndcg@10 dropped 0.1112") and "within" in line
    assert "not failed" in line, said


@pytest.mark.parametrize("model", ["openai/gpt-4o-mini", "meta-llama/llama-3.1-8b-instruct"])
def test_a_judge_that_agrees_too_little_says_so_on_its_first_line(model):
    used = JudgmentsUsed("judgments.jsonl", Judge(model, "0" * 64), calibrated=30, kappa=0.21,
                         validation={"passed": True, "kappa": 0.8})
    [said] = [w for w in used.warnings() if "kappa" in w]
    line = first_line(said)
    assert line.startswith(f"warning: judge {model} ") and "agrees too little with the human labels" in line, said
