"""Quality turn by turn (``analysis/turns.py``, gathered by ``analysis/analyse.analyse``): means by
turn position and dependence, the drop from first turns to follow-ups with its interval over
conversations, and the ``turns.drop.MEASURE`` rule on it."""

from __future__ import annotations

import json
import math

import pytest

from pytest_retrieval_eval import RetrievalEvalError
from pytest_retrieval_eval.data.labeled import LabeledSet
from pytest_retrieval_eval.analysis.result import EvaluationResult
from pytest_retrieval_eval.evaluation.results import RunResults
from pytest_retrieval_eval.analysis.turns import ByTurn, by_turn, dependence, ordinal
from pytest_retrieval_eval.analysis.analyse import Analysis, analyse
from pytest_retrieval_eval.gate.verdict import decide, for_run
from pytest_retrieval_eval.rules.quantities import TurnsQuantity, parse_quantity
from pytest_retrieval_eval.rules.settings import GateSettings
from pytest_retrieval_eval.rules.thresholds import Threshold
from pytest_retrieval_eval.types import LabeledQuery, QueryResult, Turn, turn_id

CONVERSATIONS, TURNS = 20, 3


def conversation_set() -> LabeledSet:
    """Twenty conversations of three turns; the second depends on the first (labeled), the third
    is unstated; each turn's relevant document is its own."""
    queries = []
    for c in range(CONVERSATIONS):
        history: tuple[Turn, ...] = ()
        for t in range(1, TURNS + 1):
            text = f"what is topic {c}?" if t == 1 else f"and its part {t}?"
            queries.append(LabeledQuery(turn_id(f"c{c:02d}", t), text, {f"d{c}-{t}": 1}, conversation=f"c{c:02d}",
                                        turn=t, history=history, depends={1: False, 2: True}.get(t)))
            history = (*history, Turn("user", text), Turn("assistant", f"answer {c}.{t}"))
    return LabeledSet(tuple(queries), name="chats")


def engine(name: str, labeled: LabeledSet, hits) -> EvaluationResult:
    """Ranks each turn's document first where ``hits(query)``, else past any cutoff."""
    return EvaluationResult(name, labeled, tuple(
        QueryResult(q.query_id, tuple(next(iter(q.relevant)) for _ in [0]) if hits(q) else
                    tuple(f"x{i}" for i in range(30)) + tuple(q.relevant)) for q in labeled.queries))


def run_of(labeled: LabeledSet) -> RunResults:
    # last-turn sees only the last turn: right on first turns, wrong on every follow-up but one
    return RunResults([engine("last-turn", labeled, lambda q: q.turn == 1 or q.query_id == "c00#2"),
                       engine("converses", labeled, lambda q: True)])


def verdict(run: RunResults, *rules: str):
    s = for_run(run, GateSettings(thresholds=tuple(Threshold.parse(r, source="t") for r in rules)))
    return decide(run, s, analyse(run, s))


def test_turns_by_position_and_dependence_and_the_drop():
    labeled = conversation_set()
    assert labeled.has_conversations and len(set(labeled.clusters.values())) == CONVERSATIONS
    row = by_turn(run_of(labeled).get("last-turn", "chats"), "hit@5")
    assert [(g.label, g.n, g.mean) for g in row.positions] == [("1", 20, 1.0), ("2", 20, 0.05), ("3", 20, 0.0)]
    assert [(g.label, g.n) for g in row.dependence] == [("depends", 40), ("standalone", 20)]
    assert (row.first, row.n_first, row.n_follow, row.conversations) == (1.0, 20, 40, 20)
    assert row.follow == pytest.approx(1 / 40) and row.drop == pytest.approx(39 / 40)
    lo, hi = row.ci
    assert lo <= row.drop <= hi and hi <= 1.0 and lo > 0.7  # MOVER from each side's Wilson over its effective number
    assert row.follow_missed[:2] == ("c00#3", "c01#2") and len(row.follow_missed) == 39
    flat = by_turn(run_of(labeled).get("converses", "chats"), "hit@5")
    # every turn found: 20 first turns are worth 20, 40 follow-ups showing no clustering 40 (Wilson's lower
    # ends 0.839 and 0.912), so the drop can be further below 0 than above it
    assert flat.drop == 0.0 and flat.ci == pytest.approx((-0.1611, 0.0876), abs=1e-4) and not flat.follow_missed


def test_dependence_reads_the_labels_flag_and_guesses_the_unstated_from_the_text():
    assert dependence(LabeledQuery("c#2", "and then?", {"d": 1}, conversation="c", turn=2)) == "depends"
    assert dependence(LabeledQuery("c#2", "Which printers support duplex scanning?", {"d": 1},
                                   conversation="c", turn=2)) == "standalone"
    assert [dependence(LabeledQuery("c#2", "x", {"d": 1}, conversation="c", turn=2, depends=d))
            for d in (True, False)] == ["depends", "standalone"]
    assert [ordinal(x) for x in ("1", "2", "3", "4", "11", "22", "depends")] == [
        "1st", "2nd", "3rd", "4th", "11th", "22nd", "depends"]


def test_the_analysis_holds_turns_only_for_sets_with_conversations_and_reads_them_back():
    run = run_of(conversation_set())
    s = for_run(run, GateSettings())
    a = analyse(run, s)
    measures = {x.measure for x in a.turns}
    assert f"hit@{a.miss_k}" in measures and set(a.measures) - {"mrr"} <= measures | {"mrr"}
    assert a.by_turn(("last-turn", "chats"), "hit@5").drop == pytest.approx(39 / 40)
    text = json.dumps(a.to_dict(), sort_keys=True, allow_nan=True)
    back = Analysis.from_dict(json.loads(text))
    assert isinstance(back.turns[0], ByTurn) and back.turns == a.turns
    single = RunResults([EvaluationResult("k", LabeledSet((LabeledQuery("q", "x", {"d": 1}),), name="s"),
                                          (QueryResult("q", ("d",)),))])
    assert analyse(single, for_run(single, GateSettings())).turns == ()


def test_intervals_and_comparisons_of_a_conversation_run_resample_conversations():
    run = run_of(conversation_set())
    e = run.get("last-turn", "chats")
    assert e.clusters()[:3] == ["c00"] * 3
    from pytest_retrieval_eval.ir.stats import mean_ci
    assert e.ci("hit@5") == mean_ci(e.values("hit@5"), binary=True, clusters=e.clusters())
    # an engine that finds every turn of half the conversations: 20 conversations, not 60 independent turns
    halves = engine("halves", conversation_set(), lambda q: int(q.conversation[1:]) % 2 == 0)
    lo, hi = halves.ci("hit@5")
    assert (lo, hi) == mean_ci(halves.values("hit@5"), binary=True, clusters=halves.clusters())
    flat = mean_ci(halves.values("hit@5"), binary=True)
    assert hi - lo > 1.5 * (flat[1] - flat[0])


@pytest.mark.parametrize("text, name", [("turns.drop.hit@5", "turns.drop.hit@5"),
                                        ("turns.drop.NDCG@10", "turns.drop.ndcg@10")])
def test_a_drop_rule_parses(text, name):
    q = parse_quantity(text)
    assert isinstance(q, TurnsQuantity) and q.name == name and q.bounds == (-1.0, 1.0)
    rule = Threshold.parse(f"keyword:{text}<=0.2")
    assert (rule.engine, rule.measure, rule.op, rule.value) == ("keyword", name, "<=", 0.2)


@pytest.mark.parametrize("text, said", [("turns.first.hit@5<=0.2", "unknown turn quantity"),
                                        ("turns.drop.<=0.2", "unknown turn quantity 'turns.drop.'"),
                                        ("turns<=0.2", "unknown turn quantity"),
                                        ("turns.drop.hit@5<=1", "can never fail"),
                                        ("turns.drop.ndcg@10~ppi<=0.1", "no per-question value")])
def test_a_bad_drop_rule_is_refused_in_one_line(text, said):
    with pytest.raises(RetrievalEvalError, match=said):
        Threshold.parse(text)


def test_a_drop_rule_fails_the_engine_that_sees_only_the_last_turn_and_passes_the_other():
    v = verdict(run_of(conversation_set()), "turns.drop.hit@5<=0.2")
    [failure] = v.of_kind("turns")
    assert failure.startswith("last-turn: turns.drop.hit@5 = 0.9750, required <= 0.2 (from t; first turns 1.0000 "
                              "n=20, follow-ups 0.0250 n=40, 95% interval [")
    assert failure.endswith("over 20 conversations)")
    assert failure.causes == ("  cause (follow-ups): last-turn missed 39 of 40 at hit@5: 39 ranked 31",)
    assert not verdict(run_of(conversation_set()), "converses:turns.drop.hit@5<=0.2").failures


def test_a_drop_rule_with_confidence_lower_is_judged_on_the_drops_upper_bound():
    run = run_of(conversation_set())
    row = next(x for x in analyse(run, for_run(run, GateSettings())).turns
               if (x.engine, x.measure) == ("last-turn", "hit@5"))
    lo, hi = row.ci
    assert lo < row.drop < hi
    rule = f"last-turn:turns.drop.hit@5<={(row.drop + hi) / 2:.4f}"  # the point holds, the upper bound does not

    def judged(confidence: str):
        s = for_run(run, GateSettings(thresholds=(Threshold.parse(rule, source="t"),), confidence=confidence))
        return decide(run, s, analyse(run, s)).of_kind("turns")

    assert not judged("point")
    [failure] = judged("lower")
    assert failure.startswith(f"last-turn: turns.drop.hit@5 = {hi:.4f}, required <= ")
    assert f"judged on the 95% upper bound (--retrieval-confidence=lower), point estimate {row.drop:.4f}; " in failure
    assert failure.state == "inconclusive"  # the interval straddles the line: the estimate holds, the upper end not
    assert f"; 95% interval [{lo:.4f}, {hi:.4f}] straddles " in failure and "more conversations (" in failure


def test_a_drop_rule_off_the_miss_cutoff_names_the_follow_ups_that_missed():
    v = verdict(run_of(conversation_set()), "last-turn:turns.drop.ndcg@10<=0.2")
    [failure] = v.of_kind("turns")
    assert failure.causes == ("  cause: 39 of 40 follow-ups scored 0 at ndcg@10: c00#3, c01#2, c01#3 and 36 more",)


def test_a_drop_rule_on_a_set_without_conversations_says_why():
    single = RunResults([EvaluationResult("k", LabeledSet((LabeledQuery("q", "x", {"d": 1}),), name="s"),
                                          (QueryResult("q", ("d",)),))])
    [failure] = verdict(single, "turns.drop.hit@5<=0.2").failures
    assert failure.kind == "turns" and "labeled set s has no conversations" in failure


def test_the_terminal_shows_a_line_per_engine_under_the_table_and_results_md_a_table():
    from pytest_retrieval_eval.report import turns as shown
    from pytest_retrieval_eval.report.files import markdown

    v = verdict(run_of(conversation_set()))
    lines = shown.terminal_lines(v)
    assert lines[0] == "hit@5 by turn (drop: first turns minus follow-ups, 95% interval over conversations):"
    assert lines[1] == "  converses  1st 1.00  2nd 1.00  3rd 1.00 | drop 0.00 [-0.16, 0.09]"  # run order
    assert lines[2].startswith("  last-turn  1st 1.00  2nd 0.05  3rd 0.00 | drop 0.97 [")
    assert all(len(line) <= 88 for line in lines)
    md = markdown(v, {})
    assert "## By turn" in md and "### last-turn on chats (20 conversations, 20 first turns, 40 follow-ups)" in md
    assert ("| measure | 1st (n=20) | 2nd (n=20) | 3rd (n=20) | depends (n=40) | standalone (n=20) "
            "| first | follow-ups | drop | 95% CI |") in md
    assert "| hit@5 | 1.000 | 0.050 | 0.000 | 0.025 | 1.000 | 1.000 | 0.025 | 0.975 | [" in md
    single = RunResults([EvaluationResult("k", LabeledSet((LabeledQuery("q", "x", {"d": 1}),), name="s"),
                                          (QueryResult("q", ("d",)),))])
    assert shown.terminal_lines(verdict(single)) == [] and "By turn" not in markdown(verdict(single), {})


def test_long_conversations_keep_the_line_within_the_width():
    from pytest_retrieval_eval.analysis.turns import TurnGroup
    from pytest_retrieval_eval.report import turns as shown

    v = verdict(run_of(conversation_set()))
    many = tuple(TurnGroup(str(p), 5, 0.5) for p in range(1, 13))
    long = [x if x.engine != "last-turn" else type(x)(**{**x.__dict__, "positions": many}) for x in v.analysis.turns]
    from dataclasses import replace
    v = replace(v, analysis=replace(v.analysis, turns=tuple(long)))
    line = shown.terminal_lines(v)[2]
    assert len(line) <= 88 and "more | drop 0.97" in line and line.startswith("  last-turn  1st 0.50")


def test_a_conversation_run_reads_back_from_results_json_with_its_turns():
    from pytest_retrieval_eval.evaluation.record_json import evaluation_from_dict

    run = run_of(conversation_set())
    e = run.get("last-turn", "chats")
    back = evaluation_from_dict(json.loads(json.dumps(e.to_dict())), EvaluationResult)
    assert back.labeled.fingerprint == back.labeled.computed_fingerprint == e.labeled.fingerprint
    assert back.labeled.has_conversations and back.clusters() == e.clusters()
    assert [(q.conversation, q.turn, q.depends, q.history) for q in back.labeled.queries] == [
        (q.conversation, q.turn, q.depends, q.history) for q in e.labeled.queries]
    assert back.ci("hit@5") == e.ci("hit@5")
    single = EvaluationResult("k", LabeledSet((LabeledQuery("q", "x", {"d": 1}),), name="s"), (QueryResult("q", ("d",)),))
    assert "conversation" not in json.dumps(single.to_dict())  # a single question's record unchanged


def test_a_malformed_turn_record_is_refused():
    from pytest_retrieval_eval.evaluation.record_json import evaluation_from_dict

    d = json.loads(json.dumps(run_of(conversation_set()).get("converses", "chats").to_dict()))
    d["queries"][1]["conversation"]["turn"] = 0
    with pytest.raises(ValueError, match="'c00#2': conversation must hold its id, turn"):
        evaluation_from_dict(d)


def test_a_baseline_comparison_over_turns_pairs_by_id_and_resamples_conversations():
    from pytest_retrieval_eval.analysis.baseline import diff_engine
    from pytest_retrieval_eval.ir.paired import paired

    labeled = conversation_set()
    now = engine("k", labeled, lambda q: q.turn == 1)
    before = engine("k", labeled, lambda q: q.turn == 1 or int(q.conversation[1:]) % 2 == 0)
    d = diff_engine(now, before, "hit@5")
    ids = [q.query_id for q in labeled.queries]
    assert d.paired.p == paired(now.values("hit@5"), before.values("hit@5"), ids, clusters=now.clusters()).p
    assert d.paired.ci != paired(now.values("hit@5"), before.values("hit@5"), ids).ci


def test_the_by_turn_line_shows_the_measure_a_drop_rule_judges():
    from pytest_retrieval_eval.report.turns import terminal_lines

    assert terminal_lines(verdict(run_of(conversation_set())))[0].startswith("hit@5 by turn ")
    lines = terminal_lines(verdict(run_of(conversation_set()), "last-turn:turns.drop.ndcg@10<=0.2"))
    assert lines[0].startswith("ndcg@10 by turn ") and not any(line.startswith("hit@5") for line in lines)


def by_turn_table(html: str) -> tuple[list[str], list[list[str]]]:
    """The page's by-turn table: its heads, and each row's cells as text."""
    import re

    table = html.split('<table id="by-turn">')[1].split("</table>")[0]
    rows = [re.findall(r"<td[^>]*>(.*?)</td>", row) for row in table.split("<tr>")[2:]]
    return re.findall(r"<th>(.*?)</th>", table), [[" ".join(re.sub(r"<[^>]+>", " ", c).split()) for c in row]
                                                  for row in rows]


def test_the_page_s_by_turn_table_shows_the_drop_a_rule_judges_before_the_turn_positions():
    from pytest_retrieval_eval.report.html import render

    heads, rows = by_turn_table(render(verdict(run_of(conversation_set()))))
    assert heads == ["engine", "labeled set", "drop", "1st", "2nd", "3rd"]  # not after every position: in sight
    last = next(row for row in rows if row[0] == "last-turn")
    assert last[1] == "chats" and last[2].startswith("0.975 ") and last[3:] == ["1.000 (n=20)", "0.050 (n=20)",
                                                                              "0.000 (n=20)"]
    html = render(verdict(run_of(conversation_set()), "last-turn:turns.drop.ndcg@10<=0.2"))
    heads, rows = by_turn_table(html)
    assert "ndcg@10 over the turns" in html and heads[2] == "drop" and len(rows) == 2  # the measure the rule judges
    heads, rows = by_turn_table(render(verdict(run_of(conversation_set()), "last-turn:turns.drop.ndcg@10<=0.2",
                                               "converses:turns.drop.hit@5<=0.2")))
    assert heads[:4] == ["engine", "labeled set", "measure", "drop"]
    assert [row[2] for row in rows] == ["ndcg@10", "ndcg@10", "hit@5", "hit@5"] and rows[1][3].startswith("0.975 ")
