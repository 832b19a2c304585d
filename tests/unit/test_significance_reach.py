"""What a labeled set's size lets a paired test reach: a sign-flip test over n units (a set's
conversations, else its questions) gives no p below 2/2^n, so with 2/2^n >= alpha (5 units at
alpha 0.05) no difference can be significant. The analysis says so once per labeled set
(``Analysis.powerless``) and leaves out what cannot move (the detectable drops, significance);
every renderer prints the one line in place of the significance legend and p columns."""

from __future__ import annotations

import json

from pytest_retrieval_eval.analysis.analyse import Analysis, analyse
from pytest_retrieval_eval.analysis.power import Powerless
from pytest_retrieval_eval.analysis.result import EvaluationResult
from pytest_retrieval_eval.data.labeled import LabeledSet
from pytest_retrieval_eval.evaluation.results import RunResults
from pytest_retrieval_eval.gate.verdict import decide, for_run
from pytest_retrieval_eval.report import table
from pytest_retrieval_eval.report.comment import comment
from pytest_retrieval_eval.report.files import markdown
from pytest_retrieval_eval.report.html import render
from pytest_retrieval_eval.rules.settings import GateSettings
from pytest_retrieval_eval.rules.thresholds import Threshold
from pytest_retrieval_eval.types import LabeledQuery, QueryResult, Turn, turn_id

SAID = "5 conversations: no difference can be significant at alpha 0.05"


def chats(conversations: int, turns: int = 3) -> LabeledSet:
    queries = []
    for c in range(conversations):
        history: tuple[Turn, ...] = ()
        for t in range(1, turns + 1):
            text = f"what is topic {c}?" if t == 1 else f"and its part {t}?"
            queries.append(LabeledQuery(turn_id(f"c{c}", t), text, {f"d{c}-{t}": 1}, conversation=f"c{c}", turn=t,
                                        history=history))
            history = (*history, Turn("user", text), Turn("assistant", f"answer {c}.{t}"))
    return LabeledSet(tuple(queries), name="chats")


def questions(n: int) -> LabeledSet:
    return LabeledSet(tuple(LabeledQuery(f"q{i}", f"question {i}", {f"d{i}": 1}) for i in range(n)), name="faq")


def engine(name: str, labeled: LabeledSet, hits) -> EvaluationResult:
    return EvaluationResult(name, labeled, tuple(
        QueryResult(q.query_id, tuple(q.relevant) if hits(q) else tuple(f"x{i}" for i in range(30)))
        for q in labeled.queries))


def verdict(labeled: LabeledSet, *rules: str):
    run = RunResults([engine("converses", labeled, lambda q: True),
                      engine("last-turn", labeled, lambda q: q.turn in (None, 1))])
    s = for_run(run, GateSettings(thresholds=tuple(Threshold.parse(r, source="t") for r in rules)))
    return decide(run, s, analyse(run, s))


def test_five_conversations_say_once_that_no_difference_can_be_significant():
    v = verdict(chats(5), "hit@5>=0.1")
    a = v.analysis
    assert a.powerless == (Powerless("chats", 5, "conversations", 0.05),) and str(a.powerless[0]) == SAID
    assert not a.detectable and not any(c.significant for c in a.comparisons)
    terminal = "\n".join(table.render(v, detail=True))
    assert terminal.count(SAID) == 1 and "detectable drop" not in terminal and "superscript" not in terminal
    assert "* significant" not in terminal and "differences (paired mean, 95% CI):" in terminal
    md = markdown(v, {})
    assert md.count(SAID) == 1 and "Detectable drop" not in md and "superscript" not in md
    assert "| a − b | labeled set | measure | difference | 95% CI |\n" in md and "corrected p" not in md
    pr = comment(v)
    assert pr.count(SAID) == 1 and "Detectable drop" not in pr and "corrected p" not in pr
    page = render(v)
    assert page.count(SAID) == 1 and 'id="detectable"' not in page and "<th>corrected p</th>" not in page


def test_six_conversations_can_reach_alpha_and_the_run_says_nothing_of_it():
    v = verdict(chats(6), "hit@5>=0.1")
    assert v.analysis.powerless == () and v.analysis.detectable
    assert "no difference can be significant" not in "\n".join(table.render(v, detail=True))
    assert "| p | corrected p |" in markdown(v, {})


def test_five_single_questions_fall_under_the_same_rule_and_six_do_not():
    v = verdict(questions(5), "hit@5>=0.1")
    assert [str(x) for x in v.analysis.powerless] == ["5 questions: no difference can be significant at alpha 0.05"]
    assert verdict(questions(6), "hit@5>=0.1").analysis.powerless == ()
    # a stricter alpha asks for more: 2/2^6 = 0.031 is above 0.01
    run = RunResults([engine("a", questions(6), lambda q: True), engine("b", questions(6), lambda q: False)])
    s = for_run(run, GateSettings(alpha=0.01))
    assert [str(x) for x in analyse(run, s).powerless] == ["6 questions: no difference can be significant at alpha 0.01"]


def test_the_recorded_analysis_keeps_what_it_said():
    a = verdict(chats(5), "hit@5>=0.1").analysis
    assert Analysis.from_dict(json.loads(json.dumps(a.to_dict(), allow_nan=True))).powerless == a.powerless


def test_a_lone_engine_without_rules_or_baseline_is_told_nothing():
    run = RunResults([engine("converses", chats(5), lambda q: True)])
    assert analyse(run, for_run(run, GateSettings())).powerless == ()


def test_the_exact_drop_asks_for_a_p_below_alpha_as_the_gate_does():
    """Every question found: a drop is a number of them lost one way, flagged at p = 2/2^k only
    when that is below alpha (the gate's ``p < alpha``); at alpha 0.0625 five questions never are."""
    from pytest_retrieval_eval.ir.stats import detectable_drop, paired_randomization

    assert paired_randomization([1.0] * 5, [0.0] * 5) >= 0.0625
    assert detectable_drop([1.0] * 5, alpha=0.0625) == 1.0
    assert detectable_drop([1.0] * 6, alpha=0.0625) < 1.0


def test_no_drop_is_stated_detectable_where_the_shared_alpha_cannot_be_reached():
    """Six questions reach 0.05 (2/64), not 0.025: with two comparisons sharing alpha, no drop of
    any size is detectable, so none is stated."""
    from pytest_retrieval_eval import EvaluationResult, LabeledQuery, LabeledSet, QueryResult, RunResults
    from pytest_retrieval_eval.analysis.power import detectable_drops

    labeled = LabeledSet(tuple(LabeledQuery(f"q{i}", f"question {i}", {f"d{i}": 1}) for i in range(6)), name="six")
    run = RunResults([EvaluationResult("e", labeled, tuple(
        QueryResult(f"q{i}", (f"d{i}",) if i % 2 else ("x",)) for i in range(6)))])
    assert [d.measure for d in detectable_drops(run, ["hit@1"], 0.05)] == ["hit@1"]
    assert detectable_drops(run, ["hit@1"], 0.05, comparisons=2) == []
