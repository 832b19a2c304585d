"""Certainty at 0 and 1: a binary measure's interval keeps width at a perfect (or null) score, the
detectable drop is never 0 and the under-powered warning fires there too (both checked by
simulation); an engine whose factory raises, or a named engine with no evaluation, fails the gate."""

from __future__ import annotations

import math

import numpy as np
import pytest

from pytest_retrieval_eval.data.labeled import LabeledSet
from pytest_retrieval_eval.gate.checks import Breach
from pytest_retrieval_eval.rules.drops import MaxDrop
from pytest_retrieval_eval.rules.thresholds import Threshold
from pytest_retrieval_eval.gate.verdict import verdict_of as judge
from pytest_retrieval_eval.ir.stats import (detectable_drop, mean_ci, paired_randomization, queries_needed,
                                            wilson_ci)
from pytest_retrieval_eval.report import table
from pytest_retrieval_eval.analysis.result import EvaluationResult
from pytest_retrieval_eval.evaluation.results import RunResults
from pytest_retrieval_eval.types import LabeledQuery, QueryResult


def _run(n: int = 29, misses: int = 3) -> RunResults:
    """``perfect`` finds every gold document first; ``imperfect`` misses ``misses`` of them."""
    queries = tuple(LabeledQuery(f"q{i}", f"question {i}", {f"d{i}": 1}) for i in range(n))
    labeled = LabeledSet(queries, name="set")
    perfect = tuple(QueryResult(q.query_id, (f"d{i}", "x")) for i, q in enumerate(queries))
    imperfect = tuple(QueryResult(q.query_id, ("x",) if i < misses else (f"d{i}", "x")) for i, q in enumerate(queries))
    return RunResults([EvaluationResult("perfect", labeled, perfect), EvaluationResult("imperfect", labeled, imperfect)])


def test_a_perfect_hit_at_5_on_29_questions_has_an_interval_and_a_detectable_drop():
    run = _run()
    perfect = run.get("perfect", "set")
    assert perfect.hit_at(5) == 1.0
    lo, hi = perfect.ci("hit@5")
    assert lo == pytest.approx(0.8830, abs=1e-4) and hi == 1.0  # Wilson: 29 / (29 + 1.96^2)
    assert 0 < detectable_drop(perfect.values("hit@5")) < 1
    verdict = judge(run, measures=["hit@5"], max_drops=[MaxDrop("hit@5", 0.02, source="cli")])
    [warning] = [w for w in verdict.warnings if " perfect on " in w]
    # a drop's p is corrected over the 2 engines' comparisons with the baseline: alpha / 2 each
    assert "can only detect a drop of 0.296 in hit@5 with 29 queries (80% power, alpha 0.05 over 2 comparisons" in warning
    assert f"needs about {queries_needed(perfect.values('hit@5'), 0.02, alpha=0.025)} queries" in warning
    assert any(" imperfect on " in w for w in verdict.warnings)
    grid = "\n".join(table.render(verdict))
    assert "±.000" not in grid and "±.117" in grid
    assert "[0.883, 1.000]" in "\n".join(table.markdown(verdict))


def test_the_floor_and_a_graded_measure_with_equal_values_keep_width():
    lo, hi = wilson_ci(0.0, 29)
    assert lo == 0.0 and hi == pytest.approx(0.1170, abs=1e-4)
    assert detectable_drop([0.0] * 29) > 0
    # a graded measure whose every value is equal: Wilson at that value (documented fallback)
    lo, hi = mean_ci([1.0] * 29, binary=False)
    assert lo < 1.0 == hi
    lo, hi = mean_ci([0.5] * 29, binary=False)
    assert lo < 0.5 < hi
    assert mean_ci([3.0] * 29, binary=False) == (3.0, 3.0)  # a count: no [0, 1] bound to lean on
    assert mean_ci([0.2, 0.4, 0.9], binary=False)[0] < mean_ci([0.2, 0.4, 0.9], binary=False)[1]  # bootstrap
    assert all(math.isnan(v) for v in mean_ci([], binary=True))


def test_binary_is_decided_by_the_family_not_the_values():
    run = _run()
    perfect = run.get("perfect", "set")
    assert perfect.ci("hit@5") == wilson_ci(1.0, 29)
    assert perfect.ci("success@5") == wilson_ci(1.0, 29)
    assert perfect.ci("hit(rel=2)@5") == wilson_ci(0.0, 29)  # no grade-2 gold: 0 of 29, still binary
    # mrr here is 0/1 per query too, but it is graded by definition: the bootstrap (its fallback)
    imperfect = run.get("imperfect", "set")
    assert imperfect.ci("mrr") != wilson_ci(imperfect.mrr(), 29)


def test_wilson_matches_statsmodels():
    proportion = pytest.importorskip("statsmodels.stats.proportion")
    for k, n in [(0, 20), (29, 29), (26, 29), (40, 68), (68, 68)]:
        assert wilson_ci(k / n, n) == pytest.approx(proportion.proportion_confint(k, n, method="wilson"), abs=1e-9)


@pytest.mark.parametrize("n", [20, 29, 68])
@pytest.mark.parametrize("p", [0.5, 0.9, 0.99, 1.0])
def test_wilson_95_covers_the_true_rate_in_about_95_percent_of_draws(p, n):
    rng = np.random.default_rng(int(p * 1000) + n)
    draws = 4000
    hits = rng.binomial(n, p, size=draws)
    covered = sum(lo <= p <= hi for lo, hi in (wilson_ci(k / n, n) for k in hits))
    assert covered / draws >= 0.93, covered / draws


@pytest.mark.parametrize("n", [29, 68])
def test_a_drop_of_the_detectable_size_from_a_perfect_score_is_found_in_about_80_percent_of_runs(n):
    """Every query hit; a later run loses each with probability mdd; the paired randomization
    test at alpha 0.05 should flag at least about 80% of those runs."""
    values = np.ones(n)
    mdd = detectable_drop(values, alpha=0.05)
    rng = np.random.default_rng(n)
    runs, detected = 400, 0
    for i in range(runs):
        after = (rng.random(n) >= mdd).astype(float)
        detected += paired_randomization(after, values, resamples=1000, seed=i) < 0.05
    assert 0.74 <= detected / runs <= 0.88, detected / runs
    # a drop a third smaller is missed far more often: the figure is not padded
    smaller, detected = mdd * 2 / 3, 0
    for i in range(runs):
        after = (rng.random(n) >= smaller).astype(float)
        detected += paired_randomization(after, values, resamples=1000, seed=i) < 0.05
    assert detected / runs < 0.7, detected / runs


def test_counts_in_a_breach_read_as_whole_numbers():
    errors = Threshold.parse("errors<=0", source="cli")
    assert "errors = 2, required <= 0" in str(Breach(errors, "flaky", 2.0))
    assert "hit@5 = 0.5000, required >= 0.8" in str(Breach(Threshold.parse("hit@5>=0.8", source="cli"), "e", 0.5))
