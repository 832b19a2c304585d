"""Prediction-powered means (ir/ppi.py): the arithmetic on hand-computed cases, the edge cases,
and the simulation proof issue 44 asks for: on synthetic collections with complete true labels,
judges from near-random to near-perfect (biased up and down) and 20 to 200 human-judged
questions of 400, the 95% interval covers the mean over all 400 under the true labels in at least
93% of 1,000 draws in every setting, and is narrower than the human-only interval whenever the
judge's kappa is at least 0.6. ``bench/ppi_coverage.py`` prints the same grid for the docs."""

from __future__ import annotations

import math

import numpy as np
import pytest

from pytest_retrieval_eval.ir.metrics import evaluate
from pytest_retrieval_eval.ir.ppi import MIN_BINARY, PPIEstimate, ppi_arrays, ppi_mean
from pytest_retrieval_eval.ir.agreement import cohen_kappa
from pytest_retrieval_eval.ir.stats import wilson_ci

N, POOL, DRAWS, SIZES = 400, 20, 1000, (20, 50, 100, 200)
#: binary judges: (name, rate relevant -> not, rate not -> relevant)
BINARY_JUDGES = (("near-perfect", 0.02, 0.01), ("errs 15%", 0.15, 0.15), ("generous", 0.05, 0.20),
                 ("strict", 0.40, 0.02), ("weak", 0.35, 0.35), ("near-random", 0.45, 0.45))
#: graded (0-3) judges: (name, error rate, how it errs)
GRADED_JUDGES = (("errs 15%", 0.15, "any"), ("generous", 0.30, "up"), ("strict", 0.30, "down"),
                 ("random", 1.0, "random"))


# --- the synthetic collection -------------------------------------------------------------------

def collection(seed: int, *, graded: bool, n: int = N) -> np.ndarray:
    """True grades of each question's pool (questions x POOL, the engine's order): relevance is
    likelier near the top and for easier questions; graded ones are 1-3 when relevant."""
    rng = np.random.default_rng(seed)
    ease = rng.beta(1.2, 4.0, size=(n, 1))
    rel = rng.random((n, POOL)) < np.clip(ease * 1.8 * 0.9 ** np.arange(POOL), 0, 1)
    if not graded:
        return rel.astype(np.int64)
    return rel * rng.choice([1, 2, 3], p=[0.5, 0.3, 0.2], size=(n, POOL))


def binary_judge(truth: np.ndarray, miss: float, false_alarm: float, seed: int) -> np.ndarray:
    """Flips relevant to not at ``miss`` and not to relevant at ``false_alarm``."""
    u = np.random.default_rng(seed).random(truth.shape)
    return np.where(truth > 0, u >= miss, u < false_alarm).astype(np.int64)


def graded_judge(truth: np.ndarray, rate: float, how: str, seed: int) -> np.ndarray:
    """Errs on ``rate`` of pairs: ``any`` another grade at random, ``up``/``down`` one grade
    (where there is one), ``random`` every grade uniform whatever the truth."""
    rng = np.random.default_rng(seed)
    if how == "random":
        return rng.integers(0, 4, size=truth.shape)
    errs = rng.random(truth.shape) < rate
    if how == "any":
        other = (truth + rng.integers(1, 4, size=truth.shape)) % 4
    else:
        other = np.clip(truth + (1 if how == "up" else -1), 0, 3)
    return np.where(errs, other, truth)


def ndcg10(grades: np.ndarray) -> np.ndarray:
    """trec_eval's ndcg_cut.10 per question (linear gains, ideal from every judged grade)."""
    disc = 1 / np.log2(np.arange(2, 12))
    ideal = (-np.sort(-grades, axis=1))[:, :10] @ disc
    return np.divide(grades[:, :10] @ disc, ideal, out=np.zeros(len(grades)), where=ideal > 0)


def hit5(grades: np.ndarray) -> np.ndarray:
    return (grades[:, :5] >= 1).any(axis=1).astype(np.float64)


MEASURES = {"ndcg@10": ndcg10, "hit@5": hit5}


def as_trec(grades: np.ndarray) -> tuple[dict, dict]:
    qrels = {f"q{i}": {f"d{i}.{j}": int(g) for j, g in enumerate(row)} for i, row in enumerate(grades)}
    run = {f"q{i}": [f"d{i}.{j}" for j in range(grades.shape[1])] for i in range(len(grades))}
    return qrels, run


# --- the simulation grid ------------------------------------------------------------------------

def settings(seed: int = 44):
    """(collection, judge, measure, kappa, true per-query values, judged per-query values)."""
    out = []
    for graded, judges in ((False, BINARY_JUDGES), (True, GRADED_JUDGES)):
        truth = collection(seed, graded=graded)
        for k, (name, a, b) in enumerate(judges):
            judge = graded_judge(truth, a, b, seed + k) if graded else binary_judge(truth, a, b, seed + k)
            kappa = cohen_kappa(truth.ravel().tolist(), judge.ravel().tolist())
            for measure in (("ndcg@10",) if graded else ("ndcg@10", "hit@5")):
                f = MEASURES[measure]
                out.append(("graded" if graded else "binary", name, measure, kappa, f(truth), f(judge)))
    return out


def simulate(draws: int = DRAWS, sizes=SIZES, seed: int = 44) -> list[dict]:
    """Every setting x human sample size: coverage of the true mean over all N, the reported
    interval's mean width over the human-only one's, how often it is narrower, and how often it
    fell back to the human-only interval."""
    rng = np.random.default_rng(seed)
    samples = {n: np.argsort(rng.random((draws, N)), axis=1)[:, :n] for n in sizes}
    rows = []
    for labels, judge, measure, kappa, true, judged in settings(seed):
        truth = float(true.mean())
        for n, idx in samples.items():
            r = ppi_arrays(true[idx], judged[idx], float(judged.sum()), float((judged ** 2).sum()), N,
                           binary=measure == "hit@5")
            width, human = r["high"] - r["low"], r["human_high"] - r["human_low"]
            rows.append({"labels": labels, "judge": judge, "measure": measure, "kappa": kappa, "n": n,
                         "truth": truth, "coverage": float(np.mean((r["low"] <= truth) & (truth <= r["high"]))),
                         "human_coverage": float(np.mean((r["human_low"] <= truth) & (truth <= r["human_high"]))),
                         "width_ratio": float(width.mean() / human.mean()),
                         "narrower": float(np.mean(width < human)), "fell_back": float(np.mean(~r["helps"]))})
    return rows


@pytest.fixture(scope="module")
def grid():
    return simulate()


# --- the arithmetic -----------------------------------------------------------------------------

def test_small_case_matches_the_hand_computed_values():
    # N = 6; the human-judged are the first 3. Y = .2 .4 .9, Yhat_h = .3 .5 .7, Yhat_u = .1 .6 .8
    judged = [0.3, 0.5, 0.7, 0.1, 0.6, 0.8]
    r = ppi_mean(judged, [0.2, 0.4, 0.9], [0.3, 0.5, 0.7])
    # s_yy = .13, s_hh = .04, s_yh = .07 (ddof 1); mean_u = .5, s_uu = .13;
    # lam = .07 / (.04 + 3/3 * .13) = .41176..., estimate = .5 + lam * (.5 - .5) = .5
    lam = 0.07 / 0.17
    assert r.lam == pytest.approx(lam)
    assert r.estimate == pytest.approx(0.5) and r.human_mean == pytest.approx(0.5)
    var_ppi = (0.13 - 2 * lam * 0.07 + lam ** 2 * 0.04) / 3 + lam ** 2 * 0.13 / 3
    assert var_ppi == pytest.approx(0.13 / 3 - 0.07 ** 2 / 0.17 / 3)
    t2 = 4.302652729911275  # t(2) two-sided 95%
    assert r.ppi_interval == pytest.approx((max(0.0, 0.5 - t2 * math.sqrt(var_ppi)), min(1.0, 0.5 + t2 * math.sqrt(var_ppi))))
    assert r.human_interval == pytest.approx((max(0.0, 0.5 - t2 * math.sqrt(0.13 / 3)), min(1.0, 0.5 + t2 * math.sqrt(0.13 / 3))))
    # three questions: an unrelated judge reaches r^2 >= t(1, 90%)^2 / (1 + t^2) = .9755 one time in 20;
    # this judge's reduction (1 - var_ppi / var_h = .2217) is not beyond chance
    assert r.fell_back and r.interval == r.human_interval and r.effective_n == 3.0
    assert "beyond chance" in r.note


def test_a_good_judge_narrows_the_interval_and_counts_as_more_humans():
    rng = np.random.default_rng(5)
    y = rng.random(400)
    judged = np.clip(y + rng.normal(0, 0.05, 400), 0, 1)
    r = ppi_mean(judged, y[:40], judged[:40])
    assert not r.fell_back and r.note == ""
    assert r.interval == r.ppi_interval
    assert r.interval[1] - r.interval[0] < 0.5 * (r.human_interval[1] - r.human_interval[0])
    assert 0.8 < r.lam <= 1.0
    half, human_half = (r.interval[1] - r.interval[0]) / 2, (r.human_interval[1] - r.human_interval[0]) / 2
    assert r.effective_n == pytest.approx(40 * (human_half / half) ** 2)
    assert r.interval[0] < y.mean() < r.interval[1]
    assert isinstance(r, PPIEstimate) and (r.n, r.N) == (40, 400)


def test_a_judge_shifted_by_a_constant_is_corrected():
    rng = np.random.default_rng(3)
    y = 0.1 + 0.6 * rng.random(20000)
    humans = rng.choice(len(y), size=30, replace=False)
    r = ppi_mean(y + 0.2, y[humans], y[humans] + 0.2)
    # slope 1 on the humans; lam = cov / (var_h + n / (N - n) * var_u) is just under 1
    assert 0.99 < r.lam < 1.0 and not r.fell_back
    assert abs(r.estimate - y.mean()) < 0.005  # the judge's +.2 is removed
    assert r.interval[0] < y.mean() < r.interval[1]


def test_the_interval_is_clipped_to_the_measures_range_only_when_given_one():
    y = np.array([0.0] * 18 + [1.0, 0.0])
    clipped = ppi_mean(np.zeros(50), y, np.zeros(20))
    assert clipped.human_interval[0] == 0.0
    free = ppi_mean(np.zeros(50), y, np.zeros(20), bounds=None)
    assert free.human_interval[0] < 0.0
    with pytest.raises(ValueError, match="outside the measure's range"):
        ppi_mean([0.5, 1.5], [0.5, 0.5], [0.5, 0.5])


def test_human_values_all_equal_get_wilson_not_a_point():
    r = ppi_mean(np.ones(100), np.ones(20), np.ones(20))
    assert r.fell_back and r.human_interval == pytest.approx(wilson_ci(1.0, 20)) and r.human_interval[0] < 1.0
    assert "zero" in r.note


@pytest.mark.parametrize("n", [0, 1])
def test_fewer_than_two_human_questions_give_no_interval_and_say_why(n):
    r = ppi_mean([0.5] * 10, [0.4] * n, [0.5] * n)
    assert all(math.isnan(x) for x in (*r.interval, *r.human_interval, *r.ppi_interval))
    assert r.fell_back and r.n == n and ("no human-judged" in r.note if n == 0 else "one human-judged" in r.note)
    assert math.isnan(r.estimate) if n == 0 else r.estimate == 0.4


def test_every_question_human_judged_is_the_human_mean():
    y = np.linspace(0, 1, 10)
    r = ppi_mean(y, y, y)
    assert r.fell_back and r.estimate == pytest.approx(0.5) and "every question" in r.note


@pytest.mark.parametrize("args, match", [
    (([0.5, math.nan], [0.5, 0.5], [0.5, 0.5]), "judged: 1 value"),
    (([0.5, 0.5], [0.5, math.nan], [0.5, 0.5]), "human: 1 value"),
    (([0.5, 0.5], [0.5, 0.5], [0.5]), "pair the same questions"),
    (([0.5], [0.5, 0.5], [0.5, 0.5]), "among the N"),
    (([[0.5]], [0.5], [0.5]), "one value per question"),
])
def test_bad_inputs_are_refused(args, match):
    with pytest.raises(ValueError, match=match):
        ppi_mean(*args)


def test_the_batched_arithmetic_is_the_one_ppi_mean_reports():
    rng = np.random.default_rng(8)
    truth = collection(8, graded=True)
    true, judged = ndcg10(truth), ndcg10(graded_judge(truth, 0.3, "any", 9))
    idx = np.argsort(rng.random((5, N)), axis=1)[:, :30]
    r = ppi_arrays(true[idx], judged[idx], float(judged.sum()), float((judged ** 2).sum()), N)
    for i in range(5):
        one = ppi_mean(judged, true[idx[i]], judged[idx[i]])
        assert one.interval == pytest.approx((r["low"][i], r["high"][i]))
        assert one.fell_back == (not r["helps"][i])


# --- the simulation -----------------------------------------------------------------------------

@pytest.mark.parametrize("graded", [False, True])
def test_the_vectorised_measures_are_the_repos_own(graded):
    truth = collection(3, graded=graded, n=60)
    qrels, run = as_trec(truth)
    got = evaluate(qrels, run, ["ndcg@10", "hit@5"], per_query=True)
    assert np.allclose(list(got["ndcg@10"].values()), ndcg10(truth))
    assert np.array_equal(list(got["hit@5"].values()), hit5(truth))


def test_the_grid_spans_near_random_to_near_perfect_judges(grid):
    kappas = {(r["labels"], r["judge"]): r["kappa"] for r in grid}
    assert min(kappas.values()) < 0.1 and max(kappas.values()) > 0.9
    assert sum(k >= 0.6 for k in kappas.values()) >= 3 and sum(k < 0.6 for k in kappas.values()) >= 3
    assert {r["n"] for r in grid} == set(SIZES)


def test_intervals_cover_the_true_mean_in_every_setting(grid):
    low = [(r["labels"], r["judge"], r["measure"], r["n"], r["coverage"]) for r in grid if r["coverage"] < 0.93]
    assert low == []


def test_a_judge_of_kappa_at_least_06_narrows_the_interval(grid):
    good = [r for r in grid if r["kappa"] >= 0.6 and not (r["measure"] == "hit@5" and r["n"] < MIN_BINARY)]
    assert len(good) >= 12
    wide = [(r["labels"], r["judge"], r["measure"], r["n"], round(r["width_ratio"], 3)) for r in good
            if not r["width_ratio"] < 1.0]
    assert wide == []
    # and per draw, not only on average: it falls back (to an equal width) in few draws
    assert min(r["narrower"] for r in good) >= 0.85


def test_a_0_1_measure_on_few_humans_keeps_the_human_only_wilson_interval(grid):
    few = [r for r in grid if r["measure"] == "hit@5" and r["n"] < MIN_BINARY]
    assert few and all(r["fell_back"] == 1.0 and r["width_ratio"] == 1.0 for r in few)
    y = np.array([1.0] * 14 + [0.0] * 6)
    r = ppi_mean(np.r_[y, np.ones(80)], y, y, binary=True)  # a perfect judge: still 20 humans only
    assert r.fell_back and r.interval == pytest.approx(wilson_ci(0.7, 20)) and "0/1 measure on 20" in r.note
    with pytest.raises(ValueError, match="0 or 1"):
        ppi_mean([0.5, 1.0], [1.0, 0.0], [1.0, 0.0], binary=True)


def test_a_random_judge_falls_back_and_a_near_random_one_barely_narrows(grid):
    random = [r for r in grid if r["judge"] == "random"]
    assert len(random) == len(SIZES) and min(r["fell_back"] for r in random) >= 0.9
    near = [r for r in grid if r["judge"] == "near-random"]
    assert near and min(r["width_ratio"] for r in near) > 0.98


# --- the must-show scenario: 40 of 400 human-judged, ndcg@10 ----------------------------

def test_forty_humans_and_a_judge_erring_on_15_percent_of_pairs():
    covered, ratios, random_fell_back, notes = 0, [], 0, set()
    for seed in range(40):
        truth = collection(1000 + seed, graded=True)
        humans = np.random.default_rng(seed).choice(N, size=40, replace=False)
        true = ndcg10(truth)
        if seed == 0:  # the vectorised ndcg@10 is the repo's (for every collection: see above)
            qrels, run = as_trec(truth)
            assert np.allclose(list(evaluate(qrels, run, "ndcg@10", per_query=True)["ndcg@10"].values()), true)
        judge = graded_judge(truth, 0.15, "any", 2000 + seed)
        assert 0.14 < np.mean(judge != truth) < 0.16
        judged = ndcg10(judge)
        r = ppi_mean(judged, true[humans], judged[humans])
        covered += r.interval[0] <= true.mean() <= r.interval[1]
        ratios.append((r.interval[1] - r.interval[0]) / (r.human_interval[1] - r.human_interval[0]))
        noise = ndcg10(graded_judge(truth, 1.0, "random", 3000 + seed))
        rr = ppi_mean(noise, true[humans], noise[humans])
        random_fell_back += rr.fell_back and rr.interval == rr.human_interval
        notes.add(rr.note.split(" (")[0])
    assert covered >= 36
    assert np.mean(ratios) < 1.0
    assert random_fell_back >= 36
    assert "the judge does not narrow the interval beyond chance" in notes
