"""Run lint: per engine, the queries whose answer was empty, named a document twice, named ids
the corpus lacks, or (scored) had a tie across a table cutoff; counted, reported, gateable."""

from __future__ import annotations

import json

import pytest

from conftest import QUESTIONS
from pytest_retrieval_eval.data.labeled import load_questions_cache
from conftest import evaluate_engine

LABELED = load_questions_cache(QUESTIONS)


class Scripted:
    name = "scripted"

    def __init__(self, answers):
        self.answers = answers

    def retrieve(self, query, k):
        return self.answers.get(query, ["battery-care"])


def test_each_kind_is_counted_on_the_queries_that_show_it():
    q = [x.question for x in LABELED.queries]
    answers = {q[0]: [], q[1]: ["battery-care", "battery-care"], q[2]: ["ghost-doc"],
               q[3]: {"a": 1.0, "battery-care": 1.0}, q[4]: {"battery-care": 2.0, "b": 1.0},
               q[5]: [("battery-care", 0.5)] * 1 + [(f"d{i}", 0.4) for i in range(10)]}
    from pytest_retrieval_eval.data.corpus import JsonFolder
    from conftest import CORPUS

    result = evaluate_engine(Scripted(answers), LABELED, known_ids=JsonFolder(CORPUS).load())
    ids = [x.query_id for x in LABELED.queries]
    assert result.run_lint["empty"] == (ids[0],)
    assert result.run_lint["duplicates"] == (ids[1],)
    assert set(result.run_lint["unknown_ids"]) >= {ids[2], ids[3]}
    assert result.run_lint["ties"] == (ids[3], ids[5])  # a tie across cutoff 1; a tie across 3, 5 and 10
    again = type(result).from_dict(json.loads(json.dumps(result.to_dict())))
    assert again.run_lint == result.run_lint


def test_run_lint_is_reported_and_gated(bundled_project, tmp_path):
    bundled_project.makeconftest("""
        class Tied:
            name = "tied"
            def retrieve(self, query, k):
                return {"battery-care": 1.0, "winter-riding-tips": 1.0, "account-deletion": 0.5}

        def pytest_retrieval_engines(registry, config):
            registry.register("tied", lambda request: Tied())
    """)
    bundled_project.makepyfile("def test_q(retrieval_results):\n    pass\n")
    out_dir = tmp_path / "out"
    result = bundled_project.runpytest("--retrieval-engine", "tied", "--retrieval-report",
                                       f"--retrieval-report-dir={out_dir}", "--retrieval-threshold", "tied:run.ties<=0")
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    out = result.stdout.str()
    assert "run lint, tied: ties 68 (queries)" in out
    assert "FAIL retrieval gate: tied: run.ties = 68, required <= 0" in out
    assert "| tied | ties | 68 |" in (out_dir / "results.md").read_text()
    ok = bundled_project.runpytest("--retrieval-engine", "tied", "--retrieval-threshold", "run.empty<=0")
    assert ok.ret == 0
    bad = bundled_project.runpytest("--retrieval-engine", "tied", "--retrieval-threshold", "run.sloppy<=0")
    assert bad.ret == pytest.ExitCode.USAGE_ERROR and "unknown run lint count 'run.sloppy'" in bad.stderr.str()
