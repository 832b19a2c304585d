"""What the embedded server can rely on where it runs: Linux, macOS or Windows.

- **dying with the session**: Linux kills the server with the test process (``PR_SET_PDEATHSIG``);
  elsewhere a small watchdog process stops it when the test process is gone (``watchdog.py``);
- **where clients connect**: a unix socket in the session's temp dir, or in a short dir under
  ``/tmp`` when that path would pass the OS's limit (104 bytes on macOS, 107 on Linux); TCP on
  127.0.0.1 with a free port picked at start where there are no unix sockets (Windows);
- **where the data lives**: RAM-backed ``/dev/shm`` where there is one, the temp dir otherwise.

``RETRIEVAL_EVAL_PORTABLE`` (internal, for the test suite) forces the paths other systems take on
Linux: ``1``/``all``, or any of ``tcp``, ``watchdog``, ``no-shm`` separated by commas.
"""

from __future__ import annotations

import os
import socket
import sys
from dataclasses import dataclass

FORCE_ENV = "RETRIEVAL_EVAL_PORTABLE"
#: the longest unix socket path the OS takes (sun_path less its terminating NUL)
SOCKET_PATH_MAX = 103 if sys.platform == "darwin" else 107


@dataclass(frozen=True)
class Platform:
    death_signal: bool  # the kernel stops the server when the test process dies (Linux)
    unix_sockets: bool  # the server can listen on a unix socket
    ram_dir: bool  # /dev/shm may hold the data dir

    @property
    def watchdog(self) -> bool:
        return not self.death_signal

    @property
    def forced(self) -> frozenset[str]:
        return _forced()


def _forced() -> frozenset[str]:
    raw = os.environ.get(FORCE_ENV, "").strip().lower()
    if raw in ("1", "all", "true", "yes"):
        return frozenset({"tcp", "watchdog", "no-shm"})
    return frozenset(x.strip() for x in raw.split(",") if x.strip())


def current() -> Platform:
    forced = _forced()
    return Platform(
        death_signal=sys.platform.startswith("linux") and "watchdog" not in forced,
        unix_sockets=hasattr(socket, "AF_UNIX") and os.name != "nt" and "tcp" not in forced,
        ram_dir=os.name != "nt" and "no-shm" not in forced,
    )


def free_port() -> int:
    """A TCP port on 127.0.0.1 nobody listens on now (the server may still lose a race for it:
    the caller retries with another)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def alive(pid: int) -> bool:
    """Is process ``pid`` running? (``os.kill(pid, 0)`` would terminate it on Windows.)"""
    if os.name == "nt":
        import psutil

        return psutil.pid_exists(pid)
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def user_id() -> str:
    """Who owns the cached template and install copies: the uid, or the login name on Windows."""
    if hasattr(os, "getuid"):
        return str(os.getuid())
    import getpass

    return "".join(c for c in getpass.getuser() if c.isalnum()) or "user"
