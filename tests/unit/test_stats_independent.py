"""The statistics against independent implementations (scipy, statsmodels) on fixed seeds, the
power estimate by simulation, and what correction and confidence change in a verdict."""

from __future__ import annotations

import math

import numpy as np
import pytest

from pytest_retrieval_eval.data.labeled import LabeledSet
from pytest_retrieval_eval.analysis.rows import Row
from pytest_retrieval_eval.gate.checks import check
from pytest_retrieval_eval.rules.drops import MaxDrop
from pytest_retrieval_eval.rules.thresholds import Threshold
from pytest_retrieval_eval.gate.verdict import verdict_of as judge
from pytest_retrieval_eval.ir.stats import (adjust, bootstrap_ci, detectable_drop, paired_difference_ci,
                                            paired_randomization, queries_needed)
from pytest_retrieval_eval.report import table
from pytest_retrieval_eval.analysis.result import EvaluationResult
from pytest_retrieval_eval.evaluation.results import RunResults
from pytest_retrieval_eval.types import LabeledQuery, QueryResult
from conftest import results_text


@pytest.fixture(scope="module")
def scipy_stats():
    """scipy.stats, imported by the tests that compare with it (3 s with statsmodels: at module
    level, every worker paid it collecting the unit tier)."""
    return pytest.importorskip("scipy.stats")


@pytest.fixture(scope="module")
def multitest():
    return pytest.importorskip("statsmodels.stats.multitest")


# --- corrections ---------------------------------------------------------------------------------

@pytest.mark.parametrize("ours, theirs", [("holm", "holm"), ("bh", "fdr_bh")])
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_corrections_match_statsmodels(ours, theirs, seed, multitest):
    rng = np.random.default_rng(seed)
    p = np.concatenate([rng.uniform(0, 0.06, 12), rng.uniform(0, 1, 24), [0.01, 0.01, 1.0]])  # ties too
    expected = multitest.multipletests(p, alpha=0.05, method=theirs)[1]
    assert adjust(p, ours) == pytest.approx(list(expected), abs=1e-12)


def test_no_correction_and_empty_families():
    assert adjust([0.2, 0.01], "none") == [0.2, 0.01]
    assert adjust([], "holm") == [] and adjust([], "bh") == []
    with pytest.raises(ValueError, match="unknown correction"):
        adjust([0.1], "bonferroni")


# --- the paired test and the intervals -------------------------------------------------------------

@pytest.mark.parametrize("shift", [0.0, 0.08, 0.15])
def test_paired_randomization_matches_scipy_permutation_test(shift, scipy_stats):
    rng = np.random.default_rng(7)
    b = (rng.random(80) < 0.6).astype(float)
    a = np.where(rng.random(80) < shift * 3, 1.0, b)  # a few misses turned into hits
    ours = paired_randomization(a, b, resamples=20000)
    theirs = scipy_stats.permutation_test((a, b), lambda x, y, axis: np.mean(x - y, axis=axis),
                                          permutation_type="samples", alternative="two-sided",
                                          n_resamples=20000, random_state=3, vectorized=True).pvalue
    assert ours == pytest.approx(theirs, abs=0.01 + 0.05 * theirs)


def test_bootstrap_intervals_match_scipy_percentile_bootstrap(scipy_stats):
    rng = np.random.default_rng(11)
    x = (rng.random(63) < 0.84).astype(float)
    theirs = scipy_stats.bootstrap((x,), np.mean, method="percentile", n_resamples=20000, random_state=5)
    lo, hi = bootstrap_ci(x, resamples=20000)
    assert lo == pytest.approx(theirs.confidence_interval.low, abs=0.012)
    assert hi == pytest.approx(theirs.confidence_interval.high, abs=0.012)
    a, b = rng.random(100), rng.random(100) * 0.8
    paired = scipy_stats.bootstrap((a, b), lambda u, v, axis: np.mean(u - v, axis=axis), paired=True,
                                   method="percentile", n_resamples=20000, random_state=5, vectorized=True)
    lo, hi = paired_difference_ci(a, b, resamples=20000)
    assert lo == pytest.approx(paired.confidence_interval.low, abs=0.01)
    assert hi == pytest.approx(paired.confidence_interval.high, abs=0.01)


# --- power -------------------------------------------------------------------------------------------

def test_the_detectable_drop_follows_the_normal_approximation():
    x = np.array([1.0] * 53 + [0.0] * 10)  # 63 queries, hit@1 0.841 like the bundled hybrid
    sd = x.std(ddof=1)
    assert detectable_drop(x, alpha=0.05) == pytest.approx((1.959964 + 0.841621) * sd / math.sqrt(63), rel=1e-5)
    assert detectable_drop(x, alpha=0.01) > detectable_drop(x, alpha=0.05)
    assert math.isnan(detectable_drop([1.0]))
    need = queries_needed(x, 0.01)
    assert need == math.ceil(((1.959964 + 0.841621) * sd / 0.01) ** 2)
    # at that many queries, the same spread detects a drop of 0.01
    assert detectable_drop(np.tile(x, need // 63 + 1)) <= 0.0101


def test_a_planted_drop_of_the_detectable_size_is_found_in_about_80_percent_of_runs():
    """Simulate runs whose per-query paired differences have this spread and mean -mdd; the
    paired randomization test at alpha 0.05 should flag about 80% of them."""
    rng = np.random.default_rng(2026)
    values = (rng.random(63) < 0.84).astype(float)
    mdd = detectable_drop(values, alpha=0.05)
    sd, n, runs = values.std(ddof=1), len(values), 400
    detected = 0
    for i in range(runs):
        d = rng.normal(-mdd, sd, n)
        detected += paired_randomization(d, np.zeros(n), resamples=1000, seed=i) < 0.05
    assert 0.72 <= detected / runs <= 0.88, detected / runs


# --- verdicts: correction and confidence ------------------------------------------------------------

def _run(n: int = 60, moved: int = 7) -> RunResults:
    """Two engines that differ only on ``moved`` queries, all the same way (gold at 1 vs 2):
    a sign-flip p of about 2/2^7 = 0.016 on hit@1 and mrr, nothing elsewhere."""
    queries = tuple(LabeledQuery(f"q{i}", f"question {i}", {f"d{i}": 1}) for i in range(n))
    labeled = LabeledSet(queries, name="set")
    a = tuple(QueryResult(q.query_id, (f"d{i}", "x")) for i, q in enumerate(queries))
    b = tuple(QueryResult(q.query_id, ("x", f"d{i}") if i < moved else (f"d{i}", "x")) for i, q in enumerate(queries))
    return RunResults([EvaluationResult("a", labeled, a), EvaluationResult("b", labeled, b)])


MEASURES = ["hit@1", "hit@3", "hit@5", "hit@10", "hit@20", "mrr"]


def test_a_mark_significant_only_uncorrected_is_gone_under_holm_and_the_legend_says_why():
    plain = judge(_run(), measures=MEASURES, correction="none")
    assert table.wins(plain)[(("a", "set"), "hit@1")] == "b"
    holm = judge(_run(), measures=MEASURES)
    assert table.wins(holm) == {}
    c = next(c for c in holm.comparisons if c.measure == "hit@1")
    assert c.p < 0.05 <= c.p_adjusted
    assert c.delta == pytest.approx(7 / 60) and c.ci[0] > 0  # the effect is there, its interval too
    legend = " ".join(table.legend(holm, markdown=True))
    assert "Holm-Bonferroni over 6 comparisons" in legend
    assert "Benjamini-Hochberg over 6 comparisons" in " ".join(table.legend(
        judge(_run(), measures=MEASURES, correction="bh"), markdown=True))


def test_effect_sizes_and_settings_are_in_results_json_and_survive_a_reload(tmp_path):
    from pytest_retrieval_eval.archive.saved import load_saved, results_json
    from pytest_retrieval_eval.gate.verdict import conclude, for_run
    from pytest_retrieval_eval.ir.measures import parse_measures

    run = _run()
    settings = for_run(run, configured=tuple(parse_measures(MEASURES)), correction="bh", confidence="lower")
    text = results_text(run, settings)
    assert text == results_text(_run(), settings)  # deterministic
    (tmp_path / "r.json").write_text(text, encoding="utf-8")
    loaded = load_saved(tmp_path / "r.json")
    verdict = conclude(loaded.run, loaded.settings, recorded=loaded.analysis)
    assert results_json(verdict) == text
    assert verdict.correction == "bh" and verdict.confidence == "lower"
    import json
    comps = json.loads(text)["comparisons"]
    assert len(comps) == 6 and {"delta", "ci95", "p", "p_adjusted"} <= set(comps[0])


def test_confidence_lower_judges_the_interval_and_says_so():
    rows = [Row("hybrid", "set", {"hit@1": 0.841}, 63, 0, {"hit@1": (0.762, 0.921)})]
    rule = Threshold("hit@1", ">=", 0.83, "hybrid", source="cli")
    assert check([rule], rows) == []
    [breach] = check([rule], rows, confidence="lower")
    assert breach.value == 0.762
    assert "judged on the 95% lower bound" in str(breach) and "point estimate 0.8410" in str(breach)
    upper = Threshold("hit@1", "<=", 0.9, "hybrid", source="cli")  # the cautious side of an upper rule
    assert "upper bound" in str(check([upper], rows, confidence="lower")[0])


def test_a_max_drop_below_the_detectable_drop_warns_with_a_query_count():
    run = _run()
    verdict = judge(run, measures=MEASURES, max_drops=[MaxDrop("hit@1", 0.01, source="cli")])
    [warning_b] = [w for w in verdict.warnings if " b on " in w]
    # the noise-aware gate corrects a drop's p over 2 engines x 6 measures: each gets alpha / 12
    mdd = detectable_drop(run.get("b", "set").values("hit@1"), alpha=0.05 / 12)
    assert f"can only detect a drop of {mdd:.3f} in hit@1 with 60 queries (80% power, alpha 0.05 over 12 " \
           "comparisons" in warning_b
    assert "a drop of 0.01 needs about" in warning_b
    assert {d.measure for d in verdict.detectable} == {"hit@1"}  # a gated measure only
    assert not judge(run, measures=MEASURES, max_drops=[MaxDrop("hit@1", 0.5, source="cli")]).warnings
    # a (hit@1 = 1.000, no spread) warns too: at the ceiling the detectable drop is not 0
    zero = judge(run, measures=MEASURES, max_drops=[MaxDrop("hit@1", 0.0, source="cli")]).warnings
    assert [w.split(" on ")[0].rsplit(" ", 1)[-1] for w in zero] == ["a", "b"]
    assert all("no number of queries tells any drop at all from noise" in w for w in zero)
    with pytest.raises(ValueError, match="must be positive"):
        queries_needed([0.0, 1.0], 0.0)
