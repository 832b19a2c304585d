"""Honest approximate indexes: the approximate-versus-exact gap and its interval, the misses the
index caused, and engines that return fewer documents than asked, from synthetic records."""

from __future__ import annotations

import json

import pytest

from pytest_retrieval_eval.analysis.analyse import Analysis, analyse
from pytest_retrieval_eval.analysis.approximate import index_gap, under_return
from pytest_retrieval_eval.analysis.causes import cause_of
from pytest_retrieval_eval.analysis.scores import Scores
from pytest_retrieval_eval.data.labeled import LabeledSet
from pytest_retrieval_eval.evaluation.evaluate import evaluate_engine
from pytest_retrieval_eval.evaluation.results import Evaluation, RunResults
from pytest_retrieval_eval.gate.verdict import verdict_of
from pytest_retrieval_eval.hybrid.settings import HybridConfig
from pytest_retrieval_eval.ir.stats import mean_ci
from pytest_retrieval_eval.report.misses import miss_lines
from pytest_retrieval_eval.rules.settings import GateSettings
from pytest_retrieval_eval.types import LabeledQuery, QueryResult
from pytest_retrieval_eval.errors import RetrievalEvalError

#: the built-in hybrid engine's description of its index (``HybridEngine.describe``)
HNSW = {"engine": "hybrid", "index": "hnsw", "hnsw_m": 16, "hnsw_ef_construction": 64, "ef_search": 10,
        "iterative_scan": "off"}
DOCS = [f"d{i}" for i in range(20)]


def labeled(n: int = 4) -> LabeledSet:
    return LabeledSet(tuple(LabeledQuery(f"q{i}", f"question {i}", {f"d{i}": 1}) for i in range(n)), name="set")


def coverage(total: int) -> dict:
    return {"documents": {"judged": 4, "total": total}}


def test_recall_of_the_answer_against_the_exact_search_per_question_with_its_interval():
    """q0: the index found 8 of the exact top 10; q1 all of them in another order; q2: 5 of 10."""
    exact = tuple(DOCS[:10])
    results = (QueryResult("q0", ("d0", *DOCS[1:8], "x1", "x2"), exact=exact),
               QueryResult("q1", tuple(reversed(exact)), exact=exact),
               QueryResult("q2", ("d2", "d0", "d1", "d3", "d4", "y1", "y2", "y3", "y4", "y5"), exact=exact),
               QueryResult("q3", ("d3",), exact=None))  # not measured: left out, not counted as 0
    e = Evaluation("hybrid", labeled(), results, {**HNSW, "exact_check": ""})
    gap = index_gap(e, 10, Scores.of(e).misses(10).causes)
    assert gap.n == 3 and gap.recall == pytest.approx((0.8 + 1.0 + 0.5) / 3)
    assert gap.interval == mean_ci([0.8, 1.0, 0.5], binary=False)
    assert gap.differ == 2
    assert gap.settings == "hnsw m=16 ef_construction=64 ef_search=10 iterative_scan=off"


def test_an_index_as_good_as_the_exact_search_has_no_gap():
    exact = tuple(DOCS[:10])
    e = Evaluation("hybrid", labeled(3), tuple(QueryResult(f"q{i}", exact, exact=exact) for i in range(3)), HNSW)
    gap = index_gap(e, 10, ())
    assert (gap.recall, gap.differ, gap.misses) == (1.0, 0, ())
    assert gap.interval == mean_ci([1.0] * 3, binary=False) and gap.interval[1] == 1.0
    assert "recall@10 1.000" in gap.line() and "no gap" in gap.line()


def test_no_gap_is_made_up_for_an_evaluation_run_without_the_check():
    e = Evaluation("keyword", labeled(1), (QueryResult("q0", ("d0",)),), {"engine": "keyword"})
    assert index_gap(e, 10, ()) is None
    said = Evaluation("keyword", labeled(1), (QueryResult("q0", ("d0",)),),
                      {"exact_check": "not measured: it has no exact_search(query, k)"})
    gap = index_gap(said, 10, ())
    assert gap.recall is None and gap.line() == "keyword: approximate vs exact: not measured: it has no exact_search(query, k)"


def test_a_relevant_document_the_exact_search_ranks_within_k_is_missed_by_the_index():
    q = LabeledQuery("q1", "q", {"gold": 1})
    lost = QueryResult("q1", ("a", "b", "c"), exact=("a", "gold", "b"))
    c = cause_of(q, lost, 3)
    assert (c.kind, c.text, c.group, c.rank) == ("approximate", "missed by the approximate index (exact rank 2: gold)",
                                                 "missed by the approximate index", 2)
    deeper = QueryResult("q1", ("a", "b", "c", "gold"), exact=("gold", "a", "b"))
    assert cause_of(q, deeper, 3).text == "missed by the approximate index (exact rank 1: gold; the index ranked it 4)"


def test_a_miss_the_exact_search_makes_too_keeps_its_own_cause():
    q = LabeledQuery("q1", "q", {"gold": 1})
    assert cause_of(q, QueryResult("q1", ("a", "b", "c", "gold"), exact=("a", "b", "c", "gold")), 3).text == "ranked 4"
    assert cause_of(q, QueryResult("q1", ("a", "gold"), exact=("gold", "a")), 3) is None  # a hit: no cause
    assert cause_of(q, QueryResult("q1", ("a",), "TimeoutError: slow", exact=("gold",)), 3).kind == "error"


def test_the_gap_names_the_misses_the_index_caused():
    results = (QueryResult("q0", ("x", "y"), exact=("d0", "x")), QueryResult("q1", ("d1",), exact=("d1",)),
               QueryResult("q2", ("x",), exact=("x", "y")))
    e = Evaluation("hybrid", labeled(3), results, HNSW)
    gap = index_gap(e, 2, Scores.of(e).misses(2).causes)
    assert [(c.query_id, c.rank) for c in gap.misses] == [("q0", 1)]
    assert "2 questions' top 2 differ from the exact search's; 1 miss at hit@2 caused by the index: q0 (exact rank 1)" \
        in gap.line()
    assert Scores.of(e).misses(2).line() == "hybrid missed 2 of 3 at hit@2: 1 missed by the approximate index, 1 not retrieved"


def test_an_engine_returning_fewer_than_k_while_the_corpus_has_more_is_flagged_with_the_fix():
    results = (QueryResult("q0", ("d0", "d1", "d2")), QueryResult("q1", tuple(DOCS[:10])),
               QueryResult("q2", ()), QueryResult("q3", (), "TimeoutError: slow"))  # an error is not an under-return
    e = Evaluation("hybrid", labeled(), results, HNSW)
    found = under_return(e, 10, corpus=500)
    assert found.short == (("q0", 3), ("q2", 0)) and found.n == 3
    line = found.line()
    assert line.startswith("hybrid under-returned on 2 of 3 questions at k=10 (fewest: 0 of 10); ")
    assert line.endswith("; its HNSW search returns at most ef_search=10 rows a query, fewer after a filter: scan on "
                         "with --retrieval-hybrid=iterative_scan=relaxed_order (pgvector's hnsw.iterative_scan)")


def test_no_fix_is_named_where_the_engine_does_not_say_how_it_searches():
    e = Evaluation("mine", labeled(1), (QueryResult("q0", ("d0",)),), {"class": "Mine"})
    assert under_return(e, 10, corpus=500).fix == ""
    scanned = Evaluation("hybrid", labeled(1), (QueryResult("q0", ("d0",)),), {**HNSW, "iterative_scan": "relaxed_order"})
    assert under_return(scanned, 10, corpus=500).fix == ""


def test_a_corpus_smaller_than_k_or_of_unknown_size_is_no_under_return():
    e = Evaluation("hybrid", labeled(1), (QueryResult("q0", ("d0", "d1", "d2")),), HNSW)
    assert under_return(e, 10, corpus=3) is None  # every document returned
    assert under_return(e, 10, corpus=4).short == (("q0", 3),)
    assert under_return(e, 10, corpus=None) is None


def test_the_analysis_keeps_gaps_and_under_returns_and_every_surface_says_them():
    exact = tuple(DOCS[:10])
    results = (QueryResult("q0", ("d0", *DOCS[1:5]), exact=exact), QueryResult("q1", tuple(DOCS[10:20]), exact=exact))
    run = RunResults([Evaluation("hybrid", labeled(2), results, HNSW)], coverage=coverage(500))
    settings = GateSettings(miss_k=10)
    a = analyse(run, settings)
    [gap], [short] = a.index_gaps, a.under_returns
    assert gap.recall == pytest.approx((0.5 + 0.0) / 2) and [c.query_id for c in gap.misses] == ["q1"]
    assert short.short == (("q0", 5),)
    again = Analysis.from_dict(json.loads(json.dumps(a.to_dict())))  # results.json keeps them
    assert (again.index_gaps, again.under_returns) == (a.index_gaps, a.under_returns)
    lines = miss_lines(verdict_of(run, settings), markdown=True)
    assert any(line.startswith("- hybrid: approximate vs exact recall@10 0.250") for line in lines)
    assert any(line.startswith("- hybrid under-returned on 1 of 2 questions at k=10") for line in lines)


class Indexed:
    """An engine over a list whose approximate search loses the best document of every question."""

    name = "indexed"

    def retrieve(self, query, k):
        return DOCS[1:k + 1]

    def exact_search(self, query, k):
        if query == "question 2":
            raise ConnectionError("server gone")
        return DOCS[:k]


def test_the_exact_pass_records_each_questions_exact_ranking_and_says_what_failed():
    e = evaluate_engine(Indexed(), labeled(3), depth=5, exact=True)
    assert [r.exact for r in e.results] == [tuple(DOCS[:5]), tuple(DOCS[:5]), None]
    assert e.engine_info["exact_failed"] == "1/3" and e.engine_info["exact_error"] == "ConnectionError: server gone"
    assert "exact_seconds" in e.measured
    again = Evaluation.from_dict(json.loads(json.dumps(e.to_dict())))
    assert [r.exact for r in again.results] == [r.exact for r in e.results]
    gap = index_gap(again, 5, Scores.of(again).misses(5).causes)
    assert gap.n == 2 and gap.recall == pytest.approx(0.8) and "failed on 1/3 questions" in gap.line()
    one = Evaluation("hybrid", labeled(1), (QueryResult("q0", ("d0", "x"), exact=("d0", "d1")),), HNSW)
    assert "1 question's top 2 differs from the exact search's" in index_gap(one, 2, ()).line()


def test_without_the_check_no_exact_search_is_asked():
    e = evaluate_engine(Indexed(), labeled(3), depth=5)
    assert all(r.exact is None for r in e.results) and "exact_check" not in e.engine_info
    assert "exact" not in json.dumps(e.to_dict()["queries"])


def test_an_engine_without_exact_search_is_said_unmeasured():
    class Plain:
        name = "plain"

        def retrieve(self, query, k):
            return DOCS[:k]

    e = evaluate_engine(Plain(), labeled(2), depth=5, exact=True)
    assert e.engine_info["exact_check"] == "not measured: it has no exact_search(query, k)"


def test_a_saved_exact_ranking_must_be_doc_ids():
    e = evaluate_engine(Indexed(), labeled(1), depth=5, exact=True)
    d = json.loads(json.dumps(e.to_dict()))
    d["queries"][0]["exact"] = [1, 2]
    with pytest.raises(ValueError, match="'queries' entry 'q0': exact must be a list of doc ids"):
        Evaluation.from_dict(d)


@pytest.mark.parametrize("settings, said", [
    ({"ef_search": 1001}, "ef_search must be 1 to 1000"),
    ({"ef_search": -1}, "ef_search must be 1 to 1000"),
    ({"iterative_scan": "on"}, "iterative_scan must be one of off, relaxed_order, strict_order, got 'on'"),
])
def test_the_hybrid_engines_index_settings_are_checked(settings, said):
    with pytest.raises(RetrievalEvalError, match=said):
        HybridConfig(**settings)


def test_a_function_adapter_carries_its_exact_search():
    from pytest_retrieval_eval import adapters

    engine = adapters.function(lambda query, k: DOCS[1:k + 1], name="fn", exact_search=lambda query, k: DOCS[:k])
    e = evaluate_engine(engine, labeled(2), depth=3, exact=True)
    assert [r.exact for r in e.results] == [tuple(DOCS[:3])] * 2 and "exact_check" not in e.engine_info
    assert not hasattr(adapters.function(lambda query, k: DOCS[:k]), "exact_search")


def test_ef_search_and_iterative_scan_are_hybrid_settings_a_variant_or_sweep_can_set():
    from pytest_retrieval_eval.hybrid.ingest import IngestConfig
    from pytest_retrieval_eval.plugin.config import hybrid_config, parse_sweep

    config = hybrid_config(["ef_search=10", "iterative_scan=relaxed_order"])
    assert (config.ef_search, config.iterative_scan) == (10, "relaxed_order")
    with pytest.raises(RetrievalEvalError, match="hybrid setting ef_search must be a whole number, got 'many'"):
        hybrid_config(["ef_search=many"])
    sweep = parse_sweep("hybrid: ef_search=10,400", "t", HybridConfig(), IngestConfig(), (), 32)
    assert [(name, h.ef_search) for name, h, _ in sweep.variants] == [("hybrid-ef_search10", 10),
                                                                       ("hybrid-ef_search400", 400)]
