"""Rules name every measure the IR core knows (issue 28): parenthesised names in thresholds,
max-drop rules and gain weights, each measure's own range, and comma lists that keep the commas
inside a name."""

from __future__ import annotations

import json

import pytest

from conftest import CORPUS, QUESTIONS


TESTS = "import pytest\n\n@pytest.mark.retrieval\ndef test_q(retrieval_results):\n    pass\n"


@pytest.fixture
def keyword_project(pytester):
    pytester.makeini(f"[pytest]\nretrieval_corpus = {CORPUS}\nretrieval_questions = {QUESTIONS}\n"
                     "retrieval_engines = keyword\n")
    pytester.makepyfile(TESTS)
    return pytester


def test_a_threshold_on_a_parenthesised_measure_gates_the_run(keyword_project):
    passed = keyword_project.runpytest("--retrieval-threshold", "keyword:P(rel=1)@5>=0.01")
    assert passed.ret == 0, passed.stdout.str()
    failed = keyword_project.runpytest("--retrieval-threshold", "keyword:P(rel=1)@5>=0.99")
    assert failed.ret == pytest.ExitCode.TESTS_FAILED
    failed.stdout.fnmatch_lines(["FAIL retrieval gate: keyword: precision@5 = *, required >= 0.99 *"])


def test_a_measures_list_keeps_the_commas_inside_a_name(keyword_project, tmp_path):
    out = tmp_path / "out"
    result = keyword_project.runpytest("--retrieval-measures", "hit@5,rbp(p=0.9),rbp(p=0.8,rel=1)",
                                       f"--retrieval-report-dir={out}")
    assert result.ret == 0, result.stdout.str()
    doc = json.loads((out / "results.json").read_text())
    assert doc["settings"]["table_measures"][:3] == ["hit@5", "rbp(p=0.9)", "rbp(p=0.8,rel=1)"]
    assert {"rbp(p=0.9)", "rbp(p=0.8,rel=1)"} <= set(doc["evaluations"][0]["summary"])
