"""A judge's validation gates the rules on its grades: rules on ``+judged`` and ``~ppi`` measures
with a judge that failed ``judge --validate`` fail the run by name (kind ``judge``: the judge, its
kappa, the floor, the command that validates it again) instead of passing or failing on its
numbers, unless ``allow_failed_judge`` says so; a judge never validated draws a warning; rules on
the human labels gate as before throughout."""

from __future__ import annotations

import pytest

from pytest_retrieval_eval import QueryResult
from pytest_retrieval_eval.data.judges import Judge, Panel
from pytest_retrieval_eval.data.judgments import Judgment, Judgments
from pytest_retrieval_eval.data.labeled import LabeledSet
from pytest_retrieval_eval.evaluation.judging import JudgmentsUsed, used, with_judgments
from pytest_retrieval_eval.analysis.result import EvaluationResult
from pytest_retrieval_eval.evaluation.results import RunResults
from pytest_retrieval_eval.gate.verdict import FAILURE_KINDS, verdict_of
from pytest_retrieval_eval.ir.measures import Measure, judge_dependent
from pytest_retrieval_eval.rules.drops import parse_max_drops
from pytest_retrieval_eval.rules.settings import GateSettings
from pytest_retrieval_eval.rules.thresholds import parse_thresholds
from pytest_retrieval_eval.types import LabeledQuery

JUDGE = Judge("model-a", "p" * 64, 0.0, 1, "127.0.0.1")
OTHER = Judge("model-b", "p" * 64, 0.0, 3, "127.0.0.1")
LABELED = LabeledSet((LabeledQuery("q1", "alpha?", {"a": 1}), LabeledQuery("q2", "beta?", {"b": 1, "x": 0})),
                     name="set")
FAILED = {"kappa": 0.12, "base_rate": 0.5, "pairs": 40, "one_sided": False, "floor": 0.4, "passed": False,
          "confusion": {}, "hidden": 40}
PASSED = {**FAILED, "kappa": 0.71, "passed": True}
#: hit@1+judged is 0.5 (q1's top document c judged relevant, q2's top x judged not by the humans);
#: hit@1 is 0 and hit@3 is 1 on the human labels
RULES = ("one:hit@1+judged>=0.99", "one:hit@1+judged>=0.1", "one:hit@3>=0.9")


def judged_run(validations=None, judge=JUDGE, results="out/results.json") -> RunResults:
    run = RunResults([EvaluationResult("one", LABELED, (QueryResult("q1", ("c", "a", "d")),
                                                         QueryResult("q2", ("x", "e", "b"))))])
    judgments = Judgments([Judgment("q1", "c", 3, (3,), "s" * 64, judge), Judgment("q2", "e", 2, (2,), "s" * 64, judge)])
    run, _ = with_judgments(run, judgments, shown_path="j.jsonl", validations=validations, results=results)
    return run


def settings(*rules: str, **changes) -> GateSettings:
    return GateSettings(thresholds=tuple(parse_thresholds((r, "test") for r in rules)), **changes)


def test_the_judge_dependent_quantities_are_the_judged_and_the_ppi_ones():
    assert judge_dependent("ndcg@10+judged") and judge_dependent("shadow.hit@5+judged")
    assert judge_dependent("ndcg@10~ppi") and judge_dependent("shadow.ndcg@10~ppi")
    assert not judge_dependent("ndcg@10") and not judge_dependent("judged@10") and not judge_dependent("errors")
    assert Measure.parse("nDCG@10+judged").judge_dependent and not Measure.parse("judged@5").judge_dependent


def test_rules_on_a_failed_judges_grades_fail_the_run_by_name_and_are_not_gated_on_its_numbers():
    run = judged_run({JUDGE.fingerprint: FAILED})
    assert run.evaluations[0].mean("hit@1+judged") == 0.5 and run.evaluations[0].mean("hit@3") == 1.0
    verdict = verdict_of(run, settings(*RULES))
    assert verdict.failed and [f.kind for f in verdict.failures] == ["judge"]
    assert verdict.of_kind("rule") == []  # 0.5 < 0.99 is not what fails: the judge is
    assert str(verdict.failures[0]) == (
        f"judge model-a ({JUDGE.fingerprint}) failed judge --validate (Cohen's kappa 0.12 on 40 hidden human "
        "label(s), base rate 50%, floor 0.4), so the rule(s) on its grades are not gated: one:hit@1+judged>=0.99, "
        "one:hit@1+judged>=0.1; validate it again with `python -m pytest_retrieval_eval judge out/results.json "
        "--validate --judgments=j.jsonl --model=model-a`, or gate on it anyway with --retrieval-allow-failed-judge")
    assert FAILURE_KINDS.index("judge") < FAILURE_KINDS.index("rule")  # listed before the rules' own
    assert verdict.settings.thresholds == settings(*RULES).thresholds  # the verdict reports every rule given


def test_rules_on_the_human_labels_still_gate_beside_a_failed_judge():
    verdict = verdict_of(judged_run({JUDGE.fingerprint: FAILED}), settings(*RULES, "one:hit@1>=0.5"))
    assert [f.kind for f in verdict.failures] == ["judge", "rule"]
    assert verdict.of_kind("rule")[0].startswith("one: hit@1 = 0.0000, required >= 0.5")


def test_a_max_drop_rule_on_the_judges_grades_is_held_with_the_thresholds():
    s = GateSettings(max_drops=tuple(parse_max_drops([("one:ndcg@10+judged=0.02", "test")])))
    failure = verdict_of(judged_run({JUDGE.fingerprint: FAILED}), s).of_kind("judge")
    assert len(failure) == 1 and "not gated: one:ndcg@10+judged=0.02;" in failure[0]


def shadowed_run(validations) -> RunResults:
    """Two engines on the judged labels: ``two`` finds q1's judged-relevant c at rank 1, ``one`` does not."""
    run = RunResults([EvaluationResult(engine, LABELED, (QueryResult("q1", first), QueryResult("q2", ("x", "e", "b"))))
                      for engine, first in (("one", ("d", "a", "c")), ("two", ("c", "a", "d")))])
    judgments = Judgments([Judgment("q1", "c", 3, (3,), "s" * 64, JUDGE), Judgment("q2", "e", 2, (2,), "s" * 64, JUDGE)])
    run, _ = with_judgments(run, judgments, shown_path="j.jsonl", validations=validations, results="out/results.json")
    return run


def test_the_knowledge_gain_weighing_the_judges_grades_is_held_with_its_rules():
    """``shadow.gain`` is the weighted mean of measure deltas: with a ``+judged`` weight it moves
    with the judge's grades, so a failed judge holds it as it holds ``shadow.hit@1+judged``."""
    s = settings("two:shadow.gain>=-0.5", shadows=(("two", "one"),), gain_weights={"hit@1+judged": 1.0})
    failed = verdict_of(shadowed_run({JUDGE.fingerprint: FAILED}), s)
    assert [f.kind for f in failed.failures] == ["judge"]
    assert "not gated: two:shadow.gain>=-0.5 (its gain weights read the judge's grades: hit@1+judged);" in \
        failed.failures[0]
    assert not verdict_of(shadowed_run({JUDGE.fingerprint: PASSED}), s).failed  # a judge that passed: gated
    human = settings("two:shadow.gain>=-0.5", shadows=(("two", "one"),), gain_weights={"hit@1": 1.0})
    assert not verdict_of(shadowed_run({JUDGE.fingerprint: FAILED}), human).failed  # on the human labels alone


def test_the_flag_lets_the_rules_gate_on_a_failed_judge_and_the_run_says_so():
    verdict = verdict_of(judged_run({JUDGE.fingerprint: FAILED}), settings(*RULES, allow_failed_judge=True))
    assert [f.kind for f in verdict.failures] == ["rule"]
    assert verdict.failures[0].startswith("one: hit@1+judged = 0.5000, required >= 0.99")
    assert (f"one:hit@1+judged>=0.99, one:hit@1+judged>=0.1 gated on the grades of judge model-a "
            f"({JUDGE.fingerprint}), which failed judge --validate (Cohen's kappa 0.12 on 40 hidden human label(s), "
            "base rate 50%, floor 0.4): allowed by --retrieval-allow-failed-judge") in verdict.warnings


def test_a_judge_that_passed_gates_its_rules_on_their_numbers_without_a_word():
    verdict = verdict_of(judged_run({JUDGE.fingerprint: PASSED}), settings(*RULES))
    assert [f.kind for f in verdict.failures] == ["rule"] and "hit@1+judged = 0.5000" in verdict.failures[0]
    assert not any("validat" in w for w in verdict.warnings)
    assert "  judge --validate: passed, Cohen's kappa 0.71 on 40 hidden human label(s), base rate 50%, floor 0.4" \
        in used(verdict.run).lines()


def test_a_judge_never_validated_warns_with_the_command_and_fails_nothing():
    verdict = verdict_of(judged_run({OTHER.fingerprint: FAILED}), settings("one:hit@1+judged>=0.1"))
    assert not verdict.failed
    assert (f"judge not validated: model-a ({JUDGE.fingerprint}) has no stored validation beside j.jsonl; run "
            "`python -m pytest_retrieval_eval judge out/results.json --validate --judgments=j.jsonl --model=model-a`"
            ) in verdict.warnings


def test_a_failed_judge_without_rules_on_its_grades_only_warns():
    verdict = verdict_of(judged_run({JUDGE.fingerprint: FAILED}), settings("one:hit@3>=0.9"))
    assert not verdict.failed
    assert any(w.startswith(f"judge model-a ({JUDGE.fingerprint}) failed validation: Cohen's kappa 0.12")
               for w in verdict.warnings)


def test_without_a_results_file_the_command_says_how_to_write_one():
    verdict = verdict_of(judged_run({JUDGE.fingerprint: FAILED}, results=None), settings(*RULES))
    assert ("`python -m pytest_retrieval_eval judge out/results.json --validate --judgments=j.jsonl --model=model-a` "
            "(the run's results.json: write it with --retrieval-report-dir=out), or gate") in verdict.failures[0]


def test_the_command_validates_a_judge_of_votes_and_a_panel_as_they_were_asked():
    three = JudgmentsUsed("j.jsonl", OTHER, results="r.json")
    assert three.validate_command().endswith("--judgments=j.jsonl --model=model-b --votes=3")
    panel = Panel((OTHER, JUDGE))
    command = JudgmentsUsed("j.jsonl", panel, results="r.json").validate_command()
    assert command.endswith(f"--judgments=j.jsonl --judges={JUDGE.fingerprint},{OTHER.fingerprint}") or \
        command.endswith(f"--judgments=j.jsonl --judges={OTHER.fingerprint},{JUDGE.fingerprint}")


def test_the_validation_and_the_flag_survive_results_json():
    run = judged_run({JUDGE.fingerprint: FAILED})
    again = JudgmentsUsed.from_dict(used(run).to_dict())
    assert again.validation_state == "failed" and again.validation["kappa"] == 0.12 and again.results == "out/results.json"
    s = settings(*RULES, allow_failed_judge=True)
    assert GateSettings.from_dict(s.to_dict()).allow_failed_judge
    assert "allow_failed_judge" not in settings(*RULES).to_dict()  # a run without it records what it always did
    assert not GateSettings.from_dict(settings(*RULES).to_dict()).allow_failed_judge


@pytest.mark.parametrize("state, kind", [(FAILED, ["judge"]), (PASSED, [])])
def test_a_panels_validation_is_read_by_its_own_fingerprint(state, kind):
    run = RunResults([EvaluationResult("one", LABELED, (QueryResult("q1", ("c", "a")), QueryResult("q2", ("e", "b"))))])
    judgments = Judgments([Judgment("q1", "c", 3, (3,), "s" * 64, JUDGE), Judgment("q1", "c", 2, (2,), "s" * 64, OTHER),
                           Judgment("q2", "e", 3, (3,), "s" * 64, JUDGE), Judgment("q2", "e", 2, (2,), "s" * 64, OTHER)])
    panel = Panel((JUDGE, OTHER))
    run, _ = with_judgments(run, judgments, shown_path="j.jsonl", panel=("all",),
                            validations={panel.fingerprint: state, JUDGE.fingerprint: PASSED, OTHER.fingerprint: PASSED})
    verdict = verdict_of(run, settings("one:hit@1+judged>=0.5"))
    assert [f.kind for f in verdict.failures] == kind


def test_a_validation_made_on_other_labels_is_read_and_said_to_be_of_other_labels():
    fingerprint = LABELED.fingerprint
    same = verdict_of(judged_run({JUDGE.fingerprint: {**PASSED, "labeled": [fingerprint]}}), settings(*RULES))
    assert not any("validated on other labels" in w for w in same.warnings)
    other = verdict_of(judged_run({JUDGE.fingerprint: {**PASSED, "labeled": ["0" * 64]}}), settings(*RULES))
    assert [f.kind for f in other.failures] == ["rule"]  # it passed: its rules gate on their numbers
    assert any(w.startswith(f"judge model-a ({JUDGE.fingerprint}) was validated on other labels than this run's")
               and w.endswith("--model=model-a`") for w in other.warnings)
