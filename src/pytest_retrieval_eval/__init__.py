"""pytest-retrieval-eval: retrieval quality as pytest assertions and CI gates.

The public names below are imported on first use (PEP 562), so importing the package, as
pytest does when it loads the plugin, costs nothing: no numpy, no Haystack.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

_PUBLIC = {
    "Chunk": "types",
    "Doc": "types",
    "LabeledQuery": "types",
    "QueryResult": "types",
    "Passage": "types",
    "Turn": "types",
    "RetrievalEvalError": "errors",
    "Measure": "ir.measures",
    "evaluate": "ir.metrics",
    "Qrels": "ir.qrels",
    "Run": "ir.runs",
    "per_query_frame": "ir.metrics",
    "Corpus": "data.corpus",
    "LabeledSet": "data.labeled",
    "Judge": "data.judges",
    "Judgment": "data.judgments",
    "Judgments": "data.judgments",
    "Engine": "engines.base",
    "AsyncEngine": "engines.base",
    "EngineRegistry": "engines.base",
    "Stages": "engines.base",
    "Converses": "engines.base",
    "TurnContext": "engines.base",  # which turn a conversation engine answers: id, conversation, position
    "ExactSearches": "engines.base",
    "last_turn": "engines.turns",  # the built-in baselines a conversation rewrite is measured against
    "concatenated": "engines.turns",
    "oracle_rewrite": "engines.turns",  # the person's rewrite: the oracle
    "rewritten": "engines.turns",  # a team's rewriter in front of any engine
    "EvaluationResult": "analysis.result",
    "RunResults": "evaluation.results",
    "GateSettings": "rules.settings",
    "Analysis": "analysis.analyse",
    "analyse": "analysis.analyse",
    "Verdict": "gate.verdict",
    "Failure": "gate.verdict",
    "conclude": "gate.verdict",
    "Saved": "archive.saved",
    "load_saved": "archive.saved",
    "results_json": "archive.saved",
    "hybrid_variant": "plugin.engines",
    "adapters": "engines.adapters",  # a module: adapters.function(...), adapters.http(...)
}

__all__ = sorted(_PUBLIC)

if TYPE_CHECKING:  # for type checkers and IDEs; at run time __getattr__ imports on demand
    from .data.corpus import Corpus
    from .data.judges import Judge
    from .data.judgments import Judgment, Judgments
    from .data.labeled import LabeledSet
    from .engines.base import AsyncEngine, Converses, Engine, EngineRegistry, ExactSearches, Stages, TurnContext
    from .engines.turns import concatenated, last_turn, oracle_rewrite, rewritten
    from .errors import RetrievalEvalError
    from .ir.measures import Measure
    from .ir.metrics import evaluate, per_query_frame
    from .ir.qrels import Qrels
    from .ir.runs import Run
    from .engines import adapters
    from .plugin.engines import hybrid_variant
    from .analysis.result import EvaluationResult
    from .evaluation.results import RunResults
    from .analysis.analyse import Analysis, analyse
    from .archive.saved import Saved, load_saved, results_json
    from .rules.settings import GateSettings
    from .gate.verdict import Failure, Verdict, conclude
    from .types import Chunk, Doc, LabeledQuery, Passage, QueryResult, Turn


def __getattr__(name: str) -> Any:
    module = _PUBLIC.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    imported = importlib.import_module(f".{module}", __name__)
    value = imported if module.rsplit(".", 1)[-1] == name else getattr(imported, name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted([*globals(), *__all__])
