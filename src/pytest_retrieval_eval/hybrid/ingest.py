"""Ingestion: corpus -> Haystack pipeline (clean > split > identify > embed > write) -> a pgvector table.

The pipeline is the built-in YAML ``pipelines/ingest.yaml``, loaded like a team's own; its
embedding step runs the configured embedder behind the embedding cache. It runs on the corpus
``BATCH_DOCUMENTS`` documents at a time, so the embeddings in memory are one batch's whatever the
corpus's size (every step is per document: the same rows as one run over all of them). Rows are
written without the HNSW and keyword (GIN) indexes, which are then built once over the full
table (faster than maintaining them row by row), and the table is vacuumed so the planner uses
the keyword index from the start.
"""

from __future__ import annotations

import dataclasses
import time
from typing import TYPE_CHECKING, Any, Callable

from .._lazy_torch import import_haystack
from ..data.chunking import chunks_of, sources
from ..data.corpus import Corpus
from ..errors import RetrievalEvalError
from .haystack_internals import fetch_binary
from .index import HNSW_MAX_DIM, IngestConfig, IngestedIndex  # re-exported: callers import them from here
from .store.base import Store, check_identifier
from ..types import Chunk, canonical_json, sha256_text

if TYPE_CHECKING:
    from .embedders import Embedder

#: documents per pass of the ingestion chain: bounds the embeddings held at once (a batch's chunks
#: as Haystack documents with their vectors as Python floats, about 10 kB a 384-dimension chunk)
BATCH_DOCUMENTS = 500


def table_name(corpus: Corpus, config: IngestConfig, embedder: Embedder) -> str:
    """Everything that shapes the table: the corpus, the chunking, the embedder and the built-in
    ingestion YAML itself (an edit to it is a new table, and a new snapshot)."""
    from ..data.pipeline_files import builtin

    layout = {k: v for k, v in dataclasses.asdict(config).items() if k != "near_duplicates"}  # lint only
    # the corpus name is written into every row (meta.dataset) and filtered on: part of the key
    key = canonical_json([corpus.fingerprint, corpus.name, layout, embedder.identity,
                          builtin("ingest.yaml").fingerprint])
    return check_identifier(f"chunks_{sha256_text(key)[:16]}", "table")


def vector_type(dim: int, embedder: str) -> str:
    """``vector`` up to HNSW's 2,000 dimensions, ``halfvec`` (half precision) up to its 4,000
    (3,072-dimension embeddings such as text-embedding-3-large's), else one clear error."""
    for kind, most in HNSW_MAX_DIM.items():
        if dim <= most:
            return kind
    raise RetrievalEvalError(f"embedder {embedder} gives {dim}-dimension vectors; pgvector's HNSW index takes at "
                             f"most {HNSW_MAX_DIM['halfvec']:,} (as halfvec): choose an embedder of fewer dimensions "
                             "with --retrieval-embedder")


def document_store(store: Store, table: str, dim: int, language: str, *, hnsw: bool, vectors: str = "vector"):
    import_haystack()
    from haystack.utils import Secret
    from haystack_integrations.document_stores.pgvector import PgvectorDocumentStore

    return PgvectorDocumentStore(
        connection_string=Secret.from_token(store.dsn),
        schema_name=store.schema,
        table_name=table,
        embedding_dimension=dim,
        vector_type=vectors,
        vector_function="cosine_similarity",
        language=language,
        search_strategy="hnsw" if hnsw else "exact_nearest_neighbor",
        # Index names are schema-wide: one pair per table, or a second table's store drops the
        # first one's HNSW index.
        keyword_index_name=f"{table}_kw",
        hnsw_index_name=f"{table}_hnsw",
        create_extension=False,
    )


def ingest(corpus: Corpus, store: Store, embedder: Embedder, config: IngestConfig = IngestConfig(),
           progress: Callable[[str], None] | None = None) -> IngestedIndex:
    """The built-in ingestion YAML (``pipelines/ingest.yaml``) with the session's settings, loaded
    and pointed at the store as a team's own YAML is (``user_pipelines``); its embedder step runs
    the session's cached embedder."""
    from ..data.chunking import chunking_settings
    from ..data.lint import lint_chunks
    from ..data.pipeline_files import builtin
    from .components import PluginDocumentEmbedder
    from .user_pipelines import load, point_at

    start = time.perf_counter()
    table = table_name(corpus, config, embedder)
    last_decile = [-1]
    done_before = [0]  # chunks embedded by earlier batches

    def embed_progress(done: int, total: int) -> None:
        decile = done * 10 // total
        if progress and total >= 200 and decile != last_decile[0]:
            last_decile[0] = decile
            progress(f"embedding chunks: {done_before[0] + done}/{done_before[0] + total}")

    file = builtin("ingest.yaml")
    vectors = vector_type(embedder.dim, embedder.identity)
    pipeline = load(file, {**chunking_settings(config, corpus.name),
                           "writer": {"document_store": {"embedding_dimension": embedder.dim, "vector_type": vectors,
                                                         "language": config.language}}})
    step = pipeline.get_component("embedder")
    if isinstance(step, PluginDocumentEmbedder):
        step.use(embedder, embed_progress)  # the session's embedder, its cache and its progress lines
    point_at(pipeline, file, store, table)
    writer_store = pipeline.get_component("writer").document_store
    writer_store.count_documents()  # creates the table
    _prepare_load(store, table)

    n = len(corpus.docs)
    if progress and n >= 200:
        progress(f"ingesting {n} documents into {store.backend} pgvector")
    cached_before, computed_before = embedder.stats.cached, embedder.stats.computed
    pipeline.warm_up()
    written, parts = 0, []
    for first in range(0, n, BATCH_DOCUMENTS):
        result = run_in_order(pipeline, {"cleaner": {"documents": sources(corpus, first, first + BATCH_DOCUMENTS)}},
                              warm=False)
        written += result["writer"]["documents_written"]
        parts.append(chunks_of(result["identity"]["documents"]))
        done_before[0] += len(parts[-1])
        last_decile[0] = -1
        if progress and n >= 200 and n > BATCH_DOCUMENTS:
            progress(f"ingested {min(n, first + BATCH_DOCUMENTS)}/{n} documents ({done_before[0]} chunks)")
        del result  # this batch's embeddings
    chunks = tuple(c for part in parts for c in part)
    window = embedder.token_window()  # lint of the chunks as split, before embedding
    lint = lint_chunks(chunks, dataset=corpus.name, count_tokens=window[0] if window else None,
                       window=window[1] if window else None, near_duplicates=config.near_duplicates)
    writer_store.close()

    # Build the HNSW index once over the loaded table, then let the planner see real statistics.
    search_store = document_store(store, table, embedder.dim, config.language, hnsw=True, vectors=vectors)
    indexing = time.perf_counter()
    search_store.count_documents()  # creates the HNSW index on first connection
    fetch_binary(search_store)
    _vacuum(store, table)
    indexed = time.perf_counter()
    if progress and n >= 200:
        progress(f"{table}: written {len(chunks)} chunks in {indexing - start:.1f} s; indexes built in "
                 f"{indexed - indexing:.1f} s")
    return IngestedIndex(
        chunks=chunks, store=store, document_store=search_store, table=table, dataset=corpus.name, config=config,
        embedder=embedder, seconds=indexed - start,
        stats={"documents": n, "chunks": len(chunks), "written": written, "index_seconds": round(indexed - indexing, 3),
               "embedded": embedder.stats.computed - computed_before, "cached": embedder.stats.cached - cached_before},
        lint=lint,
    )


def run_in_order(pipeline: Any, inputs: dict, *, warm: bool = True) -> dict:
    """The built-in ingestion pipeline (a chain: one component's output is the next one's
    input) run component by component, each output handed on as it is. ``Pipeline.run`` deep-copies
    every component's inputs and every output it keeps; here those are the corpus's chunks with
    their embeddings, and the copies cost more than writing them (a team's YAML still runs through
    ``Pipeline.run``). Returns every component's outputs; ``warm``: warm the components up first
    (once is enough for a pipeline run batch after batch)."""
    import networkx as nx

    if warm:
        pipeline.warm_up()
    pending: dict[str, dict] = {name: dict(inputs.get(name, {})) for name in pipeline.graph.nodes}
    outputs: dict[str, dict] = {}
    for name in nx.topological_sort(pipeline.graph):
        outputs[name] = pipeline.get_component(name).run(**pending[name])
        for _, receiver, edge in pipeline.graph.out_edges(name, data=True):
            pending[receiver][edge["to_socket"].name] = outputs[name][edge["from_socket"].name]
    return outputs


def restore_index(corpus: Corpus, store: Store, embedder: Embedder, config: IngestConfig, table: str,
                  chunks: tuple[Chunk, ...], lint: Any, key: str) -> IngestedIndex:
    """The index of a table a snapshot brought back: no pipeline runs, nothing is written."""
    start = time.perf_counter()
    search_store = document_store(store, table, embedder.dim, config.language, hnsw=True,
                                  vectors=vector_type(embedder.dim, embedder.identity))
    search_store.count_documents()
    fetch_binary(search_store)
    return IngestedIndex(chunks=chunks, store=store, document_store=search_store, table=table, dataset=corpus.name,
                         config=config, embedder=embedder, seconds=time.perf_counter() - start,
                         stats={"chunks": len(chunks), "restored": key}, lint=lint)


def _prepare_load(store: Store, table: str) -> None:
    """Keep embeddings in the row, and build the keyword index after the load.

    Inline vectors: a 384-float vector and a chunk's text make a row over PostgreSQL's 2 kB toast
    threshold, and by default the vector is the column moved out of line: every vector query
    then reads each candidate's embedding from the toast table (20 ms a query at SciFact's 5,330
    chunks, 4 ms with the vectors inline). ``MAIN`` moves the text out first and the vector only
    when a row would not fit a page otherwise (3,072-float embeddings).

    The keyword (GIN) index the store made with the table is dropped; the search store's first
    connection makes it again over the full table, as it makes the HNSW index (at 300,000 chunks
    the load with it took 63 s, against 18 s without and 24 s to build it once)."""
    import psycopg
    from psycopg import sql

    qualified = sql.SQL("{}.{}").format(sql.Identifier(store.schema), sql.Identifier(table))
    with psycopg.connect(store.dsn, autocommit=True) as conn:
        conn.execute(sql.SQL("ALTER TABLE {} ALTER COLUMN embedding SET STORAGE MAIN").format(qualified))
        conn.execute(sql.SQL("DROP INDEX IF EXISTS {}").format(sql.Identifier(store.schema, f"{table}_kw")))


def _vacuum(store: Store, table: str) -> None:
    """Statistics the planner can use. ``VACUUM`` so the keyword (GIN) index is used from the
    start; statistics on the two metadata expressions every retrieval filters on, because
    without them PostgreSQL guesses the filter keeps one row in two hundred squared (it keeps
    all of them) and scans every chunk instead of using the HNSW index: 30 ms against 5 ms a
    vector query at SciFact's 5,330 chunks."""
    import psycopg
    from psycopg import sql

    qualified = sql.SQL("{}.{}").format(sql.Identifier(store.schema), sql.Identifier(table))
    with psycopg.connect(store.dsn, autocommit=True) as conn:
        conn.execute(sql.SQL("CREATE STATISTICS IF NOT EXISTS {} ON (meta->>'org_id'), (meta->>'dataset') FROM {}")
                     .format(sql.Identifier(store.schema, f"{table}_filter"), qualified))
        conn.execute(sql.SQL("VACUUM ANALYZE {}").format(qualified))
