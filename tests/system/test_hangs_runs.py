"""Engines that hang: a blocking ``async def retrieve`` is cut off by ``--retrieval-timeout`` like a
sync one, and Ctrl-C during a concurrent run whose calls never return ends pytest at once and
leaves no PostgreSQL behind."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time

import pytest

from conftest import CORPUS, QUESTIONS, interruptible, leftovers, parse_table, requires_hybrid

pytestmark = [pytest.mark.postgres]


ASYNC_SLEEPER = """
    import time

    class Sleeper:
        name = "sleeper"
        async def retrieve(self, query, k):
            if "winter" in query.lower():
                time.sleep(30)  # a blocking call inside the coroutine
            return ["winter-riding-tips"]

    def pytest_retrieval_engines(registry, config):
        registry.register("sleeper", lambda request: Sleeper())
"""


def test_the_timeout_holds_for_an_async_engine_that_sleeps_in_its_coroutine(bundled_project):
    bundled_project.makeconftest(ASYNC_SLEEPER)
    bundled_project.makepyfile("import pytest\n\n@pytest.mark.retrieval\ndef test_x(retrieval_results):\n    pass\n")
    start = time.perf_counter()
    result = bundled_project.runpytest_subprocess("-m", "retrieval", "--retrieval-engine", "sleeper",
                                                  "--retrieval-report", "--retrieval-timeout", "1",
                                                  "--retrieval-report-dir=out", timeout=45)
    assert time.perf_counter() - start < 25  # two stuck questions, a second each (not 30 s each)
    assert result.ret == 0, result.stdout.str()
    assert parse_table(result.stdout.str())["sleeper"]["errored"] == 2
    rows = [json.loads(l) for l in (bundled_project.path / "out" / "per_query.jsonl").read_text().splitlines()]
    errors = [r["error"] for r in rows if r.get("error")]
    assert len(errors) == 2 and all(e.startswith("EngineTimeout: no answer within 1s") for e in errors), errors


# --- Ctrl-C while calls never return ----------------------------------------------------------------

STUCK_ENGINE = """
    import threading
    from pathlib import Path

    class Stuck:
        name = "stuck"
        def __init__(self, index):
            self.index = index
        {kind}def retrieve(self, query, k):
            Path({marker!r}, threading.current_thread().name.replace("/", "_")).touch()
            threading.Event().wait()  # never returns, never yields
            return [self.index.chunks[0].doc_id]

    def pytest_retrieval_engines(registry, config):
        registry.register("stuck", lambda request: Stuck(request.getfixturevalue("ingested_index")))
"""


@requires_hybrid
@pytest.mark.parametrize("kind", ["sync", "async"])
def test_ctrl_c_with_calls_in_flight_ends_pytest_and_stops_postgres(pytester, sandbox_tmp, tmp_path,
                                                                    shared_cache_dir, kind):
    marker = tmp_path / "calls"
    marker.mkdir()
    pytester.makeini(f"[pytest]\nretrieval_corpus = {CORPUS}\nretrieval_questions = {QUESTIONS}\n"
                     f"retrieval_cache_dir = {shared_cache_dir}\nretrieval_engines = stuck\n"
                     "retrieval_embedder = hashing\n")  # the store's life is tested, not the model
    pytester.makeconftest(STUCK_ENGINE.format(marker=str(marker), kind="async " if kind == "async" else ""))
    pytester.makepyfile("def test_x(retrieval_results):\n    pass\n")
    environ = {k: v for k, v in os.environ.items() if not k.startswith("PYTEST_XDIST")}
    environ["TMPDIR"] = str(sandbox_tmp)
    # hypothesis's plugin imports hypothesis for its summary: seconds on a busy machine, and not ours
    proc = subprocess.Popen([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-p", "no:hypothesispytest",
                             "--retrieval-concurrency", "4"],
                            cwd=pytester.path, env=environ, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                            **interruptible())
    try:
        deadline = time.monotonic() + 120
        want = 4 if kind == "sync" else 1  # four threads stuck; or one loop, stuck in its first call
        while len(list(marker.iterdir())) < want and time.monotonic() < deadline and proc.poll() is None:
            time.sleep(0.05)
        assert len(list(marker.iterdir())) >= want, proc.communicate(timeout=5)[0] if proc.poll() is not None else ""
        assert leftovers(sandbox_tmp)[1], "the server should be up while querying"
        time.sleep(0.3)
        proc.send_signal(signal.SIGINT)
        start = time.monotonic()
        out, _ = proc.communicate(timeout=30)
        took = time.monotonic() - start
    finally:
        if proc.poll() is None:  # the old code: the thread pool's shutdown waits on the stuck calls
            proc.kill()
            proc.communicate()
    assert took < 15, (took, out)  # most of it the interpreter's own exit on a busy 2-core machine
    assert proc.returncode == pytest.ExitCode.INTERRUPTED and "KeyboardInterrupt" in out, out
    assert "engine 'stuck': interrupted with" in out and "calls in flight, abandoned" in out, out
    deadline = time.monotonic() + 5
    while leftovers(sandbox_tmp)[1] and time.monotonic() < deadline:
        time.sleep(0.1)
    assert leftovers(sandbox_tmp) == ([], [])
