"""Each third-party internal the plugin uses (hybrid/haystack_internals.py), checked on the real
dependency: an upgrade that moves one fails here instead of silently losing a speed-up."""

from __future__ import annotations

import sys

import pytest

from conftest import requires_hybrid

pytestmark = [requires_hybrid, pytest.mark.postgres]


@pytest.fixture(scope="module")
def pg():
    from pytest_retrieval_eval.hybrid.store.embedded import EmbeddedPostgres

    store = EmbeddedPostgres()
    store.start()
    yield store
    store.stop()


def test_a_connected_pgvector_store_fetches_rows_in_binary_with_more_hnsw_candidates(pg):
    from psycopg import pq

    from pytest_retrieval_eval.hybrid.haystack_internals import EF_SEARCH, connection, fetch_binary
    from pytest_retrieval_eval.hybrid.ingest import document_store

    ds = document_store(pg, "internals_probe", 8, "english", hnsw=True)
    assert connection(ds) is None and fetch_binary(ds) is False  # not connected yet: left alone
    ds.count_documents()  # connects
    assert connection(ds) is not None, "PgvectorDocumentStore no longer keeps its connection in _connection"
    assert fetch_binary(ds) is True, "PgvectorDocumentStore no longer has _dict_cursor"
    assert ds._dict_cursor.format == pq.Format.BINARY
    assert connection(ds).execute("SHOW hnsw.ef_search").fetchone()[0] == str(EF_SEARCH)
    ds.close()


def test_output_sockets_reads_haystack_components_outputs():
    from haystack.components.joiners import DocumentJoiner

    from pytest_retrieval_eval.hybrid.components import PluginDocumentEmbedder, PluginTextEmbedder
    from pytest_retrieval_eval.hybrid.haystack_internals import output_sockets

    assert output_sockets(PluginTextEmbedder(spec="hashing")) == {"embedding"}
    assert output_sockets(PluginDocumentEmbedder(spec="hashing")) == {"documents"}
    assert output_sockets(DocumentJoiner()) == {"documents"}


@pytest.mark.parametrize("vectors", ["vector", "halfvec"])
def test_the_copy_writer_writes_what_document_writer_writes_and_overwrites_as_it_does(pg, vectors):
    """The same documents through Haystack's DocumentWriter (OVERWRITE) and the plugin's COPY
    writer (binary for ``vector``, text for ``halfvec``): the same rows, column for column, float
    for float; written again, replaced rather than doubled."""
    import numpy as np
    import psycopg
    from haystack import Document
    from haystack.dataclasses import ByteStream
    from haystack.components.writers import DocumentWriter
    from haystack.document_stores.types import DuplicatePolicy

    from pytest_retrieval_eval.hybrid.components import CopyDocumentWriter
    from pytest_retrieval_eval.hybrid.ingest import document_store

    rng = np.random.default_rng(5)
    docs = [Document(id=f"d{i}:0", content=f"text {i} \x00with a NUL" if i == 3 else f"text {i}",
                     embedding=[0.1 * i + 1e-7 * j for j in range(8)],
                     meta={"doc_id": f"d{i}", "dataset": "x", "nested": {"n": i}}) for i in range(6)]
    docs.append(Document(id="d1:0", content="text 1 again", embedding=[0.5] * 8, meta={"doc_id": "d1"}))  # repeated id
    docs.append(Document(id="e:0", content="float32 as they come",  # as an embedder gives them
                         embedding=rng.standard_normal(8).astype(np.float32).tolist(), meta={"doc_id": "e"}))
    docs.append(Document(id="b:0", content=None, blob=ByteStream(b"\x00\x01bytes", meta={"page": 2}, mime_type="x/y"),
                         embedding=[1e-30, -6.0e4, 0.0, 1.0, -0.0, 2.5e-8, 7.0, 1 / 3], meta={"doc_id": "b"}))
    docs.append(Document(id="n:0", content="no embedding", meta={"doc_id": "n"}))
    theirs = document_store(pg, f"writer_theirs_{vectors}", 8, "english", hnsw=False, vectors=vectors)
    ours = document_store(pg, f"writer_ours_{vectors}", 8, "english", hnsw=False, vectors=vectors)
    DocumentWriter(theirs, policy=DuplicatePolicy.OVERWRITE).run(documents=docs)
    assert CopyDocumentWriter(ours).run(documents=docs) == {"documents_written": 9}
    CopyDocumentWriter(ours).run(documents=docs[1:])  # again: replaced, not doubled

    def rows(table):
        with psycopg.connect(pg.dsn) as conn:
            return conn.execute(f"SELECT id, embedding::text, content, blob_data, blob_meta, blob_mime_type, meta "
                                f"FROM {pg.schema}.{table} ORDER BY id").fetchall()

    assert rows(f"writer_ours_{vectors}") == rows(f"writer_theirs_{vectors}") and len(rows(f"writer_ours_{vectors}")) == 9
    theirs.close()
    ours.close()


def test_the_copy_writer_refuses_nan_as_document_writer_does(pg):
    import psycopg
    from haystack import Document

    from pytest_retrieval_eval.hybrid.components import CopyDocumentWriter
    from pytest_retrieval_eval.hybrid.ingest import document_store

    ours = document_store(pg, "writer_nan", 4, "english", hnsw=False)
    with pytest.raises(psycopg.DataError, match="NaN not allowed in vector"):
        CopyDocumentWriter(ours).run(documents=[Document(id="a", content="a", embedding=[0.1, float("nan"), 0, 0])])
    ours.close()


@pytest.mark.skipif(sys.platform != "linux", reason="psycopg traces libpq on Linux only")
def test_the_copy_writer_reads_no_table_batch_after_batch(pg, tmp_path):
    """Batch after batch, the writer only writes: a ``COUNT(*)`` per batch (the store's way of
    connecting) reads the whole table each time, quadratic in the corpus. What it sends is read
    from libpq's own trace of the store's connection."""
    from haystack import Document

    from pytest_retrieval_eval.hybrid.components import CopyDocumentWriter
    from pytest_retrieval_eval.hybrid.haystack_internals import connection
    from pytest_retrieval_eval.hybrid.ingest import document_store

    ours = document_store(pg, "writer_batches", 4, "english", hnsw=False)
    writer = CopyDocumentWriter(ours)

    def batch(n):
        return [Document(id=f"{n}-{i}", content="text", embedding=[0.1, 0.2, 0.3, 0.4]) for i in range(50)]

    writer.run(documents=batch(0))  # the first connects (and counts, as the store does)
    trace = tmp_path / "libpq.trace"
    with open(trace, "w") as out:
        connection(ours).pgconn.trace(out.fileno())
        for n in range(1, 6):
            writer.run(documents=batch(n))
        connection(ours).pgconn.untrace()
    sent = [line for line in trace.read_text(errors="replace").splitlines() if "\tF\t" in line]  # the client's
    assert sum("COPY " in line for line in sent) == 5 and not [line for line in sent if "COUNT(" in line.upper()]
    assert ours.count_documents() == 300
    ours.close()
