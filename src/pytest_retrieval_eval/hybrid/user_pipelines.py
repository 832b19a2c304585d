"""A team's own Haystack pipelines, serialised to YAML, run on the session's ephemeral store.

- ``load``: the YAML, with errors that name the file and the component (a YAML that does not
  parse, a component type that cannot be imported, one that cannot be built);
- ``point_at``: every ``PgvectorDocumentStore`` in the pipeline (a writer's, a retriever's) is
  replaced by one on the session's store and a table of the plugin's own, keeping the settings
  that shape the data (dimension, vector function, search strategy, language);
- ``wrap_embedders`` and ``cache_embedders``: the embedder components the plugin recognises (its
  own ``PluginDocumentEmbedder``/``PluginTextEmbedder``; sentence-transformers and OpenAI,
  document and text, wrapped in ``CachedDocumentEmbedder``/``CachedTextEmbedder`` before the
  pipeline is built) answer from the embedding cache, keyed by the component's settings and the
  text, so a warm run embeds nothing; other embedders run as they are, and are named;
- ``ingest``: the corpus in as Haystack ``Document``s (title, description and body as the text, as
  the built-in ingestion has it; ``doc_id``, title, description, filename and the document's other
  fields as meta) through the pipeline's input socket; what it wrote is read
  back from the table as the session's chunks, and linted;

A query pipeline as an engine is ``engines.pipeline.PipelineEngine``.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any, Callable

from ..data.pipeline_files import PipelineFile, build, with_settings
from ..errors import RetrievalEvalError
from ..types import Chunk, canonical_json, sha256_text

#: embedder classes whose answers the plugin caches (class name -> the socket that carries text)
DOCUMENT_EMBEDDERS = ("SentenceTransformersDocumentEmbedder", "OpenAIDocumentEmbedder")
TEXT_EMBEDDERS = ("SentenceTransformersTextEmbedder", "OpenAITextEmbedder")


def load(file: PipelineFile, settings: dict | None = None) -> Any:
    """The pipeline of ``file`` (with ``settings`` applied, see ``data.pipeline_files``), the
    embedders the plugin caches wrapped (``wrap_embedders``); every problem names the file, and
    the component where there is one."""
    data = file.data()
    return build(wrap_embedders(with_settings(data, settings) if settings else data), file)


def wrap_embedders(data: dict) -> dict:
    """A copy of ``data`` in which each embedder the plugin caches (``DOCUMENT_EMBEDDERS``,
    ``TEXT_EMBEDDERS``) is the plugin's ``CachedDocumentEmbedder``/``CachedTextEmbedder`` around
    it: the pipeline runs the wrapper's ``run``, which asks the cache first (one that does not
    import is left as it is, for ``build`` to name)."""
    import copy
    import importlib

    out = copy.deepcopy(dict(data))
    for name, spec in (out.get("components") or {}).items():
        kind = spec.get("type") if isinstance(spec, dict) else None
        cls = kind.rpartition(".")[2] if isinstance(kind, str) else None
        wrapper = ("CachedDocumentEmbedder" if cls in DOCUMENT_EMBEDDERS else
                   "CachedTextEmbedder" if cls in TEXT_EMBEDDERS else None)
        if wrapper is None:
            continue
        try:
            importlib.import_module(kind.rpartition(".")[0])
        except Exception:
            continue
        out["components"][name] = {"type": f"pytest_retrieval_eval.hybrid.components.{wrapper}",
                                   "init_parameters": {"embedder": spec}}
    return out


def point_at(pipeline: Any, file: PipelineFile, store: Any, table: str, *, document_store: Any = None) -> list[str]:
    """Every PgvectorDocumentStore of ``pipeline`` replaced by one on ``store``'s table ``table``
    (or by ``document_store``, one already open on it); the names of the components changed. A
    pipeline without one is an error."""
    from haystack.utils import Secret
    from haystack_integrations.document_stores.pgvector import PgvectorDocumentStore

    changed = []
    made: dict[str, Any] = {}
    for name, component in pipeline.walk():
        old = getattr(component, "document_store", None)
        if not isinstance(old, PgvectorDocumentStore):
            continue
        key = canonical_json(old.to_dict())  # stores a YAML spells alike are one store (one connection)
        if document_store is not None:
            made[key] = document_store
        if key not in made:
            _check_hnsw(old, file, name)
            made[key] = PgvectorDocumentStore(
                connection_string=Secret.from_token(store.dsn), schema_name=store.schema, table_name=table,
                embedding_dimension=old.embedding_dimension, vector_type=old.vector_type,
                vector_function=old.vector_function, search_strategy=old.search_strategy, language=old.language,
                keyword_index_name=f"{table}_kw", hnsw_index_name=f"{table}_hnsw", create_extension=False)
        component.document_store = made[key]
        changed.append(name)
    if not changed:
        raise RetrievalEvalError("the pipeline has no PgvectorDocumentStore for the plugin to point at its store",
                                 path=file.path)
    return changed


def _check_hnsw(document_store: Any, file: PipelineFile, name: str) -> None:
    """An HNSW index over more dimensions than pgvector takes is one line, not a database traceback."""
    from .index import HNSW_MAX_DIM

    kind, dim = document_store.vector_type, document_store.embedding_dimension
    if document_store.search_strategy == "hnsw" and dim > HNSW_MAX_DIM[kind]:
        hint = (" (set vector_type: halfvec for up to 4,000)" if kind == "vector" and dim <= HNSW_MAX_DIM["halfvec"]
                else "")
        raise RetrievalEvalError(f"component '{name}': an HNSW index takes {kind} columns of at most "
                                 f"{HNSW_MAX_DIM[kind]:,} dimensions, the store has {dim:,}{hint}", path=file.path,
                                 field="embedding_dimension")


@dataclass
class EmbedCounts:
    """Texts the cached embedders computed, and those the cache answered."""

    computed: int = 0
    cached: int = 0


def cache_embedders(pipeline: Any, cache: Any, counts: EmbedCounts | None = None,
                    model_cache: Any = None) -> tuple[list[str], list[str]]:
    """(components answering from the cache, embedders left as they are): the plugin's own
    embedders and the wrapped ones (``wrap_embedders``) are given the cache (and the plugin's
    own the model cache, ``--retrieval-model-cache``); ``counts`` adds up what they computed
    and what the cache answered."""
    from .components import CachedEmbedder, PluginEmbedder

    counts = counts if counts is not None else EmbedCounts()
    cached, other = [], []
    for name, component in pipeline.walk():
        if isinstance(component, (PluginEmbedder, CachedEmbedder)):
            component.cache = cache  # keyed like the built-in ingestion's (the plugin's own) or by class and settings
            component.counts = counts
            if isinstance(component, PluginEmbedder):
                component.model_cache = model_cache
            cached.append(name)
        elif "Embedder" in type(component).__name__:
            other.append(name)
    return cached, other


#: how the corpus is fed to an ingestion YAML (see ``ingest``); part of every table's name
FEED = 3  # 3: the corpus name, every document field and the embedders' models are in the name


def table_for(corpus: Any, file: PipelineFile) -> str:
    """One table per everything that reaches it: the corpus as fed (its name, every document
    field, metadata included), the ingestion YAML (content, not path), the models its embedders
    run (a local folder by its content) and the way of feeding it."""
    from .store.base import check_identifier

    fields = sha256_text(canonical_json(sorted([d.doc_id, dict(d.meta)] for d in corpus.docs)))
    key = canonical_json([corpus.fingerprint, corpus.name, fields, file.fingerprint, _models(file), FEED])
    return check_identifier(f"chunks_{sha256_text(key)[:16]}", "table")


def _models(file: PipelineFile) -> list[str]:
    """The identity of each model the YAML's components name (``model``, the plugin's ``spec``)."""
    from .embedders import backend_for, model_identity

    found = []
    for name, component in sorted(file.data()["components"].items()):
        params = (component.get("init_parameters") if isinstance(component, dict) else None) or {}
        if isinstance(params.get("model"), str):
            found.append(f"{name}={model_identity(params['model'])}")
        if isinstance(params.get("spec"), str):
            found.append(f"{name}={backend_for(params['spec']).identity}")
    return found


def _input_socket(pipeline: Any, file: PipelineFile, named: str | None) -> tuple[str, str]:
    open_inputs = pipeline.inputs()
    if named:
        component, _, socket = named.partition(".")
        if component not in open_inputs or socket not in open_inputs[component]:
            shown = ", ".join(f"{c}.{s}" for c, sockets in open_inputs.items() for s in sockets) or "none"
            raise RetrievalEvalError(f"input socket '{named}' is not an open input of the pipeline (open: {shown})",
                                     path=file.path)
        return component, socket
    for component, sockets in open_inputs.items():
        if "documents" in sockets:
            return component, "documents"
    raise RetrievalEvalError("no component takes 'documents' as an open input; name the input socket with "
                             "retrieval_ingest_input = COMPONENT.SOCKET", path=file.path)


def embedder_window(pipeline: Any) -> tuple[Callable[[str], int], int] | None:
    """(count tokens, tokens the model reads) of the pipeline's document embedder, so a team's
    ingestion is linted for truncation as the built-in one is: the plugin's own component (its
    spec) or a sentence-transformers one (its model folder); None for any other embedder."""
    from .components import CachedEmbedder, PluginDocumentEmbedder
    from .embedders import SentenceTransformersBackend, backend_for

    for _, component in pipeline.walk():
        component = component.inner if isinstance(component, CachedEmbedder) else component
        if isinstance(component, PluginDocumentEmbedder):
            backend = backend_for(component.spec)
        elif type(component).__name__ == "SentenceTransformersDocumentEmbedder" and getattr(component, "model", None):
            backend = SentenceTransformersBackend(str(component.model))
        else:
            continue
        window = getattr(backend, "token_window", None)
        found = window() if callable(window) else None
        if found is not None:
            return found
    return None


def _lint(chunks: tuple, corpus: Any, pipeline: Any) -> Any:
    from ..data.lint import lint_chunks

    window = embedder_window(pipeline)
    return lint_chunks(chunks, dataset=corpus.name, count_tokens=window[0] if window else None,
                       window=window[1] if window else None)


def ingest(corpus: Any, store: Any, file: PipelineFile, cache: Any, *, input_socket: str | None = None,
           id_field: str = "doc_id", progress: Callable[[str], None] | None = None, model_cache: Any = None) -> Any:
    """Run the team's ingestion pipeline on the corpus into the session's store."""
    from haystack import Document

    from .index import IngestConfig, IngestedIndex

    start = time.perf_counter()
    pipeline = load(file)
    table = table_for(corpus, file)
    point_at(pipeline, file, store, table)
    counts = EmbedCounts()
    cached, other = cache_embedders(pipeline, cache, counts, model_cache)
    component, socket = _input_socket(pipeline, file, input_socket)
    # as the built-in ingestion feeds its YAML (title and description lead the text), so a copy of
    # the built-in files ingests the same chunks; every field rides along as meta
    documents = [Document(id=d.doc_id, content="\n\n".join(p for p in (d.title, d.description, d.content) if p),
                          meta={**dict(d.meta), "doc_id": d.doc_id, "title": d.title,
                                "description": d.description, "filename": d.filename})
                 for d in corpus.docs]
    if progress and len(documents) >= 200:
        progress(f"ingesting {len(documents)} documents with {file.path.name}")
    try:
        pipeline.run({component: {socket: documents}})
    except RetrievalEvalError:
        raise
    except Exception as exc:
        raise RetrievalEvalError(f"the ingestion pipeline failed: {type(exc).__name__}: {exc}", path=file.path) from None
    chunks = _written(store, table, id_field, file)
    lint = _lint(chunks, corpus, pipeline)
    return IngestedIndex(chunks=chunks, store=store, document_store=None, table=table, dataset=corpus.name,
                         config=IngestConfig(), embedder=None, seconds=time.perf_counter() - start,
                         stats={"documents": len(documents), "chunks": len(chunks), "pipeline": str(file.path),
                                "embedders_cached": ", ".join(cached) or "none",
                                "embedders_not_cached": ", ".join(other) or "none",
                                "embedded": counts.computed, "from_cache": counts.cached},
                         lint=lint)


def restored(corpus: Any, store: Any, file: PipelineFile, *, id_field: str = "doc_id") -> Any:
    """The index of a table a store snapshot brought back: the pipeline is not run (only loaded,
    so the lint knows its embedder's window)."""
    from .index import IngestConfig, IngestedIndex

    start = time.perf_counter()
    table = table_for(corpus, file)
    chunks = _written(store, table, id_field, file)
    return IngestedIndex(chunks=chunks, store=store, document_store=None, table=table, dataset=corpus.name,
                         config=IngestConfig(), embedder=None, seconds=time.perf_counter() - start,
                         stats={"chunks": len(chunks), "pipeline": str(file.path), "restored": True},
                         lint=_lint(chunks, corpus, load(file)))


def _written(store: Any, table: str, id_field: str, file: PipelineFile) -> tuple[Chunk, ...]:
    """The rows the pipeline wrote, as chunks in document order (``split_id`` within a document)."""
    import psycopg
    from psycopg import sql

    qualified = sql.SQL("{}.{}").format(sql.Identifier(store.schema), sql.Identifier(table))
    try:
        with psycopg.connect(store.dsn, autocommit=True) as conn:
            rows = conn.execute(sql.SQL("SELECT id, content, meta FROM {}").format(qualified)).fetchall()
    except psycopg.errors.UndefinedTable:
        raise RetrievalEvalError("the ingestion pipeline wrote nothing to its PgvectorDocumentStore",
                                 path=file.path) from None
    if not rows:
        raise RetrievalEvalError("the ingestion pipeline wrote no documents", path=file.path)
    missing = [r[0] for r in rows if not (r[2] or {}).get(id_field)]
    if missing:
        raise RetrievalEvalError(f"{len(missing)} of {len(rows)} written documents lack the id meta field "
                                 f"'{id_field}' (e.g. {missing[0]}); keep it on every chunk", path=file.path,
                                 field=id_field)
    order = sorted(rows, key=lambda r: (str(r[2][id_field]), r[2].get("split_id", 0) or 0, r[0]))
    chunks, seen = [], {}
    for _, content, meta in order:
        doc = str(meta[id_field])
        seen[doc] = seen.get(doc, -1) + 1
        chunks.append(Chunk(doc, seen[doc], content or "", dict(meta)))
    return tuple(chunks)
