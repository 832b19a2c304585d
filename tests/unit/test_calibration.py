"""A gate calibrated on itself: a saved run rerun against itself says how often each rule fails
an engine that did not change, and how often it catches a drop injected into the engine's
rankings; checked against reruns of the engine itself, judged by the gate."""

from __future__ import annotations

import functools
import math
from dataclasses import replace

import numpy as np
import pytest

from conftest import evaluate_engine
from pytest_retrieval_eval.analysis.analyse import analyse, baseline_measures
from pytest_retrieval_eval.analysis.baseline import compare
from pytest_retrieval_eval.analysis.result import EvaluationResult
from pytest_retrieval_eval.analysis.scores import Scores
from pytest_retrieval_eval.data.labeled import LabeledSet
from pytest_retrieval_eval.evaluation.results import RunResults
from pytest_retrieval_eval.gate.calibrate import calibrate
from pytest_retrieval_eval.gate.verdict import decide, for_run, verdict_of
from pytest_retrieval_eval.rules.drops import MaxDrop
from pytest_retrieval_eval.rules.settings import GateSettings
from pytest_retrieval_eval.types import LabeledQuery, QueryResult

N, RANDOM, TRIALS, RERUNS = 300, 30, 10, 200
LABELED = LabeledSet(tuple(LabeledQuery(f"q{i}", f"question {i}", {f"d{i}": 1}) for i in range(N)), name="set")


class Coin:
    """Finds a question's document at rank 1 or not at all (0 or 1 per question at every cutoff):
    270 questions always the same way (85% found), 30 (10%) by a coin toss on every call."""

    name = "coin"

    def __init__(self, seed: int) -> None:
        rng = np.random.default_rng(2060)
        self.random = set(rng.choice(N, RANDOM, replace=False).tolist())
        self.found = rng.random(N) < 0.85
        self.rng = np.random.default_rng(seed)

    def hits(self) -> np.ndarray:
        """One run's answers: found or not, per question."""
        return np.where([i in self.random for i in range(N)], self.rng.random(N) < 0.5, self.found)

    def retrieve(self, query, k):
        i = int(query.split()[1])
        found = (self.rng.random() < 0.5) if i in self.random else bool(self.found[i])
        return [f"d{i}" if found else f"x{i}.0", *(f"x{i}.{j}" for j in range(1, 10))]


#: each question's ranking when the engine finds its document, and when it does not
ANSWERS = [tuple(QueryResult(f"q{i}", (first, *(f"x{i}.{j}" for j in range(1, 10)))) for first in (f"x{i}.0", f"d{i}"))
           for i in range(N)]


def results(hits: np.ndarray) -> tuple[QueryResult, ...]:
    return tuple(ANSWERS[i][int(h)] for i, h in enumerate(hits))


def values(hits: np.ndarray, measures) -> dict[str, dict[str, float]]:
    """The answers' value of every measure, per question: 1 where the document is at rank 1, 0
    where it is not returned, at every cutoff and for mrr alike (what scoring them gives:
    ``test_the_measurements_decision_is_the_gates_verdict``)."""
    per = {f"q{i}": float(h) for i, h in enumerate(hits)}
    return {m: per for m in measures}


RULE = MaxDrop.parse("hit@5=0", source="--retrieval-max-drop")


@functools.lru_cache(maxsize=None)
def recorded():
    """The run as --retrieval-trials=10 records it, judged by the default noise-aware max-drop rule."""
    engine = Coin(seed=1)
    first = evaluate_engine(engine, LABELED)
    first.trial_results = tuple(evaluate_engine(engine, LABELED).results for _ in range(TRIALS - 1))
    run = RunResults([first])
    return run, for_run(run, GateSettings(max_drops=(RULE,), noise_aware=True, alpha=0.05))


@functools.lru_cache(maxsize=None)
def measured():
    """The measurement by hand: the engine rerun 200 times against the recorded run as its
    baseline, unchanged and with a drop of the stated detectable size (that many of the questions
    it found, chosen at random, lost), each judged by the gate's own decision on the rerun."""
    run, s = recorded()
    base = analyse(run, s, run)
    mdd = next(d.drop for d in base.detectable if d.measure == "hit@5")
    engine, rng = Coin(seed=2), np.random.default_rng(3)
    lost = math.ceil(mdd * N - 1e-9)
    measures = baseline_measures(s.columns(run), s.max_drops)

    def failed(hits: np.ndarray) -> bool:
        rerun = RunResults([EvaluationResult("coin", LABELED, results(hits), recorded_values=values(hits, measures))])
        compared = compare(rerun, run, measures, correction=s.correction, gated=True)
        return decide(rerun, s, replace(base, baseline=compared)).failed

    unchanged, dropped = [], []
    for _ in range(RERUNS):
        hits = engine.hits()
        unchanged.append(failed(hits))
        down = hits.copy()
        down[rng.choice(np.flatnonzero(hits), lost, replace=False)] = False
        dropped.append(failed(down))
    return mdd, float(np.mean(unchanged)), float(np.mean(dropped))


def test_an_engine_random_on_a_tenth_of_its_questions_fails_its_own_baseline_rarely_and_a_detectable_drop_mostly():
    mdd, false_fail, power = measured()
    assert false_fail <= 0.05, false_fail
    assert power >= 0.80, power
    print(f"measured over {RERUNS} reruns: false-fail {false_fail:.1%}, power at the detectable drop {mdd:.3f} "
          f"{power:.1%}")


def test_the_calibration_states_both_figures_within_three_points_of_the_measurement():
    run, s = recorded()
    mdd, false_fail, power = measured()
    found = calibrate(run, s, reruns=RERUNS)
    (rule,) = found.rules
    assert (rule.rule, rule.engine, rule.rerun, rule.recorded) == ("max-drop hit@5=0", "coin", "10 trials", "pass")
    assert rule.detectable == pytest.approx(mdd)
    at = rule.at_detectable
    assert at.size == pytest.approx(mdd) and at.reruns == RERUNS
    assert abs(rule.false_fail - false_fail) <= 0.03, (rule.false_fail, false_fail)
    assert abs(at.caught - power) <= 0.03, (at.caught, power)
    print(f"calibrate: false-fail {rule.false_fail:.1%}, power {at.caught:.1%} ({at.share:.1%} of questions moved) "
          f"in {found.seconds:.1f} s")


def test_the_measurements_decision_is_the_gates_verdict():
    """The cheap decision of ``measured`` (the recorded analysis with the rerun's comparison, the
    values known) is what the whole gate says of the rerun, scored."""
    run, s = recorded()
    base = analyse(run, s, run)
    engine = Coin(seed=2)
    measures = baseline_measures(s.columns(run), s.max_drops)
    for drop in (0, 0, 40):
        hits = engine.hits()
        hits[np.flatnonzero(hits)[:drop]] = False
        rerun = RunResults([EvaluationResult("coin", LABELED, results(hits), recorded_values=values(hits, measures))])
        compared = compare(rerun, run, measures, correction=s.correction, gated=True)
        quick = decide(rerun, s, replace(base, baseline=compared))
        scored = RunResults([EvaluationResult("coin", LABELED, results(hits))])
        assert {m: Scores.of(scored.evaluations[0]).per_query(m) for m in measures} == values(hits, measures)
        whole = verdict_of(scored, s, baseline=run)  # a single trial: no spread across trials to name
        assert [(f.kind, f.engine, f.brief) for f in quick.failures] == [(f.kind, f.engine, f.brief)
                                                                         for f in whole.failures]
    assert quick.failed  # the last: 40 of the questions found lost
