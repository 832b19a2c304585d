"""The session's inputs (corpus folder, labels file) are read once, before any test: a missing
folder or a broken file is one usage error naming it, not a failure per test after the store
started and then a gate failure (plugin/inputs.py, plugin/session.py)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from conftest import QUESTIONS

TWO_TESTS = """
    import pytest

    pytestmark = pytest.mark.retrieval

    def test_hit(retrieval_results):
        assert retrieval_results.n > 0

    def test_mrr(retrieval_results):
        assert retrieval_results.n > 0
"""


def stopped_before_any_test(result) -> str:
    """The run's one error, checked to be a usage error said once with no test run."""
    assert result.ret == pytest.ExitCode.USAGE_ERROR, result.stdout.str()
    out, err = result.stdout.str(), result.stderr.str()
    assert "ERROR at setup" not in out and "retrieval gate" not in out and "Traceback" not in err
    lines = [line for line in err.splitlines() if line.startswith("ERROR:")]
    assert len(lines) == 1, err
    return lines[0]


def test_a_missing_corpus_folder_stops_the_run_once_before_any_test(make_project):
    project = make_project(corpus=Path("kb"), tests=TWO_TESTS)
    line = stopped_before_any_test(project.runpytest("-m", "retrieval"))
    assert "kb: corpus folder not found" in line and "retrieval_corpus" in line, line


def test_a_missing_corpus_folder_given_as_a_flag_names_the_flag(make_project):
    project = make_project(tests=TWO_TESTS)
    line = stopped_before_any_test(project.runpytest("-m", "retrieval", "--retrieval-corpus=nowhere"))
    assert "nowhere: corpus folder not found" in line and "--retrieval-corpus" in line, line


@pytest.mark.parametrize("broken", ["not json at all\n", '{"questions": [}\n'])
def test_a_broken_labels_file_stops_the_run_once_naming_the_file(make_project, broken):
    project = make_project(questions=Path("labels.json"), tests=TWO_TESTS)
    (project.path / "labels.json").write_text(broken)
    line = stopped_before_any_test(project.runpytest("-m", "retrieval"))
    assert "labels.json" in line and "retrieval_questions" in line, line


def test_a_labels_file_with_a_bad_entry_names_its_line(make_project):
    project = make_project(questions=Path("labels.json"), tests=TWO_TESTS)
    data = json.loads(QUESTIONS.read_text(encoding="utf-8"))
    (project.path / "labels.json").write_text(json.dumps(data, indent=1).replace('"question": ', '"question": 7, "x": ', 1))
    line = stopped_before_any_test(project.runpytest("-m", "retrieval"))
    assert "labels.json:" in line and "queries[0].question" in line, line


def test_unconfigured_inputs_are_a_usage_error_saying_what_to_set(make_project):
    project = make_project(corpus=None, tests=TWO_TESTS)
    line = stopped_before_any_test(project.runpytest("-m", "retrieval"))
    assert "--retrieval-corpus=PATH" in line, line


def test_a_run_whose_tests_read_no_corpus_does_not_read_it(make_project):
    """Only what the selected tests ask for is read: a keyword-only run of other tests is untouched."""
    project = make_project(corpus=Path("kb"), tests="def test_plain():\n    assert True\n")
    assert project.runpytest().ret == 0


@pytest.mark.parametrize("case", ["missing corpus", "unknown engine"])
def test_under_xdist_the_same_usage_error_and_no_internal_error(make_project, case):
    """A worker that raised it would crash, an INTERNALERROR on the controller: the workers hand
    the message to the controller, which stops the run with it."""
    project = make_project(corpus=Path("kb") if case == "missing corpus" else Path(__file__).parents[2] / "corpus",
                           tests=TWO_TESTS)
    flags = ("--retrieval-engine=nope",) if case == "unknown engine" else ()
    result = project.runpytest_subprocess("-m", "retrieval", "-n", "2", "-p", "no:cacheprovider", *flags)
    assert "INTERNALERROR" not in result.stdout.str() + result.stderr.str()
    line = stopped_before_any_test(result)
    assert ("kb: corpus folder not found" if case == "missing corpus" else "unknown engine(s) nope") in line, line


def test_a_beir_folder_without_the_split_names_the_corpus_option(make_project):
    from projects import make_beir

    project = make_project(corpus=Path("beir"), questions=None, tests=TWO_TESTS)
    make_beir(project.path / "beir")
    line = stopped_before_any_test(project.runpytest("-m", "retrieval", "--retrieval-split=dev"))
    assert "qrels/dev.tsv" in line and "retrieval_corpus" in line and "retrieval_questions" not in line, line
