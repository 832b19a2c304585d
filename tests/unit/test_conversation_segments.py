"""The segments a conversation's turns get: position (``turn:N``, ``turn:5+``), ``first-turn`` or
``follow-up``, ``depends`` or ``standalone`` (the label's flag, else ``depends_guess``); single
questions get none of them."""

from __future__ import annotations

import pytest

from conftest import QUESTIONS
from pytest_retrieval_eval.data.corpus import JsonFolder
from pytest_retrieval_eval.data.labeled import LabeledSet, load_questions_cache
from pytest_retrieval_eval.data.segments import all_tags, depends_guess, derive
from pytest_retrieval_eval.types import Doc, LabeledQuery, Turn

DOCS = [Doc("plans", "The pro plan costs 10 euros a month.", title="Plans")]


@pytest.mark.parametrize("text, depends", [
    ("and how much does that cost?", True),  # ellipsis and a demonstrative, nothing of its own
    ("Does it work on Linux?", True),  # "work" names nothing: "it" has no referent in the turn
    ("What about Windows?", True),
    ("And for students?", True),
    ("Can I use them offline?", True),
    ("What if I lose it?", True),
    ("How long does it take?", True),
    ("Tell me more.", True),
    ("Why?", True),
    ("and the price?", True),
    ("Is there a discount?", True),  # elliptical: one content word
    ("How do I reset my VPN password?", False),  # no pointer, not elliptical
    ("What does it cost to renew the passport license?", False),  # "it" is a dummy: the turn names its subject
    ("Which plan is cheapest for students?", False),
    # a follow-up of two content words leaves its subject to the conversation (a discount on what? which
    # password?): on MTRAG, 11 of 17 such turns needed it (their human rewrite adds the conversation's words)
    ("Is there a discount for students?", True),
    ("Reset password", True),
    ("Is there a discount for students on the yearly plan?", False),  # the "there" of "is there" points nowhere
    ("What is this error code in Windows Update?", False),
    ("What are the opening hours of the Berlin office?", False),
    ("Can women play it?", True),  # a pointer, and two content words: "it" is what the turn is about
    ("Is it similar to rugby?", True),
    ("streaming services?", True),
    ("No, I meant photos taken in the air.", True),  # a correction answers the assistant's reply
    ("I mean are they organized, not individually contracted with the recipients?", True),
    ("Tell me more about the new commands", True),  # one content word of its own
    ("How much physical activity a day is recommended for children?", False),
])
def test_depends_guess(text, depends):
    assert depends_guess(text) is depends


@pytest.mark.dataset("mtrag")
def test_the_depends_guess_against_mtrags_human_rewrites_is_what_the_docs_say():
    """On MTRAG's human-evaluation subset, the follow-ups whose human rewrite brings in words of the
    conversation (``rewrite_needs_history``) against the guess from the turn's text alone: the
    precision and recall docs/conversations.md states."""
    from pathlib import Path

    from shared_datasets import dataset_path
    from pytest_retrieval_eval.data.label_files import read_labels
    from pytest_retrieval_eval.data.segments import rewrite_needs_history

    root = dataset_path("mtrag") / "mtrag-human"
    turns = read_labels(root / "evaluations" / "reference_subset_with_human_evaluations.json",
                        rewrites=root / "retrieval_tasks")
    follow_ups = [q for q in turns if q.turn > 1 and q.answerable]
    needs = [rewrite_needs_history(q) for q in follow_ups]
    guessed = [depends_guess(q.question) for q in follow_ups]
    found = sum(a and b for a, b in zip(needs, guessed))
    assert (len(follow_ups), sum(needs), sum(guessed), found) == (132, 64, 48, 35)
    docs = (Path(__file__).resolve().parents[2] / "docs" / "conversations.md").read_text()
    assert "finds 35 of the 64 follow-ups that need it (recall 0.55), and 35 of the 48 it flags do (precision 0.73)" \
        in " ".join(docs.split())


def turn(n: int, text: str, depends: bool | None = None, conversation: str = "c1") -> LabeledQuery:
    history = tuple(Turn("user", f"turn {i}") for i in range(1, n))
    return LabeledQuery(f"{conversation}#{n}", text, {"plans": 1}, conversation=conversation, turn=n,
                        history=history, depends=depends)


def test_a_turn_gets_its_position_and_whether_it_depends_the_flag_before_the_guess():
    labeled = LabeledSet((turn(1, "What does the pro plan cost per month?"), turn(2, "and for students?"),
                          turn(3, "and for students?", depends=False), turn(4, "What about teams of ten people?",
                                                                           depends=True),
                          turn(5, "Is there a yearly price?"), turn(7, "and monthly?"),
                          LabeledQuery("q1", "How much is the pro plan?", {"plans": 1})))
    tags = {q.query_id: set(q.tags) for q in derive(labeled, DOCS)}
    assert {"turn:1", "first-turn", "standalone"} <= tags["c1#1"]
    assert {"turn:2", "follow-up", "depends"} <= tags["c1#2"]
    assert {"turn:3", "follow-up", "standalone"} <= tags["c1#3"]
    assert {"turn:4", "depends"} <= tags["c1#4"]
    assert {"turn:5+", "follow-up"} <= tags["c1#5"] and {"turn:5+", "depends"} <= tags["c1#7"]
    assert not any(t.startswith("turn:") or t in ("first-turn", "follow-up", "depends", "standalone")
                   for t in tags["q1"])
    turns = ["first-turn", "follow-up", "depends", "standalone", "turn:1", "turn:2", "turn:3", "turn:4", "turn:5+"]
    assert [t for t in all_tags(derive(labeled, DOCS)) if t in turns] == turns  # in the derived order


def test_a_first_turn_stands_alone_and_a_rewrite_says_whether_a_turn_needs_the_conversation():
    history = (Turn("user", "How do I file a restraining order in Sacramento?"),
               Turn("assistant", "File form DV-100 at the court."))
    needs = LabeledQuery("c1#2", "How do I file an order?", {"plans": 1}, conversation="c1", turn=2, history=history,
                         rewrite="How do I file a restraining order?")  # "restraining": the conversation's word
    reworded = LabeledQuery("c1#3", "How many teams are in the NFL?", {"plans": 1}, conversation="c1", turn=3,
                            history=history, rewrite="What is the number of teams in the NFL?")  # no word of before
    first = LabeledQuery("c2#1", "Reset password", {"plans": 1}, conversation="c2", turn=1)
    tags = {q.query_id: set(q.tags) for q in derive(LabeledSet((needs, reworded, first)), DOCS)}
    assert "depends" in tags["c1#2"] and "standalone" in tags["c1#3"] and "standalone" in tags["c2#1"]
    assert depends_guess("How many teams are in the NFL?") is True  # the guess alone would say otherwise


def test_single_questions_get_no_turn_segments():
    from conftest import CORPUS

    labeled = load_questions_cache(QUESTIONS)
    derived = derive(labeled, JsonFolder(CORPUS).load().docs)
    found = set(all_tags(derived))
    assert not found & {"first-turn", "follow-up", "depends", "standalone", "turn:1", "turn:5+"}


def chats(single: bool = False) -> LabeledSet:
    """Six conversations of three turns (the second depends, the third stands alone), and with
    ``single`` one question outside any conversation."""
    texts = ("What does the pro plan cost per month?", "and for students?", "Which plans include offline use?")
    queries = [turn(n, text, conversation=f"c{c}") for c in range(6) for n, text in enumerate(texts, 1)]
    return derive(LabeledSet(tuple(queries) + ((LabeledQuery("q1", "How much is the pro plan?", {"plans": 1}),)
                                               if single else ()), name="chats"), DOCS)


def rows_of(labeled: LabeledSet, wanted: list[str]) -> list[tuple[str, int]]:
    from pytest_retrieval_eval.analysis.result import EvaluationResult
    from pytest_retrieval_eval.analysis.segments import segment_rows
    from pytest_retrieval_eval.evaluation.results import RunResults
    from pytest_retrieval_eval.types import QueryResult

    run = RunResults([EvaluationResult(name, labeled, tuple(QueryResult(q.query_id, ("plans",) if i % k else ("x",))
                                                            for i, q in enumerate(labeled.queries)))
                      for name, k in (("a", 2), ("b", 3))])
    return [(r.tag, r.n) for r in segment_rows(run, wanted, "hit@5")]


@pytest.mark.parametrize("single", [False, True])
def test_every_turn_segment_is_a_row_once_under_its_own_name(single):
    rows = rows_of(chats(single), ["tags"])
    turns = [(tag, n) for tag, n in rows if tag in ("first-turn", "follow-up", "depends", "standalone")
             or tag.startswith(("turn:", "not "))]
    # first-turn's other half is follow-up (never "not first-turn", which printed follow-up's row again, and the
    # single question with it); turn:1 is first-turn by definition, so it is not a second row of the same questions
    assert turns == [("first-turn", 6), ("follow-up", 12), ("depends", 6), ("standalone", 12), ("turn:2", 6),
                     ("turn:3", 6)]
    assert len(rows) == len({tag for tag, _ in rows})


def test_a_turn_segment_asked_for_alone_shows_its_other_half_by_name():
    assert rows_of(chats(True), ["first-turn"]) == [("all", 19), ("first-turn", 6), ("follow-up", 12)]
    assert rows_of(chats(), ["follow-up", "first-turn"]) == [("all", 18), ("follow-up", 12), ("first-turn", 6)]
    assert rows_of(chats(), ["turn"]) == [("all", 18), ("turn:1", 6), ("turn:2", 6), ("turn:3", 6)]  # a family: no half


def test_a_baseline_and_a_shadow_compare_first_turns_once():
    from pytest_retrieval_eval.analysis.baseline import compare
    from pytest_retrieval_eval.analysis.result import EvaluationResult
    from pytest_retrieval_eval.analysis.shadow import compare as shadow
    from pytest_retrieval_eval.evaluation.results import RunResults
    from pytest_retrieval_eval.types import QueryResult

    labeled = chats()

    def engine(name: str, hit) -> EvaluationResult:
        return EvaluationResult(name, labeled, tuple(QueryResult(q.query_id, ("plans",) if hit(q) else ("x",))
                                                     for q in labeled.queries))

    now, before = engine("a", lambda q: q.turn != 2), engine("a", lambda q: True)
    tags = [s.tag for s in compare(RunResults([now]), RunResults([before]), ["hit@5"]).segments]
    assert "first-turn" in tags and "turn:1" not in tags and len(tags) == len(set(tags))  # turn:1 is first-turn
    gains = [tag for tag, *_ in shadow(now, engine("b", lambda q: True), {"hit@5": 1.0}).segments]
    assert "first-turn" in gains and "turn:1" not in gains
