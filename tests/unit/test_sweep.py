"""Sweeps: the grid a sweep text makes, the cap, and the Pareto front of a sweep's table."""

from __future__ import annotations

import math

import pytest

from pytest_retrieval_eval.data.labeled import LabeledSet
from pytest_retrieval_eval.engines.hybrid import HybridConfig
from pytest_retrieval_eval.errors import RetrievalEvalError
from pytest_retrieval_eval.hybrid.ingest import IngestConfig
from pytest_retrieval_eval.plugin.config import parse_sweep
from conftest import evaluate_engine
from pytest_retrieval_eval.evaluation.results import RunResults
from pytest_retrieval_eval.analysis.sweep import front, sweep_tables
from pytest_retrieval_eval.types import LabeledQuery


def test_a_sweep_is_every_combination_and_the_base_combination_is_the_base_engine():
    s = parse_sweep("hybrid: split_length=200,400 fusion_top_k=10,50", "t", HybridConfig(), IngestConfig(), (), 32)
    assert [n for n, _ in s.points] == ["hybrid-split_length200-fusion_top_k10", "hybrid-split_length200-fusion_top_k50",
                                        "hybrid-split_length400-fusion_top_k10", "hybrid"]
    assert dict(s.points[-1][1]) == {"split_length": "400", "fusion_top_k": "50"}
    assert len(s.variants) == 3 and {i.split_length for _, _, i in s.variants} == {200, 400}  # two ingestions
    assert s.variants[0][1].fusion_top_k == 10


def test_a_grid_without_the_base_point_keeps_the_base_row_with_its_own_values():
    s = parse_sweep("hybrid: fusion_top_k=5,10", "t", HybridConfig(), IngestConfig(), (), 32)
    assert s.points[0] == ("hybrid", (("fusion_top_k", "50"),)) and len(s.variants) == 2


@pytest.mark.parametrize("text, said", [
    ("hybrid: fusion_top_k=1,2,3 keyword_top_k=1,2,3,4", "makes 12 configurations, more than 10: sweep fewer values, "
                                                         "or allow more with --retrieval-sweep-max=12"),
    ("hybrid fusion_top_k=1,2", "not understood; expected 'ENGINE: KEY=V1,V2 ...'"),
    ("keyword: fusion_top_k=1,2", "sweeps vary the hybrid engine or one of its variants; 'keyword' is not one"),
    ("hybrid: fusion_top_k=1 fusion_top_k=2", "a setting is swept twice"),
    ("hybrid: fusoin_top_k=1,2", "unknown setting 'fusoin_top_k'"),
    ("hybrid: fusion_top_k=x", "hybrid setting fusion_top_k must be a whole number, got 'x'"),
])
def test_a_sweep_that_cannot_run_is_refused_in_one_line(text, said):
    with pytest.raises(RetrievalEvalError) as exc:
        parse_sweep(text, "--retrieval-sweep", HybridConfig(), IngestConfig(), (), 10)
    assert said in str(exc.value) and "(from --retrieval-sweep)" in str(exc.value)


def test_the_front_holds_what_nothing_else_beats_on_both_quality_and_cost():
    #            best, slow      dominated   fast, worse   tie on cost, worse   unknown cost
    points = [(0.9, 100.0), (0.8, 120.0), (0.7, 10.0), (0.6, 10.0), (0.95, math.nan)]
    assert front(points) == [True, False, True, False, False]


class Answers:
    def __init__(self, name, right):
        self.name, self.right = name, right

    def retrieve(self, query, k):
        i = int(query.split()[1])
        return [f"d{i}"] if i < self.right else ["nothing"]


def test_a_sweep_table_is_sorted_best_first_with_the_base_marked_and_corrected_tests():
    labeled = LabeledSet(tuple(LabeledQuery(f"q{i}", f"question {i}", {f"d{i}": 1}) for i in range(30)), name="set")
    run = RunResults([evaluate_engine(Answers(n, r), labeled) for n, r in (("hybrid", 15), ("hy-a", 29), ("hy-b", 5))])
    grid = [("hybrid", (("k", "1"),)), ("hy-a", (("k", "2"),)), ("hy-b", (("k", "3"),)), ("hy-c", (("k", "4"),))]
    [t] = sweep_tables(run, [("hybrid", "hit@1", grid)], {})
    assert [p.engine for p in t.points] == ["hy-a", "hybrid", "hy-b"] and t.missing == ("hy-c",)
    a, base, b = t.points
    assert base.base and math.isnan(base.p) and a.delta == pytest.approx(14 / 30) and a.p_adjusted < 0.05
    assert a.p_adjusted >= a.p  # corrected over the grid's two comparisons
    assert not any(p.front_latency for p in t.points)  # no latency: no front drawn on it


@pytest.mark.parametrize("text, said", [
    ("hybrid: fusion_topk=5,20", "unknown setting 'fusion_topk'; a sweep varies one of keyword_top_k, vector_top_k, "
                                 "fusion_top_k, use_keyword, use_vector, rerank, rerank_top_k, ef_search, iterative_scan, "
                                 "split_length, split_overlap"),
    ("hybrid: rerank_top_k=5,10", "rerank_top_k changes nothing while rerank is off"),
])
def test_a_sweep_that_would_say_nothing_is_refused(text, said):
    with pytest.raises(RetrievalEvalError) as exc:
        parse_sweep(text, "--retrieval-sweep", HybridConfig(), IngestConfig(), (), 32)
    assert said in str(exc.value)


def test_a_value_given_twice_is_one_configuration():
    s = parse_sweep("hybrid: fusion_top_k=5,5,20", "t", HybridConfig(), IngestConfig(), (), 32)
    assert [n for n, _ in s.points] == ["hybrid", "hybrid-fusion_top_k5", "hybrid-fusion_top_k20"]


class Chunks:
    """An engine returning passages of ``words`` words each, the gold document first for the first
    ``right`` questions: bigger chunks cost more tokens for the same ranking."""

    def __init__(self, name: str, right: int, words: int) -> None:
        self.name, self.right, self.words = name, right, words

    def retrieve(self, query: str, k: int):
        from pytest_retrieval_eval import Passage

        i = int(query.split()[1])
        docs = [f"d{i}"] if i < self.right else []
        return [Passage(d, " ".join(["word"] * self.words)) for d in [*docs, "other1", "other2"]][:k]


def test_a_sweep_of_engines_returning_passages_counts_the_tokens_they_hand_and_puts_them_on_a_front():
    """Whole documents (400 words) win one question more than 120-word chunks; the tokens of the
    top 5 passages say what that costs, and both are on the quality-tokens front."""
    from pytest_retrieval_eval.report.sweep import cells, scatter_svg, title

    labeled = LabeledSet(tuple(LabeledQuery(f"q{i}", f"question {i}", {f"d{i}": 1}) for i in range(20)), name="set")
    engines = (("hybrid", 20, 400), ("hy-120", 19, 120), ("hy-worse", 10, 200))
    run = RunResults([evaluate_engine(Chunks(*x), labeled) for x in engines])
    grid = [("hybrid", (("split_length", "400"),)), ("hy-120", (("split_length", "120"),)),
            ("hy-worse", (("split_length", "200"),))]
    [t] = sweep_tables(run, [("hybrid", "hit@5", grid)], {})
    by = {p.engine: p for p in t.points}
    assert t.tokens_k == 5 and t.handed
    assert by["hybrid"].tokens == 3 * 400 and by["hy-120"].tokens == pytest.approx((19 * 3 + 2) * 120 / 20)
    assert by["hybrid"].front_tokens and by["hy-120"].front_tokens and not by["hy-worse"].front_tokens
    header, body = cells(t, compact=True)
    assert header[-2:] == ["tokens@5", "front"] and body[0][-2:] == ["1200", "T"]
    assert title(t).endswith("front of quality against p95 latency (L), against chunk count (S) and against the word "
                             "tokens of the top 5 passages handed to a generator (T)")
    assert "tokens of the top 5 passages" in scatter_svg(t, "tokens")
    # an engine returning ids only hands nothing the table could count: no tokens column at all
    [ids] = sweep_tables(RunResults([evaluate_engine(Answers("hybrid", 5), labeled)]),
                         [("hybrid", "hit@5", [("hybrid", (("k", "1"),))])], {})
    assert not ids.handed and "tokens@5" not in cells(ids)[0] and math.isnan(ids.points[0].tokens)
