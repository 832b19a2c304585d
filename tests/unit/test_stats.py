import numpy as np
import pytest

from pytest_retrieval_eval.ir.stats import bootstrap_ci, paired_randomization


def test_bootstrap_ci_is_seeded_and_brackets_the_mean():
    rng = np.random.default_rng(1)
    x = rng.random(200)
    lo, hi = bootstrap_ci(x)
    assert lo < x.mean() < hi
    assert bootstrap_ci(x) == (lo, hi)  # reproducible
    # the half-width shrinks like 1/sqrt(n)
    big_lo, big_hi = bootstrap_ci(np.tile(x, 16))
    assert (big_hi - big_lo) == pytest.approx((hi - lo) / 4, rel=0.25)


def test_bootstrap_degenerate_cases():
    assert bootstrap_ci([1.0] * 10) == (1.0, 1.0)
    lo, hi = bootstrap_ci([])
    assert np.isnan(lo) and np.isnan(hi)


def test_randomization_test_tells_a_real_difference_from_noise():
    rng = np.random.default_rng(2)
    base = rng.random(300)
    assert paired_randomization(base + 0.1, base) < 0.001  # consistent improvement on every query
    noise = base + rng.normal(0, 0.2, 300) - 0.0  # differences centred on zero
    assert paired_randomization(noise, base) > 0.05
    assert paired_randomization(base, base) == 1.0
    assert paired_randomization(noise, base) == paired_randomization(noise, base)


def test_randomization_matches_an_exact_enumeration_on_a_tiny_case():
    import itertools

    d = np.array([0.5, 0.2, -0.1, 0.4])
    exact = np.mean([abs((np.array(s) * d).mean()) >= abs(d.mean()) - 1e-12
                     for s in itertools.product([-1, 1], repeat=4)])
    assert paired_randomization(d, np.zeros(4), resamples=20000) == pytest.approx(exact, abs=0.02)


def test_randomization_counts_the_same_patterns_as_flipping_each_value_on_tied_hit_differences():
    """The p-value counts, among the same random sign patterns, those whose mean difference is at
    least the observed one; with 0/1 hits most patterns tie the observed mean exactly, and however
    the statistic is summed, a tie counts."""
    from pytest_retrieval_eval.ir.stats import RANDOMIZATION_RESAMPLES, SEED, _chunks

    rng = np.random.default_rng(11)
    for n in (7, 68, 150):
        a, b = rng.integers(0, 2, n).astype(float), rng.integers(0, 2, n).astype(float)
        d = a - b
        draws, extreme = np.random.default_rng(SEED), 0
        for size in _chunks(RANDOMIZATION_RESAMPLES, n):
            signs = draws.integers(0, 2, size=(size, n), dtype=np.int8) * 2 - 1
            extreme += sum(abs(sum(float(s) * v for s, v in zip(row, d)) / n) >= abs(d.mean()) - 1e-12
                           for row in signs)
        assert paired_randomization(a, b) == (extreme + 1) / (RANDOMIZATION_RESAMPLES + 1), n


def test_fleiss_kappa_is_0210_on_fleiss_1971s_table_of_14_raters_and_10_subjects():
    """The worked example of Fleiss (1971) as Wikipedia gives it: subject per row, raters per
    category; P-bar 0.378, P-bar-e 0.213, kappa 0.210."""
    from pytest_retrieval_eval.ir.agreement import fleiss_kappa

    table = [[0, 0, 0, 0, 14], [0, 2, 6, 4, 2], [0, 0, 3, 5, 6], [0, 3, 9, 2, 0], [2, 2, 8, 1, 1],
             [7, 7, 0, 0, 0], [3, 2, 6, 3, 0], [2, 5, 3, 2, 2], [6, 5, 2, 1, 0], [0, 2, 2, 3, 7]]
    p_bar = np.mean([(sum(x * x for x in row) - 14) / (14 * 13) for row in table])
    p_e = sum((sum(row[j] for row in table) / 140) ** 2 for j in range(5))
    assert round(p_bar, 3) == 0.378 and round(p_e, 3) == 0.213
    assert fleiss_kappa(table) == pytest.approx((p_bar - p_e) / (1 - p_e), abs=1e-12)
    assert round(fleiss_kappa(table), 3) == 0.210


def test_fleiss_kappa_is_1_in_full_agreement_nan_with_one_category_and_refuses_unequal_raters():
    from pytest_retrieval_eval.ir.agreement import cohen_kappa, fleiss_kappa

    assert fleiss_kappa([[3, 0], [0, 3], [3, 0]]) == 1.0
    assert np.isnan(fleiss_kappa([[3, 0], [3, 0]]))  # chance agreement is 1: kappa says nothing
    assert np.isnan(fleiss_kappa([]))
    with pytest.raises(ValueError, match="same number of raters"):
        fleiss_kappa([[2, 1], [1, 1]])
    # two raters: Fleiss' kappa is Scott's pi, chance from the pooled shares (hand-computed:
    # observed 4/6, pooled shares 6/12 and 6/12, so (2/3 - 1/2) / (1/2) = 1/3; with other margins
    # the two differ: 3/4 observed, pooled shares 3/8 and 5/8, so (3/4 - 17/32) / (15/32) = 7/15)
    def table(a, b):
        return [[int(x == 0) + int(y == 0), x + y] for x, y in zip(a, b)]

    a, b = [1, 1, 1, 0, 0, 0], [1, 1, 0, 1, 0, 0]
    assert fleiss_kappa(table(a, b)) == pytest.approx(1 / 3)
    assert cohen_kappa(a, b) == pytest.approx(1 / 3)  # equal margins here: Cohen's is the same
    assert fleiss_kappa(table([1, 1, 0, 0], [1, 0, 0, 0])) == pytest.approx(7 / 15)
    assert cohen_kappa([1, 1, 0, 0], [1, 0, 0, 0]) == pytest.approx(0.5)
