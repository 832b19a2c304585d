"""pytest-retrieval-eval: retrieval quality as pytest assertions and CI gates."""

from .errors import RetrievalEvalError
from .measures import Measure
from .metrics import evaluate
from .qrels import Qrels
from .runs import Run
from .types import Chunk, Doc, LabeledQuery, QueryResult

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
]
