"""Several judges read as one panel: a pair's grade is the majority of the members' grades (a tie
to the lower grade), only where every member graded the same texts; the panel's fingerprint is
its members'; their agreement (Fleiss' kappa on relevance and on the grades, Cohen's kappa for
each two, the unanimous share) checked against numbers computed by hand; a run reads the panel
in place of the newest judge and says how its members agree."""

from __future__ import annotations

import math

import pytest

from pytest_retrieval_eval import QueryResult
from pytest_retrieval_eval.data.judge_agreement import Agreement
from pytest_retrieval_eval.data.judges import Judge, Panel
from pytest_retrieval_eval.data.judgments import Judgment, Judgments, question_sha256
from pytest_retrieval_eval.data.labeled import LabeledSet
from pytest_retrieval_eval.errors import RetrievalEvalError
from pytest_retrieval_eval.evaluation.judging import JudgmentsUsed, with_judgments
from pytest_retrieval_eval.analysis.result import EvaluationResult
from pytest_retrieval_eval.evaluation.results import RunResults
from pytest_retrieval_eval.types import LabeledQuery

A = Judge("model-a", "p" * 64, 0.0, 1, "127.0.0.1")
B = Judge("model-b", "p" * 64, 0.0, 1, "127.0.0.1")
C = Judge("model-c", "p" * 64, 0.0, 1, "127.0.0.1")
QUESTIONS = {"q1": "alpha?", "q2": "beta?"}
#: (question, document) -> the grades of A, B and C
GRADES = {("q1", "c"): (3, 3, 2), ("q1", "d"): (0, 0, 1), ("q2", "e"): (2, 0, 3), ("q2", "f"): (1, 2, 0)}


def graded(grades=GRADES, judges=(A, B, C)) -> Judgments:
    return Judgments([Judgment(q, d, g, (g,), "s" * 64, j, question_sha256=question_sha256(QUESTIONS[q]))
                      for (q, d), gs in grades.items() for j, g in zip(judges, gs)])


def test_a_panels_fingerprint_is_its_members_in_any_order_and_reads_back_from_its_record():
    assert Panel((A, B, C)).fingerprint == Panel((C, A, B)).fingerprint == Panel((A, B, C, A)).fingerprint
    assert Panel((A, B)).fingerprint != Panel((A, C)).fingerprint
    assert Panel((A, B)).fingerprint not in (A.fingerprint, B.fingerprint)
    panel = Panel((A, B, C))
    assert Judge.from_dict(panel.to_dict()) == panel and panel.model == "panel of 3 (model-a, model-b, model-c)"
    assert panel.describe().startswith("a panel of 3 by majority (a tie to the lower grade): model-a (temperature 0")


def test_the_panels_grade_is_the_majority_and_a_tie_goes_to_the_lower_grade():
    judgments, panel = graded().with_panel(["all"])
    got = {(j.query_id, j.doc_id): (j.grade, j.votes) for j in judgments if j.judge == panel}
    assert got == {("q1", "c"): (3, (3, 3, 2)), ("q1", "d"): (0, (0, 0, 1)),
                   ("q2", "e"): (0, (2, 0, 3)),  # one vote each: the lowest
                   ("q2", "f"): (0, (1, 2, 0))}
    assert judgments.current() == panel and judgments.current(panel.fingerprint[:6]) == panel


def test_a_pair_not_graded_by_every_member_or_on_other_texts_is_not_the_panels():
    judgments = graded()
    half = Judgments([*judgments, Judgment("q1", "g", 3, (3,), "s" * 64, A, question_sha256="h"),
                      Judgment("q1", "g", 3, (3,), "s" * 64, B, question_sha256="h"),
                      Judgment("q2", "h", 3, (3,), "s" * 64, A, question_sha256="h"),
                      Judgment("q2", "h", 3, (3,), "t" * 64, B, question_sha256="h"),  # another text of h
                      Judgment("q2", "h", 3, (3,), "s" * 64, C, question_sha256="h")])
    view, panel = half.with_panel([A.fingerprint, B.fingerprint[:8], C.fingerprint])
    assert {(j.query_id, j.doc_id) for j in view if j.judge == panel} == set(GRADES)
    two, pair = half.with_panel([A.fingerprint, B.fingerprint])
    assert ("q1", "g") in {(j.query_id, j.doc_id) for j in two if j.judge == pair}


def test_a_panel_of_fewer_than_two_judges_or_of_an_unknown_one_is_refused_by_name():
    with pytest.raises(RetrievalEvalError, match="a panel reads two judges or more by majority, got 1"):
        graded().with_panel([A.fingerprint, A.fingerprint[:10]])
    with pytest.raises(RetrievalEvalError, match="no judge with fingerprint 'zzz'"):
        graded().with_panel([A.fingerprint, "zzz"])


def test_the_members_agreement_is_what_fleiss_and_cohen_give_by_hand():
    judgments, panel = graded().with_panel(["all"])
    agreement = judgments.agreement(panel)
    # relevance (grade >= 2) of A, B, C: (1,1,1), (0,0,0), (1,0,1), (0,1,0); per pair the raters
    # agreeing: 1, 1, 1/3, 1/3, so observed 2/3; half the 12 ratings relevant, chance 1/2
    assert agreement.pairs == 4 and agreement.fleiss == pytest.approx((2 / 3 - 1 / 2) / (1 / 2))
    # the grades 0-3: observed (1/3 + 1/3 + 0 + 0) / 4 = 1/6; shares 4/12, 2/12, 3/12, 3/12, chance 19/72
    assert agreement.fleiss_grades == pytest.approx((1 / 6 - 19 / 72) / (1 - 19 / 72)) == pytest.approx(-7 / 53)
    # Cohen's kappa by two: A ~ B agree on 2 of 4 with both 50% relevant: 0; A ~ C always: 1; B ~ C: 0
    assert agreement.pairwise == ((A.fingerprint, B.fingerprint, pytest.approx(0.0)),
                                  (A.fingerprint, C.fingerprint, 1.0), (B.fingerprint, C.fingerprint, pytest.approx(0.0)))
    assert agreement.unanimous == 0.5
    text = agreement.describe()
    assert text.startswith("Fleiss' kappa 0.33 on relevance (-0.13 on the 0-3 grades) over the 4 pair(s) all 3 "
                           "graded, 50% unanimous; Cohen's kappa by two: ")
    assert text.endswith("Cohen's kappa by two: model-a ~ model-b 0.00, model-a ~ model-c 1.00, model-b ~ model-c 0.00")
    again = Agreement.from_dict(agreement.to_dict())
    assert again.describe() == text and again.pairs == 4


def test_no_pair_graded_by_all_leaves_every_agreement_undefined_and_said():
    judgments, panel = graded({("q1", "c"): (3, 3)}, (A, B)).with_panel(["all"])
    empty = Agreement.of(panel.members, [])
    assert empty.pairs == 0 and math.isnan(empty.fleiss) and math.isnan(empty.unanimous)
    assert empty.describe().startswith("Fleiss' kappa undefined on relevance (undefined on the 0-3 grades) over the "
                                       "0 pair(s) all 2 graded, none unanimous")


def test_a_run_reads_the_panel_in_place_of_the_newest_judge_and_says_how_its_members_agree():
    labeled = LabeledSet((LabeledQuery("q1", "alpha?", {"a": 1}), LabeledQuery("q2", "beta?", {"b": 1})), name="set")
    run = RunResults([EvaluationResult("one", labeled, (QueryResult("q1", ("c", "d", "a")),
                                                         QueryResult("q2", ("e", "f", "b"))))])
    run, found = with_judgments(run, graded(), shown_path="j.jsonl", panel=("all",))
    panel = Panel((A, B, C))
    assert found.judge == panel and found.used == 4 and found.other_judges == 0
    e = run.evaluations[0]
    assert e.judged == {"q1": {"c": 3, "d": 0}, "q2": {"e": 0, "f": 0}}
    assert e.mean("hit@1+judged") == 0.5  # q1's c (3, 3, 2) relevant; q2's e (2, 0, 3) not
    lines = found.lines()
    assert lines[0].startswith("+judged: human labels with 4 judged hole(s) from j.jsonl, judge a panel of 3 by majority")
    assert lines[1].startswith("  the panel's members: Fleiss' kappa 0.33 on relevance")
    again = JudgmentsUsed.from_dict(found.to_dict())
    assert again.judge == panel and again.lines() == lines
    _, newest = with_judgments(RunResults([EvaluationResult("one", labeled, (QueryResult("q1", ("c",)),))]), graded(),
                               shown_path="j.jsonl")
    assert newest.judge == C and newest.agreement_of_members is None  # without a panel: the newest judge, as ever
