"""Bad labeled sets, end to end: each run exits non-zero and says why."""

from __future__ import annotations

import json

import pytest


TESTS = """
    import pytest

    pytestmark = pytest.mark.retrieval

    def test_quality(retrieval_results):
        assert retrieval_results.hit_at(20) >= 0.0
"""


@pytest.fixture
def project(make_project):
    return make_project(copy=("questions",), tests=TESTS)


def edit_cache(project, change):
    path = project.path / "questions.cache.json"
    doc = json.loads(path.read_text())
    change(doc)
    path.write_text(json.dumps(doc, indent=2))


def test_a_gold_id_of_a_missing_document_stops_the_run_and_names_it(project):
    def change(doc):
        doc["queries"][0]["relevant"] = {"no-such-doc": 1}
    edit_cache(project, change)
    result = project.runpytest("-m", "retrieval")
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    # never in the corpus (no fingerprint of it was ever recorded): a typo, not a deletion (issue 14)
    result.stdout.fnmatch_lines(["*unknown document id 'no-such-doc' (1 question: account-deletion.q1)*"])
    assert "deleted" not in result.stdout.str()


def test_a_typo_in_a_gold_id_suggests_the_nearest_id(project):
    edit_cache(project, lambda doc: doc["queries"][0].__setitem__("relevant", {"acount-deletion": 1}))
    result = project.runpytest("-m", "retrieval")
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    result.stdout.fnmatch_lines(["*unknown document id 'acount-deletion' (did you mean 'account-deletion'?)*"])


def test_an_empty_labeled_set_fails_rather_than_passing_vacuously(project):
    edit_cache(project, lambda doc: doc.__setitem__("queries", []))
    result = project.runpytest("-m", "retrieval")
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    result.stdout.fnmatch_lines(["FAIL retrieval gate: keyword: labeled set questions.cache.json is empty; nothing was measured"])


def test_duplicate_query_ids(project):
    edit_cache(project, lambda doc: doc["queries"].append(dict(doc["queries"][0])))
    result = project.runpytest("-m", "retrieval")  # a broken labels file stops the run before any test
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert "questions.cache.json:20: field 'queries[68].id': duplicate query id 'account-deletion.q1' (first at queries[0])" in result.stderr.str()
    assert "During handling" not in result.stdout.str() + result.stderr.str()


@pytest.mark.parametrize("content, message", [
    ('{"format": "pytest-retrieval-eval/questions", "version": 1, "queries": [', "questions.cache.json:1: not valid JSON"),
    ('{"format": "pytest-retrieval-eval/questions", "version": 2, "queries": []}', "unsupported format version 2"),
])
def test_corrupted_caches(project, content, message):
    (project.path / "questions.cache.json").write_text(content)
    result = project.runpytest("-m", "retrieval")  # a broken labels file stops the run before any test
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert message in result.stderr.str()
