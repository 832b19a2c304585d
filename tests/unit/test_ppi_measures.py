"""Prediction-powered measures (``ndcg@10~ppi``) of a run: the judge's grades of every question
corrected by the questions a worksheet graded completely, through the path a run takes
(``judging.with_judgments`` of a judgments file, then the evaluation's estimate and interval)."""

from __future__ import annotations

import math
import random

import numpy as np
import pytest

from pytest_retrieval_eval.data.grades import RELEVANT_FROM
from pytest_retrieval_eval.data.judges import Judge
from pytest_retrieval_eval.data.judgments import Judgment, Judgments, question_sha256
from pytest_retrieval_eval.data.labeled import LabeledSet
from pytest_retrieval_eval.data.worksheet import HUMAN
from pytest_retrieval_eval.errors import RetrievalEvalError
from pytest_retrieval_eval.evaluation.judging import with_judgments
from pytest_retrieval_eval.analysis.result import EvaluationResult
from pytest_retrieval_eval.evaluation.results import RunResults
from pytest_retrieval_eval.evaluation.record_json import evaluation_from_dict, evaluation_to_dict
from pytest_retrieval_eval.rules.drops import MaxDrop
from pytest_retrieval_eval.rules.thresholds import Threshold
from pytest_retrieval_eval.ir.measures import Measure
from pytest_retrieval_eval.ir.metrics import evaluate
from pytest_retrieval_eval.types import LabeledQuery, QueryResult

LLM = Judge("model-a", "p" * 64, 0.0, 1, "127.0.0.1")
SHA = "s" * 64


def collection(seed: int, n: int = 400, docs: int = 10):
    """Questions with one labeled gold document and complete true grades (0-3) of the rest of
    their top 10, which is all there is of them (the labels are complete in the pool); the
    engine ranks the gold document anywhere in its top 10."""
    rng = random.Random(seed)
    queries, results, truth = [], [], {}
    for i in range(n):
        qid = f"q{i}"
        gold = f"{qid}-d0"
        others = [f"{qid}-d{j}" for j in range(1, docs)]
        ranking = others[:9]
        ranking.insert(rng.randrange(10), gold)
        grades = {d: rng.choices((0, 1, 2, 3), weights=(50, 20, 18, 12))[0] for d in others}
        truth[qid] = {**{d: int(g >= RELEVANT_FROM) for d, g in grades.items()}, gold: 1}
        queries.append(LabeledQuery(qid, f"question {i}", {gold: 1}))
        results.append(QueryResult(qid, tuple(ranking)))
        truth[(qid, "grades")] = grades
    return queries, results, truth


def judged_run(seed: int, *, error: float, humans: int, n: int = 400, judge_random: bool = False):
    """The run with a judge erring on ``error`` of the pairs (a grade on the other side of
    relevance) and ``humans`` questions graded completely on a worksheet, attached as a run
    attaches them; and the true mean of ndcg@10 on complete labels."""
    queries, results, truth = collection(seed, n)
    rng = random.Random(seed + 10_000)
    entries = []
    for q, r in zip(queries, results):
        grades = truth[(q.query_id, "grades")]
        for d in r.doc_ids:
            if d in q.relevant:
                continue
            g = grades[d]
            if judge_random:
                g = rng.randrange(4)
            elif rng.random() < error:
                g = rng.choice((2, 3)) if g < RELEVANT_FROM else rng.choice((0, 1))
            entries.append(Judgment(q.query_id, d, g, (g,), SHA, LLM, "hole", None, question_sha256(q.question)))
    for q in rng.sample(queries, humans):
        grades = truth[(q.query_id, "grades")]
        for d in dict.fromkeys([*next(r for r in results if r.query_id == q.query_id).doc_ids, *q.relevant]):
            entries.append(Judgment(q.query_id, d, grades.get(d, 3), (grades.get(d, 3),), SHA, HUMAN, "human", None,
                                    question_sha256(q.question), 10))
    e = EvaluationResult("engine", LabeledSet(tuple(queries), name="synthetic"), tuple(results))
    run = RunResults([e])
    run, used = with_judgments(run, Judgments(entries), shown_path="judgments.jsonl")
    qrels = {q: docs for q, docs in truth.items() if isinstance(q, str)}
    true = evaluate(qrels, {r.query_id: list(r.doc_ids) for r in results}, ["ndcg@10"])["ndcg@10"]
    return run.evaluations[0], used, true


def test_a_judge_erring_on_15_percent_of_pairs_gives_intervals_that_cover_and_are_narrower_than_humans_alone():
    """400 questions, 40 judged completely by people, a judge wrong on 15% of pairs: over 40
    seeded draws the ~ppi interval of ndcg@10 covers the true value (complete labels) at least 90%
    of the time and is narrower than the human-only interval on average."""
    covered, ppi_width, human_width, fell_back = 0, [], [], 0
    for seed in range(40):
        e, used, true = judged_run(seed, error=0.15, humans=40)
        est = e.ppi("ndcg@10~ppi")
        assert est.n == 40 and est.N == 400 and used.human_judged == 40
        lo, hi = e.ci("ndcg@10~ppi")
        assert (lo, hi) == est.interval and e.mean("ndcg@10~ppi") == est.estimate
        covered += lo <= true <= hi
        ppi_width.append(hi - lo)
        human_width.append(est.human_interval[1] - est.human_interval[0])
        fell_back += est.fell_back
    print(f"covered {covered}/40, mean width ~ppi {np.mean(ppi_width):.4f} vs human-only {np.mean(human_width):.4f}, "
          f"fell back {fell_back}")
    assert covered >= 36, covered
    assert np.mean(ppi_width) < np.mean(human_width)
    # the +judged number alone is biased by the judge's errors and has no interval for it
    e, _, true = judged_run(0, error=0.15, humans=40)
    assert abs(e.mean("ndcg@10+judged") - true) > abs(e.mean("ndcg@10~ppi") - true)


def test_a_judge_that_grades_at_random_falls_back_to_the_human_only_interval_and_says_so():
    e, _, true = judged_run(3, error=0.0, humans=40, judge_random=True)
    est = e.ppi("ndcg@10~ppi")
    assert est.fell_back and est.interval == est.human_interval
    assert "does not narrow the interval" in est.note
    assert est.effective_n == 40


def test_a_question_whose_top_holds_a_document_no_person_graded_is_not_human_judged_for_that_engine():
    queries, results, truth = collection(1, n=30)
    entries = []
    for q, r in zip(queries, results):
        grades = truth[(q.query_id, "grades")]
        for d in r.doc_ids:
            if d not in q.relevant:
                entries.append(Judgment(q.query_id, d, grades[d], (grades[d],), SHA, LLM, "hole", None,
                                        question_sha256(q.question)))
        if int(q.query_id[1:]) < 10:  # people graded the first ten, the first of them missing a document
            for d in r.doc_ids[1 if q.query_id == "q0" and r.doc_ids[0] not in q.relevant else 0:]:
                entries.append(Judgment(q.query_id, d, grades.get(d, 3), (grades.get(d, 3),), SHA, HUMAN, "human",
                                        None, question_sha256(q.question), 10))
    run = RunResults([EvaluationResult("engine", LabeledSet(tuple(queries), name="s"), tuple(results))])
    run, _ = with_judgments(run, Judgments(entries), shown_path="j.jsonl")
    e = run.evaluations[0]
    expected = [f"q{i}" for i in range(10) if not (i == 0 and results[0].doc_ids[0] not in queries[0].relevant)]
    assert e.human_questions(10) == expected
    assert e.human_questions(11) == []  # judged to 10: nothing known of an 11th document
    assert e.ppi("ndcg@10~ppi").n == len(expected)
    assert e.mean("ndcg@20~ppi") is None and e.ppi("ndcg@20~ppi") is None


def test_a_changed_document_or_a_reworded_question_leaves_its_human_grades_out():
    queries, results, truth = collection(2, n=12)
    entries = []
    for q, r in zip(queries, results):
        for d in r.doc_ids:
            grade = truth[(q.query_id, "grades")].get(d, 3)
            if d not in q.relevant:
                entries.append(Judgment(q.query_id, d, grade, (grade,), SHA, LLM, "hole", None, question_sha256(q.question)))
            asked = q.question if q.query_id != "q1" else "another wording"
            entries.append(Judgment(q.query_id, d, grade, (grade,), SHA, HUMAN, "human", None, question_sha256(asked), 10))
    run = RunResults([EvaluationResult("engine", LabeledSet(tuple(queries), name="s"), tuple(results))])
    changed = next(d for d in results[0].doc_ids if d not in queries[0].relevant)
    fingerprints = {d: SHA for r in results for d in r.doc_ids} | {q.query_id + "-d0": SHA for q in queries}
    fingerprints[changed] = "c" * 64
    run, _ = with_judgments(run, Judgments(entries), shown_path="j.jsonl", fingerprints=fingerprints)
    assert run.evaluations[0].human_questions(10) == [f"q{i}" for i in range(2, 12)]


def test_without_judgments_or_human_questions_a_ppi_measure_has_no_value():
    queries, results, _ = collection(4, n=5)
    e = EvaluationResult("engine", LabeledSet(tuple(queries), name="s"), tuple(results))
    assert e.ppi("ndcg@10~ppi") is None and e.mean("ndcg@10~ppi") is None
    assert all(math.isnan(x) for x in e.ci("ndcg@10~ppi"))
    assert np.isnan(e.values("ndcg@10~ppi")).all()  # no per-question value to test or bootstrap
    with pytest.raises(ValueError, match="no prediction-powered measure"):
        e.ppi("ndcg@10")


def test_the_human_grades_travel_in_results_json_and_give_the_same_estimate_read_back():
    from pytest_retrieval_eval.analysis.analyse import analyse
    from pytest_retrieval_eval.archive.saved import _derived
    from pytest_retrieval_eval.rules.settings import GateSettings

    e, _, _ = judged_run(5, error=0.15, humans=30, n=120)
    d = evaluation_to_dict(e)
    assert sum("human_depth" in q for q in d["queries"]) == 30
    settings = GateSettings(table_measures=("ndcg@10", "ndcg@10~ppi"))
    shown = _derived(e, ["ndcg@10", "ndcg@10~ppi"], settings, analyse(RunResults([e]), settings))
    assert all("ndcg@10~ppi" not in q["values"] and "ndcg@10" in q["values"] for q in shown["per_query"].values())
    back = evaluation_from_dict(d, EvaluationResult)
    assert back.ppi("ndcg@10~ppi") == e.ppi("ndcg@10~ppi")
    bad = {**d, "queries": [{**d["queries"][0], "human": {"x": 7}, "human_depth": 10}, *d["queries"][1:]]}
    with pytest.raises(ValueError, match="human must map doc ids to a worksheet's grades 0-3"):
        evaluation_from_dict(bad)


@pytest.mark.parametrize("text, name", [("ndcg@10~ppi", "ndcg@10~ppi"), ("nDCG@10~PPI", "ndcg@10~ppi"),
                                        ("P(rel=2)@5~ppi", "precision(rel=2)@5~ppi"), ("success_5~ppi", "hit@5~ppi")])
def test_ppi_measure_names_parse_to_one_identity(text, name):
    m = Measure.parse(text)
    assert m.name == name and m.ppi and m.judge_dependent and not m.judged
    assert m.on_human_labels.with_ppi() == m


@pytest.mark.parametrize("text, message", [
    ("mrr~ppi", "needs a cutoff people judged to, e.g. mrr@10~ppi"),
    ("num_rel_ret@10~ppi", "not of a count"),
    ("ndcg@10+judged~ppi", "applies once"),
    ("freshness.stale_free@5~ppi", "applies once"),
])
def test_ppi_is_refused_where_it_means_nothing(text, message):
    with pytest.raises(RetrievalEvalError, match=message):
        Measure.parse(text)


def test_rules_gate_a_ppi_measure_by_threshold_but_refuse_a_max_drop_or_a_segment():
    assert Threshold.parse("hybrid:ndcg@10~ppi>=0.4").measure == "ndcg@10~ppi"
    with pytest.raises(RetrievalEvalError, match="has no per-question value; write ndcg@10\\+judged=0.02"):
        MaxDrop.parse("ndcg@10~ppi=0.02")
    with pytest.raises(RetrievalEvalError, match="write hit@5\\+judged for the segment"):
        Threshold.parse("hybrid[body-only]:hit@5~ppi>=0.5")


def test_a_failed_ppi_rule_names_the_questions_people_judged_and_no_miss_of_the_documents():
    from pytest_retrieval_eval.rules.settings import GateSettings
    from pytest_retrieval_eval.gate.verdict import verdict_of

    e, _, _ = judged_run(6, error=0.15, humans=40, n=200)
    rule = Threshold.parse("engine:ndcg@10~ppi>=0.99", source="t")
    [failed] = verdict_of(RunResults([e]), GateSettings(thresholds=(rule,))).of_kind("rule")
    assert failed.startswith(f"engine: ndcg@10~ppi = {e.mean('ndcg@10~ppi'):.4f}, required >= 0.99")
    assert "from 40 of 200 questions judged by people" in failed and failed.causes == ()
    without = EvaluationResult("engine", e.labeled, e.results)  # no judgments read
    [none] = verdict_of(RunResults([without]), GateSettings(thresholds=(rule,))).of_kind("rule")
    assert "ndcg@10~ppi has no value, so the rule" in none and "checked nothing" in none
    assert "no estimate: the run reads no judgments (--retrieval-judgments=FILE)" in none
