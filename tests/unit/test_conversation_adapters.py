"""Adapters that take the conversation, against the real things: a function ``fn(turns, k)``, an
HTTP service given the turns as chat messages in its request body (a real local server), and a
Haystack pipeline whose input is a list of ``ChatMessage`` (a real rewriting component feeding
a BM25 retriever)."""

from __future__ import annotations

import pytest

from fake_api import FakeApi, Reply
from pytest_retrieval_eval import RetrievalEvalError, Turn, adapters
from pytest_retrieval_eval.engines.base import converses
from conftest import evaluate_engine
from test_conversation_evaluation import CORPUS, by_position, conversations, keyword_scores, ranked, rewrite


def test_a_function_takes_the_turns_and_a_single_question_as_one_user_turn():
    seen = []

    def talk(turns, k):
        seen.append(turns)
        return ["a"]

    engine = adapters.function(talk, conversation=True)
    assert converses(engine) and not converses(adapters.function(lambda q, k: ["a"]))
    assert engine.retrieve("just a question", 5) == ["a"]
    assert engine.retrieve_conversation([Turn("user", "x"), Turn("assistant", "y"), Turn("user", "z")], 5) == ["a"]
    assert seen == [(Turn("user", "just a question"),), (Turn("user", "x"), Turn("assistant", "y"), Turn("user", "z"))]
    assert engine.describe()["takes"] == "the conversation"


def test_an_async_function_takes_the_turns():
    async def talk(turns, k):
        return rewrite(turns, k)

    result = evaluate_engine(adapters.function(talk, conversation=True, concurrency=4), conversations())
    assert by_position(result, "hit@1") == {1: 1.0, 2: 1.0} and result.engine_info["conversation"] == "turns"


def chat_search(request):
    """A search service that reads the conversation: the last user message weighs double."""
    turns = [Turn(m["role"], m["content"]) for m in request["messages"]]
    return {"hits": [{"id": d} for d in rewrite(turns, request["size"])]}


def test_an_http_service_gets_the_conversation_as_chat_messages_in_the_body():
    labeled = conversations()
    with FakeApi() as api:
        api.script("/search", Reply(200, chat_search))
        engine = adapters.http(api.url + "/search", method="POST", ids="hits[].id",
                               json={"messages": "{conversation}", "last": "{query}", "size": "{k}"})
        result = evaluate_engine(engine, labeled)
        single = engine.retrieve("the warranty for phones", 3)
    assert converses(engine) and result.n_errored == 0 and result.engine_info["conversation"] == "turns"
    assert by_position(result, "hit@1") == {1: 1.0, 2: 1.0}
    follow_up = next(s.body for s in api.hits("/search") if s.body["last"] == "and for phones?"
                     and "refund" in s.body["messages"][0]["content"])
    assert follow_up["messages"] == [
        {"role": "user", "content": "What about the refund window for laptops?"},
        {"role": "assistant", "content": "For laptops, the refund window is in the policy."},
        {"role": "user", "content": "and for phones?"}]
    assert follow_up["size"] == 100 and single[0] == "warranty-phones"
    assert api.hits("/search")[-1].body["messages"] == [{"role": "user", "content": "the warranty for phones"}]


def test_an_http_service_without_a_conversation_template_gets_the_last_turn():
    labeled = conversations()
    with FakeApi() as api:
        api.script("/search", Reply(200, lambda r: {"hits": [{"id": d} for d in ranked(keyword_scores(r["q"]))]}))
        engine = adapters.http(api.url + "/search?q={query}", ids="hits[].id")
        result = evaluate_engine(engine, labeled)
    assert not converses(engine) and result.engine_info["conversation"] == "last turn"
    assert by_position(result, "hit@1") == {1: 1.0, 2: 0.2}
    with pytest.raises(RetrievalEvalError, match='conversation=True needs a json body template with a '
                                                 '"\\{conversation\\}" value'):
        adapters.http("http://127.0.0.1:9/search", method="POST", json={"q": "{query}"}, conversation=True)


def test_a_haystack_pipeline_takes_the_conversation_as_chat_messages():
    pytest.importorskip("haystack", reason="the hybrid extra")  # a failure under CI
    from haystack import Document, Pipeline, component
    from haystack.components.retrievers.in_memory import InMemoryBM25Retriever
    from haystack.dataclasses import ChatMessage
    from haystack.document_stores.in_memory import InMemoryDocumentStore

    @component
    class JoinUserTurns:
        """A query rewrite: the user's messages joined, the latest last."""

        def __init__(self) -> None:
            self.seen: list[list[ChatMessage]] = []

        @component.output_types(query=str)
        def run(self, messages: list[ChatMessage]):
            self.seen.append(messages)
            return {"query": " ".join(m.text for m in messages if m.is_from("user"))}

    store = InMemoryDocumentStore()
    store.write_documents([Document(id=f"{d}:0", content=text, meta={"doc_id": d}) for d, text in CORPUS.items()])
    pipeline = Pipeline()
    rewriter = JoinUserTurns()
    pipeline.add_component("rewrite", rewriter)
    pipeline.add_component("retriever", InMemoryBM25Retriever(document_store=store, top_k=5))
    pipeline.connect("rewrite.query", "retriever.query")
    labeled = conversations()
    result = evaluate_engine(adapters.haystack(pipeline, name="chat", conversation_input="messages"), labeled,
                             known_ids=CORPUS)
    named = evaluate_engine(adapters.haystack(pipeline, name="chat", conversation_input="rewrite.messages"),
                            labeled, known_ids=CORPUS)
    assert result.n_errored == 0 and result.engine_info["conversation"] == "turns"
    assert result.engine_info["conversation_input"] == "messages"
    assert by_position(result, "hit@2") == {1: 1.0, 2: 1.0}
    assert [r.doc_ids for r in result.results] == [r.doc_ids for r in named.results]
    follow_up = rewriter.seen[1]
    assert [m.role.value for m in follow_up] == ["user", "assistant", "user"]
    assert follow_up[-1].text == "and for phones?"
    assert result.results[0].passages  # the retriever's passages kept: read at the evidence level
