"""judged@k beside the tabled measures when the labels judge few documents per question (one gold
each, as generated questions have): the line says how much of each top k is judged and what the
unjudged rest does to the numbers; labels that judge more say nothing."""

from __future__ import annotations


def test_the_bundled_run_prints_the_line_and_results_md_holds_it(bundled_project):
    bundled_project.makepyfile("""
        import pytest

        @pytest.mark.retrieval
        def test_quality(retrieval_results):
            pass
    """)
    result = bundled_project.runpytest("-m", "retrieval", "--retrieval-report", "--retrieval-report-dir=out", "-v")
    assert result.ret == 0, result.stdout.str()
    out = result.stdout.str()
    assert "judged@k, the share of each top k the labels judge (1.0 document per question):" in out
    assert "keyword: judged@1 0.118, judged@3 0.088, judged@5 0.071, judged@10 0.057," in out
    md = (bundled_project.path / "out" / "results.md").read_text(encoding="utf-8")
    assert "- keyword: judged@1 0.118, judged@3 0.088, judged@5 0.071, judged@10 0.057, judged@20 0.039" in md
