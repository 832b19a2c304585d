"""Shadow comparisons: a candidate engine against the current one in the same run, the knowledge
gain, the queries and documents that moved, and the gate on them."""

from __future__ import annotations

import json

import pytest

from conftest import CORPUS, QUESTIONS, requires_hybrid
from pytest_retrieval_eval import QueryResult, RetrievalEvalError
from pytest_retrieval_eval.data.labeled import LabeledSet
from pytest_retrieval_eval.gate.rules import Threshold, parse_pair, parse_weights
from pytest_retrieval_eval.run.results import EvaluationResult
from pytest_retrieval_eval.run.shadow import compare
from pytest_retrieval_eval.types import LabeledQuery

LABELED = LabeledSet(tuple(LabeledQuery(f"q{i}", f"question {i}", {f"d{i}": 1}) for i in range(4)), name="s")


def result(engine: str, rankings: list[tuple[str, ...]]) -> EvaluationResult:
    return EvaluationResult(engine, LABELED, tuple(QueryResult(f"q{i}", r) for i, r in enumerate(rankings)))


def test_the_gain_is_the_weighted_mean_of_the_deltas_and_the_queries_add_up_to_it():
    base = result("base", [("x", "d0"), ("d1",), ("d2",), ("x",)])
    cand = result("cand", [("d0",), ("d1",), ("x", "y", "z", "w", "v", "d2"), ("d3",)])
    weights = {"recall@5": 2.0, "mrr": 1.0}
    sh = compare(cand, base, weights, ["hit@1"])
    d_recall = cand.mean("recall@5") - base.mean("recall@5")
    d_mrr = cand.mean("mrr") - base.mean("mrr")
    assert sh.gain == pytest.approx((2 * d_recall + d_mrr) / 3)
    assert sh.delta("recall@5") == pytest.approx(d_recall) and sh.delta("hit@1") == pytest.approx(0.25)
    assert sum(m.contribution for m in sh.movers) == pytest.approx(sh.gain)  # every mover listed here
    assert (sh.better, sh.worse, sh.same) == (2, 1, 1)
    assert sh.movers[0].query_id == "q3" and sh.movers[0].changes == (("mrr", 0.0, 1.0), ("recall@5", 0.0, 1.0))
    assert sh.cutoff == 5 and sh.newly_hit == (("d3", 1),) and sh.newly_missed == (("d2", 1),)
    # the same engine against itself gains nothing, and says so
    same = compare(base, base, weights)
    assert same.gain == 0 and same.movers == () and same.better == same.worse == 0


def test_weights_and_pairs_parse_or_say_what_is_expected():
    assert parse_weights("recall@5=2, NDCG@5=1") == {"ndcg@5": 1.0, "recall@5": 2.0}
    for bad in ("recall@5", "recall@5=0", "recall@5=-1", "recall@5=x", "", "bogus@5=1"):
        with pytest.raises(RetrievalEvalError):
            parse_weights(bad)
    assert parse_pair("hybrid-kw:hybrid") == ("hybrid-kw", "hybrid")
    for bad in ("hybrid", "a:a", ":b", "a:b:c"):
        with pytest.raises(RetrievalEvalError):
            parse_pair(bad)
    assert str(Threshold.parse("shadow.gain>=0")) == "shadow.gain>=0"
    assert Threshold.parse("cand:shadow.Recall@5>=-0.05").measure == "shadow.recall@5"
    with pytest.raises(RetrievalEvalError, match="can never fail"):
        Threshold.parse("shadow.gain>=-1")


ENGINES = """
    class Oracle:
        name = "oracle"
        def __init__(self, gold):
            self.gold = gold
        def retrieve(self, query, k):
            return [self.gold[query]]

    def pytest_retrieval_engines(registry, config):
        import json
        queries = json.load(open(config.getini("retrieval_questions")))["queries"]
        gold = {q["question"]: next(iter(q["relevant"])) for q in queries}
        registry.register("oracle", lambda request: Oracle(gold))
"""


def test_a_shadow_prints_deltas_gain_movers_and_gates_without_any_model(pytester, tmp_path):
    pytester.makeini(f"[pytest]\nretrieval_corpus = {CORPUS}\nretrieval_questions = {QUESTIONS}\n"
                     "retrieval_engines = oracle keyword\n")
    pytester.makeconftest(ENGINES)
    pytester.makepyfile("import pytest\n\n@pytest.mark.retrieval\ndef test_x(retrieval_results):\n    pass\n")
    out = tmp_path / "out"
    result = pytester.runpytest("--retrieval-shadow", "keyword:oracle", "--retrieval-threshold", "shadow.gain>=0",
                                "--retrieval-gain-weights", "hit@5=1", f"--retrieval-report-dir={out}")
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    text = result.stdout.str()
    assert "shadow keyword vs oracle on questions.cache.json (68 queries): knowledge gain -0.647" in " ".join(text.split())
    result.stdout.fnmatch_lines(["  queries: 0 better, 44 worse, 24 same", "  top movers:",
                                 "FAIL retrieval gate: shadow keyword:oracle: knowledge gain = -0.6471, required >= 0 *"])
    assert "relevant documents newly out of the top 5:" in text
    doc = json.loads((out / "results.json").read_text())
    assert doc["settings"]["shadows"] == [["keyword", "oracle"]] and doc["settings"]["gain_weights"] == {"hit@5": 1.0}
    assert doc["shadows"][0]["gain"] == pytest.approx(-0.6470588) and doc["shadows"][0]["queries"]["worse"] == 44
    assert "## Shadow comparisons" in (out / "results.md").read_text()
    # the other way round it passes; a rule naming no configured shadow fails
    assert pytester.runpytest("--retrieval-shadow", "oracle:keyword", "--retrieval-threshold", "shadow.gain>=0").ret == 0
    lonely = pytester.runpytest("--retrieval-threshold", "shadow.gain>=0")
    assert lonely.ret == pytest.ExitCode.TESTS_FAILED
    lonely.stdout.fnmatch_lines(["FAIL retrieval gate: shadow.gain>=0 (--retrieval-threshold): no shadow comparison ran*"])
    missing = pytester.runpytest("--retrieval-shadow", "nobody:oracle")
    missing.stdout.fnmatch_lines(["FAIL retrieval gate: shadow nobody:oracle: no labeled set was evaluated with both*"])


@requires_hybrid
@pytest.mark.slow
def test_hybrid_against_keyword_gains_and_dropping_the_vector_retriever_loses(pytester, shared_cache_dir):
    pytester.makeini(f"[pytest]\nretrieval_corpus = {CORPUS}\nretrieval_questions = {QUESTIONS}\n"
                     f"retrieval_cache_dir = {shared_cache_dir}\n")
    pytester.makepyfile("import pytest\n\n@pytest.mark.retrieval\ndef test_x(retrieval_results):\n    pass\n")
    gain = pytester.runpytest_subprocess("--retrieval-shadow", "hybrid:keyword")
    assert gain.ret == 0, gain.stdout.str()
    text = " ".join(gain.stdout.str().split())
    assert "shadow hybrid vs keyword on questions.cache.json (68 queries): knowledge gain +0.6" in text
    assert "deltas (* p < 0.05, uncorrected): hit@1 +0.6" in text and "top movers:" in text
    loss = pytester.runpytest_subprocess("--retrieval-variant", "hybrid-kw: use_vector=false",
                                         "--retrieval-shadow", "hybrid-kw:hybrid", "--retrieval-threshold", "shadow.gain>=0")
    assert loss.ret == pytest.ExitCode.TESTS_FAILED
    loss.stdout.fnmatch_lines(["FAIL retrieval gate: shadow hybrid-kw:hybrid: knowledge gain = -0.*, required >= 0 *"])
