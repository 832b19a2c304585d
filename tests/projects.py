"""What several test modules build alike: a BEIR folder with the awkward bits real ones have,
and the oracle engine (the labeled set's own answers) the report tests gate. Imported by name
(``from projects import ...``): tests/ is on sys.path through its conftest."""

from __future__ import annotations

import json

#: The bundled questions' one retrieval test: all 68 evaluated.
BUNDLED_TESTS = """
    import pytest

    pytestmark = pytest.mark.retrieval

    def test_quality(retrieval_results):
        assert retrieval_results.n == 68
"""

#: An engine that answers from the labeled set itself, minus the questions named in $MISS.
ORACLE_CONFTEST = """
    import os

    class Oracle:
        '''Answers from the labeled set itself, minus the queries named in $MISS (a degradation).'''
        name = "oracle"
        def __init__(self, labeled):
            self.gold = {q.question: q.gold[0] for q in labeled}
        def retrieve(self, query, k):
            missed = os.environ.get("MISS", "").split(",")
            qid = [q for q in os.environ.get("QIDS", "").split(",")]
            if any(m and m in query for m in missed):
                return ["nothing-here"]
            return [self.gold[query], "battery-care"][:k]

    def pytest_retrieval_engines(registry, config):
        registry.register("oracle", lambda request: Oracle(request.getfixturevalue("labeled_queries")))
"""


def make_beir(root, *, crlf=True, bom=True):
    (root / "qrels").mkdir(parents=True)
    nl = "\r\n" if crlf else "\n"
    prefix = "\ufeff" if bom else ""
    (root / "corpus.jsonl").write_text(prefix + nl.join([
        json.dumps({"_id": "d1", "title": "Vitamin D", "text": "Vitamin D and bones.", "metadata": {}}),
        "",
        json.dumps({"_id": "d2", "title": "", "text": "Sleep and memory.", "metadata": {}}),
    ]) + nl, encoding="utf-8", newline="")
    (root / "queries.jsonl").write_text(nl.join([
        json.dumps({"_id": "q1", "text": "does vitamin d help bones", "metadata": {}}),
        json.dumps({"_id": "q2", "text": "sleep memory", "metadata": {}}),
        json.dumps({"_id": "q3", "text": "unjudged", "metadata": {}}),
    ]) + nl, encoding="utf-8", newline="")
    (root / "qrels" / "test.tsv").write_text(
        prefix + nl.join(["query-id\tcorpus-id\tscore", "q1\td1\t2", "q1\td2\t0", "q2\td2\t1"]) + nl,
        encoding="utf-8", newline="")
    return root
