"""The plugin's own Haystack components (imported lazily: importing this imports Haystack).

No ``from __future__ import annotations`` here: Haystack reads ``run()``'s annotations as types
to check pipeline connections, and postponed (string) annotations fail that check.
"""

import dataclasses
from typing import Optional

import httpx

from .._lazy_torch import import_haystack

import_haystack()  # before Haystack's first import: no torch until a model must run

from haystack import Document, component  # noqa: E402

from .._http import api_key_for, new_client, post_json, request_timeout
from .._secrets import redact
from .embedders import Embedder, Progress
from ..errors import RetrievalEvalError


class PluginEmbedder:
    """The plugin's embedder spec (``minilm``, ``sentence-transformers:PATH``, ``openai:MODEL``,
    ``hashing[:DIM]``) behind a component that serialises to YAML. The plugin gives it the
    session's embedding cache when it loads a pipeline (``user_pipelines.cache_embedders``)."""

    def __init__(self, spec: str = "minilm") -> None:
        self.spec = spec
        self.cache = None
        self.counts = None  # user_pipelines.EmbedCounts, when the plugin loaded the pipeline
        self.model_cache = None  # where the built-in MiniLM's ONNX export is (None: its default)
        self._embedder: Optional[Embedder] = None

    def to_dict(self) -> dict:
        from haystack import default_to_dict

        return default_to_dict(self, spec=self.spec)

    @classmethod
    def from_dict(cls, data: dict):
        from haystack import default_from_dict

        return default_from_dict(cls, data)

    def use(self, embedder: Embedder, progress: Optional[Progress] = None) -> None:
        """Run ``embedder`` (the session's, behind its cache) instead of one made from ``spec``."""
        self._embedder, self._progress = embedder, progress

    def embed(self, texts):
        if self._embedder is None:
            from .embedders import backend_for

            self._embedder = Embedder(backend_for(self.spec, model_cache=self.model_cache), self.cache, canaries=True)
        before = (self._embedder.stats.computed, self._embedder.stats.cached)
        progress = getattr(self, "_progress", None)
        vectors = self._embedder.embed(list(texts), progress=progress) if progress else self._embedder.embed(list(texts))
        if self.counts is not None:
            self.counts.computed += self._embedder.stats.computed - before[0]
            self.counts.cached += self._embedder.stats.cached - before[1]
        return vectors


@component
class PluginDocumentEmbedder(PluginEmbedder):
    """Embeds documents' content with the plugin's embedder spec (for YAML pipelines)."""

    @component.output_types(documents=list[Document])
    def run(self, documents: list[Document]) -> dict:
        vectors = self.embed([d.content or "" for d in documents])
        return {"documents": [dataclasses.replace(d, embedding=v.tolist()) for d, v in zip(documents, vectors)]}


@component
class PluginTextEmbedder(PluginEmbedder):
    """Embeds a query text with the plugin's embedder spec (for YAML query pipelines)."""

    @component.output_types(embedding=list[float])
    def run(self, text: str) -> dict:
        return {"embedding": self.embed([text])[0].tolist()}


def embedder_identity(component) -> str:
    """What shapes an embedder's vectors: its class and settings (secrets left out)."""
    from ..types import canonical_json
    from .embedders import model_identity

    params = dict(component.to_dict().get("init_parameters", {}))
    for key in ("api_key", "token", "progress_bar", "batch_size", "timeout", "max_retries", "http_client_kwargs"):
        params.pop(key, None)
    if isinstance(params.get("model"), str):
        params["model"] = model_identity(params["model"])  # a local folder by its content
    return f"{type(component).__name__}:{canonical_json(params)}"


class CachedEmbedder:
    """A team's embedder component (sentence-transformers or OpenAI, document or text) behind the
    session's embedding cache, keyed by the component's class and settings and the text: a warm
    run embeds nothing and never warms the model. ``user_pipelines.load`` puts it in the YAML's
    place before the pipeline is built, with the YAML's component as ``embedder``; it serialises
    as the component it wraps. The plugin gives it the cache (``user_pipelines.cache_embedders``)."""

    def __init__(self, embedder: dict) -> None:
        import importlib

        from haystack.core.serialization import component_from_dict

        module, _, name = embedder["type"].rpartition(".")
        self.inner = component_from_dict(getattr(importlib.import_module(module), name), embedder, name)
        self.cache = None
        self.counts = None  # user_pipelines.EmbedCounts
        self._warm = False

    def to_dict(self) -> dict:
        from haystack.core.serialization import component_to_dict

        return component_to_dict(self.inner, "embedder")

    @classmethod
    def from_dict(cls, data: dict):
        return cls(**data["init_parameters"])

    def warm_up(self) -> None:
        """Nothing yet: the wrapped model loads when the cache first lacks a text."""

    @property
    def identity(self) -> str:
        return embedder_identity(self.inner)

    def _computed(self, **inputs) -> dict:
        if not self._warm:
            if hasattr(self.inner, "warm_up"):
                self.inner.warm_up()
            self._warm = True
        return self.inner.run(**inputs)

    def _meta(self, answer: dict) -> dict:
        from .haystack_internals import output_sockets

        return {"meta": answer.get("meta", {})} if "meta" in output_sockets(self.inner) else {}

    def _count(self, computed: int, cached: int) -> None:
        if self.counts is not None:
            self.counts.computed += computed
            self.counts.cached += cached


@component
class CachedDocumentEmbedder(CachedEmbedder):
    @component.output_types(documents=list[Document], meta=dict)
    def run(self, documents: list[Document]) -> dict:
        import numpy as np

        from ..types import canonical_json, sha256_text

        fields = list(getattr(self.inner, "meta_fields_to_embed", None) or [])
        keys = [sha256_text((d.content or "") + "\x1f" + canonical_json({f: d.meta.get(f) for f in fields}))
                for d in documents]
        model = self.identity
        found = self.cache.get_many(model, keys) if self.cache is not None else {}
        missing = [(d, k) for d, k in zip(documents, keys) if k not in found]
        self._count(len(missing), len(documents) - len(missing))
        answer: dict = {}
        if missing:
            answer = self._computed(documents=[d for d, _ in missing])
            fresh = {k: np.asarray(d.embedding, dtype=np.float32) for d, (_, k) in zip(answer["documents"], missing)}
            if self.cache is not None:
                self.cache.put_many(model, fresh.items())
            found.update(fresh)
        out = [dataclasses.replace(d, embedding=found[k].tolist()) for d, k in zip(documents, keys)]
        return {"documents": out, **self._meta(answer)}


@component
class CachedTextEmbedder(CachedEmbedder):
    @component.output_types(embedding=list[float], meta=dict)
    def run(self, text: str) -> dict:
        import numpy as np

        from ..types import sha256_text

        key, model = sha256_text(text), self.identity
        found = self.cache.get_many(model, [key]) if self.cache is not None else {}
        self._count(key not in found, key in found)
        answer: dict = {}
        if key not in found:
            answer = self._computed(text=text)
            found[key] = np.asarray(answer["embedding"], dtype=np.float32)
            if self.cache is not None:
                self.cache.put_many(model, [(key, found[key])])
        return {"embedding": found[key].tolist(), **self._meta(answer)}


@component
class HttpReranker:
    """Cohere-style ``POST {base}/rerank`` with ``model``, ``query``, ``documents``, ``top_n``."""

    def __init__(self, model: str, url: str, *, timeout: float | None = None, retries: int = 3) -> None:
        self.model, self.url, self.retries = model, url.rstrip("/"), retries
        self._key = api_key_for(self.url, "rerank over HTTP")  # None: a private server, no key needed
        self._client = new_client(timeout=request_timeout(30.0) if timeout is None else timeout)

    @component.output_types(documents=list[Document])
    def run(self, query: str, documents: list[Document], top_k: Optional[int] = None) -> dict:
        if not documents:
            return {"documents": []}
        answer = post_json(
            self._client, f"{self.url}/rerank",
            {"model": self.model, "query": query, "documents": [d.content or "" for d in documents],
             "top_n": top_k or len(documents)},
            api_key=self._key, retries=self.retries,
        )
        try:
            ranked = sorted(answer["results"], key=lambda r: -float(r["relevance_score"]))
            out = [dataclasses.replace(documents[int(r["index"])], score=float(r["relevance_score"])) for r in ranked]
        except (KeyError, TypeError, ValueError, IndexError):
            raise RetrievalEvalError(f"{redact(self.url)}/rerank answered without a valid 'results' list") from None
        return {"documents": out[:top_k] if top_k else out}


@component
class CopyDocumentWriter:
    """The built-in ingestion's writer: the documents into its ``PgvectorDocumentStore``'s table
    with one COPY, as ``DocumentWriter(policy=OVERWRITE)`` would write them row by row (the same
    columns, values and duplicate rule: ``haystack_internals.copy_documents``). A team's YAML
    keeps the writer it names."""

    def __init__(self, document_store) -> None:
        self.document_store = document_store

    def to_dict(self) -> dict:
        from haystack import default_to_dict

        return default_to_dict(self, document_store=self.document_store.to_dict())

    @classmethod
    def from_dict(cls, data: dict):
        from haystack import default_from_dict

        return default_from_dict(cls, data)  # the store is deserialised from its own type, as DocumentWriter's

    @component.output_types(documents_written=int)
    def run(self, documents: list[Document]) -> dict:
        from .haystack_internals import copy_documents

        return {"documents_written": copy_documents(self.document_store, documents)}
