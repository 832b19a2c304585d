"""The hybrid engine's settings, apart from the engine: the option check reads them at start in
every run whose ini file configures the plugin, so this module imports nothing but defaults."""

from __future__ import annotations

from dataclasses import dataclass

from .._defaults import KEYWORD_TOP_K, RERANK
from ..errors import RetrievalEvalError

#: pgvector's ``hnsw.iterative_scan`` modes: ``off`` returns at most ``ef_search`` rows a query, fewer
#: still after a filter; the others scan on until the query's LIMIT is met (pgvector 0.8)
ITERATIVE_SCANS = ("off", "relaxed_order", "strict_order")
#: the largest ``hnsw.ef_search`` pgvector takes
EF_SEARCH_MAX = 1000


@dataclass(frozen=True)
class HybridConfig:
    keyword_top_k: int = KEYWORD_TOP_K
    vector_top_k: int = 50
    fusion_top_k: int = 50
    use_keyword: bool = True
    use_vector: bool = True
    rerank: str = RERANK  # off | local:PATH | http:MODEL
    rerank_top_k: int = 20
    #: HNSW candidates a vector query visits (``hnsw.ef_search``); 0: the larger of 200 and
    #: ``vector_top_k``, so the vector leg is never cut short by the index
    ef_search: int = 0
    #: ``hnsw.iterative_scan``: off, relaxed_order or strict_order
    iterative_scan: str = "off"

    def __post_init__(self) -> None:
        if not (self.use_keyword or self.use_vector):
            raise RetrievalEvalError("hybrid engine: at least one of the keyword and vector retrievers must be on")
        for name in ("keyword_top_k", "vector_top_k", "fusion_top_k", "rerank_top_k"):
            if getattr(self, name) < 1:
                raise RetrievalEvalError(f"hybrid engine: {name} must be >= 1")
        if not 0 <= self.ef_search <= EF_SEARCH_MAX:
            raise RetrievalEvalError(f"hybrid engine: ef_search must be 1 to {EF_SEARCH_MAX} (0: the larger of 200 and "
                                     f"vector_top_k), got {self.ef_search}")
        if self.iterative_scan not in ITERATIVE_SCANS:
            raise RetrievalEvalError(f"hybrid engine: iterative_scan must be one of {', '.join(ITERATIVE_SCANS)}, "
                                     f"got {self.iterative_scan!r}")
