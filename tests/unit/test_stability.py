"""How much an engine moves on its own between identical trials, and the noise-aware gate that
will not fail a drop inside that spread."""

from __future__ import annotations

import json
import random

from pytest_retrieval_eval.data.labeled import LabeledSet
from pytest_retrieval_eval.gate.checks import check_drops
from pytest_retrieval_eval.rules.drops import MaxDrop
from pytest_retrieval_eval.rules.settings import GateSettings
from pytest_retrieval_eval.archive.saved import results_json
from pytest_retrieval_eval.gate.verdict import for_run, verdict_of as judge
from conftest import evaluate_engine
from pytest_retrieval_eval.evaluation.results import RunResults
from pytest_retrieval_eval.analysis.stability import stability_of
from pytest_retrieval_eval.types import LabeledQuery

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
