"""Atomic file writes: a reader sees the old file or the new one, never half of either; and the
one writer lock a team's files (questions cache, judgments) are written under."""

from __future__ import annotations

import contextlib
import hashlib
import os
import tempfile
from pathlib import Path
from typing import Iterator

LOCKS_ENV = "RETRIEVAL_EVAL_LOCKS"


def lock_path(path: str | Path) -> Path:
    """Where the lock for ``path`` lives: outside the folder the team commits (a ``*.lock`` beside
    ``questions.cache.json`` would end up in their repository), keyed by the file's absolute path
    so every process that writes the same file takes the same lock. ``RETRIEVAL_EVAL_LOCKS``
    moves the folder; by default it is the user's temporary folder, which every OS has and
    every process of one user shares."""
    folder = Path(os.environ.get(LOCKS_ENV) or Path(tempfile.gettempdir()) / f"pytest-retrieval-eval-locks-{_user()}")
    key = hashlib.sha256(os.path.normcase(os.path.abspath(path)).encode("utf-8")).hexdigest()[:32]
    return folder / f"{Path(path).name[:40]}.{key}.lock"


def _user() -> str:
    try:
        return str(os.getuid())  # type: ignore[attr-defined]
    except AttributeError:  # Windows: the temporary folder is per user already
        return "user"


@contextlib.contextmanager
def locked(path: str | Path) -> Iterator[None]:
    """Exclusive lock on ``path``: one writer at a time, across processes, on any OS
    (``filelock``: ``fcntl`` on POSIX, ``msvcrt`` on Windows). The lock file is not beside
    ``path`` (``lock_path``)."""
    from filelock import FileLock

    Path(path).parent.mkdir(parents=True, exist_ok=True)
    lock = lock_path(path)
    lock.parent.mkdir(parents=True, exist_ok=True)
    with FileLock(str(lock)):
        yield


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def write_text_atomic(path: str | Path, text: str) -> None:
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8", newline="\n") as fh:
            fh.write(text)
            fh.flush()
            os.fsync(fh.fileno())
        os.chmod(tmp, 0o666 & ~_umask())  # mkstemp makes 0600; give the file the usual mode
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except FileNotFoundError:
            pass
        raise
