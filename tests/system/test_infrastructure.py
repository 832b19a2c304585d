"""Infrastructure faults: a server killed mid-session, an unusable or full temp dir, Ctrl-C
while querying. Each ends with a clear message, no hang, and nothing left behind. (Ctrl-C during
ingestion and a killed xdist worker: test_plugin_hybrid.py and test_plugin.py.)"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from conftest import CORPUS, QUESTIONS, interruptible, leftovers

pytestmark = [pytest.mark.postgres]


if __import__("importlib.util").util.find_spec("haystack") is None:
    pytest.skip("the hybrid extra is not installed", allow_module_level=True)


def inner(pytester, tmp: Path, *args: str, timeout: float = 300) -> subprocess.CompletedProcess:
    env = {**os.environ, "TMPDIR": str(tmp)}
    return subprocess.run([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", *args], cwd=pytester.path,
                          env=env, capture_output=True, text=True, timeout=timeout)


def ini(pytester, cache: Path, extra: str = "") -> None:
    pytester.makeini(f"[pytest]\nretrieval_corpus = {CORPUS}\nretrieval_questions = {QUESTIONS}\n"
                     f"retrieval_cache_dir = {cache}\nretrieval_embedder = hashing\n{extra}")


def test_postgres_killed_mid_session(pytester, sandbox_tmp, tmp_path):
    ini(pytester, tmp_path, "retrieval_engines = hybrid\n")
    pytester.makepyfile(
        """
        import signal

        def test_1_ingest(ingested_index):
            assert ingested_index.chunks

        def test_2_kill(pgvector_store):
            pgvector_store.proc.send_signal(signal.SIGKILL)
            pgvector_store.proc.wait()

        def test_3_query(retrieval_results):
            assert retrieval_results.hit_at(5) >= 0.5
        """
    )
    start = time.perf_counter()
    done = inner(pytester, sandbox_tmp, "-p", "no:randomly", "--retrieval-report", "--retrieval-threshold", "errors<=0")
    out = done.stdout + done.stderr
    assert time.perf_counter() - start < 120
    assert done.returncode == pytest.ExitCode.TESTS_FAILED, out
    assert "FAIL retrieval gate: hybrid: errors = 68, required <= 0" in out
    assert "; error: DocumentStoreError" in out or "; error: OperationalError" in out  # each query's error, shown
    deadline = time.monotonic() + 10
    while leftovers(sandbox_tmp) != ([], []) and time.monotonic() < deadline:
        time.sleep(0.2)  # the killed postmaster's backends notice and exit
    assert leftovers(sandbox_tmp) == ([], [])


def test_a_temp_dir_too_deep_for_a_socket_gets_a_short_socket_dir(pytester, sandbox_tmp, tmp_path):
    """As macOS's per-user temp dirs are: the socket moves to a short dir under /tmp, removed at stop."""
    deep = sandbox_tmp / ("d" * 60) / ("e" * 60)  # unix socket paths stop at 107 bytes
    deep.mkdir(parents=True)
    for p in (deep, deep.parent):
        p.chmod(0o755)
    ini(pytester, tmp_path)
    seen = tmp_path / "dsn.txt"
    pytester.makepyfile(f"def test_x(pgvector_store):\n    open({str(seen)!r}, 'w').write(pgvector_store.dsn)\n")
    done = inner(pytester, deep)
    assert done.returncode == pytest.ExitCode.OK, done.stdout
    host = seen.read_text().split("host=")[1].split("&")[0]
    assert host.startswith("/tmp/rpg-") and str(deep) not in host
    assert not os.path.exists(host)  # removed with the server
    assert leftovers(deep) == ([], [])


def test_a_full_temp_dir(pytester, sandbox_tmp, tmp_path):
    tiny = sandbox_tmp / "tiny"
    tiny.mkdir()
    if subprocess.run(["mount", "-t", "tmpfs", "-o", "size=3m", "tmpfs", str(tiny)], capture_output=True).returncode:
        pytest.skip("cannot mount a small tmpfs here (needs root)")
    try:
        tiny.chmod(0o755)
        ini(pytester, tmp_path)
        pytester.makepyfile("def test_x(pgvector_store):\n    pass\n")
        done = inner(pytester, tiny)
        assert done.returncode == pytest.ExitCode.TESTS_FAILED
        assert "No space left on device" in done.stdout
        assert leftovers(tiny) == ([], [])
    finally:
        subprocess.run(["umount", str(tiny)])


def test_ctrl_c_while_querying_stops_the_server_and_keeps_the_cache(pytester, sandbox_tmp, tmp_path):
    marker = tmp_path / "querying"
    ini(pytester, tmp_path, "retrieval_engines = slow\n")
    pytester.makeconftest(
        f"""
        import time
        from pathlib import Path

        class Slow:
            name = "slow"
            def __init__(self, index):
                self.index = index
            def retrieve(self, query, k):
                Path({str(marker)!r}).touch()
                time.sleep(0.5)
                return [self.index.chunks[0].doc_id]

        def pytest_retrieval_engines(registry, config):
            registry.register("slow", lambda request: Slow(request.getfixturevalue("ingested_index")))
        """
    )
    pytester.makepyfile("def test_x(retrieval_results):\n    pass\n")
    env = {**os.environ, "TMPDIR": str(sandbox_tmp)}
    proc = subprocess.Popen([sys.executable, "-m", "pytest", "-p", "no:cacheprovider"], cwd=pytester.path, env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, **interruptible())
    deadline = time.monotonic() + 120
    while not marker.exists() and time.monotonic() < deadline:
        time.sleep(0.05)
    assert leftovers(sandbox_tmp)[0], "the server should be up while querying"
    proc.send_signal(signal.SIGINT)
    out, _ = proc.communicate(timeout=60)
    assert proc.returncode == pytest.ExitCode.INTERRUPTED, out
    assert "KeyboardInterrupt" in out
    assert leftovers(sandbox_tmp) == ([], [])
    from pytest_retrieval_eval.hybrid.embedding_cache import EmbeddingCache
    assert EmbeddingCache(tmp_path / "embeddings.sqlite3").count() >= 34  # every chunk embedded before, intact
