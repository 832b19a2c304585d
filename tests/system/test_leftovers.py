"""Leftovers. A process killed while it builds the cached PostgreSQL template
(first run on a machine) leaves a half-built directory; the next run sweeps it once its owner is
dead, and never touches a live process's."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

import pytest

pytestmark = [pytest.mark.postgres]

pytest.importorskip("psycopg", reason="the hybrid extra")  # a failure under CI
from pytest_retrieval_eval.hybrid.store.embedded import EmbeddedPostgres, sweep_stale  # noqa: E402

BUILD = """
import sys
from pathlib import Path
from pytest_retrieval_eval.hybrid.store import embedded
user = embedded._server_user()
bindir = embedded._usable_install(user, Path(sys.argv[1])) / "bin"
embedded._template(bindir, user, Path(sys.argv[1]))
"""


def ps() -> str:
    return subprocess.run(["ps", "-ewwo", "args"], capture_output=True, text=True).stdout


def cache_root(base):
    return base / f"pytest-retrieval-eval-{os.getuid()}"


def test_a_template_build_killed_midway_is_swept_by_the_next_run(bare_sandbox_tmp):
    sandbox_tmp = bare_sandbox_tmp  # no template yet: this run builds it
    child = subprocess.Popen([sys.executable, "-c", BUILD, str(sandbox_tmp)])
    root = cache_root(sandbox_tmp)
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline and not [d for d in root.glob(".initdb-*") if (d / "PG_VERSION").exists()]:
        time.sleep(0.01)
    child.send_signal(signal.SIGKILL)
    child.wait()
    half = list(root.glob(".initdb-*"))
    deadline = time.monotonic() + 10  # its initdb child dies with it (PR_SET_PDEATHSIG): wait for that
    while time.monotonic() < deadline and any(str(d) in ps() for d in half):
        time.sleep(0.05)
    assert half, "the build finished before it could be killed; nothing to sweep"
    store = EmbeddedPostgres(tmp_root=sandbox_tmp)
    store.start()  # the next run: sweeps, then builds its own template
    try:
        assert not any(d.exists() for d in half)
        assert list(root.glob("initdb-*"))  # the finished template
    finally:
        store.stop()
    assert not list(root.glob(".*"))


def test_a_live_processes_half_built_dir_is_left_alone(tmp_path):
    root = cache_root(tmp_path)
    mine = root / f".initdb-18-0-wal1.{os.getpid()}.abcd1234"
    dead = root / ".initdb-18-0-wal1.999999999.abcd1234"
    for d in (mine, dead):
        d.mkdir(parents=True)
    removed = sweep_stale(tmp_path)
    assert dead in removed and not dead.exists()
    assert mine.exists()
