"""The plugin's fixtures. Each asks the session for what it yields, passing the fixtures it
already holds; using any of them wakes the plugin."""

from __future__ import annotations

from typing import TYPE_CHECKING

import pytest

from .engines import or_fail
from .wake import session_of

if TYPE_CHECKING:
    from ..data.corpus import Corpus
    from ..data.labeled import LabeledSet
    from ..analysis.result import EvaluationResult
    from .session import RetrievalSession


@pytest.fixture(scope="session")
def retrieval_session(pytestconfig: pytest.Config) -> "RetrievalSession":
    """The run's retrieval state: configuration, engines, every evaluation recorded so far."""
    return session_of(pytestconfig)


@pytest.fixture(scope="session")
def retrieval_corpus(retrieval_session: "RetrievalSession") -> "Corpus":
    """The corpus from ``--retrieval-corpus`` / ``retrieval_corpus``: JSON documents or BEIR."""
    return or_fail(retrieval_session.corpus)


@pytest.fixture(scope="session")
def labeled_queries(retrieval_session: "RetrievalSession", retrieval_corpus: "Corpus") -> "LabeledSet":
    """Labeled queries: a BEIR folder's queries and qrels, or the questions cache, checked for
    staleness against the corpus (``--retrieval-stale``)."""
    return or_fail(retrieval_session.labeled, retrieval_corpus)


@pytest.fixture(scope="session")
def retrieval_engine(request: pytest.FixtureRequest, retrieval_session: "RetrievalSession"):
    """Each registered engine in turn (test ids are engine names), built once per session."""
    return retrieval_session.engine(request.param, request)


@pytest.fixture(scope="session")
def evaluate_retrieval(retrieval_session: "RetrievalSession", labeled_queries: "LabeledSet", retrieval_corpus: "Corpus"):
    """``evaluate_retrieval(engine, labeled=None, name=None) -> EvaluationResult``, once per
    session per engine and labeled set; every evaluation is recorded for the report and gate."""

    def run(engine, labeled: "LabeledSet | None" = None, *, name: str | None = None) -> "EvaluationResult":
        return retrieval_session.evaluate(engine, labeled if labeled is not None else labeled_queries, name=name,
                                          corpus=retrieval_corpus)

    return run


@pytest.fixture(scope="session")
def retrieval_results(retrieval_engine, evaluate_retrieval) -> "EvaluationResult":
    """The current engine's evaluation on the labeled queries: ``assert retrieval_results.hit_at(5) >= 0.8``."""
    return evaluate_retrieval(retrieval_engine)


@pytest.fixture(scope="session")
def pgvector_store(retrieval_session: "RetrievalSession"):
    """A started PostgreSQL + pgvector store (``--retrieval-store``), stopped at session end,
    Ctrl-C included. Each pytest-xdist worker gets its own server or schema."""
    store = or_fail(retrieval_session.open_store)
    or_fail(store.start)
    try:
        yield store
    finally:
        store.stop()


@pytest.fixture(scope="session")
def retrieval_embedder(retrieval_session: "RetrievalSession"):
    """The configured embedder behind the on-disk embedding cache."""
    return or_fail(retrieval_session.embedder)


@pytest.fixture(scope="session")
def ingested_index(retrieval_session: "RetrievalSession", retrieval_corpus: "Corpus", pgvector_store,
                   retrieval_embedder):
    """The corpus run through the Haystack ingestion pipeline into ``pgvector_store``: the team's
    own (``retrieval_ingest_pipeline``) when one is configured, else the plugin's."""
    if retrieval_session.config.hybrid.ingest_pipeline is not None:
        return or_fail(retrieval_session.pipeline_index, retrieval_corpus, pgvector_store)
    return or_fail(retrieval_session.index, retrieval_corpus, pgvector_store, retrieval_embedder)


@pytest.fixture(scope="session")
def ingested_chunks(ingested_index):
    """The chunks written to the store: ``doc_id``, ``index`` (id ``doc_id:index``), text, metadata."""
    return ingested_index.chunks
