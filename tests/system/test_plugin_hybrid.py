"""The plugin with the real store and the hybrid engine, end to end in subprocesses."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from conftest import CORPUS, QUESTIONS, interruptible, leftovers, parse_table
from fake_api import FakeApi, Reply, embeddings_reply


import importlib.util  # noqa: E402

pytestmark = [pytest.mark.model]

if importlib.util.find_spec("haystack") is None:
    pytest.skip("the hybrid extra is not installed", allow_module_level=True)

TESTS = """
    import pytest

    pytestmark = pytest.mark.retrieval

    def test_hit_at_5(retrieval_results):
        assert retrieval_results.hit_at(5) >= 0.2
"""

# Records, at the end of the inner session, whether the embedding model was ever imported.
PROBE = """
    import json, os, sys

    def pytest_sessionfinish(session):
        if os.environ.get("PYTEST_XDIST_WORKER") is None:
            with open(os.environ["PROBE_FILE"], "w") as fh:
                # either runtime of the built-in MiniLM: ONNX Runtime where the machine has its export
                json.dump({"model_imported": any(m in sys.modules for m in ("sentence_transformers", "onnxruntime"))}, fh)
"""


def run_inner(pytester, tmp: Path, *args: str, env: dict | None = None, probe: Path | None = None):
    outer = {k: v for k, v in os.environ.items() if not k.startswith("PYTEST_XDIST")}  # this run may be a worker
    environ = {**outer, "TMPDIR": str(tmp), **(env or {})}
    if probe:
        environ["PROBE_FILE"] = str(probe)
    cmd = [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", *args]
    start = time.perf_counter()
    done = subprocess.run(cmd, cwd=pytester.path, env=environ, capture_output=True, text=True, timeout=600)
    return done, time.perf_counter() - start


def rows(output: str) -> dict[str, dict[str, float]]:
    return parse_table(output)


def test_both_engines_a_clean_exit_and_a_warm_rerun_without_the_model(pytester, sandbox_tmp, tmp_path):
    cache = tmp_path / "cache"
    pytester.makeini(f"[pytest]\nretrieval_corpus = {CORPUS}\nretrieval_questions = {QUESTIONS}\nretrieval_cache_dir = {cache}\n")
    pytester.makeconftest(PROBE)
    pytester.makepyfile(TESTS)
    probe = tmp_path / "probe.json"
    cold, cold_s = run_inner(pytester, sandbox_tmp, "-m", "retrieval", "--retrieval-report", probe=probe)
    assert cold.returncode == 0, cold.stdout + cold.stderr
    assert json.loads(probe.read_text())["model_imported"] is True
    table = rows(cold.stdout)
    assert set(table) == {"hybrid", "keyword"}
    assert table["hybrid"]["hit@5"] >= table["keyword"]["hit@5"] + 0.3
    assert leftovers(sandbox_tmp) == ([], [])

    warm, warm_s = run_inner(pytester, sandbox_tmp, "-m", "retrieval", "--retrieval-report", probe=probe)
    assert warm.returncode == 0, warm.stdout + warm.stderr
    assert json.loads(probe.read_text())["model_imported"] is False  # every embedding came from the cache
    assert rows(warm.stdout) == table
    # what the warm run skipped, said by the run (not timed: a loaded machine makes any two runs
    # take as long; python bench/run.py --only bundled measures cold / warm)
    assert ": ingested (38 chunks)" in cold.stdout and ": restored from snapshot " in warm.stdout, warm.stdout
    assert ": ingested" not in warm.stdout
    print(f"bundled eval wall time: cold {cold_s:.2f}s, warm {warm_s:.2f}s")
    assert leftovers(sandbox_tmp) == ([], [])


def test_xdist_workers_each_get_a_store_and_the_table_matches(pytester, sandbox_tmp, shared_cache_dir):
    pytester.makeini(f"[pytest]\nretrieval_corpus = {CORPUS}\nretrieval_questions = {QUESTIONS}\n"
                     f"retrieval_cache_dir = {shared_cache_dir}\n"
                     "retrieval_embedder = hashing\n")  # the stores and the merge are tested, not the model
    pytester.makepyfile(TESTS + """
    def test_mrr(retrieval_results):
        assert retrieval_results.mrr() >= 0.1

    def test_no_errors(retrieval_results):
        assert retrieval_results.n_errored == 0
""")
    serial, _ = run_inner(pytester, sandbox_tmp, "-m", "retrieval", "--retrieval-report", "-v")
    parallel, _ = run_inner(pytester, sandbox_tmp, "-n", "2", "-m", "retrieval", "--retrieval-report",
                            "--retrieval-latency", "-v")
    assert serial.returncode == parallel.returncode == 0, parallel.stdout + parallel.stderr
    assert "2 workers" in parallel.stdout
    # each engine's latency, timed in the workers: p50 <= p95 <= max, and the hybrid engine's stages
    cost = parallel.stdout.split("what each engine's calls cost", 1)[1].splitlines()
    assert cost[1].split() == ["engine", "p50", "ms", "p95", "ms", "p99", "ms", "max", "ms"], cost
    figures = {c[0]: [float(x) for x in c[1:]] for c in (line.split() for line in cost[2:4])}
    assert set(figures) == {"hybrid", "keyword"} and all(0 < f[0] <= f[1] <= f[3] for f in figures.values())
    assert re.search(r"^hybrid: stages keyword [\d.]+/[\d.]+, vector [\d.]+/[\d.]+, fusion [\d.]+/[\d.]+ ms \(p50/p95\)",
                     parallel.stdout, re.M), parallel.stdout
    assert "latency measured at concurrency 1" in parallel.stdout and "latency measured at concurrency 1" not in serial.stdout
    assert rows(serial.stdout) == rows(parallel.stdout) and set(rows(parallel.stdout)) == {"hybrid", "keyword"}
    # the workers' store lines, which only they printed (to no terminal), are printed by the controller
    said = re.findall(r"^retrieval: (gw[01]): chunks_\w+: (?:ingested \(38 chunks\)|restored from snapshot \w+)$",
                      parallel.stdout, re.M)
    assert said and len(said) == len(set(said)) <= 2, parallel.stdout
    assert leftovers(sandbox_tmp) == ([], [])


def test_sigint_during_ingestion_stops_the_server_and_keeps_the_cache(pytester, sandbox_tmp, tmp_path):
    corpus = tmp_path / "big"
    corpus.mkdir()
    for i in range(320):
        (corpus / f"d{i}.json").write_text(json.dumps({"doc_id": f"d{i}", "title": f"Doc {i}",
                                                       "content": f"document number {i} about topic {i % 17}"}))
    questions = {"format": "pytest-retrieval-eval/questions", "version": 1,
                 "queries": [{"id": "q1", "question": "topic 3", "relevant": {"d3": 1}}]}
    (tmp_path / "q.json").write_text(json.dumps(questions))
    cache = tmp_path / "cache"
    pytester.makeini(f"[pytest]\nretrieval_corpus = {corpus}\nretrieval_questions = {tmp_path / 'q.json'}\n"
                     f"retrieval_cache_dir = {cache}\nretrieval_embedder = openai:slow-embed\nretrieval_engines = hybrid\n")
    pytester.makepyfile(TESTS)
    with FakeApi() as api:
        api.script("/embeddings", Reply(200, embeddings_reply(8), delay=0.4))
        env = {**os.environ, "TMPDIR": str(sandbox_tmp), "RETRIEVAL_EVAL_BASE_URL": api.url,
               "RETRIEVAL_EVAL_API_KEY": "sk-test-interrupt"}
        proc = subprocess.Popen([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-m", "retrieval"],
                                cwd=pytester.path, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                                **interruptible())
        seen = []
        for line in proc.stdout:
            seen.append(line)
            if "embedding chunks:" in line:
                assert leftovers(sandbox_tmp)[0], "the server should be up mid-ingestion"
                proc.send_signal(signal.SIGINT)
                break
        rest, _ = proc.communicate(timeout=120)
    output = "".join(seen) + rest
    assert proc.returncode == pytest.ExitCode.INTERRUPTED, output
    assert "KeyboardInterrupt" in output
    assert leftovers(sandbox_tmp) == ([], [])
    from pytest_retrieval_eval.hybrid.embedding_cache import EmbeddingCache

    kept = EmbeddingCache(cache / "embeddings.sqlite3").count()
    assert 64 <= kept < 321  # the batches embedded before Ctrl-C are kept, intact


def test_a_failing_ingestion_still_stops_the_server_and_hides_the_key(pytester, sandbox_tmp, tmp_path):
    from conftest import FAKE_KEY

    pytester.makeini(f"[pytest]\nretrieval_corpus = {CORPUS}\nretrieval_questions = {QUESTIONS}\n"
                     f"retrieval_cache_dir = {tmp_path}\nretrieval_embedder = openai:m\nretrieval_engines = hybrid\n")
    pytester.makepyfile(TESTS)
    with FakeApi() as api:
        api.script("/embeddings", Reply(401, {"error": {"message": f"Incorrect API key provided: {FAKE_KEY}"}}))
        done, _ = run_inner(pytester, sandbox_tmp, "-m", "retrieval", "-rA", "--log-level=DEBUG",
                            env={"RETRIEVAL_EVAL_BASE_URL": api.url, "RETRIEVAL_EVAL_API_KEY": FAKE_KEY})
    output = done.stdout + done.stderr
    assert done.returncode == pytest.ExitCode.TESTS_FAILED, output
    assert "1 error" in output and "/embeddings failed: HTTP 401: " in output and "check the API key variable" in output
    assert FAKE_KEY not in output
    assert "Incorrect API key provided: ***" in output  # the server did echo it: it was masked
    assert leftovers(sandbox_tmp) == ([], [])
