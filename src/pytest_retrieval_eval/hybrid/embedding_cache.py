"""On-disk embedding cache: (model identity, sha256 of text) -> vector, in one SQLite file.

SQLite in WAL mode with a busy timeout lets several pytest-xdist workers read and fill the same
cache at once; an entry is written once and never changes (``INSERT OR IGNORE``). A cache can
always be rebuilt, so a corrupt one is set aside (renamed, with a warning) and started afresh; a
location that cannot hold one is a clear error naming it.
"""

from __future__ import annotations

import hashlib
import sqlite3
import threading
import time
import warnings
from pathlib import Path
from typing import Iterable, Sequence

import numpy as np

from ..errors import RetrievalEvalError

_SCHEMA = """
CREATE TABLE IF NOT EXISTS embeddings (
    model TEXT NOT NULL,
    key TEXT NOT NULL,
    dim INTEGER NOT NULL,
    vec BLOB NOT NULL,
    PRIMARY KEY (model, key)
) WITHOUT ROWID
"""


def text_key(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


class EmbeddingCacheWarning(UserWarning):
    """The embedding cache was unreadable and has been set aside; it is rebuilt as embeddings come."""


HINT = "choose another folder with --retrieval-cache-dir (ini retrieval_cache_dir)"


class EmbeddingCache:
    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        # one connection, shared by an engine's query threads (--retrieval-concurrency): one
        # statement or transaction at a time on it
        self._lock = threading.Lock()
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise RetrievalEvalError(f"embedding cache folder cannot be created: {exc.strerror or exc}; {HINT}",
                                     path=self.path.parent) from None
        try:
            self._conn = self._open()
        except sqlite3.DatabaseError as exc:
            if isinstance(exc, sqlite3.OperationalError) and not self._corrupt(exc):
                raise self._unusable(exc) from None
            aside = self.path.with_name(f"{self.path.name}.corrupt-{time.strftime('%Y%m%d-%H%M%S')}")
            self.path.rename(aside)
            warnings.warn(EmbeddingCacheWarning(f"{self.path}: not a usable SQLite database ({exc}); set aside as "
                                                f"{aside.name} and rebuilt"), stacklevel=2)
            try:
                self._conn = self._open()
            except sqlite3.DatabaseError as again:
                raise self._unusable(again) from None

    def _open(self) -> sqlite3.Connection:
        """Open and set up; xdist workers opening a new cache at once meet SQLite's "database is
        locked" (switching to WAL takes the lock without waiting): wait for the other, as the
        busy timeout does for everything else."""
        deadline = time.monotonic() + 60
        while True:
            conn = sqlite3.connect(self.path, timeout=60, isolation_level=None, check_same_thread=False)
            try:
                conn.execute("PRAGMA journal_mode=WAL")
                conn.execute("PRAGMA synchronous=NORMAL")
                conn.execute(_SCHEMA)
                conn.execute("SELECT COUNT(*) FROM embeddings LIMIT 1").fetchone()
                return conn
            except sqlite3.OperationalError as exc:
                conn.close()
                if "locked" not in str(exc) or time.monotonic() > deadline:
                    raise
                time.sleep(0.05)
            except sqlite3.DatabaseError:
                conn.close()
                raise

    @staticmethod
    def _corrupt(exc: sqlite3.Error) -> bool:
        text = str(exc).lower()
        return "not a database" in text or "malformed" in text or "no such table" in text

    def _unusable(self, exc: Exception) -> RetrievalEvalError:
        return RetrievalEvalError(f"embedding cache cannot be used: {exc}; {HINT}", path=self.path)

    def get_many(self, model: str, keys: Sequence[str]) -> dict[str, np.ndarray]:
        found: dict[str, np.ndarray] = {}
        unique = list(dict.fromkeys(keys))
        for start in range(0, len(unique), 500):
            part = unique[start:start + 500]
            with self._lock:
                rows = self._conn.execute(
                    f"SELECT key, vec FROM embeddings WHERE model = ? AND key IN ({','.join('?' * len(part))})",
                    [model, *part],
                ).fetchall()
            for key, blob in rows:
                found[key] = np.frombuffer(blob, dtype=np.float32)
        return found

    def put_many(self, model: str, items: Iterable[tuple[str, np.ndarray]]) -> None:
        rows = [(model, k, int(v.shape[0]), np.asarray(v, dtype=np.float32).tobytes()) for k, v in items]
        try:
            with self._lock, self._conn:
                self._conn.execute("BEGIN IMMEDIATE")
                self._conn.executemany("INSERT OR IGNORE INTO embeddings VALUES (?, ?, ?, ?)", rows)
        except sqlite3.OperationalError as exc:  # a read-only or full location
            raise self._unusable(exc) from None

    def count(self, model: str | None = None) -> int:
        if model is None:
            return self._conn.execute("SELECT COUNT(*) FROM embeddings").fetchone()[0]
        return self._conn.execute("SELECT COUNT(*) FROM embeddings WHERE model = ?", (model,)).fetchone()[0]

    def close(self) -> None:
        self._conn.close()
