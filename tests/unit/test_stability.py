"""How much an engine moves on its own between identical trials, and the noise-aware gate that
will not fail a drop inside that spread."""

from __future__ import annotations

import json
import random

import pytest

from pytest_retrieval_eval.data.labeled import LabeledSet
from pytest_retrieval_eval.gate.checks import check_drops
from pytest_retrieval_eval.rules.drops import MaxDrop
from pytest_retrieval_eval.rules.settings import GateSettings
from pytest_retrieval_eval.archive.saved import results_json
from pytest_retrieval_eval.gate.verdict import for_run, verdict_of as judge
from conftest import evaluate_engine
from pytest_retrieval_eval.evaluation.results import RunResults
from pytest_retrieval_eval.analysis.stability import stability_of
from pytest_retrieval_eval.types import LabeledQuery, QueryResult

LABELED = LabeledSet(tuple(LabeledQuery(f"q{i}", f"question {i}", {f"d{i}": 1}) for i in range(40)), name="set")


class Ties:
    """Scores the gold and nine others alike and breaks the tie at random (as an approximate
    index or an unstable sort can): each trial may rank the gold anywhere in the ten."""

    name = "ties"

    def __init__(self, seed):
        self.random = random.Random(seed)

    def retrieve(self, query, k):
        i = query.split()[1]
        tied = [f"d{i}", *(f"x{i}.{j}" for j in range(9))]
        self.random.shuffle(tied)
        return tied


class Fixed(Ties):
    name = "fixed"

    def retrieve(self, query, k):
        i = query.split()[1]
        return [f"x{i}.0", f"d{i}"]


def trials(engine, n):
    first = evaluate_engine(engine, LABELED)
    first.trial_results = tuple(evaluate_engine(engine, LABELED).results for _ in range(n - 1))
    return first


def test_an_engine_that_shuffles_ties_changes_its_top_k_and_a_deterministic_one_does_not():
    moving, still = stability_of(trials(Ties(1), 5), 5, ["hit@5"]), stability_of(trials(Fixed(1), 5), 5, ["hit@5"])
    assert moving.trials == 5 and moving.share > 0.9  # ten tied, shuffled: a top 5 the same five times is rare
    lo, hi, sd = moving.spread["hit@5"]
    assert 0 < hi - lo == moving.width("hit@5") and sd > 0
    assert (still.share, still.changed, still.spread["hit@5"]) == (0.0, (), (1.0, 1.0, 0.0))
    assert stability_of(evaluate_engine(Fixed(1), LABELED), 5, ["hit@5"]) is None  # one trial: nothing to say


def test_results_json_and_the_verdict_say_the_share_that_changed():
    run = RunResults([trials(Ties(2), 3), trials(Fixed(2), 3)])
    verdict = judge(run, for_run(run, GateSettings()))
    by = {x.engine: x for x in verdict.stability}
    assert by["fixed"].share == 0.0 and by["ties"].share > 0
    doc = json.loads(results_json(verdict))
    assert {x["engine"]: x["changed_share"] for x in doc["stability"]} == {"fixed": 0.0, "ties": by["ties"].share}


class Diff:
    engine, measure, before, after, p, p_adjusted, losses, wins, movers = "e", "hit@5", 0.8, 0.7, 0.001, 0.002, 4, 0, ()

    def day_note(self):
        return ""


def test_the_noise_aware_gate_fails_a_significant_drop_only_beyond_the_engines_own_spread():
    rule = [MaxDrop.parse("hit@5=0.05", source="t")]
    failures, warnings = check_drops(rule, [Diff()], noise_aware=True, alpha=0.05, spreads={("e", "hit@5"): 0.12})
    assert failures == [] and warnings == ["e: hit@5 dropped 0.1000, not failed: within the engine's own spread "
                                           "across this run's trials (0.1200); 0.8000 -> 0.7000, significant (rule "
                                           "hit@5=0.05, from t)"]
    failures, _ = check_drops(rule, [Diff()], noise_aware=True, alpha=0.05, spreads={("e", "hit@5"): 0.04})
    assert "beyond the spread across trials 0.0400" in failures[0]
    failures, _ = check_drops(rule, [Diff()], noise_aware=False, alpha=0.05, spreads={("e", "hit@5"): 0.12})
    assert failures  # without --retrieval-noise-aware the delta alone decides, as before


def test_each_question_that_flips_between_trials_has_its_flip_rate():
    """The share of trials whose hit@k differs from the majority's: a question found in 2 of 5
    trials flips in 2 (0.4), one found in all or none is not flaky."""
    labeled = LabeledSet(tuple(LabeledQuery(f"q{i}", f"question {i}", {f"d{i}": 1}) for i in range(3)), name="set")
    hit, miss = (lambda i: QueryResult(f"q{i}", (f"d{i}",))), (lambda i: QueryResult(f"q{i}", ("x",)))
    trials = [(hit(0), miss(1), hit(2)), (miss(0), miss(1), hit(2)), (hit(0), miss(1), hit(2)),
              (miss(0), miss(1), hit(2)), (miss(0), miss(1), hit(2))]
    e = EvaluationResultOf(labeled, trials)
    st = stability_of(e, 5, ["hit@5"])
    assert dict(st.flaky) == {"q0": 2}
    assert (st.flip_rate("q0"), st.flip_rate("q1"), st.flip_rate("q2")) == (0.4, 0.0, 0.0)
    assert st.to_dict()["flaky"] == {"q0": {"found": 2, "flip_rate": 0.4}}
    verdict = judge(RunResults([e]), for_run(RunResults([e]), GateSettings()))
    assert dict(verdict.stability[0].flaky) == {"q0": 2}  # the analysis keeps them, and results.json
    assert json.loads(results_json(verdict))["stability"][0]["flaky"] == {"q0": {"found": 2, "flip_rate": 0.4}}
    from pytest_retrieval_eval.report.terminal import trial_lines

    assert "  flaky at hit@5: 1 of 3 questions flip between trials: q0 (found in 2 of 5)" in trial_lines(verdict, [])


def EvaluationResultOf(labeled, trials):
    from pytest_retrieval_eval.analysis.result import EvaluationResult

    return EvaluationResult("coin", labeled, trials[0], trial_results=tuple(trials[1:]))


def test_a_rule_judged_on_its_interval_takes_the_engines_spread_across_trials_in():
    """--retrieval-confidence=lower judges a rule on an interval widened by the trials' spread (in
    quadrature), and says so; one trial, or trials that agree, leave the interval as it was."""
    from pytest_retrieval_eval.analysis.scores import Scores
    from pytest_retrieval_eval.analysis.stability import Z95
    from pytest_retrieval_eval.rules.thresholds import parse_thresholds

    labeled = LabeledSet(tuple(LabeledQuery(f"q{i}", f"question {i}", {f"d{i}": 1}) for i in range(60)), name="set")
    rng = random.Random(4)

    def trial(p):
        return tuple(QueryResult(f"q{i}", (f"d{i}",) if rng.random() < p else ("x",)) for i in range(60))

    moving = EvaluationResultOf(labeled, [trial(0.8), trial(0.6), trial(0.9), trial(0.7)])
    rule = tuple(parse_thresholds([("hit@5>=0.5", "--retrieval-threshold")]))
    run = RunResults([moving])
    verdict = judge(run, for_run(run, GateSettings(thresholds=rule, confidence="lower")))
    (row,) = verdict.rows
    lo, hi = Scores.of(moving).ci("hit@5")
    point = Scores.of(moving).mean("hit@5")
    sd = verdict.stability[0].spread["hit@5"][2]
    assert sd > 0
    assert row.intervals["hit@5"][0] == pytest.approx(point - ((point - lo) ** 2 + (Z95 * sd) ** 2) ** 0.5)
    assert row.intervals["hit@5"][1] == pytest.approx(min(1.0, point + ((hi - point) ** 2 + (Z95 * sd) ** 2) ** 0.5))
    assert "the interval widened by the spread across 4 trials" in row.details["hit@5"]
    still = EvaluationResultOf(labeled, [moving.results] * 3)
    run = RunResults([still])
    (row,) = judge(run, for_run(run, GateSettings(thresholds=rule, confidence="lower"))).rows
    assert row.intervals["hit@5"] == Scores.of(still).ci("hit@5") and "hit@5" not in row.details
