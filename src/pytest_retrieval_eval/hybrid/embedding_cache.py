"""On-disk embedding cache: (model identity, sha256 of text) -> vector, in one SQLite file.

SQLite in WAL mode with a busy timeout lets several pytest-xdist workers read and fill the same
cache at once. SQLite checks no page's content, so every vector carries a crc32 of its model,
key and floats, verified on read (a few microseconds a vector; nothing is read at open). A cache
can always be rebuilt, so a damaged one (not SQLite, a page SQLite cannot read, a vector that
does not match its checksum) is set aside (renamed, with one warning) and started afresh; a
location that cannot hold one, or a damaged one that cannot be set aside (a read-only folder), is
a clear error naming it.
"""

from __future__ import annotations

import hashlib
import os
import sqlite3
import threading
import time
import warnings
import zlib
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
#: each model's reference drift canaries (``canaries.py``): its generation, which texts, the local
#: runtime that embedded them, and their vectors (float32 rows with a crc32, as ``embeddings``)
_CANARIES = """
CREATE TABLE IF NOT EXISTS canaries (
    model TEXT PRIMARY KEY,
    generation INTEGER NOT NULL,
    texts TEXT NOT NULL,
    stamp TEXT,
    rows INTEGER NOT NULL,
    dim INTEGER NOT NULL,
    vecs BLOB NOT NULL
) WITHOUT ROWID
"""


#: ``PRAGMA user_version`` of a cache whose vectors all carry their checksum
CHECKSUMS = 1


def text_key(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def _crc(model: str, key: str, floats: bytes) -> bytes:
    return zlib.crc32(floats, zlib.crc32(f"{model}\x1f{key}".encode())).to_bytes(4, "little")


def _with_crc(model: str, key: str, floats: bytes) -> bytes:
    return floats + _crc(model, key, floats)


class _Damaged(Exception):
    """A vector that does not match its checksum."""


class EmbeddingCacheWarning(UserWarning):
    """The embedding cache was unreadable and has been set aside; it is rebuilt as embeddings come."""


HINT = "choose another folder with --retrieval-cache-dir (ini retrieval_cache_dir)"


def _stored(model: str, row: tuple | None):
    """A ``canaries`` row as ``canaries.Stored``; None for no row or one whose checksum fails."""
    from .canaries import Stored

    if row is None:
        return None
    generation, texts, stamp, rows, dim, blob = row
    size = int(rows) * int(dim) * 4
    if len(blob) != size + 4 or blob[size:] != _crc(model, texts, blob[:size]):
        return None
    vectors = np.frombuffer(blob, dtype=np.float32, count=int(rows) * int(dim)).reshape(int(rows), int(dim))
    return Stored(int(generation), texts, stamp, vectors)


class EmbeddingCache:
    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        #: model -> ``canaries.CanaryCheck``: the drift checks made through this connection
        self.checked: dict = {}
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
            self._set_aside(f"not a usable SQLite database ({exc})", stacklevel=3)

    def _set_aside(self, why: str, stacklevel: int = 4) -> None:
        """Rename the damaged file (with its WAL) and start an empty cache; one warning. A file
        another worker already set aside is not renamed again: its fresh successor is opened. One
        that cannot be moved (a read-only folder) is an error, never opened again as it was."""
        from .._secrets import mask_and_cap

        conn, self._conn = getattr(self, "_conn", None), None
        if conn is not None:
            conn.close()
        aside = self.path.with_name(f"{self.path.name}.corrupt-{time.strftime('%Y%m%d-%H%M%S')}")
        try:
            ours = self._inode is None or os.stat(self.path).st_ino == self._inode
            if ours:
                self.path.rename(aside)
        except FileNotFoundError:  # gone: another worker set it aside first
            ours = False
        except OSError as exc:
            raise RetrievalEvalError(f"embedding cache cannot be set aside ({exc.strerror or exc}) and cannot be "
                                     f"used: {why}; {HINT}", path=self.path) from None
        if ours:
            for suffix in ("-wal", "-shm"):
                if Path(f"{self.path}{suffix}").exists():
                    os.replace(f"{self.path}{suffix}", f"{aside}{suffix}")
            warnings.warn(EmbeddingCacheWarning(mask_and_cap(f"{self.path}: {why}; set aside as {aside.name} and "
                                                             "rebuilt", 300)), stacklevel=stacklevel)
        try:
            self._conn = self._open()
        except sqlite3.DatabaseError as again:
            raise self._unusable(again) from None

    def _open(self) -> sqlite3.Connection:
        """Open and set up; xdist workers opening a new cache at once meet SQLite's "database is
        locked" (switching to WAL takes the lock without waiting): wait for the other, as the
        busy timeout does for everything else."""
        deadline = time.monotonic() + 60
        self._inode = None
        while True:
            conn = sqlite3.connect(self.path, timeout=60, isolation_level=None, check_same_thread=False)
            try:
                conn.execute("PRAGMA journal_mode=WAL")
                conn.execute("PRAGMA synchronous=NORMAL")
                # 64 MB of pages (SQLite's default is 2 MB): keys are hashes, so each insert lands
                # on a random leaf, and a large corpus's cache outgrows a small page cache
                conn.execute("PRAGMA cache_size=-65536")
                conn.execute(_SCHEMA)
                conn.execute(_CANARIES)
                conn.execute("SELECT COUNT(*) FROM embeddings LIMIT 1").fetchone()
                if conn.execute("PRAGMA user_version").fetchone()[0] < CHECKSUMS:
                    self._add_checksums(conn)
                self._inode = os.stat(self.path).st_ino
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
    def _add_checksums(conn: sqlite3.Connection) -> None:
        """A cache written before vectors carried checksums gets them, once (its vectors are kept)."""
        conn.execute("BEGIN IMMEDIATE")
        try:
            if conn.execute("PRAGMA user_version").fetchone()[0] < CHECKSUMS:  # another worker was first?
                conn.create_function("with_crc", 3, _with_crc, deterministic=True)
                conn.execute("UPDATE embeddings SET vec = with_crc(model, key, vec) WHERE length(vec) = dim * 4")
                conn.execute(f"PRAGMA user_version = {CHECKSUMS}")
            conn.execute("COMMIT")
        except BaseException:
            conn.execute("ROLLBACK")
            raise

    @staticmethod
    def _corrupt(exc: sqlite3.Error) -> bool:
        text = str(exc).lower()
        return "not a database" in text or "malformed" in text or "no such table" in text

    def _unusable(self, exc: Exception) -> RetrievalEvalError:
        return RetrievalEvalError(f"embedding cache cannot be used: {exc}; {HINT}", path=self.path)

    def get_many(self, model: str, keys: Sequence[str]) -> dict[str, np.ndarray]:
        """The vectors of ``keys`` the cache holds; none at all if it proves damaged (set aside)."""
        found: dict[str, np.ndarray] = {}
        unique = list(dict.fromkeys(keys))
        with self._lock:
            try:
                for start in range(0, len(unique), 500):
                    part = unique[start:start + 500]
                    rows = self._conn.execute(
                        f"SELECT key, dim, vec FROM embeddings WHERE model = ? AND key IN ({','.join('?' * len(part))})",
                        [model, *part],
                    ).fetchall()
                    for key, dim, blob in rows:
                        vector = self._vector(model, key, dim, blob)
                        if vector is not None:
                            found[key] = vector
            except (sqlite3.DatabaseError, _Damaged) as exc:
                self._damaged(exc)
                return {}
        return found

    @staticmethod
    def _vector(model: str, key: str, dim: int, blob: bytes) -> np.ndarray | None:
        """The row's floats once its checksum matches; None for a row an older plugin wrote
        without one (computed again and replaced)."""
        size = int(dim) * 4
        if len(blob) == size:
            return None
        if len(blob) != size + 4 or blob[size:] != _crc(model, key, blob[:size]):
            raise _Damaged(f"a stored vector does not match its checksum ({model}, {key[:12]}…)")
        return np.frombuffer(blob, dtype=np.float32, count=int(dim))

    def _damaged(self, exc: Exception) -> None:
        if isinstance(exc, sqlite3.DatabaseError) and not self._corrupt(exc):
            raise self._unusable(exc) from None
        self._set_aside(f"damaged ({exc})", stacklevel=5)

    def put_many(self, model: str, items: Iterable[tuple[str, np.ndarray]]) -> None:
        rows = []
        for k, v in items:
            floats = np.asarray(v, dtype=np.float32).tobytes()
            rows.append((model, k, int(np.asarray(v).shape[0]), _with_crc(model, k, floats)))
        rows.sort(key=lambda row: row[1])  # in key order: neighbouring leaves (stable: a repeated key's last wins)
        for attempt in (1, 2):
            try:
                with self._lock, self._conn:
                    self._conn.execute("BEGIN IMMEDIATE")
                    # REPLACE: a row an older plugin wrote without its checksum is written again
                    self._conn.executemany("INSERT OR REPLACE INTO embeddings VALUES (?, ?, ?, ?)", rows)
                return
            except sqlite3.DatabaseError as exc:  # a read-only or full location, or a damaged page
                if attempt == 2 or isinstance(exc, sqlite3.OperationalError) or not self._corrupt(exc):
                    raise self._unusable(exc) from None
                with self._lock:
                    self._set_aside(f"damaged ({exc})", stacklevel=4)

    def canaries(self, model: str):
        """``model``'s reference canaries (``canaries.Stored``), or None (none yet, or a row that
        does not match its checksum: stored again)."""
        with self._lock:
            row = self._conn.execute("SELECT generation, texts, stamp, rows, dim, vecs FROM canaries WHERE model = ?",
                                     (model,)).fetchone()
        return _stored(model, row)

    def swap_canaries(self, model: str, decide):
        """Read ``model``'s reference canaries, write what ``decide(stored)`` says and delete the
        vectors of the identity it names, in one transaction: of xdist workers checking at once,
        the first to see a drift moves the generation and the next reads the new reference.
        ``decide`` returns (``Stored`` to write or None, identity to delete or None, result);
        returns (result, vectors deleted)."""
        with self._lock:
            self._conn.execute("BEGIN IMMEDIATE")
            try:
                row = self._conn.execute("SELECT generation, texts, stamp, rows, dim, vecs FROM canaries "
                                         "WHERE model = ?", (model,)).fetchone()
                write, drop, result = decide(_stored(model, row))
                deleted = 0
                if drop is not None:
                    deleted = self._conn.execute("DELETE FROM embeddings WHERE model = ?", (drop,)).rowcount
                if write is not None:
                    vectors = np.ascontiguousarray(write.vectors, dtype=np.float32)
                    self._conn.execute("INSERT OR REPLACE INTO canaries VALUES (?, ?, ?, ?, ?, ?, ?)",
                                       (model, write.generation, write.texts, write.stamp, vectors.shape[0],
                                        vectors.shape[1], _with_crc(model, write.texts, vectors.tobytes())))
                self._conn.execute("COMMIT")
            except BaseException:
                self._conn.execute("ROLLBACK")
                raise
        return result, deleted

    def count(self, model: str | None = None) -> int:
        if model is None:
            return self._conn.execute("SELECT COUNT(*) FROM embeddings").fetchone()[0]
        return self._conn.execute("SELECT COUNT(*) FROM embeddings WHERE model = ?", (model,)).fetchone()[0]

    def close(self) -> None:
        self._conn.close()
