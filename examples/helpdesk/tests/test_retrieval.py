import pytest

pytestmark = pytest.mark.retrieval

FLOORS = {"helpdesk-bm25": 0.6, "helpdesk-haystack": 0.6, "helpdesk-pgvector": 0.8, "keyword": 0.1}


def test_hit_at_3(retrieval_engine, retrieval_results):
    assert retrieval_results.hit_at(3) >= FLOORS[retrieval_engine.name]


def test_no_engine_errors(retrieval_results):
    assert retrieval_results.n_errored == 0
