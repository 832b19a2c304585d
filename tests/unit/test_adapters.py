"""Adapters against the real objects: a Haystack pipeline and component, LangChain and LlamaIndex
retrievers, an HTTP search service (a real local server), plain and async functions; and the
concurrency that runs an engine's queries several at a time with the serial run's results."""

from __future__ import annotations

import asyncio
import json
import math
import re
import threading
import time

import pytest

from conftest import CORPUS, QUESTIONS
from fake_api import FakeApi, Reply
from pytest_retrieval_eval import RetrievalEvalError, adapters
from pytest_retrieval_eval.data.chunking import chunk_corpus
from pytest_retrieval_eval.data.corpus import JsonFolder
from pytest_retrieval_eval.data.labeled import load_questions_cache
from conftest import evaluate_engine

WORD = re.compile(r"[a-z]+")


@pytest.fixture(scope="module")
def corpus():
    return JsonFolder(CORPUS).load()


@pytest.fixture(scope="module")
def labeled():
    return load_questions_cache(QUESTIONS)


@pytest.fixture(scope="module")
def chunks(corpus):
    pytest.importorskip("haystack", reason="chunking runs Haystack's splitter (the hybrid extra)")  # fails under CI
    return chunk_corpus(corpus)


def bag(text: str, vocab: list[str]) -> list[float]:
    words = WORD.findall(text.lower())
    v = [float(words.count(w)) for w in vocab]
    norm = math.sqrt(sum(x * x for x in v)) or 1.0
    return [x / norm + 1e-9 for x in v]


# --- plain callables -------------------------------------------------------------------------

def test_a_function_may_answer_ids_pairs_or_a_score_dict(corpus, labeled):
    ids = adapters.function(lambda q, k: ["b", "a", "b"], name="ids")
    pairs = adapters.function(lambda q, k: [("a", 0.5), ("c", 0.9), ("b", 0.5)], name="pairs")
    scores = adapters.function(lambda q, k: {"a": 0.5, "c": 0.9, "b": 0.5}, name="scores")
    lazy = adapters.function(lambda q, k: (d for d in ["c", "a"]), name="lazy")
    assert ids.retrieve("x", 3) == ["b", "a", "b"]  # the evaluation drops the repeat
    assert pairs.retrieve("x", 3) == ["c", "b", "a"] == scores.retrieve("x", 3)  # trec_eval: ties by id descending
    assert lazy.retrieve("x", 3) == ["c", "a"]
    assert ids.name == "ids" and ids.describe()["adapter"] == "function"


def test_an_async_function_is_awaited_in_one_event_loop(corpus, labeled):
    loops = set()

    async def search(query: str, k: int):
        loops.add(id(asyncio.get_running_loop()))
        await asyncio.sleep(0.001)
        return {q.gold[0]: 1.0 for q in labeled if q.question == query}

    result = evaluate_engine(adapters.function(search, concurrency=8), labeled, known_ids=corpus)
    assert result.hit_at(1) == 1.0 and result.n_errored == 0 and len(loops) == 1


# --- Haystack -------------------------------------------------------------------------------

def haystack_pipeline(chunks):
    pytest.importorskip("haystack", reason="the hybrid extra")  # a failure under CI
    from haystack import Document, Pipeline
    from haystack.components.retrievers.in_memory import InMemoryBM25Retriever
    from haystack.document_stores.in_memory import InMemoryDocumentStore

    store = InMemoryDocumentStore()
    store.write_documents([Document(id=c.chunk_id, content=c.text, meta={"doc_id": c.doc_id}) for c in chunks])
    pipeline = Pipeline()
    pipeline.add_component("retriever", InMemoryBM25Retriever(document_store=store, top_k=20))
    return pipeline, store


def test_a_haystack_pipeline_and_a_component_are_engines(chunks, labeled, corpus):
    pipeline, store = haystack_pipeline(chunks)
    from haystack.components.retrievers.in_memory import InMemoryBM25Retriever
    via_pipeline = evaluate_engine(adapters.haystack(pipeline, name="bm25"), labeled, known_ids=corpus)
    via_component = evaluate_engine(adapters.haystack(InMemoryBM25Retriever(document_store=store), name="bm25"),
                                    labeled, known_ids=corpus, depth=20)
    assert via_pipeline.n_errored == 0 and via_pipeline.hit_at(5) > 0.5  # BM25 reads the bodies
    assert "unknown_ids" not in via_pipeline.engine_info  # chunk hits folded through meta["doc_id"]
    assert [r.doc_ids for r in via_pipeline.results] == [r.doc_ids for r in via_component.results]
    assert all(len(set(r.doc_ids)) == len(r.doc_ids) for r in via_pipeline.results)


def test_a_pipeline_with_two_document_outputs_must_name_one(chunks, labeled):
    pipeline, store = haystack_pipeline(chunks)
    from haystack.components.retrievers.in_memory import InMemoryBM25Retriever
    pipeline.add_component("other", InMemoryBM25Retriever(document_store=store, top_k=3))
    ambiguous = evaluate_engine(adapters.haystack(pipeline), labeled)
    assert ambiguous.n_errored == ambiguous.n
    assert "2 components returned documents (other, retriever); name one with output=" in ambiguous.results[0].error
    named = evaluate_engine(adapters.haystack(pipeline, output="other.documents"), labeled)
    assert named.n_errored == 0 and max(len(r.doc_ids) for r in named.results) <= 3


# --- LangChain and LlamaIndex -----------------------------------------------------------------

def test_a_langchain_retriever_is_an_engine(chunks, labeled, corpus):
    pytest.importorskip("langchain_core", reason="the dev extra installs langchain-core")  # a failure under CI
    from langchain_core.documents import Document
    from langchain_core.embeddings import Embeddings
    from langchain_core.vectorstores import InMemoryVectorStore

    vocab = sorted({w for c in chunks for w in WORD.findall(c.text.lower()) if len(w) > 3})

    class Bow(Embeddings):
        def embed_documents(self, texts):
            return [bag(t, vocab) for t in texts]

        def embed_query(self, text):
            return bag(text, vocab)

    store = InMemoryVectorStore(Bow())
    store.add_documents([Document(page_content=c.text, metadata={"doc_id": c.doc_id}, id=c.chunk_id) for c in chunks])
    result = evaluate_engine(adapters.langchain(store.as_retriever(search_kwargs={"k": 4})), labeled, known_ids=corpus,
                             depth=10)
    assert result.n_errored == 0 and result.hit_at(10) > 0.4
    assert max(len(r.doc_ids) for r in result.results) <= 10 and "unknown_ids" not in result.engine_info


def test_a_llamaindex_retriever_is_an_engine(chunks, labeled, corpus):
    pytest.importorskip("llama_index.core", reason="the dev extra installs llama-index-core")  # a failure under CI
    from llama_index.core import VectorStoreIndex
    from llama_index.core.embeddings import BaseEmbedding
    from llama_index.core.schema import TextNode

    vocab = sorted({w for c in chunks for w in WORD.findall(c.text.lower()) if len(w) > 3})

    class Bow(BaseEmbedding):
        def _get_text_embedding(self, text):
            return bag(text, vocab)

        def _get_query_embedding(self, query):
            return bag(query, vocab)

        async def _aget_query_embedding(self, query):
            return bag(query, vocab)

    nodes = [TextNode(text=c.text, id_=c.chunk_id, metadata={"doc_id": c.doc_id}) for c in chunks]
    index = VectorStoreIndex(nodes, embed_model=Bow())
    result = evaluate_engine(adapters.llamaindex(index.as_retriever(similarity_top_k=10)), labeled, known_ids=corpus)
    assert result.n_errored == 0 and result.hit_at(10) > 0.4 and "unknown_ids" not in result.engine_info


# --- HTTP -------------------------------------------------------------------------------------

def gold_answer(labeled, delay: float = 0.0):
    by_question = {q.question: q.gold[0] for q in labeled}

    def answer(request):
        question = request.get("q") or request.get("query", {}).get("text")
        return {"hits": [{"id": by_question.get(question, "nothing")}, {"id": "battery-care"}]}

    return Reply(200, answer, delay=delay)


def test_an_http_search_service_by_get_and_by_post(labeled, corpus, monkeypatch):
    monkeypatch.setenv("SEARCH_TOKEN", "tok-SECRET-9f8e7d6c")
    with FakeApi() as api:
        api.script("/search", gold_answer(labeled))
        get = adapters.http(api.url + "/search?q={query}&n={k}", ids="hits[].id",
                            headers={"Authorization": "Bearer ${SEARCH_TOKEN}"})
        post = adapters.http(api.url + "/search", method="POST", json={"query": {"text": "{query}"}, "size": "{k}"},
                             ids="hits[].id")
        by_get = evaluate_engine(get, labeled, known_ids=corpus)
        by_post = evaluate_engine(post, labeled, known_ids=corpus)
    assert by_get.hit_at(1) == 1.0 == by_post.hit_at(1) and by_get.n_errored == 0
    seen = api.hits("/search")
    assert seen[0].headers["authorization"] == "Bearer tok-SECRET-9f8e7d6c"
    assert seen[0].body["n"] == "100"  # the depth, in the URL
    assert any(s.body == {"query": {"text": labeled.queries[0].question}, "size": 100} for s in seen)


def test_http_retries_429_and_masks_the_header_secret(labeled, monkeypatch):
    monkeypatch.setenv("SEARCH_TOKEN", "tok-SECRET-1a2b3c4d")
    one = load_questions_cache(QUESTIONS)
    with FakeApi() as api:
        api.script("/search", Reply(429, {"error": "slow down"}, {"retry-after": "0"}), gold_answer(labeled))
        engine = adapters.http(api.url + "/search?q={query}", ids="hits[].id",
                               headers={"X-Key": "${SEARCH_TOKEN}"}, concurrency=1)
        assert engine.retrieve(one.queries[0].question, 5)[0] == one.queries[0].gold[0]
        api.script("/fail", Reply(403, {"error": "bad key tok-SECRET-1a2b3c4d"}))
        failing = adapters.http(api.url + "/fail", ids="hits[].id", headers={"X-Key": "${SEARCH_TOKEN}"})
        with pytest.raises(RetrievalEvalError) as info:
            failing.retrieve("q", 5)
    assert "HTTP 403" in str(info.value) and "tok-SECRET-1a2b3c4d" not in str(info.value) and "***" in str(info.value)
    with pytest.raises(RetrievalEvalError, match="header variable\\(s\\) NOT_SET_ANYWHERE not set"):
        adapters.http("http://127.0.0.1:9/x", headers={"A": "${NOT_SET_ANYWHERE}"})


def test_a_bad_ids_path_names_what_is_missing():
    with pytest.raises(RetrievalEvalError, match="ids path 'hits\\[\\].doc': no key 'doc'"):
        adapters.pick({"hits": [{"id": "a"}]}, "hits[].doc")
    assert adapters.pick({"data": {"results": [{"document": {"id": 1}}]}}, "data.results[].document.id") == ["1"]
    assert adapters.pick([{"id": "a"}, {"id": "b"}], "[].id") == ["a", "b"]
    assert adapters.pick({"ids": ["a", "b"]}, "ids") == ["a", "b"]


# --- concurrency ------------------------------------------------------------------------------

def test_concurrent_queries_give_the_serial_results_in_a_fraction_of_the_time(labeled, corpus):
    with FakeApi() as api:
        api.script("/search", gold_answer(labeled, delay=0.02))
        engine = adapters.http(api.url + "/search?q={query}", ids="hits[].id", concurrency=1)
        start = time.perf_counter()
        serial = evaluate_engine(engine, labeled, known_ids=corpus)
        serial_s = time.perf_counter() - start
        engine.concurrency = 16
        start = time.perf_counter()
        parallel = evaluate_engine(engine, labeled, known_ids=corpus)
        parallel_s = time.perf_counter() - start
    assert api.max_in_flight > 4
    strip = lambda r: {k: v for k, v in r.to_dict().items() if k != "engine_info"}  # noqa: E731
    assert json.dumps(strip(serial), sort_keys=True) == json.dumps(strip(parallel), sort_keys=True)
    assert parallel_s < serial_s / 3, (serial_s, parallel_s)


def test_a_timeout_still_holds_per_call_when_queries_run_concurrently(labeled):
    gate = threading.Event()

    def search(query, k):
        if "winter" in query.lower():
            gate.wait(5)
        return ["battery-care"]

    result = evaluate_engine(adapters.function(search), labeled, timeout=0.2, concurrency=4)
    gate.set()
    slow = [r for r in result.results if r.error]
    assert slow and all("no answer within 0.2s" in r.error for r in slow)
    assert result.n_errored == len(slow) < result.n


# --- chunk ids --------------------------------------------------------------------------------

def test_chunk_ids_of_the_plugins_form_are_folded_and_other_ids_explained(labeled, corpus):
    chunky = evaluate_engine(adapters.function(lambda q, k: ["battery-care:1", "battery-care:0", "winter-riding-tips:0"]),
                             labeled, known_ids=corpus)
    assert chunky.results[0].doc_ids == ("battery-care", "winter-riding-tips")
    assert chunky.engine_info["chunk_ids_folded"].startswith(f"{3 * labeled.__len__()} chunk hits")
    strange = evaluate_engine(adapters.function(lambda q, k: ["DOC-0001"]), labeled, known_ids=corpus)
    assert re.search(r"1 returned ids are not in the corpus, e.g. DOC-0001; corpus ids look like \S+, \S+, \S+",
                     strange.engine_info["unknown_ids"])
