"""One stack per process: the store, the embedder and a single embedding-cache connection that
both the embedder and YAML pipelines use (issue 26 item 7)."""

from __future__ import annotations

from conftest import requires_hybrid

from pytest_retrieval_eval.hybrid.stack import Stack


def _stack(tmp_path):
    return Stack(tmp_path, store="embedded", dsn=None, schema_prefix="retrieval_eval", embedder="hashing:16")


@requires_hybrid
def test_the_embedder_answers_from_the_stacks_one_cache_connection(tmp_path):
    stack = _stack(tmp_path)
    cache = stack.embedding_cache()
    assert stack.embedder().cache is cache and stack.embedding_cache() is cache
    assert stack.embedder() is stack.embedder()
    stack.embedder().embed(["a question"])
    assert cache.count() == 1  # what the embedder wrote is in the connection pipelines read
    stack.close()


def test_nothing_is_opened_until_asked(tmp_path):
    stack = _stack(tmp_path)
    assert not (tmp_path / "embeddings.sqlite3").exists()
    assert stack.store() is stack.store()  # opened once (not started: its fixture starts and stops it)
    assert not (tmp_path / "embeddings.sqlite3").exists()


@requires_hybrid
def test_closing_the_stack_closes_a_served_embedders_connections(tmp_path, fake_api):
    """At a session's end (``RetrievalSession.close``), not when the garbage collector gets to it."""
    from fake_api import Reply, embeddings_reply

    fake_api.script("/embeddings", Reply(200, embeddings_reply(8)))
    stack = Stack(tmp_path, store="embedded", dsn=None, schema_prefix="retrieval_eval", embedder="openai:m")
    backend = stack.embedder().backend
    stack.embedder().embed(["a question"])
    client = backend._client
    assert client is not None and not client.is_closed
    stack.close()
    assert client.is_closed
