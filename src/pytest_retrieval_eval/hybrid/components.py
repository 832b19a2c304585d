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

from .._http import api_key_for, post_json
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

            self._embedder = Embedder(backend_for(self.spec), self.cache)
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


@component
class HttpReranker:
    """Cohere-style ``POST {base}/rerank`` with ``model``, ``query``, ``documents``, ``top_n``."""

    def __init__(self, model: str, url: str, *, timeout: float = 30.0, retries: int = 3) -> None:
        self.model, self.url, self.retries = model, url.rstrip("/"), retries
        self._key = api_key_for(self.url, "rerank over HTTP")  # None: a private server, no key needed
        self._client = httpx.Client(timeout=timeout)

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
