"""Questions whose ids were made from their text (``label import`` without an id column,
``q.<hash>``) are named by that text, shortened, in what a reader sees: engine errors, the worst
queries of a failed assertion, freshness lines, gate breaches. Ids a team chose stay ids."""

from __future__ import annotations

from types import SimpleNamespace

from pytest_retrieval_eval import QueryResult
from pytest_retrieval_eval.data.labeled import LabeledSet
from pytest_retrieval_eval.data.label_fields import question_id
from pytest_retrieval_eval.analysis.baseline import Mover
from pytest_retrieval_eval.report.errors import groups
from pytest_retrieval_eval.analysis.result import EvaluationResult
from pytest_retrieval_eval.types import NAME_WIDTH, LabeledQuery, query_name

LONG = "Someone took my work computer from the car while I was at the station"
SHORT = "Who grants access to the team folder"


def test_a_generated_id_is_named_by_its_text_shortened_at_a_word():
    made = question_id("labels.csv", LONG)
    assert made.startswith("q.")
    name = query_name(made, LONG)
    assert name == "'Someone took my work computer from the…'"
    assert len(name) <= NAME_WIDTH + 2  # the quotes
    assert query_name(question_id("x.csv", SHORT), SHORT) == repr(SHORT)


def test_an_id_a_team_chose_is_left_as_it_is():
    assert query_name("w1", LONG) == "w1"
    assert query_name("q.notahash", LONG) == "q.notahash"
    assert query_name("plan-prices-2026.q2", LONG) == "plan-prices-2026.q2"
    assert query_name(question_id("x.csv", LONG), None) == question_id("x.csv", LONG)


def test_one_long_word_is_cut_not_dropped():
    word = "x" * 60
    assert query_name(question_id("x.csv", word), word) == repr("x" * (NAME_WIDTH - 1) + "…")


def _evaluation() -> EvaluationResult:
    made = LabeledQuery(question_id("labels.csv", LONG), LONG, {"laptop-replacement": 1})
    chosen = LabeledQuery("w1", SHORT, {"shared-drives": 1})
    labeled = LabeledSet((made, chosen), name="labels")
    results = (QueryResult(made.query_id, error="ConnectionError: refused"),
               QueryResult("w1", error="ConnectionError: refused"))
    return EvaluationResult("ours", labeled, results)


def test_engine_errors_name_generated_questions_by_text():
    [group] = groups([_evaluation()])
    assert group.describe() == "ours: 2 x ConnectionError: refused ('Someone took my work computer from the…', w1)"


def test_the_worst_queries_of_a_failed_assertion_name_them_by_text_once():
    lines = _evaluation().worst("hit@5")
    assert lines[0].startswith(f"{LONG!r} (hit@5=0.000) gold: laptop-replacement")
    assert lines[1].startswith(f"w1 (hit@5=0.000) {SHORT!r} gold: shared-drives")
    assert "q." not in " ".join(lines)


def test_a_max_drop_breach_names_movers_by_text():
    from pytest_retrieval_eval.gate.checks import check_drops
    from pytest_retrieval_eval.rules.drops import MaxDrop

    made = question_id("labels.csv", LONG)
    diff = SimpleNamespace(engine="ours", labeled="labels", measure="hit@5", before=1.0, after=0.5, p=0.01,
                           p_adjusted=float("nan"), losses=1, wins=0, day_note=lambda: "",
                           movers=(Mover(made, LONG, 1.0, 0.0), Mover("w1", SHORT, 1.0, 1.0)))
    [failure], _ = check_drops([MaxDrop.parse("hit@5=0.1")], [diff], alpha=0.05, noise_aware=False)
    assert "moved: 'Someone took my work computer from the…' 1->0; w1 1->1" in failure
