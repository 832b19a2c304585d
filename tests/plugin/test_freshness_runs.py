"""Freshness: which documents are stale on a day, the measures built on it, and how a run shows
and gates them (bundled corpus: two versioned pairs, questions whose answer changed)."""

from __future__ import annotations

import json

import pytest

from conftest import write_docs


BUNDLED = """
    import pytest

    pytestmark = pytest.mark.retrieval

    def test_runs(retrieval_results):
        assert retrieval_results.n == 68
"""


def test_the_bundled_eval_shows_a_stale_hit_relevance_does_not_reveal_and_gates_it(bundled_project, tmp_path):
    bundled_project.makepyfile(BUNDLED)
    out = tmp_path / "out"
    result = bundled_project.runpytest("-m", "retrieval", "--retrieval-report", "--retrieval-as-of=2026-11-30",
                                       f"--retrieval-report-dir={out}", "--retrieval-threshold",
                                       "keyword:freshness.stale_free@5>=1.0")
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    text = result.stdout.str()
    result.stdout.fnmatch_lines(["freshness as of 2026-11-30  stale_free@5  conflict_free@5   n  errored",
                                 "keyword*0.882*0.912*68*0"])
    fail = next(l for l in text.splitlines() if l.startswith("FAIL retrieval gate: keyword: freshness.stale_free@5"))
    assert "= 0.8824, required >= 1" in fail and "queries with a stale document in the top 5 (as of 2026-11-30): 8" in fail
    assert "plan-prices-2026.q2: plan-prices-2025 (superseded by plan-prices-2026; expired 2025-12-31)" in fail
    # the stale hit relevance cannot see: the gold document is in the top 5 all the same
    doc = json.loads((out / "results.json").read_text())
    keyword = next(e for e in doc["evaluations"] if e["engine"] == "keyword")
    q = next(q for q in keyword["queries"] if q["id"] == "plan-prices-2026.q2")
    assert q["values"]["hit@5"] == 1.0 and q["values"]["freshness.stale_free@5"] == 0.0
    assert q["ranked"].index("plan-prices-2025") < q["ranked"].index("plan-prices-2026")
    assert keyword["freshness"]["as_of"] == "2026-11-30"
    md = (out / "results.md").read_text()
    assert "| freshness.stale_free@5 | freshness.conflict_free@5 |" in md and "Freshness as of 2026-11-30:" in md


def test_freshness_gates_against_a_baseline_like_any_measure(bundled_project, tmp_path):
    bundled_project.makepyfile(BUNDLED)
    base = tmp_path / "base.json"
    assert bundled_project.runpytest("-m", "retrieval", "--retrieval-as-of=2025-06-01",
                                     f"--retrieval-save-baseline={base}").ret == 0
    # a year later the 2025 price list is superseded: the same rankings are staler
    result = bundled_project.runpytest("-m", "retrieval", "--retrieval-as-of=2026-11-30", f"--retrieval-baseline={base}",
                                       "--retrieval-max-drop", "keyword:freshness.stale_free@5=0.01")
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    result.stdout.fnmatch_lines(["FAIL retrieval gate: keyword: freshness.stale_free@5 dropped *"])


def test_a_freshness_rule_on_a_corpus_without_versions_fails_saying_why(pytester, tmp_path):
    corpus = write_docs(tmp_path / "c", [{"doc_id": "a", "title": "alpha", "content": "x"}])
    (tmp_path / "q.json").write_text(json.dumps({"format": "pytest-retrieval-eval/questions", "version": 1,
                                                 "queries": [{"id": "q", "question": "alpha", "relevant": {"a": 1}}]}))
    from pytest_retrieval_eval.cli import main as cli

    assert cli(["label", "stamp", "--corpus", str(corpus), "--questions", str(tmp_path / "q.json")]) == 0
    pytester.makepyfile("import pytest\n\n@pytest.mark.retrieval\ndef test_x(retrieval_results):\n    pass\n")
    result = pytester.runpytest(f"--retrieval-corpus={corpus}", f"--retrieval-questions={tmp_path / 'q.json'}",
                                "--retrieval-engine=keyword", "--retrieval-report",
                                "--retrieval-threshold", "freshness.stale_free@5>=1")
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    result.stdout.fnmatch_lines(["FAIL retrieval gate: keyword: freshness.stale_free@5 has no value, so the rule "
                                 "freshness.stale_free@5>=1 checked nothing *has no versioned documents*"])
    assert "stale_free" not in result.stdout.str().split("FAIL")[0]  # no freshness columns for such a corpus
