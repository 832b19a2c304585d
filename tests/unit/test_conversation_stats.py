"""Intervals and paired tests over conversations (``ir/stats.py`` with ``clusters``): the
resampling unit is the conversation, since its turns share how well the engine follows it.
Checked by seeded simulation, as the rest of the statistics are."""

from __future__ import annotations

import functools

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


def test_every_turn_equal_shows_no_clustering_so_the_interval_is_wilson_over_the_turns():
    # NCHS's rule for homogeneous data (every turn found: no conversation differs from another)
    ones = np.ones(CONVERSATIONS * TURNS)
    assert mean_ci(ones, binary=True, clusters=CLUSTERS) == mean_ci(ones, binary=True)
    # too few conversations to tell: each counts once (the guard)
    few = [f"c{i}" for i in range(5) for _ in range(TURNS)]
    assert mean_ci(np.ones(5 * TURNS), binary=True, clusters=few) == mean_ci(np.ones(5), binary=True)


def test_conversations_all_alike_show_no_clustering_so_the_interval_is_wilson_over_the_turns():
    # each conversation finds its first turn and misses its follow-ups: conversations do not differ
    hits = np.tile([1.0, 0.0, 0.0, 0.0], CONVERSATIONS)
    assert mean_ci(hits, binary=True, clusters=CLUSTERS) == mean_ci(hits, binary=True)
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


# --- calibrated intervals: the data's own within-conversation correlation ---------------------

def simulated_hits(rng: np.random.Generator, datasets: int, conversations: int, icc: float, slope: float,
                   base: float) -> tuple[np.ndarray, np.ndarray, float]:
    """``datasets`` seeded sets of ``conversations`` of 1-8 turns with hit@5-like 0/1 values:
    a conversation of m turns has the rate ``base - slope * (m - 1)`` on average (longer ones
    worse for a positive slope, better for a negative one), its own rate drawn around it so that
    two of its turns correlate at ``icc`` (beta-binomial; 0: independent turns). Returns each
    conversation's turns and hits (datasets x conversations) and the true rate over turns (the
    turn-weighted mean the rate over a set's turns estimates)."""
    lengths = rng.integers(1, 9, size=(datasets, conversations))
    rate = base - slope * (lengths - 1)
    if icc > 0:
        k = (1 - icc) / icc
        rate = rng.beta(rate * k, (1 - rate) * k)
    hits = rng.binomial(lengths, rate)
    m = np.arange(1, 9)
    truth = float((m * (base - slope * (m - 1))).sum() / m.sum())
    return lengths, hits, truth


def turns_of(lengths: np.ndarray, hits: np.ndarray) -> tuple[np.ndarray, list[str]]:
    """One dataset's per-turn 0/1 values and each turn's conversation."""
    conv = np.repeat(np.arange(len(lengths)), lengths)
    position = np.arange(len(conv)) - np.repeat(np.cumsum(lengths) - lengths, lengths)
    return (position < hits[conv]).astype(float), [f"c{c}" for c in conv]


@pytest.mark.parametrize("slope, base", [(0.05, 0.85), (-0.05, 0.5)], ids=["longer-worse", "longer-better"])
@pytest.mark.parametrize("icc", [0.0, 0.3, 0.8])
def test_the_hit_interval_over_conversations_covers_at_its_nominal_rate_whatever_the_correlation(icc, slope, base):
    from pytest_retrieval_eval.ir.stats import wilson_ci

    lengths, hits, truth = simulated_hits(np.random.default_rng(2026), 400, 40, icc, slope, base)
    covered, ratios = 0, []
    for m, y in zip(lengths, hits):
        values, clusters = turns_of(m, y)
        lo, hi = mean_ci(values, binary=True, clusters=clusters)
        covered += lo <= truth <= hi
        w_lo, w_hi = wilson_ci(values.mean(), len(values))
        ratios.append((hi - lo) / (w_hi - w_lo))
    # 400 datasets estimate a coverage to +-0.011 (one standard error); with 8,000 per case it is
    # 0.948-0.956 (docs/gates.md, "Conversations, turn by turn")
    assert 0.93 <= covered / 400 <= 0.97, covered / 400
    if icc == 0:  # independent turns: hardly wider than Wilson over the turns
        assert np.mean(ratios) <= 1.15 and np.median(ratios) <= 1.15, (np.mean(ratios), np.median(ratios))


@pytest.mark.parametrize("icc", [0.0, 0.8])
def test_a_handful_of_conversations_falls_back_to_an_interval_that_still_covers(icc):
    lengths, hits, truth = simulated_hits(np.random.default_rng(59), 400, 5, icc, 0.05, 0.85)
    covered = sum(lo <= truth <= hi for lo, hi in (mean_ci(*turns_of(m, y)[:1], binary=True, clusters=turns_of(m, y)[1])
                                                   for m, y in zip(lengths, hits)))
    assert covered / 400 >= 0.93, covered / 400


def brute_force_cluster_bootstrap(values: np.ndarray, clusters: list[str], resamples: int, seed: int) -> np.ndarray:
    """The mean over every turn of ``resamples`` draws of whole conversations, one draw at a time
    (an independent computation: the interval reads a linearized variance, not resamples)."""
    rng = np.random.default_rng(seed)
    by: dict[str, list[float]] = {}
    for v, c in zip(values, clusters):
        by.setdefault(c, []).append(v)
    sums, sizes = np.array([sum(g) for g in by.values()]), np.array([len(g) for g in by.values()])
    means = np.empty(resamples)
    for i in range(resamples):
        drawn = rng.integers(0, len(sums), len(sums))
        means[i] = sums[drawn].sum() / sizes[drawn].sum()
    return means


def test_the_design_effect_is_the_variance_a_cluster_bootstrap_finds_over_the_turn_level_one():
    from pytest_retrieval_eval.ir.stats import design_effect

    rng = np.random.default_rng(11)
    for icc in (0.0, 0.3, 0.8):
        lengths, hits, _ = simulated_hits(rng, 3, 60, icc, 0.05, 0.85)
        for m, y in zip(lengths, hits):
            values, clusters = turns_of(m, y)
            p, n = values.mean(), len(values)
            boot = brute_force_cluster_bootstrap(values, clusters, 3000, 1).var() / (p * (1 - p) / n)
            assert design_effect(values, clusters) == pytest.approx(boot * 60 / 59, rel=0.12), icc


def test_with_conversations_of_one_length_the_design_effect_is_kishs_from_the_intraclass_correlation():
    from pytest_retrieval_eval.ir.stats import design_effect

    rng = np.random.default_rng(12)
    for icc in (0.1, 0.5):
        rates = rng.beta(0.6 * (1 - icc) / icc, 0.4 * (1 - icc) / icc, 80)
        hits = (rng.random((80, 5)) < rates[:, None]).astype(float)
        # the one-way ANOVA estimate of the intraclass correlation, then Kish's 1 + (m - 1) * ICC
        msb = 5 * ((hits.mean(1) - hits.mean()) ** 2).sum() / 79
        msw = ((hits - hits.mean(1, keepdims=True)) ** 2).sum() / (80 * 4)
        kish = 1 + 4 * (msb - msw) / (msb + 4 * msw)
        clusters = [f"c{i}" for i in range(80) for _ in range(5)]
        assert design_effect(hits.ravel(), clusters) == pytest.approx(kish, rel=0.03)


def test_the_interval_is_about_as_wide_as_a_conversation_bootstrap_where_turns_hardly_correlate():
    # a set like MTRAG's human-evaluated one: 20 conversations of about 7.5 turns, little correlation
    rng = np.random.default_rng(150)
    for _ in range(20):
        lengths = rng.integers(6, 10, 20)
        hits = rng.binomial(lengths, np.clip(rng.normal(0.75, 0.08, 20), 0, 1))
        values, clusters = turns_of(lengths, hits)
        lo, hi = mean_ci(values, binary=True, clusters=clusters)
        b_lo, b_hi = np.percentile(brute_force_cluster_bootstrap(values, clusters, 2000, 2), [2.5, 97.5])
        assert (hi - lo) <= 1.3 * (b_hi - b_lo), ((lo, hi), (b_lo, b_hi))
        assert (hi - lo) >= (b_hi - b_lo) / 1.3


def test_the_student_quantile_is_the_exact_one():
    from scipy import stats

    from pytest_retrieval_eval.ir.stats import t_quantile

    for df in (1, 2, 3, 4, 7, 8, 19, 39, 100, 377, 5000):
        for q in (0.975, 0.9, 0.995):
            assert t_quantile(q, df) == pytest.approx(stats.t.ppf(q, df), rel=1e-7), (df, q)


def stats_t(df: int) -> float:
    from pytest_retrieval_eval.ir.stats import t_quantile

    return t_quantile(0.975, df)


def test_the_detectable_drop_over_conversations_counts_what_their_turns_are_worth():
    from pytest_retrieval_eval.ir.stats import design_effect, detectable_drop, effective_size, queries_needed

    rng = np.random.default_rng(21)
    lengths, hits, _ = simulated_hits(rng, 1, 60, 0.8, 0.0, 0.6)
    values, clusters = turns_of(lengths[0], hits[0])
    deff = design_effect(values, clusters)
    assert deff > 2
    flat, grouped = detectable_drop(values), detectable_drop(values, clusters=clusters)
    worth = effective_size(values, clusters)  # the interval's n: the design effect, widened for 59 degrees of freedom
    assert len(values) / worth == pytest.approx(deff * (stats_t(59) / 1.959964) ** 2, rel=1e-6)
    assert grouped == pytest.approx(flat * np.sqrt(len(values) / worth), rel=1e-9)
    assert queries_needed(values, 0.1, clusters=clusters) == pytest.approx(queries_needed(values, 0.1) * len(values) / worth,
                                                                          rel=0.02)
    ids = [f"q{i}" for i in range(len(values))]  # singletons: today's numbers
    assert detectable_drop(values, clusters=ids) == flat and queries_needed(values, 0.1, clusters=ids) == queries_needed(values, 0.1)


def test_a_paired_test_over_too_few_units_cannot_reach_alpha():
    from pytest_retrieval_eval.ir.stats import can_be_significant, smallest_p

    assert smallest_p(5) == 2 / 32 and not can_be_significant(5, 0.05) and can_be_significant(2000, 0.05)
    assert can_be_significant(6, 0.05) and not can_be_significant(6, 0.03) and can_be_significant(7, 0.03)
    # the randomization test agrees: five conversations that all move one way give no p below .05
    clusters = [f"c{i}" for i in range(5) for _ in range(3)]
    assert paired_randomization(np.ones(15), np.zeros(15), clusters=clusters) >= 0.05
    six = [f"c{i}" for i in range(6) for _ in range(3)]
    assert paired_randomization(np.ones(18), np.zeros(18), clusters=six) < 0.05


def test_the_drop_of_a_binary_measure_reads_the_design_effect_and_the_pairing_within_conversations():
    from pytest_retrieval_eval.ir.stats import split_difference_ci

    rng = np.random.default_rng(2027)
    covered, ratios, runs = 0, [], 400
    for _ in range(runs):  # 40 conversations of 2-8 turns; each conversation's own rate shifts both sides together
        lengths = rng.integers(2, 9, 40)
        conv = np.repeat(np.arange(40), lengths)
        first = np.r_[True, np.diff(conv) != 0]
        shift = rng.normal(0.0, 0.8, 40)[conv]
        rate = 1 / (1 + np.exp(-(np.where(first, 1.6, 0.6) + shift)))
        hits = (rng.random(len(conv)) < rate).astype(float)
        clusters = [f"c{c}" for c in conv]
        lo, hi = split_difference_ci(hits, first, clusters, binary=True)
        covered += lo <= true_drop() <= hi
        if len(ratios) < 10:
            x = hits
            b = _brute_force_drops(x, first, conv, 1000, len(ratios))
            b_lo, b_hi = np.percentile(b, [2.5, 97.5])
            ratios.append((hi - lo) / (b_hi - b_lo))
    assert 0.93 <= covered / runs <= 0.97, covered / runs
    assert 0.8 <= np.mean(ratios) <= 1.3, ratios


@functools.lru_cache(maxsize=1)
def true_drop() -> float:
    """The drop the simulation above draws: the first turn's rate minus the follow-ups' (turn-
    weighted over lengths 2-8), by a large draw of the conversations' shifts."""
    shift = np.random.default_rng(0).normal(0.0, 0.8, 2_000_000)
    first = float((1 / (1 + np.exp(-(1.6 + shift)))).mean())
    follow = float((1 / (1 + np.exp(-(0.6 + shift)))).mean())
    return first - follow



def _brute_force_drops(x: np.ndarray, first: np.ndarray, conv: np.ndarray, resamples: int, seed: int) -> np.ndarray:
    """The drop over ``resamples`` draws of whole conversations, one draw at a time."""
    rng = np.random.default_rng(seed)
    c = int(conv.max()) + 1
    parts = np.array([[x[(conv == i) & first].sum(), ((conv == i) & first).sum(),
                       x[(conv == i) & ~first].sum(), ((conv == i) & ~first).sum()] for i in range(c)])
    drops = np.empty(resamples)
    for r in range(resamples):
        s1, n1, s2, n2 = parts[rng.integers(0, c, c)].sum(axis=0)
        drops[r] = s1 / n1 - s2 / n2
    return drops
