"""The paths macOS and Windows take, forced on Linux (``RETRIEVAL_EVAL_PORTABLE``): TCP on
127.0.0.1 instead of a unix socket, a watchdog process instead of the kernel's death signal, the
plain temp dir instead of /dev/shm. The bundled eval, xdist, Ctrl-C and kill -9 hold in that mode."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time

import pytest

from conftest import CORPUS, QUESTIONS, interruptible, leftovers, parse_table, requires_hybrid

PORTABLE = {"RETRIEVAL_EVAL_PORTABLE": "1"}


def test_the_package_imports_without_fcntl_and_pwd_as_on_windows():
    """Every module of the package imports with the POSIX-only modules made unavailable."""
    code = """
import importlib, pkgutil, sys
sys.modules["fcntl"] = None   # import fcntl -> ImportError, as on Windows
sys.modules["pwd"] = None
import pytest_retrieval_eval as pkg
names = [m.name for m in pkgutil.walk_packages(pkg.__path__, "pytest_retrieval_eval.")
         if not m.name.endswith("__main__")]  # that one runs the command
for name in names:
    importlib.import_module(name)
import pytest_retrieval_eval._atomic as a
with a.locked(__import__("pathlib").Path(sys.argv[1]) / "q.json"):
    pass
print(len(names), "modules")
"""
    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        done = subprocess.run([sys.executable, "-c", code, tmp], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert int(done.stdout.split()[0]) > 60


def test_the_platform_switches_and_what_they_force(monkeypatch):
    from pytest_retrieval_eval.hybrid.store import platform

    monkeypatch.delenv("RETRIEVAL_EVAL_PORTABLE", raising=False)
    native = platform.current()
    assert native.death_signal and native.unix_sockets and native.ram_dir and not native.watchdog  # Linux
    monkeypatch.setenv("RETRIEVAL_EVAL_PORTABLE", "tcp")
    assert not platform.current().unix_sockets and platform.current().death_signal
    monkeypatch.setenv("RETRIEVAL_EVAL_PORTABLE", "1")
    assert platform.current() == platform.Platform(death_signal=False, unix_sockets=False, ram_dir=False)
    assert platform.alive(os.getpid()) and not platform.alive(999_999_999)


pytestmark = [requires_hybrid, pytest.mark.postgres]


def inner(pytester, tmp, *args, env=None, **kw):
    environ = {k: v for k, v in os.environ.items() if not k.startswith("PYTEST_XDIST")}
    environ.update({"TMPDIR": str(tmp), **(env or {})})
    return subprocess.run([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", *args], cwd=pytester.path,
                          env=environ, capture_output=True, text=True, timeout=600, **kw)


def test_a_store_in_portable_mode_listens_on_loopback_tcp_with_a_watchdog(sandbox_tmp, monkeypatch):
    import psycopg

    from pytest_retrieval_eval.hybrid.store.embedded import EmbeddedPostgres

    monkeypatch.setenv("RETRIEVAL_EVAL_PORTABLE", "1")
    monkeypatch.delenv("TMPDIR", raising=False)
    store = EmbeddedPostgres()
    store.start()
    try:
        assert store.socket_dir is None and store.dsn == f"postgresql://postgres@127.0.0.1:{store.port}/postgres"
        assert not str(store.dir).startswith("/dev/shm")
        assert store._watchdog is not None and store._watchdog.poll() is None
        with psycopg.connect(store.dsn, autocommit=True) as conn:
            assert conn.execute("SHOW listen_addresses").fetchone()[0] == "127.0.0.1"
            assert conn.execute("SHOW unix_socket_directories").fetchone()[0] == ""
        dog = store._watchdog
    finally:
        store.stop()
    assert dog.poll() is not None  # stopped with the server


@pytest.mark.model
def test_the_bundled_eval_gives_the_same_table_in_portable_mode(pytester, sandbox_tmp, shared_cache_dir):
    pytester.makeini(f"[pytest]\nretrieval_corpus = {CORPUS}\nretrieval_questions = {QUESTIONS}\n"
                     f"retrieval_cache_dir = {shared_cache_dir}\n")
    pytester.makepyfile("import pytest\n\n@pytest.mark.retrieval\ndef test_x(retrieval_results):\n"
                        "    assert retrieval_results.n == 68\n")
    native = inner(pytester, sandbox_tmp, "-m", "retrieval", "--retrieval-report")
    portable = inner(pytester, sandbox_tmp, "-m", "retrieval", "--retrieval-report", env=PORTABLE)
    assert native.returncode == portable.returncode == 0, portable.stdout + portable.stderr
    assert parse_table(portable.stdout) == parse_table(native.stdout)
    assert set(parse_table(portable.stdout)) == {"hybrid", "keyword"}
    assert leftovers(sandbox_tmp) == ([], [])


def test_under_xdist_each_worker_gets_its_own_port(pytester, sandbox_tmp, tmp_path):
    record = tmp_path / "dsns.jsonl"
    pytester.makeini(f"[pytest]\nretrieval_corpus = {CORPUS}\nretrieval_questions = {QUESTIONS}\n")
    pytester.makepyfile(f"""
        import json, os, time
        import pytest

        @pytest.mark.parametrize("i", range(4))
        def test_store(i, pgvector_store):
            with open({str(record)!r}, "a") as fh:
                fh.write(json.dumps({{"worker": os.environ["PYTEST_XDIST_WORKER"], "dsn": pgvector_store.dsn}}) + "\\n")
            time.sleep(0.3)
    """)
    done = inner(pytester, sandbox_tmp, "-n", "2", env=PORTABLE)
    assert done.returncode == 0, done.stdout + done.stderr
    rows = [json.loads(line) for line in record.read_text().splitlines()]
    by_worker = {}
    for r in rows:
        by_worker.setdefault(r["worker"], set()).add(r["dsn"])
    assert len(by_worker) == 2 and all(len(d) == 1 for d in by_worker.values())  # one store per worker
    dsns = [next(iter(d)) for d in by_worker.values()]
    assert all(d.startswith("postgresql://postgres@127.0.0.1:") for d in dsns) and dsns[0] != dsns[1]
    assert leftovers(sandbox_tmp) == ([], [])


SLOW_ENGINE = """
    import time
    from pathlib import Path

    class Slow:
        name = "slow"
        def __init__(self, index):
            self.index = index
        def retrieve(self, query, k):
            Path({marker!r}).touch()
            time.sleep(0.5)
            return [self.index.chunks[0].doc_id]

    def pytest_retrieval_engines(registry, config):
        registry.register("slow", lambda request: Slow(request.getfixturevalue("ingested_index")))
"""


@pytest.mark.parametrize("how", ["kill -9", "Ctrl-C"])
@pytest.mark.parametrize("mode", ["portable", "native"])
def test_a_killed_or_interrupted_pytest_leaves_no_postgres(pytester, sandbox_tmp, tmp_path, shared_cache_dir,
                                                           how, mode):
    marker = tmp_path / "querying"
    pytester.makeini(f"[pytest]\nretrieval_corpus = {CORPUS}\nretrieval_questions = {QUESTIONS}\n"
                     f"retrieval_cache_dir = {shared_cache_dir}\nretrieval_engines = slow\n"
                     "retrieval_embedder = hashing\n")  # the store's life is tested, not the model
    pytester.makeconftest(SLOW_ENGINE.format(marker=str(marker)))
    pytester.makepyfile("def test_x(retrieval_results):\n    pass\n")
    environ = {k: v for k, v in os.environ.items() if not k.startswith("PYTEST_XDIST")}
    environ.update({"TMPDIR": str(sandbox_tmp), **(PORTABLE if mode == "portable" else {})})
    proc = subprocess.Popen([sys.executable, "-m", "pytest", "-p", "no:cacheprovider"], cwd=pytester.path, env=environ,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, **interruptible())
    deadline = time.monotonic() + 120
    while not marker.exists() and time.monotonic() < deadline:
        time.sleep(0.05)
    dirs, procs = leftovers(sandbox_tmp)
    assert dirs and procs, "the server should be up while querying"
    proc.send_signal(signal.SIGKILL if how == "kill -9" else signal.SIGINT)
    out, _ = proc.communicate(timeout=60)
    if how == "Ctrl-C":
        assert proc.returncode == pytest.ExitCode.INTERRUPTED and "KeyboardInterrupt" in out, out
    deadline = time.monotonic() + 5  # "within a few seconds": the death signal, or the watchdog's poll
    while leftovers(sandbox_tmp)[1] and time.monotonic() < deadline:
        time.sleep(0.1)
    assert leftovers(sandbox_tmp)[1] == []
    if how == "kill -9" and mode == "portable":  # the watchdog also removed the session's dir
        deadline = time.monotonic() + 5
        while leftovers(sandbox_tmp)[0] and time.monotonic() < deadline:
            time.sleep(0.1)
    if how == "Ctrl-C" or mode == "portable":
        assert leftovers(sandbox_tmp) == ([], [])
