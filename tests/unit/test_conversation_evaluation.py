"""Asking an engine a conversation's turns (evaluation/evaluate.py): an engine with
``retrieve_conversation`` gets the turns so far, one without gets the last turn's text, sync,
async, staged and in threads alike, and the result records which. On conversations whose
follow-ups depend on their first turn, an engine that sees the last turn alone scores well on
first turns and badly on follow-ups; one that takes the conversation scores well on both."""

from __future__ import annotations

import asyncio
import re

import pytest

from pytest_retrieval_eval import LabeledQuery, LabeledSet, Stages, Turn, adapters, concatenated, last_turn
from conftest import evaluate_engine
from pytest_retrieval_eval.analysis.result import EvaluationResult
from pytest_retrieval_eval.types import turn_id

TOPICS = {"refund": "the refund window", "shipping": "how long shipping takes", "warranty": "the warranty",
          "repair": "where a repair is done", "battery": "how long the battery lasts"}
PRODUCTS = ("laptops", "phones")
#: one document per topic and product: "refund-laptops" holds "refund window laptops ..."
CORPUS = {f"{t}-{p}": f"{about} for {p}: {t} {p}" for t, about in TOPICS.items() for p in PRODUCTS}
STOP = {"what", "is", "the", "for", "and", "how", "long", "does", "take", "about", "a", "on", "where", "done",
        "lasts", "window", "takes"}


def words(text: str) -> set[str]:
    return set(re.findall(r"[a-z]+", text.lower())) - STOP


def keyword_scores(text: str, weight: float = 1.0, into: dict | None = None) -> dict[str, float]:
    scores = into if into is not None else {}
    for doc, body in CORPUS.items():
        scores[doc] = scores.get(doc, 0.0) + weight * len(words(text) & words(body))
    return scores


def ranked(scores: dict[str, float]) -> list[str]:
    return [d for d, s in sorted(scores.items(), key=lambda kv: (-kv[1], kv[0])) if s > 0]


class Keyword:
    """A question engine: word overlap with each document, ties by doc id."""

    name = "keyword"

    def __init__(self) -> None:
        self.asked: list[str] = []

    def retrieve(self, query: str, k: int) -> list[str]:
        self.asked.append(query)
        return ranked(keyword_scores(query))[:k]


def rewrite(turns, k):
    """A conversation engine: the last turn weighs double, the user's earlier turns once."""
    scores: dict[str, float] = {}
    for t in turns[:-1]:
        if t.role == "user":
            keyword_scores(t.text, 1.0, scores)
    return ranked(keyword_scores(turns[-1].text, 2.0, scores))[:k]


def conversations() -> LabeledSet:
    """Five conversations: "What about the refund window for laptops?" then "and for phones?"."""
    queries = []
    for topic, about in TOPICS.items():
        first = f"What about {about} for laptops?"
        queries.append(LabeledQuery(turn_id(topic, 1), first, {f"{topic}-laptops": 1}, conversation=topic, turn=1,
                                    depends=False))
        history = (Turn("user", first), Turn("assistant", f"For laptops, {about} is in the policy."))
        queries.append(LabeledQuery(turn_id(topic, 2), "and for phones?", {f"{topic}-phones": 1}, conversation=topic,
                                    turn=2, history=history, depends=True))
    return LabeledSet(tuple(queries), name="conversations")


def by_position(result: EvaluationResult, measure: str) -> dict[int, float]:
    values = result.per_query(measure)
    turns: dict[int, list[float]] = {}
    for q in result.labeled.queries:
        turns.setdefault(q.turn, []).append(values[q.query_id])
    return {t: sum(v) / len(v) for t, v in turns.items()}


def test_an_engine_given_the_last_turn_alone_fails_follow_ups_one_given_the_conversation_does_not():
    labeled = conversations()
    alone = evaluate_engine(Keyword(), labeled)
    talks = evaluate_engine(adapters.function(rewrite, name="rewrite", conversation=True), labeled)
    joined = evaluate_engine(concatenated(Keyword()), labeled)
    assert by_position(alone, "hit@1") == {1: 1.0, 2: 0.2}  # "and for phones?" alone: every phones document
    assert by_position(talks, "hit@1") == {1: 1.0, 2: 1.0}
    assert by_position(joined, "hit@2") == {1: 1.0, 2: 1.0}  # the two products' documents tie on the joined text
    assert alone.engine_info["conversation"] == "last turn" and talks.engine_info["conversation"] == "turns"
    assert joined.engine_info["conversation"] == "turns"
    assert "the user's turns joined oldest first" in joined.engine_info["rewrite"]


def test_the_conversation_engine_gets_the_turns_so_far_and_a_question_engine_the_last_text():
    seen = []

    def talk(turns, k):
        seen.append(turns)
        return ["refund-phones"]

    labeled = conversations()
    question_engine = Keyword()
    evaluate_engine(question_engine, labeled)
    evaluate_engine(adapters.function(talk, conversation=True), labeled)
    assert question_engine.asked[:2] == ["What about the refund window for laptops?", "and for phones?"]
    assert seen[1] == (Turn("user", "What about the refund window for laptops?"),
                       Turn("assistant", "For laptops, the refund window is in the policy."),
                       Turn("user", "and for phones?"))
    assert seen[0] == (Turn("user", "What about the refund window for laptops?"),)


def test_single_questions_still_go_to_retrieve_and_nothing_is_recorded_of_conversations():
    labeled = LabeledSet((LabeledQuery("q1", "refund laptops", {"refund-laptops": 1}),), name="questions")

    class Both(Keyword):
        def retrieve_conversation(self, turns, k):
            raise AssertionError("a single question is not a conversation")

    result = evaluate_engine(Both(), labeled)
    assert result.hit_at(1) == 1.0 and result.n_errored == 0
    assert "conversation" not in result.engine_info


def test_a_mixed_set_sends_only_the_turns_to_retrieve_conversation():
    single = LabeledQuery("q1", "warranty phones", {"warranty-phones": 1})
    labeled = LabeledSet((single, *conversations().queries[:2]), name="mixed")
    calls = []

    class Both(Keyword):
        def retrieve_conversation(self, turns, k):
            calls.append(len(turns))
            return rewrite(turns, k)

    engine = Both()
    result = evaluate_engine(engine, labeled)
    assert engine.asked == ["warranty phones"] and calls == [1, 3]
    assert result.hit_at(1) == 1.0


def test_an_async_engine_is_awaited_for_turns_as_for_questions():
    class Talks:
        name = "talks"
        concurrency = 4

        async def retrieve(self, query, k):
            raise AssertionError("turns go to retrieve_conversation")

        async def retrieve_conversation(self, turns, k):
            await asyncio.sleep(0)
            return rewrite(turns, k)

    async def plain(query, k):
        return ranked(keyword_scores(query))[:k]

    labeled = conversations()
    result = evaluate_engine(Talks(), labeled)
    assert by_position(result, "hit@1") == {1: 1.0, 2: 1.0} and result.engine_info["conversation"] == "turns"
    over_async = evaluate_engine(concatenated(adapters.function(plain, name="plain")), labeled)
    assert by_position(over_async, "hit@2") == {1: 1.0, 2: 1.0}
    alone = evaluate_engine(adapters.function(plain, name="plain"), labeled)
    assert by_position(alone, "hit@1") == {1: 1.0, 2: 0.2} and alone.engine_info["conversation"] == "last turn"


def test_threads_give_the_serial_answers_for_turns():
    labeled = conversations()
    engine = adapters.function(rewrite, conversation=True)
    serial = evaluate_engine(engine, labeled)
    threaded = evaluate_engine(engine, labeled, concurrency=4)
    assert [r.doc_ids for r in serial.results] == [r.doc_ids for r in threaded.results]


def test_a_staged_engine_tells_its_stages_for_turns_through_retrieve_conversation_or_retrieve_stages():
    class Staged:
        name = "staged"

        def retrieve(self, query, k):
            return self.retrieve_stages(query, k).ranked

        def retrieve_stages(self, query, k):
            found = ranked(keyword_scores(query))[:k]
            return Stages(found, {"bm25": found}, {})

    class StagedTalks(Staged):
        def retrieve_conversation(self, turns, k):
            return self.retrieve_stages(" ".join(t.text for t in turns if t.role == "user"), k)

    class PlainTalks(Staged):
        def retrieve_conversation(self, turns, k):  # a plain answer: no stages for the turn, still scored
            return rewrite(turns, k)

    labeled = conversations()
    alone = evaluate_engine(Staged(), labeled)
    assert all(r.stages and r.stages[0].name == "bm25" for r in alone.results)
    talks = evaluate_engine(StagedTalks(), labeled)
    assert all(r.stages for r in talks.results) and by_position(talks, "hit@2") == {1: 1.0, 2: 1.0}
    plain = evaluate_engine(PlainTalks(), labeled)
    assert plain.n_errored == 0 and not any(r.stages for r in plain.results)
    assert by_position(plain, "hit@1") == {1: 1.0, 2: 1.0}
    assert by_position(evaluate_engine(concatenated(Staged()), labeled), "hit@2") == {1: 1.0, 2: 1.0}
    assert all(r.stages for r in evaluate_engine(concatenated(Staged()), labeled).results)


def test_a_sync_engine_with_an_async_retrieve_conversation_is_told_so_per_turn():
    class Mixed(Keyword):
        async def retrieve_conversation(self, turns, k):
            return []

    result = evaluate_engine(Mixed(), conversations(), timeout=5)
    assert result.n_errored == result.n
    assert result.results[0].error == ("TypeError: retrieve_conversation() is async def but retrieve() is not: make "
                                       "both async def, or both plain def")


def test_the_record_round_trips_through_results_json():
    labeled = conversations()
    result = evaluate_engine(Keyword(), labeled)
    back = EvaluationResult.from_dict(result.to_dict())
    assert back.engine_info["conversation"] == "last turn"
    turn = back.labeled.by_id()["refund#2"]
    assert (turn.conversation, turn.turn, turn.depends) == ("refund", 2, True)
    assert turn.history == labeled.by_id()["refund#2"].history
    assert back.labeled.computed_fingerprint == labeled.fingerprint
    first, follow_up = result.to_dict()["queries"][:2]
    assert first["conversation"] == {"id": "refund", "turn": 1, "history": [], "depends": False}
    assert follow_up["conversation"]["history"][1] == {"role": "assistant",
                                                       "text": "For laptops, the refund window is in the policy."}
    single = LabeledSet((LabeledQuery("q1", "refund laptops", {"refund-laptops": 1}),), name="questions")
    assert "conversation" not in evaluate_engine(Keyword(), single).to_dict()["queries"][0]


@pytest.mark.parametrize("broken", [{"id": "c", "turn": 0, "history": []}, {"id": "c", "turn": 1, "history": [
    {"role": "system", "text": "x"}]}, "c#1"])
def test_a_hand_edited_conversation_entry_is_named(broken):
    d = evaluate_engine(Keyword(), conversations()).to_dict()
    d["queries"][0]["conversation"] = broken
    with pytest.raises(ValueError, match=r"'queries' entry 'refund#1': conversation must hold its id, turn \(>= 1\)"):
        EvaluationResult.from_dict(d)


def with_rewrites(labeled: LabeledSet) -> LabeledSet:
    """The conversations with a person's rewrite of each follow-up ("What about the refund window for phones?")."""
    from dataclasses import replace

    return LabeledSet(tuple(replace(q, rewrite=f"What about {TOPICS[q.conversation]} for phones?") if q.turn == 2 else q
                            for q in labeled.queries), name=labeled.name)


def test_an_engine_taking_turn_is_told_which_turn_it_answers_sync_threaded_and_async():
    from pytest_retrieval_eval import TurnContext

    told: list = []

    class Told(Keyword):
        def retrieve_conversation(self, turns, k, turn=None):
            told.append(turn)
            return rewrite(turns, k)

    class AsyncTold:
        name = "async-told"

        async def retrieve(self, query, k):
            return []

        async def retrieve_conversation(self, turns, k, *, turn):
            told.append(turn)
            return rewrite(turns, k)

    labeled = with_rewrites(conversations())
    for engine, width in ((Told(), 1), (Told(), 4), (AsyncTold(), 4)):
        told.clear()
        result = evaluate_engine(engine, labeled, concurrency=width)
        assert result.n_errored == 0
        assert sorted((t.query_id, t.conversation, t.turn) for t in told) == sorted(
            (q.query_id, q.conversation, q.turn) for q in labeled.queries)
        by_id = {t.query_id: t for t in told}
        assert isinstance(by_id["refund#2"], TurnContext)
        assert by_id["refund#2"].rewrite == "What about the refund window for phones?" and by_id["refund#1"].rewrite is None
    seen = []
    function = adapters.function(lambda turns, k, turn: seen.append(turn.query_id) or rewrite(turns, k),
                                 conversation=True)
    evaluate_engine(function, labeled)
    assert seen == [q.query_id for q in labeled.queries]  # an adapted function taking turn is told too


def test_a_rewrite_the_engine_records_is_kept_with_the_turn_s_result_and_in_results_json():
    class Says(Keyword):
        def retrieve_conversation(self, turns, k, turn=None):
            text = " ".join(t.text for t in turns if t.role == "user")
            if turn.turn == 2:
                turn.record_rewrite(text)
            return self.retrieve(text, k)

    labeled = with_rewrites(conversations())
    result = evaluate_engine(Says(), labeled)
    rewrites = {r.query_id: r.rewrite for r in result.results}
    assert rewrites["refund#1"] is None
    assert rewrites["refund#2"] == "What about the refund window for laptops? and for phones?"
    d = result.to_dict()
    first, second = d["queries"][:2]
    assert "rewrite" not in first and second["rewrite"] == rewrites["refund#2"]
    assert second["conversation"]["rewrite"] == "What about the refund window for phones?"  # the person's, a label
    back = EvaluationResult.from_dict(d)
    assert {r.query_id: r.rewrite for r in back.results} == rewrites
    assert back.labeled.by_id()["refund#2"].rewrite == "What about the refund window for phones?"
    d["queries"][1]["rewrite"] = 3
    with pytest.raises(ValueError, match="'queries' entry 'refund#2': rewrite must be the text the engine searched"):
        EvaluationResult.from_dict(d)
    plain = evaluate_engine(Keyword(), conversations()).to_dict()
    assert not any("rewrite" in q or "rewrite" in q["conversation"] for q in plain["queries"])


def test_an_async_engine_answering_a_turn_with_stages_keeps_them():
    class AsyncStaged:
        name = "async-staged"

        async def retrieve(self, query, k):
            return ranked(keyword_scores(query))[:k]

        async def retrieve_conversation(self, turns, k):
            found = rewrite(turns, k)
            return Stages(found, {"bm25": found}, {})

    result = evaluate_engine(AsyncStaged(), conversations())
    assert result.n_errored == 0 and all(r.stages and r.stages[0].name == "bm25" for r in result.results)
