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
