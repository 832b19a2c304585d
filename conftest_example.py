"""How to wire your own corpus and engine into pytest-retrieval-eval.

Copy this file to your project's root as ``conftest.py`` and adapt it. Then:

    pytest -m retrieval --retrieval-report --retrieval-threshold="my-search:hit@5>=0.8"

Configuration lives in your ini file (pyproject.toml shown):

    [tool.pytest.ini_options]
    retrieval_corpus = "corpus"                  # JSON docs, or a BEIR folder (corpus.jsonl, queries.jsonl, qrels/)
    retrieval_questions = "questions.cache.json" # labeled queries (not needed for a BEIR folder)
    retrieval_thresholds = [
        "my-search:hit@5>=0.8",
        "errors<=0",
    ]
"""

from __future__ import annotations

import pytest


class MySearchEngine:
    """Any object with ``name`` and ``retrieve(query, k) -> [doc_id, ...]`` is an engine.

    Here: call your real search service. Return document ids (not chunk ids), best first. If it
    raises, the query is recorded as errored and counted as a miss; the run goes on.
    """

    name = "my-search"

    def __init__(self, corpus):
        self.docs = list(corpus)

    def describe(self) -> dict:
        """Shown in reports: what configuration produced these numbers."""
        return {"engine": "my-search", "version": "example"}

    def retrieve(self, query: str, k: int) -> list[str]:
        words = set(query.lower().split())
        scored = [(len(words & set(d.content.lower().split())), d.doc_id) for d in self.docs]
        return [doc_id for score, doc_id in sorted(scored, key=lambda s: (-s[0], s[1])) if score > 0][:k]


def pytest_retrieval_engines(registry, config):
    """Every engine registered here is one parameter of the ``retrieval_engine`` fixture."""
    registry.register("my-search", lambda request: MySearchEngine(request.getfixturevalue("retrieval_corpus")))


# Tests go in your test files, for example tests/test_retrieval.py. Your engines run; the
# built-in ``keyword`` engine (the metadata-only baseline) runs too when you name it
# (``retrieval_engines = "my-search keyword"``), so floors are per engine, or a test is aimed at
# one engine with ``@pytest.mark.retrieval(engine="my-search")`` (docs/quickstart.md).
FLOORS = {"my-search": 0.5, "keyword": 0.3}


@pytest.mark.retrieval
def test_hit_at_5(retrieval_engine, retrieval_results):
    # Evaluated once per session per engine; a failure lists the worst-missed queries.
    assert retrieval_results.hit_at(5) >= FLOORS.get(retrieval_engine.name, 0.5)


@pytest.mark.retrieval
def test_no_errors(retrieval_results):
    assert retrieval_results.n_errored == 0
