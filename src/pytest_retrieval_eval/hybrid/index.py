"""What an ingestion leaves behind: its settings and the index (chunks, table, costs), whichever
path wrote it (the built-in ingestion or a team's YAML)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ..data.chunking import Chunking

if TYPE_CHECKING:
    from ..types import Chunk
    from .embedders import Embedder
    from .store.base import Store

#: the most dimensions pgvector's HNSW index takes, per column type
HNSW_MAX_DIM = {"vector": 2000, "halfvec": 4000}


@dataclass(frozen=True)
class IngestConfig(Chunking):
    """Chunking, plus what only the store and lint need: the keyword index's text-search
    language and the opt-in near-duplicate threshold."""

    language: str = "english"
    near_duplicates: float | None = None  # lint: MinHash similarity threshold, opt-in


@dataclass
class IngestedIndex:
    """The ingested corpus: chunks, the Haystack document store over their table, and costs.
    An index a team's ingestion YAML wrote has neither ``document_store`` nor ``embedder``: its
    query pipelines open their own stores and run their own embedders."""

    chunks: tuple[Chunk, ...]
    store: Store
    document_store: Any | None  # PgvectorDocumentStore (HNSW search strategy); None: a team's YAML wrote it
    table: str
    dataset: str
    config: IngestConfig
    embedder: Embedder | None  # None: a team's YAML wrote it, with its own embedders
    seconds: float
    stats: dict = field(default_factory=dict)
    lint: Any = None  # lint.LintReport of the chunks, taken before embedding
    #: (leg, question) the engines on this index have asked once, untimed (``HybridEngine.prepare``)
    warmed: set = field(default_factory=set, repr=False, compare=False)

    @property
    def filters(self) -> dict:
        """The org/dataset meta filter every retrieval applies, as production does."""
        return {
            "operator": "AND",
            "conditions": [
                {"field": "meta.org_id", "operator": "==", "value": self.config.org_id},
                {"field": "meta.dataset", "operator": "==", "value": self.dataset},
            ],
        }
