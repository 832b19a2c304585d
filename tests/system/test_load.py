"""Load: 20,000 labeled queries with flat memory; four xdist workers, four embedded stores."""

from __future__ import annotations

import json
import os
import random
import subprocess
import sys
import tracemalloc

import pytest

from conftest import CORPUS, QUESTIONS, leftovers
from pytest_retrieval_eval.data.corpus import JsonFolder
from pytest_retrieval_eval.engines.keyword import KeywordEngine
from conftest import evaluate_engine
from pytest_retrieval_eval.data.labeled import LabeledSet
from pytest_retrieval_eval.types import LabeledQuery

pytestmark = [pytest.mark.postgres]


def queries(corpus, n: int) -> LabeledSet:
    rng = random.Random(5)
    words = " ".join(d.title + " " + d.description for d in corpus).split()
    return LabeledSet(tuple(LabeledQuery(f"q{i}", " ".join(rng.sample(words, 7)), {corpus.docs[i % len(corpus)].doc_id: 1})
                            for i in range(n)))


class Replay:
    """The keyword engine's answers, computed before tracing: what is measured is what the
    plugin holds per query (tracemalloc slows the engine's own scoring tenfold, and its
    allocations are transient)."""

    name = "keyword"

    def __init__(self, engine, labeled, depth):
        self.answers = {q.question: engine.retrieve(q.question, depth) for q in labeled}

    def retrieve(self, query, k):
        return self.answers[query][:k]


def test_twenty_thousand_queries_with_flat_memory():
    corpus = JsonFolder(CORPUS).load()
    engine = KeywordEngine(corpus)
    peaks = {}
    for n in (2_000, 20_000):
        labeled = queries(corpus, n)
        replay = Replay(engine, labeled, 20)
        tracemalloc.start()
        result = evaluate_engine(replay, labeled, depth=20)
        values = [result.hit_at(5), result.mrr(), result.ndcg_at(10)]
        peaks[n] = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
        assert result.n == n and result.n_errored == 0 and all(0 <= v <= 1 for v in values)
    per_query = (peaks[20_000] - peaks[2_000]) / 18_000
    # what grows is the stored rankings themselves (20 ids each) and the per-query values
    assert per_query < 3_000, f"{per_query:.0f} bytes per query"
    assert peaks[20_000] < 100 * 1024 * 1024


def test_four_xdist_workers_each_run_their_own_embedded_store(pytester, sandbox_tmp, tmp_path):
    if __import__("importlib.util").util.find_spec("haystack") is None:
        pytest.skip("the hybrid extra is not installed")
    pytester.makeini(f"[pytest]\nretrieval_corpus = {CORPUS}\nretrieval_questions = {QUESTIONS}\n"
                     f"retrieval_cache_dir = {tmp_path}\nretrieval_embedder = hashing\n")
    pytester.makepyfile(
        f"""
        import json, os, time
        import pytest

        @pytest.mark.parametrize("i", range(8))
        def test_store(i, pgvector_store, ingested_chunks):
            with open({str(tmp_path / 'stores.jsonl')!r}, "a") as fh:
                fh.write(json.dumps({{"worker": os.environ["PYTEST_XDIST_WORKER"], "dsn": pgvector_store.dsn}}) + "\\n")
            time.sleep(0.3)
            assert len(ingested_chunks) == 38
        """
    )
    env = {**os.environ, "TMPDIR": str(sandbox_tmp)}
    done = subprocess.run([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-n", "4"], cwd=pytester.path,
                          env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
    rows = [json.loads(l) for l in (tmp_path / "stores.jsonl").read_text().splitlines()]
    by_worker = {}
    for r in rows:
        by_worker.setdefault(r["worker"], set()).add(r["dsn"])
    assert len(by_worker) == 4 and all(len(d) == 1 for d in by_worker.values())
    assert len({next(iter(d)) for d in by_worker.values()}) == 4  # four servers, four sockets
    assert leftovers(sandbox_tmp) == ([], [])
