"""The candidate pool's ceiling (``analysis/ceiling.py``): recall@k at each stage an engine
reports and the share of its misses lost at each, on stages whose figures are worked by hand."""

from __future__ import annotations

import pytest

from pytest_retrieval_eval import Stages
from pytest_retrieval_eval.data.labeled import LabeledSet
from pytest_retrieval_eval.analysis.ceiling import ceiling_of
from conftest import evaluate_engine
from pytest_retrieval_eval.analysis.result import EvaluationResult
from pytest_retrieval_eval.types import LabeledQuery, QueryResult, Stage

QUERIES = (LabeledQuery("q1", "one", {"a": 1, "b": 1}), LabeledQuery("q2", "two", {"c": 1}),
           LabeledQuery("q3", "three", {"d": 1}), LabeledQuery("q4", "four", {"e": 2}),
           LabeledQuery("q5", "five", {"g": 1}), LabeledQuery("q6", "six", {"f": 0}))


def legs(kw: tuple[int, dict], vec: tuple[int, dict], fusion: tuple[int, dict]) -> tuple[Stage, ...]:
    return (Stage("keyword", "leg", *kw), Stage("vector", "leg", *vec), Stage("fusion", "step", *fusion))


RESULTS = (
    # q1: both relevant documents candidates; a first after fusion (half its relevant documents)
    QueryResult("q1", ("a", "x", "y", "z", "w"), stages=legs((10, {"a": 2}), (10, {"a": 5, "b": 8}), (5, {"a": 1}))),
    # q2: the vector leg had c at 7, fusion (5 kept) let it go
    QueryResult("q2", ("x", "y", "z"), stages=legs((0, {}), (10, {"c": 7}), (5, {}))),
    # q3: no leg had d
    QueryResult("q3", ("x",), stages=legs((3, {}), (10, {}), (5, {}))),
    # q4: e kept by every stage, answered 4th: below a cutoff of 3
    QueryResult("q4", ("x", "y", "z", "e"), stages=legs((10, {"e": 1}), (10, {"e": 3}), (5, {"e": 4}))),
    QueryResult("q5", (), error="TimeoutError: slow"),
    # q6: nothing relevant: no recall to find, no miss to count
    QueryResult("q6", ("f",), stages=legs((10, {}), (10, {}), (5, {}))),
)


@pytest.fixture
def curve():
    e = EvaluationResult("hybrid", LabeledSet(QUERIES, name="set"), RESULTS, depth=10)
    return e, ceiling_of(e, 3)


def test_each_stage_recall_is_the_mean_over_every_question_of_relevant_held_in_its_top_k(curve):
    _, c = curve
    points = {s.label: dict(s.points) for s in c.stages}
    # keyword: q1 half at 2, q4 all at 1; of 6 questions
    assert points["keyword leg"] == pytest.approx({1: 1 / 6, 3: 1.5 / 6, 5: 1.5 / 6, 10: 1.5 / 6})
    # vector: q1 a at 5 and b at 8, q2 c at 7, q4 e at 3
    assert points["vector leg"] == pytest.approx({1: 0, 3: 1 / 6, 5: 1.5 / 6, 10: 3 / 6})
    # fusion held 5 at most: q1 half at 1, q4 all at 4
    assert points["fusion"] == pytest.approx({1: 0.5 / 6, 3: 0.5 / 6, 5: 1.5 / 6})
    assert points["final ranking"] == pytest.approx({1: 0.5 / 6, 3: 0.5 / 6, 5: 1.5 / 6})
    assert [(s.kind, s.size, s.ceiling) for s in c.stages] == [
        ("leg", 10, 0.25), ("leg", 10, 0.5), ("step", 5, 0.25), ("final", 5, 0.25)]


def test_the_final_ranking_row_is_the_runs_own_recall_at_k(curve):
    e, c = curve
    final = c.stages[-1]
    for k, value in final.points:
        assert value == pytest.approx(e.mean(f"recall@{k}")), k


def test_each_miss_is_lost_at_one_stage_and_the_shares_count_every_miss(curve):
    e, c = curve
    assert c.missed == 4 == len(e.misses(3).causes)  # q2, q3, q4, q5; q1 a hit, q6 judges nothing relevant
    assert c.losses == (("engine error", 1), ("never a candidate", 1), ("cut by fusion", 1), ("ranked below 3", 1))
    assert c.share("never a candidate") == 0.25 and c.share("cut by rerank") == 0.0
    assert c.line() == ("hybrid, recall of all each stage held: keyword leg 0.25 (10), vector leg 0.50 (10), "
                        "fusion 0.25 (5), final ranking 0.25 (5); the 4 misses at hit@3 lost: 25% engine error, "
                        "25% never a candidate, 25% cut by fusion, 25% ranked below 3")


def test_a_miss_goes_to_the_step_that_cut_its_furthest_relevant_document_and_every_stage_is_listed():
    q = LabeledQuery("q", "x", {"g1": 1, "g2": 1})
    stages = (Stage("bm25", "leg", 50, {"g1": 3, "g2": 40}), Stage("fusion", "step", 50, {"g1": 9, "g2": 30}),
              Stage("rerank window", "step", 20, {"g1": 9}), Stage("rerank", "step", 20, {"g1": 12}))
    e = EvaluationResult("e", LabeledSet((q,), name="s"), (QueryResult("q", ("a",), stages=stages),), depth=1)
    c = ceiling_of(e, 5)
    # g1 passed every step (the rerank put it 12th) but the depth of 1 cut it: ranked below, not a cut
    assert c.losses == (("never a candidate", 0), ("cut by fusion", 0), ("cut by rerank window", 0),
                        ("cut by rerank", 0), ("ranked below 5", 1))
    window = (stages[0], stages[1], Stage("rerank window", "step", 20, {}), Stage("rerank", "step", 20, {}))
    e = EvaluationResult("e", LabeledSet((q,), name="s"), (QueryResult("q", ("a",), stages=window),), depth=1)
    assert dict(ceiling_of(e, 5).losses)["cut by rerank window"] == 1
    assert [dict(s.points) for s in ceiling_of(e, 5).stages[:2]] == [
        {1: 0, 3: 0.5, 5: 0.5, 10: 0.5, 20: 0.5, 50: 1.0}, {1: 0, 3: 0, 5: 0, 10: 0.5, 20: 0.5, 50: 1.0}]


def test_an_engine_without_stages_has_no_ceiling_and_a_hit_costs_no_miss():
    q = LabeledQuery("q", "x", {"g": 1})
    plain = EvaluationResult("e", LabeledSet((q,), name="s"), (QueryResult("q", ("g",)),))
    assert ceiling_of(plain, 5) is None
    staged = EvaluationResult("e", LabeledSet((q,), name="s"),
                              (QueryResult("q", ("g",), stages=(Stage("only", "leg", 1, {"g": 1}),)),))
    c = ceiling_of(staged, 5)
    assert c.missed == 0 and c.line().endswith("; no miss at hit@5")


def test_stages_an_engine_reports_become_the_curve_with_chunks_folded_to_documents():
    class Staged:
        name = "staged"

        def retrieve_stages(self, query, k):
            return Stages(["a:0"], {"dense": ["b:1", "a:0", "a:1"]}, {"fusion": ["a:0"]})

        def retrieve(self, query, k):
            return ["a:0"]

    labeled = LabeledSet((LabeledQuery("q", "x", {"a": 1, "b": 1}),), name="s")
    e = evaluate_engine(Staged(), labeled, known_ids={"a", "b"})
    c = ceiling_of(e, 1)
    assert [(s.label, s.size, s.points) for s in c.stages] == [
        ("dense leg", 2, ((1, 0.5), (2, 1.0))), ("fusion", 1, ((1, 0.5),)), ("final ranking", 1, ((1, 0.5),))]
    assert c.missed == 0
