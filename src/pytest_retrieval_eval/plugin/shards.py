"""Spreading one engine's queries over pytest-xdist workers (``--retrieval-shard``).

xdist hands out tests, not queries, and a test's fixture value lives on one worker. So with
sharding on, every worker adds the same items to its collection, one per selected engine and
share: ``retrieval-shard[ENGINE-1of4]`` ... ``[ENGINE-4of4]``. xdist spreads them like any test;
each evaluates its share of the labeled set (a stable hash of the query id) and the controller
merges the shares' per-query rows into the engine's evaluation, query for query what a serial
run gives. Each worker that runs a share builds the engine (for ``hybrid``: its own store and
ingestion). A test that reads ``retrieval_results`` still evaluates the whole set where it runs,
so a project that shards gates with ``--retrieval-threshold`` rules instead. Without xdist the
option adds one share per engine: the same project then runs the same way serially.
"""

from __future__ import annotations

from typing import Any

import pytest

from . import wake

NAME = "retrieval-shard"


def add_shares(config: pytest.Config, items: list[pytest.Item]) -> None:
    workers = int(getattr(config, "workerinput", {}).get("workercount", 1))  # without xdist: one share
    retrieval = [i for i in items if wake.wants_retrieval(i)]
    parent = retrieval[0].getparent(pytest.Module) if retrieval else None
    if parent is None:
        return
    for engine in wake.check_engines(config):
        for k in range(workers):
            item = pytest.Function.from_parent(parent, name=f"{NAME}[{engine}-{k + 1}of{workers}]",
                                               callobj=_evaluate_share)
            item.retrieval_share = (engine, k, workers)  # type: ignore[attr-defined]
            item.add_marker("retrieval")
            items.append(item)


def _evaluate_share(request: pytest.FixtureRequest, retrieval_session: Any, labeled_queries: Any,
                    retrieval_corpus: Any) -> None:
    engine, k, n = request.node.retrieval_share
    retrieval_session.evaluate_share(retrieval_session.engine(engine, request), labeled_queries, k, n,
                                     name=engine, corpus=retrieval_corpus)
