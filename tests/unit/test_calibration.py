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


# --- an engine that answers the same every time: resampled questions ----------------------------

def fixed_run(n: int = 100, found: int = 82) -> RunResults:
    """A deterministic engine finding ``found`` of ``n`` questions at rank 1."""
    labeled = LabeledSet(tuple(LabeledQuery(f"q{i}", f"question {i}", {f"d{i}": 1}) for i in range(n)), name="set")
    return RunResults([EvaluationResult("fixed", labeled, tuple(
        QueryResult(f"q{i}", (f"d{i}" if i < found else "x", "y", "z")) for i in range(n)))])


def test_a_deterministic_engine_is_rerun_on_resampled_questions_and_cannot_fail_a_drop_rule_unchanged():
    from pytest_retrieval_eval.rules.thresholds import parse_thresholds

    run = fixed_run()
    s = for_run(run, GateSettings(thresholds=tuple(parse_thresholds([("hit@5>=0.8", "--retrieval-threshold")])),
                                  max_drops=(RULE,), noise_aware=True))
    found = calibrate(run, s, reruns=100, sizes=(0.1,))
    threshold, drop = found.rules
    assert threshold.rerun == drop.rerun == "questions resampled"
    assert drop.false_fail == 0.0  # the same resample on both sides: nothing moved
    # hit@5 = 0.82 over 100 questions: a resample falls below 0.8 about a third of the time
    assert 0.2 <= threshold.false_fail <= 0.45, threshold.false_fail
    assert found.over_alpha() == [threshold]
    assert threshold.wider is not None and threshold.wider < 0.8
    again = calibrate(run, replace(s, thresholds=tuple(parse_thresholds([(f"hit@5>={threshold.wider}", "t")]))),
                      reruns=100)
    assert again.rules[0].false_fail <= 0.05
    ten = next(p for p in drop.power if p.size == 0.1)
    assert ten.reruns == 100 and ten.caught == 1.0  # every lost question one way: p = 2 / 2^10


def test_a_drop_moves_the_relevant_documents_down_and_says_how_many_questions_it_took():
    from pytest_retrieval_eval.analysis.calibration import _moved_down

    r = QueryResult("q", ("gold", "a", "b", "c", "d", "e", "f", "g"))
    assert _moved_down(r, {"gold": 1}, 5).doc_ids == ("a", "b", "c", "d", "e", "gold", "f", "g")
    assert _moved_down(r, {"gold": 1}, 7).doc_ids == ("a", "b", "c", "d", "e", "f", "g", "gold")
    assert _moved_down(r, {"gold": 1}, 8).doc_ids == ("a", "b", "c", "d", "e", "f", "g")  # past the end: gone
    two = QueryResult("q", ("g1", "a", "g2", "b"))
    assert _moved_down(two, {"g1": 1, "g2": 2}, 1).doc_ids == ("a", "g1", "b", "g2")
    assert _moved_down(QueryResult("q", ("a",)), {"gold": 1}, 3).doc_ids == ("a",)
    run = fixed_run(n=100, found=80)
    s = for_run(run, GateSettings(max_drops=(RULE,), noise_aware=True))
    (rule,) = calibrate(run, s, reruns=20, sizes=(0.05,)).rules
    five = next(p for p in rule.power if p.size == 0.05)
    # 5 of the found questions lost: 5 of 100 moved, and the misses drawn on the way moved too
    assert five.reruns == 20 and 0.05 <= five.share <= 0.1


def test_a_set_of_conversations_is_resampled_by_whole_conversations():
    from pytest_retrieval_eval.analysis.calibration import _resampled
    from pytest_retrieval_eval.rules.thresholds import parse_thresholds
    from pytest_retrieval_eval.types import turn_id

    queries = tuple(LabeledQuery(turn_id(f"c{c}", t), f"turn {t} of {c}", {f"d{c}.{t}": 1}, conversation=f"c{c}",
                                 turn=t) for c in range(12) for t in (1, 2, 3))
    labeled = LabeledSet(queries, name="chats")
    positions, drawn, ids = _resampled(labeled, np.random.default_rng(5))
    assert len(ids) == len(set(ids)) == 36 and drawn.has_conversations
    by_conversation: dict = {}
    for q in drawn.queries:
        by_conversation.setdefault(q.conversation, []).append((q.turn, q.query_id))
    assert all([t for t, _ in turns] == [1, 2, 3] and all(i == turn_id(c, t) for t, i in turns)
               for c, turns in by_conversation.items())
    assert [queries[i].question for i in positions] == [q.question for q in drawn.queries]
    run = RunResults([EvaluationResult("chat", labeled, tuple(
        QueryResult(q.query_id, (next(iter(q.relevant)) if q.turn == 1 else "x",)) for q in queries))])
    s = for_run(run, GateSettings(thresholds=tuple(parse_thresholds([("hit@5>=0.3", "t")]))))
    (rule,) = calibrate(run, s, reruns=50).rules
    assert rule.rerun == "conversations resampled" and rule.false_fail == 0.0  # a third found, in every resample


# --- the command --------------------------------------------------------------------------------

def saved_run(tmp_path, run: RunResults, s: GateSettings):
    from pytest_retrieval_eval.archive.saved import results_json

    path = tmp_path / "results.json"
    path.write_text(results_json(verdict_of(run, s)), encoding="utf-8")
    return path


def test_the_command_writes_its_table_into_the_results_file_and_each_fix_it_suggests_runs_as_printed(tmp_path, capsys):
    import json
    import shlex

    from pytest_retrieval_eval.analysis.calibration import Calibration
    from pytest_retrieval_eval.cli import main as cli
    from pytest_retrieval_eval.cli.parser import make_parser
    from pytest_retrieval_eval.rules.thresholds import parse_thresholds

    assert "calibrate" in make_parser().format_help()
    run = fixed_run()
    s = for_run(run, GateSettings(thresholds=tuple(parse_thresholds([("hit@5>=0.8", "--retrieval-threshold")]))))
    path = saved_run(tmp_path, run, s)
    before = json.loads(path.read_text())
    assert cli(["calibrate", str(path), "--reruns", "100"]) == 1  # a rule over alpha
    out = capsys.readouterr().out
    assert "hit@5>=0.8  fixed   questions resampled  pass" in out and f"written to {path}" in out
    over = next(line for line in out.splitlines() if line.startswith("over alpha: hit@5>=0.8 (from "
                                                                       "--retrieval-threshold) fails fixed unchanged"))
    after = json.loads(path.read_text())
    recorded = Calibration.from_dict(after.pop("calibration"))
    assert after == before and recorded is not None and recorded.rules[0].rule == "hit@5>=0.8"
    command = over.split("check it: ", 1)[1].split(";", 1)[0]
    assert command.startswith("python -m pytest_retrieval_eval calibrate ")
    assert cli([*shlex.split(command)[3:], "--reruns", "100", "--out", str(tmp_path / "wider.json")]) == 0
    out = capsys.readouterr().out
    assert "over alpha" not in out and f"written to {tmp_path / 'wider.json'}" in out
    assert json.loads(path.read_text())["calibration"] == recorded.to_dict()  # --out leaves the results alone
    kept = json.loads((tmp_path / "wider.json").read_text())
    assert kept["format"] == "pytest-retrieval-eval/calibration" and kept["results"] == str(path)


def test_a_run_without_a_rule_is_refused_with_a_command_that_calibrates_one(tmp_path, capsys):
    import shlex

    from pytest_retrieval_eval.cli import main as cli

    run = fixed_run()
    path = saved_run(tmp_path, run, for_run(run, GateSettings()))
    assert cli(["calibrate", str(path)]) == 2
    err = capsys.readouterr().err
    assert "no threshold or max-drop rule to calibrate" in err
    command = err.split("e.g. ", 1)[1].strip()
    assert cli([*shlex.split(command)[3:], "--reruns", "20"]) == 0
    assert "max-drop hit@5=0" in capsys.readouterr().out
    assert cli(["calibrate", str(path), "--threshold=nobody:hit@5>=0.5"]) == 2
    assert "names engine 'nobody', which the run has not; its engines: fixed" in capsys.readouterr().err


def test_a_history_record_is_calibrated_but_never_rewritten(tmp_path, capsys, monkeypatch):
    import json
    import shlex

    from pytest_retrieval_eval.archive.results_json import HISTORY_FORMAT
    from pytest_retrieval_eval.cli import main as cli

    run = fixed_run()
    results = json.loads(saved_run(tmp_path, run, for_run(run, GateSettings(max_drops=(RULE,)))).read_text())
    record = tmp_path / "record.json"
    record.write_text(json.dumps({"format": HISTORY_FORMAT, "results": results}), encoding="utf-8")
    kept = record.read_bytes()
    assert cli(["calibrate", str(record), "--reruns", "20"]) == 2
    err = capsys.readouterr().err
    assert "is a history record, which is kept as it was run" in err and record.read_bytes() == kept
    monkeypatch.chdir(tmp_path)
    command = err.split("beside it: ", 1)[1].strip()
    assert cli([*shlex.split(command)[3:], "--reruns", "20"]) == 0
    assert json.loads((tmp_path / "calibration.json").read_text())["calibration"]["rules"][0]["rule"] == \
        "max-drop hit@5=0"


def test_a_rerun_whose_interval_straddles_the_rule_is_counted_inconclusive_not_failed():
    """With ``--retrieval-confidence=lower``, a resample whose hit@5 passes the line while its
    interval reaches below it is inconclusive (the gate's third verdict), counted apart from the
    failures: the false-fail rate counts only the reruns the gate fails."""
    from pytest_retrieval_eval.report.calibration import calibration_lines
    from pytest_retrieval_eval.rules.thresholds import parse_thresholds

    run = fixed_run()
    s = for_run(run, GateSettings(thresholds=tuple(parse_thresholds([("hit@5>=0.8", "--retrieval-threshold")])),
                                  confidence="lower"))
    [rule] = calibrate(run, s, reruns=100).rules
    # hit@5 = 0.82 of 100: most resamples' intervals reach below 0.8 (no longer failures, as before)
    assert rule.outcomes.get("inconclusive", 0) > 50 and sum(rule.outcomes.values()) == 100
    assert rule.false_fail == rule.outcomes.get("fail", 0) / 100 < 0.05
    lines = calibration_lines(calibrate(run, s, reruns=100), "results.json")
    assert "inconclusive" in lines[2]
