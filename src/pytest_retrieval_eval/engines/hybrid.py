"""The hybrid engine: pgvector keyword + vector retrieval, reciprocal-rank fusion, optional rerank.

Its components (``PgvectorKeywordRetriever``, ``PgvectorEmbeddingRetriever``, ``DocumentJoiner``)
come from the built-in query YAML (``pipelines/query.yaml``), loaded and pointed at the table as
a team's own YAML is, and are called directly rather than through ``Pipeline.run``: a Pipeline
deep-copies every input and output, embeddings included, which costs more than the retrieval
itself at this scale; the engine also applies the org/dataset filter, embeds the questions in
one batch, and runs the use_keyword/use_vector variants and the reranker. It answers with the
fused chunks as passages (``Passage``): the plugin folds them into documents (the first
occurrence of each parent document, order kept) and reads their texts for the evidence level.
"""

from __future__ import annotations

import time
from dataclasses import asdict
from typing import TYPE_CHECKING, Sequence

from .._lazy_torch import import_haystack
from ..errors import RetrievalEvalError
from ..hybrid.settings import HybridConfig  # re-exported: the engine's settings, light for the option check
from ..types import Passage

if TYPE_CHECKING:
    from ..hybrid.ingest import IngestedIndex


def chunks_to_docs(chunks: Sequence) -> list[str]:
    """Parent doc ids in first-occurrence order."""
    return list(dict.fromkeys(c.meta["doc_id"] for c in chunks))


def chunks_to_docs_of(passages: Sequence[Passage]) -> list[str]:
    """The documents of passages in first-occurrence order."""
    return list(dict.fromkeys(p.doc_id for p in passages))


class HybridEngine:
    def __init__(self, index: IngestedIndex, config: HybridConfig = HybridConfig(), *, name: str = "hybrid",
                 warm: bool = False) -> None:
        import_haystack()
        from ..data.pipeline_files import builtin
        from ..hybrid.haystack_internals import EF_SEARCH, vector_index
        from ..hybrid.rerankers import make_reranker
        from ..hybrid.user_pipelines import load, point_at

        self.name = name
        self.index = index
        self.config = config
        self.warm = warm  # the session times its calls (--retrieval-latency): warm the index first
        # the built-in query YAML, with the session's settings, pointed at the table as a team's is
        file = builtin("query.yaml")
        pipeline = load(file, {"keyword": {"top_k": config.keyword_top_k}, "vector": {"top_k": config.vector_top_k},
                               "joiner": {"top_k": config.fusion_top_k}})
        # the index's own store: open since ingestion (or restore), rows in binary, ef_search set
        point_at(pipeline, file, index.store, index.table, document_store=index.document_store)
        self.keyword, self.vector = pipeline.get_component("keyword"), pipeline.get_component("vector")
        self.joiner = pipeline.get_component("joiner")
        # HNSW returns at most ef_search rows a query (unless it scans on): by default never fewer than the
        # vector leg asks for; set each query (``_vector_leg``), as the engines on an index share its connection
        self.ef_search = config.ef_search or max(EF_SEARCH, config.vector_top_k)
        try:
            self.vector_index = vector_index(index.document_store) if config.use_vector else None
        except Exception as exc:  # noqa: BLE001  the store is down: each query records its own error
            self.vector_index = {"type": f"unknown (the store did not answer: {type(exc).__name__})"}
        self.reranker = make_reranker(config.rerank)
        self._query_vectors: dict[str, list[float]] = {}
        self.keyword_empty = 0
        self.queries = 0

    def describe(self) -> dict:
        rerank = self.config.rerank if self.config.rerank != "off" else "off (no offline cross-encoder is available)"
        canary = getattr(self.index.embedder, "canary", None)  # the embedder's numbers (hybrid/canaries.py)
        return {
            "engine": "hybrid",
            **asdict(self.config),
            "rerank": rerank,
            "embedder": self.index.embedder.identity,
            **({"embedder_canary": canary.fingerprint} if canary is not None and canary.fingerprint else {}),
            "store": self.index.store.backend,
            "table": self.index.table,
            "split": f"{self.index.config.split_length} words, {self.index.config.split_overlap} overlap",
            "chunks": len(self.index.chunks),  # the index's size: what a sweep's front weighs quality against
            "keyword_empty": f"{self.keyword_empty}/{self.queries}" if self.config.use_keyword else "n/a",
            **self._index_settings(),
        }

    def _index_settings(self) -> dict:
        """The vector leg's index and its settings, as the catalog and the session have them: what
        an approximate-versus-exact gap (``--retrieval-exact-check``) is measured at."""
        if not self.config.use_vector:
            return {"ef_search": "n/a", "iterative_scan": "n/a"}
        found = self.vector_index
        if found is None:
            return {"index": "none (every vector query is an exact scan)", "ef_search": "n/a", "iterative_scan": "n/a"}
        if found["type"] != "hnsw":
            return {"index": found["type"], **{f"index_{k}": v for k, v in found.items() if k != "type"}}
        return {"index": "hnsw", "hnsw_m": found["m"], "hnsw_ef_construction": found["ef_construction"],
                "ef_search": self.ef_search, "iterative_scan": self.config.iterative_scan}

    def _vector_leg(self, query: str, filters: dict, *, exact: bool = False) -> list:
        """The vector leg's chunks, at this engine's HNSW settings; ``exact``: by an exact scan of
        the same rows (the index left unused)."""
        from contextlib import nullcontext

        from ..hybrid.haystack_internals import configure, exact_scan

        store = self.index.document_store
        configure(store, ef_search=self.ef_search, iterative_scan=self.config.iterative_scan)
        with exact_scan(store) if exact else nullcontext():
            return self.vector.run(query_embedding=self._vector_of(query), filters=filters)["documents"]

    def exact_search(self, query: str, k: int) -> list[Passage]:
        """The answer ``retrieve`` gives with the vector leg searched exactly (every row the filter
        keeps, by distance, the HNSW index unused), the keyword leg, fusion and rerank as they are:
        what ``--retrieval-exact-check`` compares the approximate answer with. Uncounted in
        ``keyword_empty``."""
        return list(self._stages(query, k, exact=True).ranked)

    def prepare(self, queries: Sequence[str]) -> None:
        """Embed every question in batches before the per-query loop (cached on disk too), and,
        where the session times the calls (``warm``), warm the index, untimed and uncounted: each
        leg asked each question once, the first engine on an index only. The first engine on a freshly written table otherwise pays for
        the pages each question's terms and candidates first read and for psycopg's first five
        unprepared executions (the index's connection is shared), and a sweep's front would rank
        settings by the order they ran: every configuration is timed warm, as a service runs."""
        if self.config.use_vector:
            vectors = self.index.embedder.embed(list(queries))
            self._query_vectors.update((q, v.tolist()) for q, v in zip(queries, vectors))
        legs = (("keyword", self.config.use_keyword and self.warm), ("vector", self.config.use_vector and self.warm))
        for leg in (name for name, used in legs if used):
            cold = [q for q in dict.fromkeys(queries) if (leg, q) not in self.index.warmed]
            for question in cold:
                if leg == "keyword":
                    self.keyword.run(query=question, filters=self.index.filters)
                else:
                    self._vector_leg(question, self.index.filters)
            self.index.warmed.update((leg, q) for q in cold)

    def _vector_of(self, query: str) -> list[float]:
        if query not in self._query_vectors:
            self._query_vectors[query] = self.index.embedder.embed([query])[0].tolist()
        return self._query_vectors[query]

    def retrieve(self, query: str, k: int) -> list[str]:
        return chunks_to_docs_of(self.retrieve_stages(query, k).ranked)[:k]

    def retrieve_stages(self, query: str, k: int):
        """The answer and what each stage held (``engines.base.Stages``): the keyword and vector
        legs, the fusion, and with a reranker its window and its order, as documents."""
        return self._stages(query, k)

    def _stages(self, query: str, k: int, *, exact: bool = False):
        from .base import Stages

        filters = self.index.filters
        legs: dict[str, list] = {}
        seconds: dict[str, float] = {}
        clock = time.perf_counter
        self.queries += not exact
        if self.config.use_keyword:
            start = clock()
            found = self.keyword.run(query=query, filters=filters)["documents"]
            seconds["keyword"] = clock() - start
            self.keyword_empty += not found and not exact
            legs["keyword"] = found
        if self.config.use_vector:
            start = clock()  # the question's vector was made in prepare(), or is made here and timed with the leg
            legs["vector"] = self._vector_leg(query, filters, exact=exact)
            seconds["vector"] = clock() - start
        start = clock()
        fused = self.joiner.run(documents=list(legs.values()))["documents"]
        seconds["fusion"] = clock() - start
        steps = {"fusion": chunks_to_docs(fused)}
        if self.reranker is not None:
            window = fused[: self.config.rerank_top_k]
            start = clock()
            fused = self.reranker.run(query=query, documents=window)["documents"]
            seconds["rerank"] = clock() - start
            steps["rerank window"], steps["rerank"] = chunks_to_docs(window), chunks_to_docs(fused)
        # the answer: the fused chunks as passages (their documents are what the plugin ranks, the first
        # ``k`` of them; their texts, what the evidence-level measures read)
        return Stages([Passage(c.meta["doc_id"], c.content or "") for c in fused],
                      {name: chunks_to_docs(c) for name, c in legs.items()}, steps, seconds)
