"""A team's query pipeline (YAML) as an engine, on the Haystack adapter.

The question goes to the pipeline's open text inputs (``text`` of embedders, ``query`` of
keyword retrievers and rankers, or those named), documents come back from its ``documents``
output, ids from their meta, chunks folded to their documents in order; questions are embedded
in one batch first where the text embedder is the plugin's own.
"""

from __future__ import annotations

from typing import Any, Sequence

from ..errors import RetrievalEvalError
from .adapters import haystack

#: open inputs a question goes to, unless they are named
QUESTION_SOCKETS = ("text", "query")


def _open_inputs(pipeline: Any, file: Any, named: Sequence[str]) -> dict[str, list[str]]:
    """Component -> sockets the question goes to: those named, else the open ``str`` inputs
    called ``text`` or ``query``."""
    open_inputs = pipeline.inputs()
    chosen: dict[str, list[str]] = {}
    for item in named:
        component, _, socket = item.partition(".")
        if component not in open_inputs or socket not in open_inputs[component]:
            shown = ", ".join(f"{c}.{s}" for c, sockets in open_inputs.items() for s in sockets) or "none"
            raise RetrievalEvalError(f"question input '{item}' is not an open input of the pipeline "
                                     f"(open: {shown})", path=file.path)
        chosen.setdefault(component, []).append(socket)
    if not named:
        for component, sockets in open_inputs.items():
            for socket, spec in sockets.items():
                if socket in QUESTION_SOCKETS and spec.get("type") is str:
                    chosen.setdefault(component, []).append(socket)
    if not chosen:
        raise RetrievalEvalError("no open 'text' or 'query' input takes the question; name them with "
                                 "NAME=PATH:COMPONENT.SOCKET,...", path=file.path)
    return chosen


def _documents_output(pipeline: Any, file: Any) -> str:
    for component, sockets in pipeline.outputs().items():
        if "documents" in sockets:
            return f"{component}.documents"
    raise RetrievalEvalError("the pipeline has no 'documents' output to rank", path=file.path)


def _stage_components(pipeline: Any, last: str) -> tuple[list[str], list[str]]:
    """The components that output documents, in the pipeline's order: those no documents flow
    into (the legs: retrievers) and the rest up to ``last``, the one ranked (the steps)."""
    import networkx as nx

    graph = pipeline.graph
    makes = [c for c in nx.topological_sort(graph)
             if any(getattr(e[2].get("from_socket"), "name", None) == "documents" for e in graph.out_edges(c, data=True))
             or c == last]
    fed = {c for c in makes if any(getattr(e[2].get("to_socket"), "name", None) == "documents"
                                   for e in graph.in_edges(c, data=True))}
    return [c for c in makes if c not in fed and c != last], [c for c in makes if c in fed or c == last]


class PipelineEngine:
    """A query pipeline as an engine (see the module docstring). Asked one question at a time:
    its document stores share one database connection each."""

    concurrency = 1

    def __init__(self, name: str, file: Any, store: Any, table: str, cache: Any, *,
                 inputs: Sequence[str] = (), id_field: str = "doc_id", index: Any = None,
                 model_cache: Any = None) -> None:
        from ..hybrid.haystack_internals import fetch_binary
        from ..hybrid.user_pipelines import cache_embedders, load, point_at

        self.name, self.file, self.id_field = name, file, id_field
        self.index = index  # what the team's ingestion wrote (its chunks and their lint), when known
        self.pipeline = load(file)
        point_at(self.pipeline, file, store, table)
        self._stores = list({id(c.document_store): c.document_store for _, c in self.pipeline.walk()
                             if hasattr(c, "document_store")}.values())
        for ds in self._stores:
            ds.count_documents()  # connects
            fetch_binary(ds)  # binary rows, and as many HNSW candidates as the built-in engine asks for
        self.cached, self.not_cached = cache_embedders(self.pipeline, cache, model_cache=model_cache)
        self.inputs = _open_inputs(self.pipeline, file, inputs)
        self.output = _documents_output(self.pipeline, file)
        self.legs, self.steps = _stage_components(self.pipeline, self.output.partition(".")[0])
        sockets = self.inputs
        self._adapted = haystack(self.pipeline, name=name, output=self.output, doc_id_field=id_field,
                                 inputs=lambda query, k: {c: {s: query for s in ss} for c, ss in sockets.items()},
                                 concurrency=1, id_required=True, path=file.path)

    def prepare(self, questions: Sequence[str]) -> None:
        """Every question embedded in one batch where the pipeline's text embedder is the
        plugin's own (its answers land in the cache the pipeline then reads); other embedders
        are asked one question at a time, through the cache."""
        from ..hybrid.components import PluginTextEmbedder

        for _, component in self.pipeline.walk():
            if isinstance(component, PluginTextEmbedder):
                component.embed(list(questions))

    def describe(self) -> dict:
        return {"engine": "haystack pipeline", "pipeline": self.file.path.name,
                "question_to": ", ".join(f"{c}.{s}" for c, sockets in self.inputs.items() for s in sockets),
                "embedders_cached": ", ".join(self.cached) or "none",
                "embedders_not_cached": ", ".join(self.not_cached) or "none"}

    def retrieve(self, query: str, k: int) -> list[str]:
        return self._adapted.retrieve(query, k)[:k]  # chunks folded to their documents, in order

    def exact_search(self, query: str, k: int) -> list:
        """The answer with every document store's vector queries an exact scan (index scans off
        on each store's connection): what ``--retrieval-exact-check`` measures the pipeline against."""
        from contextlib import ExitStack

        from ..hybrid.haystack_internals import exact_scan

        with ExitStack() as scans:
            for ds in self._stores:
                scans.enter_context(exact_scan(ds))
            return list(self.retrieve_stages(query, k).ranked)

    def retrieve_stages(self, query: str, k: int):
        """The answer, and what each retriever (a leg) and each later documents step held, read
        with Haystack's ``include_outputs_from``: a miss is told as "cut by joiner" or "never a
        candidate (bm25 leg empty)"."""
        from .adapters import fold
        from .base import Stages

        inputs = {c: {s: query for s in ss} for c, ss in self.inputs.items()}
        result = self.pipeline.run(inputs, include_outputs_from={*self.legs, *self.steps})

        def ids(component: str) -> list[str]:
            docs = (result.get(component) or {}).get("documents") or []
            if any((d.meta or {}).get(self.id_field) is None for d in docs):
                raise RetrievalEvalError(f"a retrieved document lacks the id meta field '{self.id_field}'",
                                         path=self.file.path, field=self.id_field)
            return fold(str(d.meta[self.id_field]) for d in docs)

        from ..types import Passage

        steps = {c: ids(c) for c in self.steps}
        out = self.output.partition(".")[0]  # a step's: its documents' ids are checked there
        ranked = [Passage(str(d.meta[self.id_field]), d.content or "")
                  for d in (result.get(out) or {}).get("documents") or []]
        return Stages(ranked, {c: ids(c) for c in self.legs}, steps)
