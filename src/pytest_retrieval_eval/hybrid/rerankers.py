"""Rerankers for the hybrid engine: a local cross-encoder folder, or a Cohere-style HTTP ``/rerank``.

No package ships cross-encoder weights offline, so rerank is off by default. A folder is checked
before use: an embedding model loaded as a cross-encoder silently scores everything about 0.5.
"""

from __future__ import annotations

import json
from pathlib import Path

from .._http import base_url
from ..errors import RetrievalEvalError


def validate_cross_encoder(path: str | Path) -> Path:
    path = Path(path)
    config = path / "config.json"
    try:
        architectures = json.loads(config.read_text()).get("architectures") or []
    except (OSError, ValueError):
        raise RetrievalEvalError("not a model folder: config.json missing or unreadable", path=config) from None
    if not any(a.endswith("ForSequenceClassification") for a in architectures):
        raise RetrievalEvalError(
            f"not a cross-encoder: architectures {architectures} has no *ForSequenceClassification; loading it as a "
            "reranker would give every passage the same score", path=config, field="architectures")
    return path


def make_reranker(spec: str):
    """``off`` -> None; ``local:PATH`` -> SentenceTransformersSimilarityRanker; ``http:MODEL``."""
    kind, _, arg = (spec or "off").partition(":")
    if kind == "off":
        return None
    if kind == "local" and arg:
        from .._lazy_torch import enable_torch, import_haystack

        import_haystack()
        enable_torch()
        from haystack_integrations.components.rankers.sentence_transformers import SentenceTransformersSimilarityRanker

        ranker = SentenceTransformersSimilarityRanker(model=str(validate_cross_encoder(arg)), local_files_only=True)
        ranker.warm_up()
        return ranker
    if kind == "http" and arg:
        from .components import HttpReranker

        return HttpReranker(arg, base_url())
    raise RetrievalEvalError(f"rerank setting {spec!r} not understood; use off, local:PATH or http:MODEL")
