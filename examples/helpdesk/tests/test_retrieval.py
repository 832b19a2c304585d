import pytest

pytestmark = pytest.mark.retrieval

FLOORS = {"helpdesk-bm25": 0.6, "helpdesk-haystack": 0.6, "helpdesk-pgvector": 0.8, "keyword": 0.1,
          "helpdesk-chat": 0.6, "helpdesk-bm25-concat": 0.6}


def test_hit_at_3(retrieval_engine, retrieval_results, labeled_queries):
    # on the conversations (conversations.ini), a first turn is a question like any other: the same
    # floor; how the follow-ups fare is the gate's (turns.drop)
    results = retrieval_results.segment("first-turn") if labeled_queries.has_conversations else retrieval_results
    assert results.hit_at(3) >= FLOORS[retrieval_engine.name]


def test_no_engine_errors(retrieval_results):
    assert retrieval_results.n_errored == 0
