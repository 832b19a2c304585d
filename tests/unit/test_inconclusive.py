"""Three verdicts: a rule judged with its interval passes, fails, or is inconclusive when the
interval straddles its line (``analysis/unsettled.py`` says by how much and how many questions
would settle it; ``gate/checks.py`` decides; ``--retrieval-inconclusive`` says what it does to the
exit code). Per rule kind: thresholds with ``--retrieval-confidence=lower``, ``~ppi`` thresholds,
``turns.drop`` rules and noise-aware max-drop rules."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

from pytest_retrieval_eval import RetrievalEvalError
from pytest_retrieval_eval.analysis.analyse import Estimate, analyse
from pytest_retrieval_eval.analysis.rows import Row
from pytest_retrieval_eval.analysis.baseline import MeasureDiff
from pytest_retrieval_eval.analysis.result import EvaluationResult
from pytest_retrieval_eval.analysis.unsettled import settle_count, unsettled_drops, unsettled_thresholds
from pytest_retrieval_eval.archive.saved import results_json
from pytest_retrieval_eval.data.labeled import LabeledSet
from pytest_retrieval_eval.evaluation.results import RunResults
from pytest_retrieval_eval.gate.checks import check_drops
from pytest_retrieval_eval.gate.verdict import decide, for_run
from pytest_retrieval_eval.ir.measures import Measure
from pytest_retrieval_eval.ir.paired import Paired
from pytest_retrieval_eval.ir.ppi import PPIEstimate
from pytest_retrieval_eval.ir.stats import wilson_ci
from pytest_retrieval_eval.rules.drops import MaxDrop
from pytest_retrieval_eval.rules.settings import GateSettings
from pytest_retrieval_eval.rules.thresholds import Threshold
from pytest_retrieval_eval.types import LabeledQuery, QueryResult, Turn, turn_id


def found(n: int, hits: int, name: str = "e") -> RunResults:
    """``n`` single questions, the first ``hits`` found at rank 1, the others never."""
    labeled = LabeledSet(tuple(LabeledQuery(f"q{i:03d}", f"question {i}", {f"d{i}": 1}) for i in range(n)), name="s")
    return RunResults([EvaluationResult(name, labeled, tuple(
        QueryResult(q.query_id, (f"d{i}",) if i < hits else ("x",)) for i, q in enumerate(labeled.queries)))])


def judged(run: RunResults, *rules: str, confidence: str = "lower", **settings):
    s = for_run(run, GateSettings(thresholds=tuple(Threshold.parse(r, source="t") for r in rules),
                                  confidence=confidence, **settings))
    return decide(run, s, analyse(run, s))


# --- thresholds judged on their interval --------------------------------------------------------

def test_a_threshold_on_its_interval_passes_fails_or_is_inconclusive_where_the_interval_straddles_its_line():
    run = found(60, 51)  # hit@1 = 0.85, Wilson [0.7389, 0.9190]
    lo, hi = wilson_ci(0.85, 60)
    v = judged(run, "e:hit@1>=0.7", "e:hit@1>=0.8", "e:hit@1>=0.9", "e:hit@1>=0.95")
    # >=0.7: the whole interval holds (no failure); >=0.8: the estimate holds, the lower end not;
    # >=0.9: the estimate fails, the upper end holds; >=0.95: the whole interval fails
    by_rule = {f.brief.split("required ")[1]: f.state for f in v.of_kind("rule")}
    assert by_rule == {">= 0.8": "inconclusive", ">= 0.9": "inconclusive", ">= 0.95": "fail"}
    [at_08] = [f for f in v.of_kind("rule") if f.brief.endswith(">= 0.8")]
    assert str(at_08) == (
        f"e: hit@1 = {lo:.4f}, required >= 0.8 (from t; n=60; judged on the 95% lower bound "
        f"(--retrieval-confidence=lower), point estimate 0.8500; 95% interval [{lo:.4f}, {hi:.4f}] straddles 0.8 "
        f"(the estimate 0.0500 above it, the lower end {0.8 - lo:.4f} below); about 411 more questions (471 in all) "
        "would settle it (80% power at the spread this run saw))")
    assert v.state == "fail" and v.failed and len(v.inconclusive) == 2 and len(v.failing) == 1


def test_on_the_point_estimate_a_threshold_is_pass_or_fail_as_before():
    v = judged(found(60, 51), "e:hit@1>=0.8", "e:hit@1>=0.9", confidence="point")
    assert [(f.brief, f.state) for f in v.failures] == [("hit@1 = 0.8500, required >= 0.9", "fail")]


def test_an_upper_rule_straddling_its_line_is_inconclusive_from_its_upper_end():
    v = judged(found(60, 9), "e:hit@1<=0.2")  # 0.15 [0.081, 0.261]: the estimate holds, the upper end not
    [f] = v.failures
    assert f.state == "inconclusive" and "judged on the 95% upper bound" in f
    assert "(the estimate 0.0500 below it, the upper end 0.0" in f


@pytest.mark.parametrize("mode, failed, state", [("fail", True, "inconclusive"), ("warn", False, "inconclusive"),
                                                   ("pass", False, "inconclusive")])
def test_what_an_inconclusive_rule_does_to_the_run_is_a_setting(mode, failed, state):
    v = judged(found(60, 51), "e:hit@1>=0.8", inconclusive=mode)
    assert (v.failed, v.state, [f.state for f in v.failures]) == (failed, state, ["inconclusive"])
    assert not v.failing
    headline = {"fail": "FAILED, 1 rule inconclusive (--retrieval-inconclusive=fail)",
                "warn": "INCONCLUSIVE, 1 rule (--retrieval-inconclusive=warn: a warning, the run passes)",
                "pass": "passed, 1 rule inconclusive (--retrieval-inconclusive=pass: noted)"}[mode]
    assert v.headline() == headline
    doc = json.loads(results_json(v))
    assert doc["verdict"]["failed"] is failed and doc["verdict"]["state"] == "inconclusive"
    assert [(f["kind"], f["state"]) for f in doc["verdict"]["failures"]] == [("rule", "inconclusive")]
    assert doc["settings"].get("inconclusive", "fail") == mode


def test_a_failing_rule_fails_the_run_whatever_the_inconclusive_mode():
    v = judged(found(60, 51), "e:hit@1>=0.8", "e:hit@1>=0.95", inconclusive="pass")
    assert v.failed and v.state == "fail"
    assert v.headline() == "FAILED, 1 failure, 1 inconclusive"
    assert judged(found(60, 51), "e:hit@1>=0.7").headline() == "passed"


def test_the_inconclusive_mode_is_recorded_and_checked():
    s = GateSettings(inconclusive="warn")
    assert s.to_dict()["inconclusive"] == "warn" and GateSettings.from_dict(s.to_dict()).inconclusive == "warn"
    assert "inconclusive" not in GateSettings().to_dict()  # the default, as every run before it
    assert GateSettings.from_dict(GateSettings().to_dict()).inconclusive == "fail"
    with pytest.raises(RetrievalEvalError, match="inconclusive must be fail, warn or pass, got 'maybe'"):
        GateSettings.from_dict({**GateSettings().to_dict(), "inconclusive": "maybe"})
    assert GateSettings().with_options({"inconclusive": "pass"}).inconclusive == "pass"


# --- how many questions settle it ---------------------------------------------------------------

@pytest.mark.parametrize("rate, line", [(0.85, 0.8), (0.72, 0.8), (0.97, 0.95), (0.3, 0.2)])
def test_the_questions_said_to_settle_a_wilson_interval_settle_it_in_four_runs_of_five(rate, line):
    needed = settle_count(rate, wilson_ci(rate, 60), line, 60, wilson=True)
    rng = np.random.default_rng(7)
    rates = rng.binomial(needed, rate, size=4000) / needed
    settled = np.mean([(lo > line) == (hi > line) for lo, hi in (wilson_ci(r, needed) for r in rates)])
    assert 0.77 <= settled <= 0.85, (needed, settled)


def test_a_perfect_rate_is_settled_at_the_first_count_whose_wilson_interval_clears_the_line():
    needed = settle_count(1.0, wilson_ci(1.0, 29), 0.95, 29, wilson=True)
    assert wilson_ci(1.0, needed)[0] > 0.95 >= wilson_ci(1.0, needed - 1)[0]  # 73: no chance involved at 1.0


def test_the_questions_said_to_settle_a_normal_interval_settle_it_in_four_runs_of_five():
    rng = np.random.default_rng(11)
    sample = rng.normal(0.55, 0.3, size=80)
    mean, sd = float(sample.mean()), float(sample.std(ddof=1))
    half = 1.959964 * sd / math.sqrt(80)
    line = mean - 0.6 * half  # straddled
    needed = settle_count(mean, (mean - half, mean + half), line, 80)
    means = rng.normal(mean, sd / math.sqrt(needed), size=20000)
    settled = np.mean(means - 1.959964 * sd / math.sqrt(needed) > line)
    assert 0.78 <= settled <= 0.82 and needed > 80


def test_an_estimate_on_the_line_has_no_count_that_settles_it():
    assert settle_count(0.8, (0.7, 0.9), 0.8, 60) is None


def test_a_ppi_rule_counts_the_human_judged_questions():
    interval = wilson_ci(0.85, 30)  # human-only: a 0/1 measure on 30 human-judged questions
    ppi = PPIEstimate(0.85, interval, 0.85, interval, interval, 30, 68, 0.0, 30.0, True, "human-only")
    rows = [Row("e", "s", {"hit@5~ppi": 0.85}, 68, 0, {"hit@5~ppi": interval})]
    [u] = unsettled_thresholds(RunResults([]), rows, [Threshold.parse("hit@5~ppi>=0.8")],
                               [Estimate("e", "s", "hit@5~ppi", ppi, "judge")])
    assert (u.n, u.unit, u.needed) == (30, "human-judged questions", settle_count(0.85, interval, 0.8, 30, wilson=True))
    assert u.text().endswith(f"about {u.needed - 30:,} more human-judged questions ({u.needed:,} in all) would "
                             "settle it (80% power at the spread this run saw)")


# --- turns.drop rules ---------------------------------------------------------------------------

def conversations(n: int = 20) -> LabeledSet:
    queries = []
    for c in range(n):
        history: tuple[Turn, ...] = ()
        for t in (1, 2):
            text = f"what is topic {c}?" if t == 1 else "and its part two?"
            queries.append(LabeledQuery(turn_id(f"c{c:02d}", t), text, {f"d{c}-{t}": 1}, conversation=f"c{c:02d}",
                                        turn=t, history=history))
            history = (*history, Turn("user", text), Turn("assistant", "answer"))
    return LabeledSet(tuple(queries), name="chats")


def test_a_turns_drop_rule_straddled_by_its_interval_is_inconclusive_in_conversations():
    labeled = conversations()
    # every first turn found, 14 of 20 follow-ups: a drop of 0.3 with a wide interval over 20 conversations
    run = RunResults([EvaluationResult("e", labeled, tuple(
        QueryResult(q.query_id, tuple(q.relevant) if q.turn == 1 or int(q.conversation[1:]) < 14 else ("x",))
        for q in labeled.queries))])
    row = next(x for x in analyse(run, for_run(run, GateSettings())).turns if x.measure == "hit@5")
    assert row.drop == pytest.approx(0.3) and row.ci[0] < 0.25 < row.ci[1]
    [f] = judged(run, "turns.drop.hit@5<=0.25").of_kind("turns")
    assert f.state == "inconclusive"
    assert "95% interval [" in f and "straddles 0.25 (the estimate 0.0500 above it, the lower end" in f
    assert "more conversations (" in f
    [on_point] = judged(run, "turns.drop.hit@5<=0.25", confidence="point").of_kind("turns")
    assert on_point.state == "fail"  # on the estimate: two-valued, as before


# --- noise-aware max-drop rules -----------------------------------------------------------------

def diff(engine: str, before: float, after: float, ci: tuple[float, float], p: float = 0.001,
         n: int = 300) -> MeasureDiff:
    losses = round((before - after) * n)
    return MeasureDiff(engine, "s", "hit@5", before, after, Paired(after - before, p, ci, 0, losses, n - losses, (), p),
                       ())


def test_a_noise_aware_drop_whose_interval_reaches_back_within_its_delta_is_inconclusive():
    rule = [MaxDrop.parse("hit@5=0.02", source="t")]
    straddling = diff("a", 0.80, 0.73, (-0.12, -0.015))  # a drop of 0.07, its interval [0.015, 0.12]: within 0.02 at one end
    beyond = diff("b", 0.80, 0.70, (-0.15, -0.05))       # [0.05, 0.15]: beyond 0.02 throughout
    within_noise = diff("c", 0.80, 0.77, (-0.07, 0.01), p=0.4)
    run = RunResults([])
    unsettled = unsettled_drops(run, rule, [straddling, beyond, within_noise])
    # straddled: the drop of 0.07 alone; the insignificant one of 0.03 straddles too, but the gate
    # passes it as noise, so it is no unsettled rule (results.json would list a rule that passed)
    assert [(u.point, u.interval) for u in unsettled] == [(pytest.approx(0.07), (0.015, 0.12))]
    u = unsettled[0]
    assert u.text().startswith("95% interval [0.0150, 0.1200] straddles 0.02 (the estimate 0.0500 above it, the "
                               "lower end 0.0050 below); about ")
    failures, _ = check_drops(rule, [straddling, beyond, within_noise], noise_aware=True, alpha=0.05,
                              unsettled=unsettled)
    assert [(f.brief, f.state) for f in failures] == [
        ("hit@5 dropped 0.0700 (0.8000 -> 0.7300), more than 0.02", "inconclusive"),
        ("hit@5 dropped 0.1000 (0.8000 -> 0.7000), more than 0.02", "fail")]
    assert u.text() in failures[0]
    # without --retrieval-noise-aware the delta alone decides: nothing is inconclusive
    failures, _ = check_drops(rule, [straddling, beyond, within_noise], noise_aware=False, alpha=0.05,
                              unsettled=unsettled)
    assert [f.state for f in failures] == ["fail", "fail", "fail"]


def test_a_noise_aware_drop_within_its_delta_passes_whatever_its_interval():
    rule = [MaxDrop.parse("hit@5=0.05", source="t")]
    assert unsettled_drops(RunResults([]), rule, [diff("e", 0.80, 0.77, (-0.09, 0.01))]) == []


def test_a_run_against_its_baseline_is_inconclusive_where_a_significant_drop_may_still_be_within_delta():
    base, now = found(100, 90), found(100, 82)  # 8 of 100 questions lost: significant, the drop 0.08

    def drops(rule: str, noise_aware: bool = True):
        s = for_run(now, GateSettings(max_drops=(MaxDrop.parse(rule, source="t"),), noise_aware=noise_aware),
                    configured=(Measure.parse("hit@1"),))  # one comparison: its p is not corrected over others
        return decide(now, s, analyse(now, s, base))

    v = drops("hit@1=0.05")
    [f] = v.of_kind("drop")
    [u] = v.analysis.unsettled
    lo, hi = u.interval
    assert u.point == pytest.approx(0.08) and lo < 0.05 < hi and (u.n, u.unit) == (100, "questions")
    assert f.state == "inconclusive" and v.state == "inconclusive" and v.failed  # fails the run by default
    assert f"{u.text()}); moved: " in f
    assert [x.state for x in drops("hit@1=0.05", noise_aware=False).failures] == ["fail"]  # the delta alone: two states
    assert [x.state for x in drops(f"hit@1={lo / 2:.4f}").failures] == ["fail"]  # the whole interval beyond the delta
