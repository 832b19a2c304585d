"""judged@k beside the tabled measures when the labels judge few documents per question (one gold
each, as generated questions have): the line says how much of each top k is judged and what the
unjudged rest does to the numbers; labels that judge more say nothing."""

from __future__ import annotations

from pytest_retrieval_eval import QueryResult
from pytest_retrieval_eval.data.labeled import LabeledSet
from pytest_retrieval_eval.rules.settings import GateSettings
from pytest_retrieval_eval.report.judged import judged_lines
from pytest_retrieval_eval.analysis.result import EvaluationResult
from pytest_retrieval_eval.evaluation.results import RunResults
from pytest_retrieval_eval.gate.verdict import Verdict, verdict_of
from pytest_retrieval_eval.types import LabeledQuery


def verdict(labeled: LabeledSet, measures: list[str]) -> Verdict:
    ranked = tuple(QueryResult(q.query_id, ("a", "b", "c", "d", "e")) for q in labeled)
    v = verdict_of(RunResults([EvaluationResult("e", labeled, ranked)]), GateSettings(), measures=measures)
    assert v.measures == measures
    return v


ONE_GOLD = LabeledSet((LabeledQuery("q1", "x", {"a": 1}), LabeledQuery("q2", "y", {"z": 1})), name="gen")
POOLED = LabeledSet((LabeledQuery("q1", "x", {"a": 1, "b": 0, "c": 2}), LabeledQuery("q2", "y", {"d": 1, "e": 1})),
                    name="pooled")


def test_one_gold_document_each_shows_judged_at_the_tables_cutoffs_and_what_it_means():
    lines = judged_lines(verdict(ONE_GOLD, ["hit@1", "hit@5", "mrr", "freshness.stale_free@5"]))
    text = " ".join(line.strip() for line in lines)
    assert lines[0] == "judged@k, the share of each top k the labels judge (1.0 document per question):"
    # q1: a judged at rank 1 (1/1, 1/5); q2: nothing of its top 5 judged
    assert "e: judged@1 0.500, judged@5 0.100" in text
    assert "precision, map and ndcg are lower bounds" in text
    md = judged_lines(verdict(ONE_GOLD, ["hit@5"]), markdown=True)
    assert "- e: judged@5 0.100" in md


def test_labels_that_judge_several_documents_per_question_say_nothing():
    assert judged_lines(verdict(POOLED, ["hit@5", "ndcg@10"])) == []


def test_no_cutoff_in_the_table_says_nothing():
    assert judged_lines(verdict(ONE_GOLD, ["mrr", "map"])) == []


def test_the_rests_on_line_leaves_out_measures_the_engine_has_no_value_of():
    """An ids-only engine has no ``+evidence`` twin: the line names only what it has a value of."""
    with_evidence = LabeledSet((LabeledQuery("q1", "x", {"a": 1}, {"evidence": {"a": ["alpha"]}}),
                                LabeledQuery("q2", "y", {"z": 1})), name="gen")
    lines = judged_lines(verdict(with_evidence, ["hit@3", "hit@3+evidence", "hit@5", "hit@5+evidence"]))
    text = " ".join(line.strip() for line in lines)
    assert "e: hit@3 rests on a top 3 that is 83% unjudged; hit@5 90%" in text, text
    assert "+evidence" not in text
