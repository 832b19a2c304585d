"""Correction, effect sizes, detectable drops and confidence-judged thresholds end to end: the
pytest run, the report folder, the HTML page and ``report`` re-judging a saved results.json."""

from __future__ import annotations

import json

import pytest

from conftest import CORPUS, QUESTIONS
from projects import BUNDLED_TESTS, ORACLE_CONFTEST
from pytest_retrieval_eval.cli import main as cli


@pytest.fixture
def project(make_project):
    """The report tests' project: the keyword engine and the oracle."""
    return make_project(engines="keyword oracle", conftest=ORACLE_CONFTEST, tests=BUNDLED_TESTS)


def test_confidence_lower_fails_a_threshold_the_point_estimate_passes(project):
    rule = "keyword:hit@1>=0.1"  # keyword hit@1 is 0.118; its interval reaches well below 0.1
    assert project.runpytest("-m", "retrieval", "--retrieval-threshold", rule).ret == 0
    result = project.runpytest("-m", "retrieval", "--retrieval-threshold", rule, "--retrieval-confidence", "lower")
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    # the estimate holds, the lower end does not: inconclusive, failing the run by default
    result.stdout.fnmatch_lines(["INCONCLUSIVE retrieval gate: keyword: hit@1 = 0.0*, required >= 0.1 (from "
                                 "--retrieval-threshold; n=68; judged on the 95% lower bound (--retrieval-confidence=lower), "
                                 "point estimate 0.1176; 95% interval [[]0.0*, 0.2*[]] straddles 0.1 (*); about * more "
                                 "questions (* in all) would settle it (80% power at the spread this run saw))"])


def test_the_ini_sets_correction_and_confidence_and_bad_values_are_usage_errors(project):
    project.makeini(f"[pytest]\nretrieval_corpus = {CORPUS}\nretrieval_questions = {QUESTIONS}\n"
                    "retrieval_engines = keyword oracle\nretrieval_correction = bh\nretrieval_confidence = lower\n"
                    "retrieval_thresholds = keyword:hit@1>=0.1\n")
    result = project.runpytest("-m", "retrieval", "--retrieval-report")
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    out = " ".join(result.stdout.str().split())  # the legend wraps at 80 columns
    assert "Benjamini-Hochberg over 8 comparisons" in out and "judged on the 95% lower bound" in out
    bad = project.runpytest("--retrieval-correction", "bonferroni")
    assert "must be one of holm, bh, none" in bad.stderr.str()


def test_reports_name_the_correction_show_effect_sizes_and_detectable_drops(project, tmp_path):
    base = tmp_path / "base.json"
    assert project.runpytest("-m", "retrieval", f"--retrieval-save-baseline={base}").ret == 0
    out_dir = tmp_path / "out"
    result = project.runpytest("-m", "retrieval", "--retrieval-report", f"--retrieval-report-dir={out_dir}",
                               f"--retrieval-html={out_dir / 'page.html'}", f"--retrieval-baseline={base}",
                               "--retrieval-max-drop", "hit@5=0.01", "-v")
    assert result.ret == 0
    out = " ".join(result.stdout.str().split())  # the legend wraps at 80 columns
    assert "Holm-Bonferroni over 8 comparisons" in out
    result.stdout.fnmatch_lines(["differences (paired mean, 95% CI; * significant after correction):",
                                 "  keyword − oracle: hit@1 -0.882* [[]-0.9*, -0.*[]],*"])
    # stated at the share of alpha one of the 16 comparisons with the baseline gets (2 engines, 8 columns)
    assert ("detectable drop (80% power, alpha 0.05 shared by 16 comparisons, normal approximation): keyword hit@5 "
            "0.222") in out
    assert ("warning: max-drop rule hit@5=0.01 is below what it can detect: keyword on questions.cache.json can only "
            "detect a drop of 0.222 in hit@5 with 68 queries (80% power, alpha 0.05 over 16 comparisons; from "
            "--retrieval-max-drop); a drop of 0.01 needs about") in out
    assert "against the baseline (p corrected: Holm-Bonferroni over 16 comparisons):" in out
    md = (out_dir / "results.md").read_text(encoding="utf-8")
    assert "Holm-Bonferroni over 8 comparisons" in md and "| keyword − oracle | questions.cache.json | hit@1 | -0.882 |" in md
    assert "- keyword on questions.cache.json: hit@5 0.222 (68 queries)" in md and "a drop of 0.01 needs about" in md
    assert "| engine | measure | baseline | now | delta | 95% CI |" in md
    page = (out_dir / "page.html").read_text(encoding="utf-8")
    assert 'id="effects"' in page and "Holm-Bonferroni over 8 comparisons" in page and "keyword on questions.cache.json: hit@5 0.222" in page
    doc = json.loads((out_dir / "results.json").read_text(encoding="utf-8"))
    assert doc["settings"]["correction"] == "holm" and doc["settings"]["confidence"] == "point"
    assert {c["measure"] for c in doc["comparisons"]} == {"hit@1", "hit@3", "hit@5", "hit@10", "hit@20", "mrr",
                                                               "freshness.stale_free@5", "freshness.conflict_free@5"}
    # the saved run rebuilds the same artefacts; re-judged with another correction, it says so
    rebuilt = tmp_path / "rebuilt"
    assert cli(["report", str(out_dir / "results.json"), f"--out={rebuilt}", f"--html={rebuilt / 'page.html'}"]) == 0
    for name in ("results.json", "results.md", "page.html"):
        assert (rebuilt / name).read_bytes() == (out_dir / name).read_bytes(), name
    again = tmp_path / "bh"
    assert cli(["report", str(out_dir / "results.json"), "--correction", "bh", f"--out={again}"]) == 0
    assert "Benjamini-Hochberg over 8 comparisons" in (again / "results.md").read_text(encoding="utf-8")
