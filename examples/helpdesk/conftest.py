"""Plug the team's two searches into pytest-retrieval-eval, one adapter each."""

from pytest_retrieval_eval import adapters

import search


def pytest_retrieval_engines(registry, config):
    registry.register("helpdesk-bm25", lambda request: adapters.function(search.bm25))
    registry.register("helpdesk-haystack", lambda request: adapters.haystack(search.haystack_pipeline()))
