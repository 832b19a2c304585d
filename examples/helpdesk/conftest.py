"""Register the team's engine with pytest-retrieval-eval."""

from search import HelpdeskSearch


def pytest_retrieval_engines(registry, config):
    registry.register("helpdesk-bm25", lambda request: HelpdeskSearch(request.getfixturevalue("retrieval_corpus")))
