"""Stops the embedded server when the test process is gone, where the kernel will not
(everywhere but Linux, or when forced: see ``platform.py``).

    python -m pytest_retrieval_eval.hybrid.store.watchdog OWNER_PID SERVER_PID DATA_DIR DIRS [PG_CTL]

(``DIRS``: the session's temp dirs, joined by ``os.pathsep``.)

Polls twice a second. When the owner (pytest) is gone, it stops the server (immediate shutdown
through ``pg_ctl``, then a kill) and removes the session's temp dirs; when the server is gone
first (a clean stop), it simply exits. It runs in its own session, so a Ctrl-C meant for pytest
does not stop it before it is needed.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

from .platform import alive

POLL = 0.5


def stop_server(server: int, data: Path, pg_ctl: Path | None) -> None:
    if pg_ctl is not None and pg_ctl.exists():
        subprocess.run([str(pg_ctl), "stop", "-D", str(data), "-m", "immediate", "-w", "-t", "10"],
                       capture_output=True, timeout=30)
    if alive(server):
        try:
            import psutil

            psutil.Process(server).kill()
        except Exception:
            import signal

            try:
                os.kill(server, getattr(signal, "SIGKILL", signal.SIGTERM))
            except OSError:
                pass


def main(argv: list[str]) -> int:
    owner, server = int(argv[0]), int(argv[1])
    data, dirs = Path(argv[2]), [Path(d) for d in argv[3].split(os.pathsep) if d]
    pg_ctl = Path(argv[4]) if len(argv) > 4 else None
    while True:
        if not alive(server):
            return 0
        if not alive(owner):
            stop_server(server, data, pg_ctl)
            for _ in range(20):  # the server may hold files open a moment longer
                if not alive(server):
                    break
                time.sleep(0.1)
            for d in dirs:
                shutil.rmtree(d, ignore_errors=True)
            return 0
        time.sleep(POLL)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
