"""Ingestion through Haystack into the embedded pgvector store, and the hybrid engine on it."""

from __future__ import annotations

import pytest

psycopg = pytest.importorskip("psycopg")  # the hybrid extra

from conftest import CORPUS, QUESTIONS
from fake_api import Reply
from pytest_retrieval_eval import RetrievalEvalError
from pytest_retrieval_eval.data.corpus import JsonFolder
from pytest_retrieval_eval.hybrid.embedders import Embedder, HashingBackend, backend_for, packaged_minilm_path
from pytest_retrieval_eval.hybrid.embedding_cache import EmbeddingCache
from pytest_retrieval_eval.engines.hybrid import HybridConfig, HybridEngine, chunks_to_docs
from pytest_retrieval_eval.engines.keyword import KeywordEngine
from conftest import evaluate_engine
from pytest_retrieval_eval.hybrid.ingest import IngestConfig, ingest
from pytest_retrieval_eval.data.labeled import load_questions_cache
from pytest_retrieval_eval.hybrid.rerankers import make_reranker, validate_cross_encoder
from pytest_retrieval_eval.hybrid.store.embedded import EmbeddedPostgres

pytestmark = [pytest.mark.postgres]

BODY_ONLY = ("ops-bulletin-07", "memo-2026-03", "more-answers", "appendix-c")


@pytest.fixture(scope="module")
def store():
    s = EmbeddedPostgres()
    s.start()
    yield s
    s.stop()


@pytest.fixture(scope="module")
def corpus():
    return JsonFolder(CORPUS).load()


@pytest.fixture(scope="module")
def labeled(corpus):
    return load_questions_cache(QUESTIONS, known_doc_ids=corpus.doc_ids)


@pytest.fixture(scope="module")
def hashed(store, corpus, tmp_path_factory):
    embedder = Embedder(HashingBackend(256), EmbeddingCache(tmp_path_factory.mktemp("c") / "e.sqlite3"))
    return ingest(corpus, store, embedder)


@pytest.fixture(scope="module")
def minilm(store, corpus, shared_cache_dir):
    embedder = Embedder(backend_for("minilm"), EmbeddingCache(shared_cache_dir / "embeddings.sqlite3"))
    return ingest(corpus, store, embedder)


def test_chunks_have_stable_ids_and_the_metadata_retrieval_filters_on(hashed, corpus, store):
    by_doc: dict[str, list[int]] = {}
    for c in hashed.chunks:
        assert c.chunk_id == f"{c.doc_id}:{c.index}"
        assert c.meta["org_id"] == "eval" and c.meta["dataset"] == "corpus" and c.meta["chunk_index"] == c.index
        by_doc.setdefault(c.doc_id, []).append(c.index)
    assert set(by_doc) == set(corpus.doc_ids)
    assert all(sorted(v) == list(range(len(v))) for v in by_doc.values())
    long_docs = [d.doc_id for d in corpus if len(d.content.split()) >= 600]
    assert all(len(by_doc[d]) >= 2 for d in long_docs)
    assert hashed.document_store.count_documents() == len(hashed.chunks)
    with psycopg.connect(store.dsn) as conn:
        rows = dict(conn.execute("SELECT indexname, indexdef FROM pg_indexes WHERE schemaname = %s AND tablename = %s",
                                 (store.schema, hashed.table)).fetchall())
    assert "USING gin" in rows[f"{hashed.table}_kw"] and "USING hnsw" in rows[f"{hashed.table}_hnsw"]


def test_word_windows_overlap_as_configured(store, corpus, hashed):
    small = ingest(corpus, store, hashed.embedder, IngestConfig(split_length=100, split_overlap=20))
    assert small.table != hashed.table and len(small.chunks) > len(hashed.chunks)
    first, second = [c for c in small.chunks if c.doc_id == "returns-policy"][:2]
    assert first.text.split()[-20:] == second.text.split()[:20]
    assert all(len(c.text.split()) <= 100 for c in small.chunks)
    # Two tables in one schema keep their own indexes (index names are schema-wide).
    with psycopg.connect(store.dsn) as conn:
        names = {r[0] for r in conn.execute("SELECT indexname FROM pg_indexes WHERE schemaname = %s", (store.schema,))}
    assert {f"{hashed.table}_hnsw", f"{small.table}_hnsw", f"{hashed.table}_kw", f"{small.table}_kw"} <= names


def test_reingesting_the_same_corpus_embeds_nothing(store, corpus, hashed):
    again = ingest(corpus, store, hashed.embedder)
    assert again.table == hashed.table and again.stats["embedded"] == 0 and again.stats["cached"] == len(hashed.chunks)


def test_ingestion_in_small_batches_writes_the_rows_of_one_pass(store, corpus, hashed, monkeypatch):
    """Batch after batch (here 3 documents a batch) the table holds the rows one pass over the
    corpus writes: ids, text, metadata and vectors, and the chunks come back in corpus order."""
    from pytest_retrieval_eval.hybrid import ingest as ingestion

    monkeypatch.setattr(ingestion, "BATCH_DOCUMENTS", 3)
    said = []
    batched = ingest(corpus, store, hashed.embedder, IngestConfig(org_id="batched"), progress=said.append)
    assert len(corpus.docs) > 3 * 5 and batched.stats["written"] == len(batched.chunks) == len(hashed.chunks)
    assert [c.chunk_id for c in batched.chunks] == [c.chunk_id for c in hashed.chunks]
    assert [c.text for c in batched.chunks] == [c.text for c in hashed.chunks]
    assert batched.stats["index_seconds"] > 0

    def rows(table):
        with psycopg.connect(store.dsn) as conn:
            return conn.execute(f"SELECT id, content, meta - 'org_id', embedding::text FROM {store.schema}.{table} "
                                "ORDER BY id").fetchall()

    assert rows(batched.table) == rows(hashed.table)
    assert not [line for line in said if "ingested" in line]  # under 200 documents: no progress lines


@pytest.mark.parametrize("length, overlap", [(0, 0), (100, 100), (100, -1)])
def test_bad_split_settings(length, overlap):
    with pytest.raises(RetrievalEvalError, match="split settings"):
        IngestConfig(split_length=length, split_overlap=overlap)


def test_chunks_to_docs_keeps_the_first_occurrence_of_each_parent():
    class C:
        def __init__(self, doc):
            self.meta = {"doc_id": doc}

    assert chunks_to_docs([C("a"), C("b"), C("a"), C("c"), C("b")]) == ["a", "b", "c"]


def test_question_embeddings_are_batched_before_the_query_loop(hashed, labeled):
    calls = []
    embed = hashed.embedder.embed
    hashed.embedder.embed = lambda texts, progress=None: calls.append(len(texts)) or embed(texts, progress)
    try:
        result = evaluate_engine(HybridEngine(hashed), labeled)
    finally:
        hashed.embedder.embed = embed
    assert calls == [len(labeled)]  # one batch, no call per query
    assert result.n_errored == 0


def test_hybrid_over_joined_turns_embeds_in_one_batch_the_texts_it_searches(hashed, labeled):
    from pytest_retrieval_eval.data.labeled import LabeledSet
    from pytest_retrieval_eval.engines.turns import concatenated
    from pytest_retrieval_eval.types import LabeledQuery, Turn, turn_id

    first, second = labeled.queries[:2]
    chat = LabeledSet((LabeledQuery(turn_id("c", 1), first.question, first.relevant, conversation="c", turn=1),
                       LabeledQuery(turn_id("c", 2), second.question, second.relevant, conversation="c", turn=2,
                                    history=(Turn("user", first.question),))), name="chat")
    calls = []
    embed = hashed.embedder.embed
    hashed.embedder.embed = lambda texts, progress=None: calls.append(list(texts)) or embed(texts, progress)
    try:
        result = evaluate_engine(concatenated(HybridEngine(hashed)), chat)
    finally:
        hashed.embedder.embed = embed
    assert calls == [[first.question, f"{first.question} {second.question}"]]  # what it searches, no call per turn
    assert result.n_errored == 0


def test_a_team_s_rewriter_over_hybrid_keeps_its_stages_and_miss_causes(hashed, labeled):
    from pytest_retrieval_eval.analysis.scores import Scores
    from pytest_retrieval_eval.data.labeled import LabeledSet
    from pytest_retrieval_eval.engines.turns import rewritten
    from pytest_retrieval_eval.types import LabeledQuery, Turn, turn_id

    queries = []
    for c, q in enumerate(labeled.queries[:12]):  # each question as the follow-up of an unrelated first turn
        queries.append(LabeledQuery(turn_id(f"c{c}", 1), "hello", q.relevant, conversation=f"c{c}", turn=1))
        queries.append(LabeledQuery(turn_id(f"c{c}", 2), q.question, q.relevant, conversation=f"c{c}", turn=2,
                                    history=(Turn("user", "hello"),)))
    chat = LabeledSet(tuple(queries), name="chat")
    result = evaluate_engine(rewritten(HybridEngine(hashed), lambda turns: turns[-1].text), chat)
    assert result.n_errored == 0 and all({s.name for s in r.stages} >= {"keyword", "vector", "fusion"}
                                         for r in result.results)
    kinds = {c.kind for c in Scores.of(result).misses(1).causes}
    assert kinds and kinds <= {"ranked", "cut", "never-candidate"}  # the stages' causes, never "not retrieved"
    assert all(r.rewrite is not None for r in result.results)


def test_keyword_only_variant_counts_its_empty_results(hashed, labeled):
    engine = HybridEngine(hashed, HybridConfig(use_vector=False))
    evaluate_engine(engine, labeled)
    empty, total = map(int, engine.describe()["keyword_empty"].split("/"))
    assert total == len(labeled) and empty > total // 2  # plainto_tsquery ANDs every question word
    with pytest.raises(RetrievalEvalError, match="at least one of the keyword and vector retrievers"):
        HybridConfig(use_keyword=False, use_vector=False)


@pytest.mark.model
def test_hybrid_on_minilm_clearly_beats_the_metadata_keyword_engine(minilm, corpus, labeled):
    hybrid = evaluate_engine(HybridEngine(minilm), labeled)
    keyword = evaluate_engine(KeywordEngine(corpus), labeled)
    assert hybrid.hit_at(5) >= keyword.hit_at(5) + 0.3
    assert hybrid.hit_at(5) >= 0.9
    body_only = [q for q in labeled if q.gold[0] in BODY_ONLY]
    assert len(body_only) == 8
    # Their distinctive words live only in the body: the hybrid engine finds every one, the
    # metadata engine only by accident (a 2-letter query term inside a generic title).
    assert all(hybrid.per_query("hit@5")[q.query_id] == 1.0 for q in body_only)
    keyword_hits = [keyword.per_query("hit@5")[q.query_id] for q in body_only]
    assert sum(keyword_hits) <= 2, keyword_hits
    assert hybrid.engine_info["rerank"].startswith("off")


def test_http_reranker_reorders_through_a_real_server(hashed, labeled, fake_api):
    def answer(request):
        n = len(request["documents"])
        return {"results": [{"index": i, "relevance_score": float(i)} for i in range(n)]}  # reverse order

    fake_api.script("/rerank", Reply(429, {"error": "busy"}, {"retry-after": "0"}), Reply(200, answer))
    plain = HybridEngine(hashed)
    reranked = HybridEngine(hashed, HybridConfig(rerank="http:test-reranker", rerank_top_k=5))
    question = labeled.queries[0].question
    top = plain.retrieve(question, 100)
    got = reranked.retrieve(question, 100)
    seen = fake_api.hits("/rerank")
    assert len(seen) == 2 and seen[-1].body["model"] == "test-reranker" and len(seen[-1].body["documents"]) == 5
    assert set(got) <= set(top) and got != top[: len(got)]
    assert reranked.describe()["rerank"] == "http:test-reranker"


def test_http_reranker_errors_are_recorded_per_query_without_the_key(hashed, labeled, fake_api):
    from conftest import FAKE_KEY

    fake_api.script("/rerank", Reply(401, {"error": f"bad key {FAKE_KEY}"}))
    result = evaluate_engine(HybridEngine(hashed, HybridConfig(rerank="http:m")), labeled)
    assert result.n_errored == len(labeled)
    error = next(iter(result.errors.values()))
    assert "HTTP 401" in error and "check the API key" in error and FAKE_KEY not in error


@pytest.mark.model
def test_an_embedding_model_is_refused_as_a_cross_encoder():
    with pytest.raises(RetrievalEvalError, match="not a cross-encoder: architectures \\['BertModel'\\]"):
        validate_cross_encoder(packaged_minilm_path())
    with pytest.raises(RetrievalEvalError, match="rerank setting 'sometimes' not understood"):
        make_reranker("sometimes")
