"""The built-in baselines over any question engine (engines/turns.py): ``last_turn`` rewrites
nothing, ``concatenated`` joins the user's turns oldest first and leaves the assistant out; both
say so in ``describe()`` and keep the engine's own optional parts."""

from __future__ import annotations

import pytest_retrieval_eval as pre
from pytest_retrieval_eval import Turn, adapters, concatenated, last_turn
from pytest_retrieval_eval.engines.base import Prepares, converses, describe, is_async, is_staged

TURNS = (Turn("user", "refund window for laptops?"), Turn("assistant", "Thirty days for laptops."),
         Turn("user", "and for phones?"))


class Recorder:
    name = "rec"
    concurrency = 3

    def __init__(self) -> None:
        self.asked: list[str] = []
        self.prepared: list[str] = []

    def retrieve(self, query, k):
        self.asked.append(query)
        return ["d"]

    def prepare(self, questions):
        self.prepared += questions

    def describe(self):
        return {"engine": "recorder"}


def test_last_turn_asks_the_latest_user_text_and_says_it_rewrites_nothing():
    inner = Recorder()
    engine = last_turn(inner)
    assert converses(engine) and engine.name == "rec-last"
    assert engine.retrieve_conversation(TURNS, 5) == ["d"] and inner.asked == ["and for phones?"]
    assert describe(engine)["rewrite"] == "none: the last turn alone"
    assert describe(engine)["engine"] == "recorder"


def test_concatenated_joins_the_user_turns_oldest_first_and_leaves_the_assistant_out():
    inner = Recorder()
    concatenated(inner).retrieve_conversation(TURNS, 5)
    concatenated(inner, " | ", name="joined").retrieve_conversation(TURNS, 5)
    assert inner.asked == ["refund window for laptops? and for phones?", "refund window for laptops? | and for phones?"]
    info = describe(concatenated(inner))
    assert info["rewrite"] == "the user's turns joined oldest first by ' ', the assistant's replies left out"


def test_a_single_question_is_asked_as_it_is_and_the_engine_s_parts_are_kept():
    inner = Recorder()
    engine = concatenated(inner)
    assert engine.retrieve("a question", 5) == ["d"] and inner.asked == ["a question"]
    assert isinstance(engine, Prepares) and engine.concurrency == 3
    engine.prepare(["q1", "q2"])
    assert inner.prepared == ["q1", "q2"]
    assert not is_staged(engine) and not hasattr(engine, "retrieve_passages")
    assert not isinstance(concatenated(adapters.function(lambda q, k: ["d"])), Prepares)


def test_the_last_turn_baseline_records_that_it_was_given_the_last_turn_and_concatenated_the_turns():
    from pytest_retrieval_eval import LabeledQuery, LabeledSet
    from conftest import evaluate_engine
    from pytest_retrieval_eval.evaluation.evaluate import GIVEN_LAST_TURN_BASELINE, GIVEN_TURNS

    labeled = LabeledSet((LabeledQuery("c#2", "and for phones?", {"d": 1}, conversation="c", turn=2, history=TURNS[:-1]),))
    inner = adapters.function(lambda q, k: ["d"], name="search")
    assert converses(last_turn(inner))  # it takes the turns, and sends the last one alone
    assert evaluate_engine(last_turn(inner), labeled).engine_info["conversation"] == GIVEN_LAST_TURN_BASELINE
    assert evaluate_engine(concatenated(inner), labeled).engine_info["conversation"] == GIVEN_TURNS


def test_over_an_async_engine_both_calls_are_coroutines():
    import asyncio

    async def search(query, k):
        return [query]

    engine = last_turn(adapters.function(search, name="search"))
    assert is_async(engine)
    assert asyncio.run(engine.retrieve_conversation(TURNS, 5)) == ["and for phones?"]


def test_the_baselines_and_the_turn_type_are_public():
    assert {"last_turn", "concatenated", "Turn", "Converses"} <= set(pre.__all__)
    assert isinstance(last_turn(Recorder()), pre.Converses)


def test_the_built_in_hybrid_is_also_registered_over_the_joined_turns_only_where_there_are_conversations(tmp_path):
    from types import SimpleNamespace

    from conftest import HYBRID, QUESTIONS
    from pytest_retrieval_eval import EngineRegistry
    from pytest_retrieval_eval.plugin.engines import has_conversations, over_turns, register_builtin

    def names(conversations):
        registry = EngineRegistry()
        settings = SimpleNamespace(hybrid=SimpleNamespace(variants=()), data=None)
        register_builtin(registry, settings, conversations)
        return registry.select()

    assert names(lambda: False) == (["keyword", "hybrid"] if HYBRID else ["keyword"])
    assert names(lambda: True) == (["keyword", "hybrid", "hybrid-concat"] if HYBRID else ["keyword"])
    def data(questions, **more):
        return SimpleNamespace(**{"questions": questions, "regenerate": False, "corpus": None,
                                  "questions_explicit": True, **more})

    assert not has_conversations(data(QUESTIONS))  # the bundled questions: single questions, the run unchanged
    assert not has_conversations(data(tmp_path / "missing.json"))
    assert not has_conversations(data(None))
    chats = tmp_path / "chats.csv"  # a team's own labels table, read in place of the questions cache
    chats.write_text("conversation,turn,user,doc_id\nc1,1,How do I upgrade my plan?,d1\n")
    assert has_conversations(data(chats)) and not has_conversations(data(chats, regenerate=True))
    inner = Recorder()
    built = over_turns(lambda request: inner)(None)  # what the registry builds for hybrid-concat
    built.retrieve_conversation(TURNS, 5)
    assert inner.asked == ["refund window for laptops? and for phones?"]


def test_a_baseline_prepares_its_engine_with_the_texts_it_searches_not_the_last_turns():
    """What a batch embedding (the hybrid engine's ``prepare``) embeds is what the turns search."""
    from dataclasses import replace

    from pytest_retrieval_eval import LabeledQuery, LabeledSet, oracle_rewrite, rewritten
    from conftest import evaluate_engine

    single = LabeledQuery("q1", "phone warranty", {"d": 1})
    first = LabeledQuery("c#1", "refund window for laptops?", {"d": 1}, conversation="c", turn=1)
    second = LabeledQuery("c#2", "and for phones?", {"d": 1}, conversation="c", turn=2, history=TURNS[:2],
                          rewrite="refund window for phones?")
    labeled = LabeledSet((single, first, second), name="mixed")
    prepared = {}
    for wrap in (last_turn, concatenated, oracle_rewrite, lambda e: rewritten(e, lambda turns: "rewritten")):
        inner = Recorder()
        evaluate_engine(wrap(inner), labeled)
        prepared[wrap] = inner.prepared
        assert inner.asked[0] == "phone warranty"
    assert prepared[last_turn] == ["phone warranty", "refund window for laptops?", "and for phones?"]
    assert prepared[concatenated] == ["phone warranty", "refund window for laptops?",
                                      "refund window for laptops? and for phones?"]
    assert prepared[oracle_rewrite] == ["phone warranty", "refund window for laptops?", "refund window for phones?"]
    team = [v for k, v in prepared.items() if k not in (last_turn, concatenated, oracle_rewrite)][0]
    assert team == ["phone warranty"]  # a team's rewriter is asked at its turn, timed with it: nothing ahead
    turns_only = LabeledSet((first, replace(second, rewrite=None)), name="chats")
    inner = Recorder()
    evaluate_engine(rewritten(inner, lambda turns: "x"), turns_only)
    assert inner.prepared == [] and inner.asked == ["x", "x"]
