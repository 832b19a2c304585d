"""Each third-party internal the plugin uses (hybrid/haystack_internals.py), checked on the real
dependency: an upgrade that moves one fails here instead of silently losing a speed-up."""

from __future__ import annotations

import pytest

from conftest import requires_hybrid

pytestmark = requires_hybrid


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
