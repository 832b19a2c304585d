"""Store backends: the embedded server's life cycle, the dsn backend's schema hygiene,
testcontainers without Docker, identifier checks."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

psycopg = pytest.importorskip("psycopg")  # the hybrid extra

from pytest_retrieval_eval import RetrievalEvalError
from pytest_retrieval_eval.hybrid.store import open_store
from pytest_retrieval_eval.hybrid.store.base import check_identifier
from pytest_retrieval_eval.hybrid.store.containers import StoreUnavailable, docker_available
from pytest_retrieval_eval.hybrid.store.dsn import DsnStore
from pytest_retrieval_eval.hybrid.store.embedded import PREFIX, EmbeddedPostgres

pytestmark = [pytest.mark.postgres]


def our_postgres_pids(data_dir: Path) -> list[int]:
    out = subprocess.run(["ps", "-ewwo", "pid,args"], capture_output=True, text=True).stdout
    return [int(line.split()[0]) for line in out.splitlines() if str(data_dir) in line and "postgres" in line]


@pytest.fixture(scope="module")
def server():
    store = EmbeddedPostgres()
    store.start()
    yield store
    store.stop()


def test_embedded_server_has_pgvector_and_stops_cleanly():
    store = EmbeddedPostgres()
    store.start()
    data = store.dir / "data"
    with psycopg.connect(store.dsn) as conn:
        version = conn.execute("SELECT extversion FROM pg_extension WHERE extname = 'vector'").fetchone()[0]
        user = conn.execute("SELECT current_setting('listen_addresses')").fetchone()[0]
    assert tuple(int(x) for x in version.split(".")[:2]) >= (0, 8)
    assert user == ""  # no TCP port: a unix socket in the session's own temp dir
    assert our_postgres_pids(data)
    if os.geteuid() == 0:
        owner = subprocess.run(["ps", "-o", "user=", "-p", str(store.proc.pid)], capture_output=True, text=True).stdout.strip()
        assert owner == "nobody"
    temp_dir = store.dir
    store.stop()
    store.stop()  # idempotent
    assert not temp_dir.exists()
    assert our_postgres_pids(data) == []


def test_two_servers_at_once_are_isolated(server):
    other = EmbeddedPostgres()
    other.start()
    try:
        assert other.socket_dir != server.socket_dir
        with psycopg.connect(server.dsn, autocommit=True) as a, psycopg.connect(other.dsn, autocommit=True) as b:
            a.execute("CREATE TABLE retrieval_eval.only_here (x int)")
            assert b.execute("SELECT to_regclass('retrieval_eval.only_here')").fetchone()[0] is None
    finally:
        other.stop()


def test_stale_dirs_of_dead_sessions_are_swept(sandbox_tmp):
    tmp_path = sandbox_tmp  # the server user can traverse it (pytest's tmp_path is 0700)
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    stale = tmp_path / f"{PREFIX}{dead.pid}-abc"
    (stale / "data").mkdir(parents=True)
    mine = tmp_path / f"{PREFIX}{os.getpid()}-live"
    mine.mkdir()
    store = EmbeddedPostgres(tmp_root=tmp_path)
    store.start()
    store.stop()
    assert not stale.exists() and mine.exists()


def test_server_dies_with_a_killed_test_process():
    code = ("from pytest_retrieval_eval.hybrid.store.embedded import EmbeddedPostgres; import time, sys;"
            "s = EmbeddedPostgres(); s.start(); print(s.dir, flush=True); time.sleep(120)")
    proc = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True)
    try:
        temp_dir = Path(proc.stdout.readline().strip())
        assert our_postgres_pids(temp_dir / "data")
    finally:
        proc.kill()
    proc.wait()
    import time

    deadline = time.monotonic() + 10
    while our_postgres_pids(temp_dir / "data") and time.monotonic() < deadline:
        time.sleep(0.1)
    alive = [p for p in our_postgres_pids(temp_dir / "data")
             if "Z" not in subprocess.run(["ps", "-o", "stat=", "-p", str(p)], capture_output=True, text=True).stdout]
    assert alive == []
    from pytest_retrieval_eval.hybrid.store.embedded import sweep_stale

    sweep_stale(temp_dir.parent)  # what the next session's start does
    assert not temp_dir.exists()


def test_dsn_backend_works_in_its_own_schema_and_drops_only_that(server):
    with psycopg.connect(server.dsn, autocommit=True) as conn:
        conn.execute("CREATE SCHEMA IF NOT EXISTS users_own")
        conn.execute("CREATE TABLE IF NOT EXISTS users_own.keep (x int)")
    a, b = open_store("dsn", dsn=server.dsn, worker="gw0"), open_store("dsn", dsn=server.dsn, worker="gw1")
    a.start(), b.start()
    assert a.schema != b.schema and a.schema.startswith("retrieval_eval_gw0_")
    a.stop(), b.stop()
    with psycopg.connect(server.dsn) as conn:
        schemas = {r[0] for r in conn.execute("SELECT schema_name FROM information_schema.schemata")}
        assert "users_own" in schemas and a.schema not in schemas and b.schema not in schemas
        assert conn.execute("SELECT to_regclass('users_own.keep')").fetchone()[0] is not None


def test_dsn_password_never_appears_in_errors():
    dsn = "postgresql://alice:hunter2-s3cret@/postgres?host=/nonexistent-socket-dir&port=5432"
    store = DsnStore(dsn)
    with pytest.raises(RetrievalEvalError) as info:
        store.start()
    assert "hunter2-s3cret" not in str(info.value)
    assert "alice:***@" in str(info.value)
    assert "hunter2-s3cret" not in str(store.describe())


def test_dsn_backend_needs_a_dsn():
    with pytest.raises(RetrievalEvalError, match="needs a connection string: --retrieval-dsn"):
        open_store("dsn", dsn=None)


def test_testcontainers_without_a_docker_daemon_is_a_clear_error():
    if docker_available() is None:
        pytest.skip("not applicable: a Docker daemon answers here; this test is about machines without one")
    with pytest.raises(StoreUnavailable, match="store backend 'testcontainers' cannot start: .*use the default 'embedded' backend"):
        open_store("testcontainers").start()


def test_a_temp_root_the_server_user_cannot_reach_is_a_clear_error(tmp_path):
    if os.geteuid() != 0:
        pytest.skip("not applicable: only root hands the server to another user")
    locked = tmp_path / "locked"
    locked.mkdir(mode=0o700)
    with pytest.raises(RetrievalEvalError, match="not reachable by the server user 'nobody'.*TMPDIR"):
        EmbeddedPostgres(tmp_root=locked).start()
    assert list(locked.iterdir()) == []


@pytest.mark.parametrize("name", ["Robert'); DROP TABLE x;--", "has space", "1starts_with_digit", "UPPER", "", "x" * 64])
def test_identifiers_that_reach_sql_must_be_plain(name):
    with pytest.raises(RetrievalEvalError, match="must be a plain identifier"):
        check_identifier(name, "schema")
