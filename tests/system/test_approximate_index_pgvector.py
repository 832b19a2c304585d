"""Honest approximate indexes on the real pgvector: the hybrid engine's HNSW settings applied per
engine and recorded, its exact search a scan without the index, the approximate-versus-exact gap
and an under-returning filtered search (a team's engine over its own table), measured."""

from __future__ import annotations

import random

import pytest

from conftest import requires_hybrid

pytestmark = [requires_hybrid, pytest.mark.postgres]

WORDS = [f"w{i}" for i in range(3000)]
K = 10


@pytest.fixture(scope="module")
def pg():
    from pytest_retrieval_eval.hybrid.store.embedded import EmbeddedPostgres

    store = EmbeddedPostgres()
    store.start()
    yield store
    store.stop()


@pytest.fixture(scope="module")
def corpus():
    """600 documents of 30 random words: enough points for an HNSW search at ef_search 1 to lose
    most nearest neighbours."""
    from pytest_retrieval_eval.data.corpus import Corpus
    from pytest_retrieval_eval.types import Doc

    rng = random.Random(7)
    return Corpus(tuple(Doc(f"doc{i}", " ".join(rng.choices(WORDS, k=30))) for i in range(600)), name="synthetic")


@pytest.fixture(scope="module")
def labeled(corpus):
    """Each question a third of a document's words; that document relevant."""
    from pytest_retrieval_eval.data.labeled import LabeledSet
    from pytest_retrieval_eval.types import LabeledQuery

    return LabeledSet(tuple(LabeledQuery(f"q{i}", " ".join(d.content.split()[::3]), {d.doc_id: 1})
                            for i, d in enumerate(corpus.docs[:40])), name="synthetic")


@pytest.fixture(scope="module")
def index(pg, corpus, tmp_path_factory):
    from pytest_retrieval_eval.hybrid.embedders import Embedder, HashingBackend
    from pytest_retrieval_eval.hybrid.embedding_cache import EmbeddingCache
    from pytest_retrieval_eval.hybrid.ingest import ingest

    embedder = Embedder(HashingBackend(64), EmbeddingCache(tmp_path_factory.mktemp("c") / "e.sqlite3"))
    return ingest(corpus, pg, embedder)


def engine(index, **settings):
    from pytest_retrieval_eval.engines.hybrid import HybridConfig, HybridEngine

    return HybridEngine(index, HybridConfig(**settings), name="hybrid")


def analysed(e, corpus):
    from pytest_retrieval_eval.analysis.analyse import analyse
    from pytest_retrieval_eval.analysis.coverage import coverage_record
    from pytest_retrieval_eval.evaluation.results import RunResults
    from pytest_retrieval_eval.rules.settings import GateSettings

    return analyse(RunResults([e], coverage=coverage_record(corpus.docs, [e.labeled])), GateSettings(miss_k=K))


def test_the_engine_records_its_index_and_the_settings_it_searches_at(index):
    info = engine(index, ef_search=25, iterative_scan="relaxed_order").describe()
    assert {k: info[k] for k in ("index", "hnsw_m", "hnsw_ef_construction", "ef_search", "iterative_scan")} == {
        "index": "hnsw", "hnsw_m": 16, "hnsw_ef_construction": 64, "ef_search": 25, "iterative_scan": "relaxed_order"}
    assert engine(index).describe()["ef_search"] == 200  # by default never below the vector leg's top k
    assert engine(index, vector_top_k=300).describe()["ef_search"] == 300


def test_engines_sharing_an_index_each_search_at_their_own_ef_search(index):
    """One connection serves both: each engine sets its own before each vector query."""
    from pytest_retrieval_eval.hybrid.haystack_internals import connection

    narrow, wide = engine(index, ef_search=3, use_keyword=False), engine(index, ef_search=400, use_keyword=False)
    question = "w1 w2 w3 w4"
    for _ in range(2):
        assert len(narrow.retrieve_stages(question, K).legs["vector"]) <= 3
        assert len(wide.retrieve_stages(question, K).legs["vector"]) == 50
    scanned = engine(index, ef_search=3, use_keyword=False, iterative_scan="relaxed_order")
    assert len(scanned.retrieve_stages(question, K).legs["vector"]) == 50  # it scans on until the LIMIT is met
    assert connection(index.document_store).execute("SHOW hnsw.iterative_scan").fetchone()[0] == "relaxed_order"
    assert len(narrow.retrieve_stages(question, K).legs["vector"]) <= 3  # and back off for the next engine


def test_the_exact_search_leaves_the_index_unused_and_the_connection_as_it_was(index):
    from pytest_retrieval_eval.hybrid.haystack_internals import connection, exact_scan

    conn = connection(index.document_store)
    table = f'"{index.store.schema}"."{index.table}"'
    plan = f"EXPLAIN SELECT id FROM {table} ORDER BY embedding <=> (SELECT embedding FROM {table} LIMIT 1) LIMIT 5"
    assert "_hnsw" in "".join(r[0] for r in conn.execute(plan).fetchall())
    with exact_scan(index.document_store):
        scanned = "".join(r[0] for r in conn.execute(plan).fetchall())
    assert "_hnsw" not in scanned and "Seq Scan" in scanned
    assert conn.execute("SHOW enable_indexscan").fetchone()[0] == "on"
    narrow = engine(index, ef_search=1, use_keyword=False)
    assert len(narrow.exact_search("w1 w2 w3", K)) == 50  # every row by distance: the vector leg's full top k


def test_a_tiny_ef_search_shows_its_gap_and_under_returns_and_a_large_one_has_none(index, labeled, corpus):
    from pytest_retrieval_eval.evaluation.evaluate import evaluate_engine

    tiny = evaluate_engine(engine(index, ef_search=1, use_keyword=False), labeled, known_ids=corpus, exact=True)
    a = analysed(tiny, corpus)
    [gap], [short] = a.index_gaps, a.under_returns
    assert gap.n == len(labeled) and gap.recall < 0.5 and gap.interval[1] < 1.0
    assert short.short == tuple((q.query_id, 1) for q in labeled.queries)  # one row a query: one document
    assert "--retrieval-hybrid=iterative_scan=relaxed_order" in short.line()
    assert gap.misses and all(c.kind == "approximate" and c.rank <= K for c in gap.misses)

    large = evaluate_engine(engine(index, ef_search=400, use_keyword=False), labeled, known_ids=corpus, exact=True)
    a = analysed(large, corpus)
    [gap] = a.index_gaps
    assert (gap.recall, gap.differ, gap.misses, a.under_returns) == (1.0, 0, (), ())


# --- a team's own engine over its own table, with a filter ----------------------------------------

DIM, ROWS, KEPT = 16, 20000, 2000  # the filter keeps 10% of the rows (fewer rows: the planner scans them all)


@pytest.fixture(scope="module")
def items(pg):
    """A team's table: 20,000 random vectors, 2,000 of them in category 0, an HNSW index."""
    import numpy as np
    import psycopg

    rng = np.random.default_rng(3)
    vectors = rng.normal(size=(ROWS, DIM)).astype(np.float32)
    table = f'"{pg.schema}".items'
    with psycopg.connect(pg.dsn, autocommit=True) as conn:
        conn.execute(f"CREATE TABLE {table} (id text PRIMARY KEY, category int, embedding vector({DIM}))")
        with conn.cursor() as cur, cur.copy(f"COPY {table} (id, category, embedding) FROM STDIN") as copy:
            for i, v in enumerate(vectors):
                copy.write_row((f"item{i}", 0 if i % (ROWS // KEPT) == 0 else 1, literal(v)))
        conn.execute(f"CREATE INDEX ON {table} USING hnsw (embedding vector_cosine_ops)")
        conn.execute(f"ANALYZE {table}")
    return table, vectors


def literal(v) -> str:
    return "[" + ",".join(f"{x:.6f}" for x in v) + "]"


class FilteredSearch:
    """A team's engine: the nearest items of category 0, by its HNSW index; ``exact_search`` the
    same query with index scans off (what docs/engines.md shows)."""

    def __init__(self, dsn: str, table: str, queries: dict, *, iterative: bool = False) -> None:
        import psycopg

        self.name, self.table, self.queries = "filtered", table, queries
        self.conn = psycopg.connect(dsn, autocommit=True)
        if iterative:
            self.conn.execute("SET hnsw.iterative_scan = relaxed_order")

    def _search(self, query: str, k: int) -> list[str]:
        sql = f"SELECT id FROM {self.table} WHERE category = 0 ORDER BY embedding <=> %s::vector LIMIT %s"
        return [r[0] for r in self.conn.execute(sql, (self.queries[query], k)).fetchall()]

    def retrieve(self, query: str, k: int) -> list[str]:
        return self._search(query, k)

    def exact_search(self, query: str, k: int) -> list[str]:
        with self.conn.transaction():
            self.conn.execute("SET LOCAL enable_indexscan = off")
            return self._search(query, k)


def test_a_filtered_search_that_under_returns_is_flagged_with_the_count_of_questions(pg, items):
    import numpy as np

    from pytest_retrieval_eval.data.corpus import Corpus
    from pytest_retrieval_eval.data.labeled import LabeledSet
    from pytest_retrieval_eval.evaluation.evaluate import evaluate_engine
    from pytest_retrieval_eval.types import Doc, LabeledQuery

    table, vectors = items
    rng = np.random.default_rng(5)
    kept = vectors[:: ROWS // KEPT]
    unit = kept / np.linalg.norm(kept, axis=1, keepdims=True)
    queries, labels = {}, []
    for i in range(30):
        q = rng.normal(size=DIM).astype(np.float32)
        best = int(np.argmax(unit @ (q / np.linalg.norm(q))))  # the nearest item the filter keeps: relevant
        queries[f"query {i}"] = literal(q)
        labels.append(LabeledQuery(f"q{i}", f"query {i}", {f"item{best * (ROWS // KEPT)}": 1}))
    labeled = LabeledSet(tuple(labels), name="filtered")
    corpus = Corpus(tuple(Doc(f"item{i}", "") for i in range(ROWS)), name="items")

    found = evaluate_engine(FilteredSearch(pg.dsn, table, queries), labeled, depth=K, known_ids=corpus, exact=True)
    a = analysed(found, corpus)
    [short] = a.under_returns
    assert len(short.short) >= 20 and all(n < K for _, n in short.short)  # 40 candidates, 10% kept: about 4
    assert short.line().startswith(f"filtered under-returned on {len(short.short)} of 30 questions at k={K}")
    assert short.fix == ""  # a team's engine: the run cannot know its fix
    [gap] = a.index_gaps
    assert gap.n == 30 and gap.recall < 0.5 and all(len(r.exact) == K for r in found.results)

    scanned = evaluate_engine(FilteredSearch(pg.dsn, table, queries, iterative=True), labeled, depth=K,
                              known_ids=corpus, exact=True)
    a = analysed(scanned, corpus)
    assert a.under_returns == () and a.index_gaps[0].recall > 0.9  # it scans on until the LIMIT is met
