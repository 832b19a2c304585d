"""Adapters against the real objects: a Haystack pipeline and component, LangChain and LlamaIndex
retrievers, an HTTP search service (a real local server), plain and async functions; and the
concurrency that runs an engine's queries several at a time with the serial run's results."""

from __future__ import annotations

import json


def test_adapters_are_one_liners_in_a_conftest_and_concurrency_is_an_option(bundled_project, tmp_path):
    bundled_project.makeconftest("""
        from pytest_retrieval_eval import adapters

        def search(query, k):
            return {"battery-care": 0.5, "winter-riding-tips": 0.5, "account-deletion": len(query) % 3}

        def pytest_retrieval_engines(registry, config):
            registry.register("fn", lambda request: adapters.function(search))
    """)
    bundled_project.makepyfile("def test_q(retrieval_results):\n    assert retrieval_results.n == 68\n")
    a, b = tmp_path / "a", tmp_path / "b"
    assert bundled_project.runpytest("--retrieval-engine", "fn", f"--retrieval-report-dir={a}").ret == 0
    assert bundled_project.runpytest("--retrieval-engine", "fn", f"--retrieval-report-dir={b}",
                                     "--retrieval-concurrency", "8").ret == 0
    for name in ("per_query.jsonl", "runs/fn.trec"):
        assert (a / name).read_bytes() == (b / name).read_bytes()
    assert json.loads((b / "results.json").read_text())["evaluations"][0]["engine_info"]["concurrency"] == 8
