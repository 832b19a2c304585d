"""pytest-retrieval-eval: retrieval quality as pytest assertions and CI gates."""

from .errors import RetrievalEvalError
from .measures import Measure
from .metrics import evaluate
from .qrels import Qrels
from .runs import Run
from .types import Chunk, Doc, LabeledQuery, QueryResult


def hybrid_variant(**settings):
    """A factory for ``registry.register``: the hybrid engine with other settings (see the
    plugin's ``hybrid_variant``); imported lazily so this package stays light."""
    from .plugin import hybrid_variant as make

    return make(**settings)

__all__ = [
    "Chunk",
    "Doc",
    "LabeledQuery",
    "Measure",
    "Qrels",
    "QueryResult",
    "RetrievalEvalError",
    "Run",
    "evaluate",
    "hybrid_variant",
]
