"""Shadow comparisons: a candidate engine against the current one in the same run, the knowledge
gain, the queries and documents that moved, and the gate on them."""

from __future__ import annotations

import json

import pytest

from conftest import CORPUS, QUESTIONS, requires_hybrid
from pytest_retrieval_eval import QueryResult
from pytest_retrieval_eval.data.labeled import LabeledSet
from pytest_retrieval_eval.analysis.result import EvaluationResult
from pytest_retrieval_eval.types import LabeledQuery

pytestmark = [pytest.mark.model]

LABELED = LabeledSet(tuple(LabeledQuery(f"q{i}", f"question {i}", {f"d{i}": 1}) for i in range(4)), name="s")


def result(engine: str, rankings: list[tuple[str, ...]]) -> EvaluationResult:
    return EvaluationResult(engine, LABELED, tuple(QueryResult(f"q{i}", r) for i, r in enumerate(rankings)))


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
                                "--retrieval-gain-weights", "hit@5=1", f"--retrieval-report-dir={out}", "-v")
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
    missing = pytester.runpytest("--retrieval-shadow", "nobody:oracle")  # no engine has the name: before anything runs
    assert missing.ret == pytest.ExitCode.USAGE_ERROR
    missing.stderr.fnmatch_lines(["ERROR: *names engine 'nobody', which no engine has; registered: *"])


@requires_hybrid
def test_hybrid_against_keyword_gains_and_dropping_the_vector_retriever_loses(pytester, shared_cache_dir):
    pytester.makeini(f"[pytest]\nretrieval_corpus = {CORPUS}\nretrieval_questions = {QUESTIONS}\n"
                     f"retrieval_cache_dir = {shared_cache_dir}\n")
    pytester.makepyfile("import pytest\n\n@pytest.mark.retrieval\ndef test_x(retrieval_results):\n    pass\n")
    gain = pytester.runpytest_subprocess("--retrieval-shadow", "hybrid:keyword", "-v")
    assert gain.ret == 0, gain.stdout.str()
    text = " ".join(gain.stdout.str().split())
    assert "shadow hybrid vs keyword on questions.cache.json (68 queries): knowledge gain +0.6" in text
    assert "deltas (* p < 0.05, uncorrected): hit@1 +0.6" in text and "top movers:" in text
    loss = pytester.runpytest_subprocess("--retrieval-variant", "hybrid-kw: use_vector=false",
                                         "--retrieval-shadow", "hybrid-kw:hybrid", "--retrieval-threshold", "shadow.gain>=0")
    assert loss.ret == pytest.ExitCode.TESTS_FAILED
    loss.stdout.fnmatch_lines(["FAIL retrieval gate: shadow hybrid-kw:hybrid: knowledge gain = -0.*, required >= 0 *"])
