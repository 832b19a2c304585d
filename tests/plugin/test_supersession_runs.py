"""Freshness edge cases: a successor replaces a document only once it is valid itself, and a
``superseded_by`` loop (which leaves no version current) is refused, naming its ids and file."""

from __future__ import annotations

import json

import pytest

from conftest import QUESTIONS, write_docs


def test_a_run_before_the_successor_starts_counts_no_stale_hit(bundled_project, tmp_path):
    """End to end, with the question that ranks the old price list first: on a day before the
    new list (but inside the old one's validity), the old list is the right answer."""
    bundled_project.makepyfile("import pytest\n\n@pytest.mark.retrieval\ndef test_x(retrieval_results):\n    pass\n")
    out = tmp_path / "out"
    result = bundled_project.runpytest("-m", "retrieval", "--retrieval-as-of=2025-06-01",
                                       f"--retrieval-report-dir={out}")
    assert result.ret == 0, result.stdout.str()
    keyword = next(e for e in json.loads((out / "results.json").read_text())["evaluations"] if e["engine"] == "keyword")
    assert "plan-prices-2025" not in keyword["freshness"]["stale"]


def test_the_plugin_run_says_the_loop_in_one_line(pytester, tmp_path):
    folder = write_docs(tmp_path / "kb", [{"doc_id": "a", "content": "x", "superseded_by": "b"},
                                          {"doc_id": "b", "content": "y", "superseded_by": "a"}])
    pytester.makeini(f"[pytest]\nretrieval_corpus = {folder}\nretrieval_questions = {QUESTIONS}\n"
                     "retrieval_engines = keyword\n")
    pytester.makepyfile("def test_x(retrieval_corpus):\n    pass\n")
    result = pytester.runpytest()  # a broken corpus stops the run before any test
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*a.json:1: field 'superseded_by': superseded_by goes round in a loop of 2 documents "
                                 "(a -> b -> a)*"])
    assert "Traceback" not in result.stdout.str() + result.stderr.str()
