"""The built-in engines, registered through the plugin's own ``pytest_retrieval_engines``
implementation, and ``hybrid_variant``, the factory for more hybrid engines."""

from __future__ import annotations

import importlib.util
from typing import Any

import pytest

from ..errors import RetrievalEvalError

#: what the hybrid engine needs beyond the base install
HYBRID_MODULES = ("haystack", "haystack_integrations.document_stores.pgvector", "psycopg")


def _importable(module: str) -> bool:
    try:
        return importlib.util.find_spec(module) is not None
    except ModuleNotFoundError:
        return False


def or_fail(fn, *args):
    """Call ``fn``; a user-fixable error fails the test with its message alone. No traceback:
    pytest would print every frame's arguments, and a DSN with its password is one of them."""
    try:
        return fn(*args)
    except RetrievalEvalError as exc:
        problem = str(exc)
    pytest.fail(problem, pytrace=False)  # outside the except: no chained traceback either


def register_builtin(registry: Any, settings: Any, conversations: Any = None, rewrites: Any = None) -> None:
    """``keyword`` always; ``hybrid`` and the configured variants where the extra is installed,
    and, where the labeled set has conversations (``conversations()``, by default read from the
    configured questions), ``hybrid-concat``: hybrid given the user's turns joined, beside hybrid
    given the last turn alone, the two baselines a team's rewrite is measured against; where its
    turns carry a person's rewrite too (``rewrites()``), ``hybrid-rewrite``: hybrid given that
    rewrite, the oracle (``engines.turns.oracle_rewrite``)."""
    from ..engines.keyword import KeywordEngine

    registry.register("keyword", lambda request: KeywordEngine(request.getfixturevalue("retrieval_corpus")),
                      builtin=True)
    missing = [m for m in HYBRID_MODULES if not _importable(m)]
    if missing:
        registry.unavailable("hybrid", f"needs {', '.join(missing)}: pip install 'pytest-retrieval-eval[hybrid]'",
                             builtin=True)
        return
    registry.register("hybrid", hybrid_variant(), builtin=True)
    if (conversations or (lambda: has_conversations(settings.data)))():
        registry.register("hybrid-concat", over_turns(hybrid_variant()), builtin=True)
        if (rewrites or (lambda: has_rewrites(settings.data)))():
            from ..engines.turns import oracle_rewrite

            registry.register("hybrid-rewrite", over_turns(hybrid_variant(), oracle_rewrite), builtin=True)
    for name, hybrid, ingest in settings.hybrid.variants:
        registry.register(name, _factory(hybrid, ingest), builtin=True)


def has_conversations(data: Any) -> bool:
    """Whether the configured questions hold conversations. Read at collection (the engines are
    named then), once: the session's read later is the same object; a file that cannot be read
    is said by the session, later, so here it counts as none."""
    labeled = _labels(data)
    return labeled is not None and labeled.has_conversations


def has_rewrites(data: Any) -> bool:
    """Whether a turn of the configured questions carries a person's rewrite (read as
    ``has_conversations`` reads them)."""
    labeled = _labels(data)
    return labeled is not None and any(q.rewrite is not None for q in labeled.queries)


def _labels(data: Any) -> Any:
    from .inputs import labels_file, load_labels_once

    try:
        path = None if data is None or data.regenerate else labels_file(data)
        return load_labels_once(path) if path is not None else None
    except (RetrievalEvalError, OSError, ValueError):
        return None


def over_turns(factory: Any, wrap: Any = None):
    """A factory for the engine ``factory`` builds, given the user's turns joined
    (``engines.turns.concatenated``), or wrapped by ``wrap`` (``oracle_rewrite``)."""
    def turns_factory(request: pytest.FixtureRequest):
        from ..engines.turns import concatenated

        return (wrap or concatenated)(factory(request))

    return turns_factory


def hybrid_variant(**settings: Any):
    """A factory for ``registry.register``: the hybrid engine with the session's settings, or
    others, e.g. ``hybrid_variant(use_vector=False)`` or ``hybrid_variant(split_length=200)``.
    Variants whose ingestion settings match share one ingested table."""
    items = [f"{k}={str(v).lower() if isinstance(v, bool) else v}" for k, v in settings.items()]
    return _factory(None, None, items)


def _factory(hybrid: Any, ingest: Any, items: list[str] = ()):
    def factory(request: pytest.FixtureRequest):
        from ..engines.hybrid import HybridEngine
        from .wake import session_of
        from .config import variant

        session = session_of(request.config)
        setup = session.config.hybrid
        engine, chunking = or_fail(variant, hybrid or setup.engine, ingest or setup.ingest, list(items))
        index = or_fail(session.index, request.getfixturevalue("retrieval_corpus"),
                        request.getfixturevalue("pgvector_store"), request.getfixturevalue("retrieval_embedder"),
                        chunking)
        return HybridEngine(index, engine, warm=session.config.gate.settings.latency)

    return factory


def register_pipelines(registry: Any, settings: Any) -> None:
    """Each ``retrieval_query_pipelines`` entry as an engine of the team's (not a built-in)."""
    for name, path, inputs in settings.hybrid.query_pipelines:
        registry.register(name, _pipeline_factory(name, path, inputs))


def _pipeline_factory(name: str, path: Any, inputs: tuple[str, ...]):
    def factory(request: pytest.FixtureRequest):
        from ..data.pipeline_files import PipelineFile
        from ..engines.pipeline import PipelineEngine
        from .wake import session_of

        session = session_of(request.config)
        if session.config.hybrid.ingest_pipeline is None:
            or_fail(session.pipeline_index, None, None)  # says what to set
        index = request.getfixturevalue("ingested_index")
        file = or_fail(PipelineFile.read, path)
        return or_fail(lambda: PipelineEngine(name, file, index.store, index.table, session.embedding_cache(),
                                              inputs=inputs, id_field=session.config.hybrid.id_field, index=index,
                                              model_cache=session.config.hybrid.model_cache))

    return factory
