"""The stack one process stands on: its store, its embedder and the one embedding-cache
connection both the built-in ingestion and a team's YAML pipelines use. Built lazily, part by
part, so a keyword-only run opens nothing."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .embedders import Embedder
    from .embedding_cache import EmbeddingCache
    from .store.base import Store


class Stack:
    """Store backend (``store``, ``dsn``, ``schema_prefix``), embedder spec and cache folder;
    each part made on first ask and kept. The caller starts and stops the store."""

    def __init__(self, cache_dir: Path, *, store: str, dsn: str | None, schema_prefix: str, embedder: str,
                 worker: str = "main", embed_concurrency: int = 1, embed_rate: float | None = None,
                 model_cache: Path | None = None) -> None:
        self.cache_dir = cache_dir
        self._spec = {"store": store, "dsn": dsn, "schema_prefix": schema_prefix, "worker": worker}
        self._embedder_spec = embedder
        self._remote = {"concurrency": embed_concurrency, "rate": embed_rate}
        self.model_cache = model_cache
        self._store: Store | None = None
        self._embedder: Embedder | None = None
        self._cache: EmbeddingCache | None = None

    def store(self) -> Store:
        if self._store is None:
            from .store import open_store

            spec = self._spec
            self._store = open_store(spec["store"], dsn=spec["dsn"], worker=spec["worker"],
                                     schema_prefix=spec["schema_prefix"])
        return self._store

    def embedding_cache(self) -> EmbeddingCache:
        """The process's one connection to ``embeddings.sqlite3``."""
        if self._cache is None:
            from .embedding_cache import EmbeddingCache

            self._cache = EmbeddingCache(self.cache_dir / "embeddings.sqlite3")
        return self._cache

    def embedder(self) -> Embedder:
        """The configured embedder, answering from the stack's embedding cache, checked for drift
        before its first use (``canaries.py``)."""
        if self._embedder is None:
            from .embedders import Embedder, backend_for

            backend = backend_for(self._embedder_spec, **self._remote, model_cache=self.model_cache)
            self._embedder = Embedder(backend, self.embedding_cache(), canaries=True)
        return self._embedder

    def canary_warnings(self) -> list[str]:
        """The embedders that drifted (or could not be checked) this session, as run warnings."""
        if self._cache is None:
            return []
        from .canaries import warnings_of

        return warnings_of(self._cache)

    def close(self) -> None:
        """The cache connection and the embedder's own connections closed (the store is its
        owner's to stop)."""
        close = getattr(getattr(self._embedder, "backend", None), "close", None)
        if close is not None:
            close()
        if self._cache is not None:
            self._cache.close()
            self._cache = None
            self._embedder = None


def from_settings(settings: Any, cache_dir: Path, worker: str) -> Stack:
    """A stack from the plugin's hybrid settings (``store``, ``dsn``, ``schema_prefix``, ``embedder``)."""
    return Stack(cache_dir, store=settings.store, dsn=settings.dsn, schema_prefix=settings.schema_prefix,
                 embedder=settings.embedder, worker=worker, embed_concurrency=settings.embed_concurrency,
                 embed_rate=settings.embed_rate, model_cache=settings.model_cache)
