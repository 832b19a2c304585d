"""The hybrid engine's settings, apart from the engine: the option check reads them at start in
every run whose ini file configures the plugin, so this module imports nothing but defaults."""

from __future__ import annotations

from dataclasses import dataclass

from .._defaults import KEYWORD_TOP_K, RERANK
from ..errors import RetrievalEvalError


@dataclass(frozen=True)
class HybridConfig:
    keyword_top_k: int = KEYWORD_TOP_K
    vector_top_k: int = 50
    fusion_top_k: int = 50
    use_keyword: bool = True
    use_vector: bool = True
    rerank: str = RERANK  # off | local:PATH | http:MODEL
    rerank_top_k: int = 20

    def __post_init__(self) -> None:
        if not (self.use_keyword or self.use_vector):
            raise RetrievalEvalError("hybrid engine: at least one of the keyword and vector retrievers must be on")
        for name in ("keyword_top_k", "vector_top_k", "fusion_top_k", "rerank_top_k"):
            if getattr(self, name) < 1:
                raise RetrievalEvalError(f"hybrid engine: {name} must be >= 1")
