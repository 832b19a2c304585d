"""Intervals and paired tests over conversations (``ir/stats.py`` with ``clusters``): the
resampling unit is the conversation, since its turns share how well the engine follows it.
Checked by seeded simulation, as the rest of the statistics are."""

from __future__ import annotations

import numpy as np
import pytest

from pytest_retrieval_eval.ir.paired import paired
from pytest_retrieval_eval.ir.stats import bootstrap_ci, effective_clusters, mean_ci, paired_difference_ci, paired_randomization

CONVERSATIONS, TURNS = 60, 4
CLUSTERS = [f"c{i}" for i in range(CONVERSATIONS) for _ in range(TURNS)]


def correlated(rng: np.random.Generator, *, effect: float = 0.25, noise: float = 0.1, mean: float = 0.5) -> np.ndarray:
    """Graded values whose turns share their conversation's random effect (a strong correlation)."""
    shared = np.repeat(rng.normal(0.0, effect, CONVERSATIONS), TURNS)
    return mean + shared + rng.normal(0.0, noise, CONVERSATIONS * TURNS)


def correlated_hits(rng: np.random.Generator, truth: float = 0.6) -> np.ndarray:
    """0/1 values: each conversation's own rate (Beta around ``truth``), its turns drawn from it."""
    rates = np.repeat(rng.beta(truth * 2, (1 - truth) * 2, CONVERSATIONS), TURNS)
    return (rng.random(CONVERSATIONS * TURNS) < rates).astype(float)


def test_singleton_clusters_give_todays_numbers_bit_for_bit():
    rng = np.random.default_rng(1)
    x, y = rng.random(50), rng.random(50)
    ids = [f"q{i}" for i in range(50)]
    assert bootstrap_ci(x, clusters=ids) == bootstrap_ci(x)
    assert mean_ci(x, binary=False, clusters=ids) == mean_ci(x, binary=False)
    hits = (x > 0.5).astype(float)
    assert mean_ci(hits, binary=True, clusters=ids) == mean_ci(hits, binary=True)
    assert paired_randomization(x, y, clusters=ids) == paired_randomization(x, y)
    assert paired_difference_ci(x, y, clusters=ids) == paired_difference_ci(x, y)
    assert paired(x, y, ids, clusters=ids) == paired(x, y, ids)


def test_the_cluster_bootstrap_is_the_ratio_estimator_over_whole_conversations():
    # two conversations of unequal length: every resample's mean is one of the few ratios
    values = [1.0, 1.0, 1.0, 0.0]
    lo, hi = bootstrap_ci(values, clusters=["a", "a", "a", "b"])
    assert (lo, hi) == (0.0, 1.0)  # all-b draws give 0, all-a give 1: the percentiles reach both
    with pytest.raises(ValueError, match="one cluster per value"):
        bootstrap_ci(values, clusters=["a"])


def test_turn_level_intervals_are_narrower_than_conversation_level_ones_on_correlated_turns():
    x = correlated(np.random.default_rng(7))
    iid, clustered = bootstrap_ci(x), bootstrap_ci(x, clusters=CLUSTERS)
    assert clustered[1] - clustered[0] > 1.5 * (iid[1] - iid[0])


def test_the_conversation_level_interval_covers_the_true_mean_and_the_turn_level_one_does_not():
    rng = np.random.default_rng(20261202)
    covered_iid = covered_cluster = 0
    runs = 200
    for _ in range(runs):
        x = correlated(rng)
        lo, hi = bootstrap_ci(x, resamples=400, seed=int(rng.integers(1 << 31)))
        covered_iid += lo <= 0.5 <= hi
        lo, hi = bootstrap_ci(x, resamples=400, seed=int(rng.integers(1 << 31)), clusters=CLUSTERS)
        covered_cluster += lo <= 0.5 <= hi
    assert covered_cluster / runs >= 0.90
    assert covered_iid / runs < 0.85


def test_a_binary_measure_over_conversations_covers_its_rate_where_wilson_over_turns_does_not():
    rng = np.random.default_rng(46)
    truth, runs = 0.6, 200
    covered_wilson = covered_cluster = 0
    for _ in range(runs):
        hits = correlated_hits(rng, truth)
        lo, hi = mean_ci(hits, binary=True)
        covered_wilson += lo <= truth <= hi
        lo, hi = mean_ci(hits, binary=True, clusters=CLUSTERS)
        covered_cluster += lo <= truth <= hi
    assert covered_cluster / runs >= 0.90
    assert covered_wilson / runs < 0.85


def test_a_higher_rate_over_the_same_conversations_never_gets_a_lower_lower_end():
    # 11 conversations of 2 turns: every turn found, then one missed, then two
    clusters = [f"c{i}" for i in range(11) for _ in range(2)]
    lows = [mean_ci(np.r_[np.zeros(k), np.ones(22 - k)], binary=True, clusters=clusters)[0] for k in range(4)]
    assert lows == sorted(lows, reverse=True) and lows[0] > lows[1]


def test_a_segment_of_one_turn_per_conversation_is_wilson_over_its_turns_and_correlated_turns_widen_it():
    hits = np.r_[np.ones(8), 0.0]
    alone = mean_ci(hits, binary=True, clusters=[f"c{i}" for i in range(9)])
    assert alone == mean_ci(hits, binary=True)
    together = mean_ci(hits, binary=True, clusters=["a", "a", "b", "b", "c", "d", "e", "f", "g"])
    assert together[0] < alone[0] and together[1] - together[0] > alone[1] - alone[0]
    assert effective_clusters([2, 2, 1, 1, 1, 1, 1]) == pytest.approx(81 / 13)


def test_every_turn_equal_falls_back_to_wilson_over_the_conversations():
    ones = np.ones(CONVERSATIONS * TURNS)
    lo, hi = mean_ci(ones, binary=True, clusters=CLUSTERS)
    assert (lo, hi) == mean_ci(np.ones(CONVERSATIONS), binary=True)
    assert lo < mean_ci(ones, binary=True)[0]  # each conversation counted once, not each turn


def test_conversations_all_alike_fall_back_to_wilson_over_the_conversations():
    # each conversation finds its first turn and misses its follow-ups: nothing to resample
    hits = np.tile([1.0, 0.0, 0.0, 0.0], CONVERSATIONS)
    assert mean_ci(hits, binary=True, clusters=CLUSTERS) == mean_ci(np.full(CONVERSATIONS, 0.25), binary=True)
    assert bootstrap_ci(hits, clusters=CLUSTERS) == (0.25, 0.25)  # the bootstrap alone collapses


def test_sign_flips_over_conversations_keep_their_level_where_turn_flips_over_reject():
    rng = np.random.default_rng(3)
    runs, rejected_turns, rejected_conv = 200, 0, 0
    for _ in range(runs):
        # no difference between the systems on average, but a conversation's turns move together
        shift = np.repeat(rng.normal(0.0, 0.2, CONVERSATIONS), TURNS)
        a = 0.5 + shift + rng.normal(0.0, 0.05, CONVERSATIONS * TURNS)
        b = 0.5 + rng.normal(0.0, 0.05, CONVERSATIONS * TURNS)
        seed = int(rng.integers(1 << 31))
        rejected_turns += paired_randomization(a, b, resamples=500, seed=seed) < 0.05
        rejected_conv += paired_randomization(a, b, resamples=500, seed=seed, clusters=CLUSTERS) < 0.05
    assert rejected_conv / runs <= 0.07
    assert rejected_turns / runs > 0.15


def test_a_paired_comparison_over_conversations_reads_the_clusters():
    rng = np.random.default_rng(5)
    a, b = correlated(rng), correlated(rng)
    ids = [f"{c}#{i % TURNS + 1}" for i, c in enumerate(CLUSTERS)]
    flat, grouped = paired(a, b, ids), paired(a, b, ids, clusters=CLUSTERS)
    assert grouped.delta == flat.delta and grouped.wins == flat.wins
    assert grouped.ci[1] - grouped.ci[0] > flat.ci[1] - flat.ci[0]
    assert grouped.ci == paired_difference_ci(a, b, clusters=CLUSTERS)


def test_the_drop_of_a_binary_measure_covers_its_true_value_and_never_collapses_at_the_bounds():
    from pytest_retrieval_eval.ir.stats import split_difference_ci

    rng = np.random.default_rng(2026)
    clusters = [f"c{i}" for i in range(40) for _ in range(3)]
    first = np.tile([True, False, False], 40)
    covered, runs = 0, 200
    for _ in range(runs):  # first turns found 90% of the time, follow-ups at their conversation's own rate (mean 0.5)
        rates = np.repeat(rng.beta(1.0, 1.0, 40), 3)
        hits = np.where(first, rng.random(120) < 0.9, rng.random(120) < rates).astype(float)
        lo, hi = split_difference_ci(hits, first, clusters, binary=True)
        covered += lo <= 0.4 <= hi
    assert covered / runs >= 0.90, covered
    lo, hi = split_difference_ci(np.ones(6), [True, False] * 3, ["a", "a", "b", "b", "c", "c"], binary=True)
    assert lo < 0.0 < hi  # three conversations found throughout: no certainty that nothing drops
