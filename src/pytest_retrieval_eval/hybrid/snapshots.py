"""Ingest once per corpus version: stopped PostgreSQL data dirs kept in the cache dir.

A session that ingests into the embedded store keeps, when it stops cleanly, a copy of the
stopped data dir with a manifest of the tables it holds (chunks and lint of each). The next
session whose ingestion has the same key restores that copy instead of ingesting again.

The key is everything that shapes the table: the corpus fingerprint, the chunking, the embedder
identity (model and weights), the PostgreSQL build and the plugin version; any change is another
key, so a snapshot is never stale. Snapshots are written under a private name and renamed into
place (a killed writer leaves no snapshot, only a temp dir the next run sweeps), several writers
of one key keep the first, and the folder is bounded: least recently used snapshots go first.
"""

from __future__ import annotations

import importlib.metadata
import json
import os
import shutil
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import Any

from ..types import Chunk, canonical_json, sha256_text

FORMAT = 3  # 2: tables carry planner statistics on the metadata filter; 3: vectors stored inline
MANIFEST = "manifest.json"


def plugin_version() -> str:
    try:
        return importlib.metadata.version("pytest-retrieval-eval")
    except importlib.metadata.PackageNotFoundError:  # a source checkout without metadata
        return "unknown"


def snapshot_key(table: str, postgres: str) -> str:
    """The table name already hashes corpus, chunking and embedder; add the server and plugin."""
    return sha256_text(canonical_json([FORMAT, table, postgres, plugin_version()]))[:16]


@dataclass
class Snapshot:
    key: str
    path: Path

    @property
    def data(self) -> Path:
        return self.path / "data"

    @cached_property
    def _manifest(self) -> dict[str, Any]:
        return json.loads((self.path / MANIFEST).read_text(encoding="utf-8"))

    def manifest(self) -> dict[str, Any]:
        """Read once: it holds every chunk (megabytes at SciFact's size) and is asked several times."""
        return self._manifest

    def chunks(self, table: str) -> tuple[Chunk, ...]:
        return tuple(Chunk(d, i, text, meta) for d, i, text, meta in self.manifest()["tables"][table]["chunks"])


class Snapshots:
    def __init__(self, root: Path, limit_mb: float) -> None:
        self.root = root
        self.limit = limit_mb * 1024 * 1024

    def find(self, key: str) -> Snapshot | None:
        path = self.root / key
        if not path.is_dir():
            return None
        if not (path / MANIFEST).is_file() or not (path / "data" / "PG_VERSION").is_file():
            # a snapshot is renamed into place only once complete: this one was damaged since
            shutil.rmtree(path, ignore_errors=True)
            return None
        os.utime(path)  # recently used: evicted last
        return Snapshot(key, path)

    def save(self, key: str, data_dir: Path, tables: dict[str, dict[str, Any]]) -> Snapshot | None:
        """Keep a copy of the stopped ``data_dir``; the first writer of a key wins."""
        from .store.embedded import _atomic_dir

        if self.limit <= 0:
            return None
        self.root.mkdir(parents=True, exist_ok=True)

        def build(tmp: Path) -> None:
            tmp.mkdir()
            shutil.copytree(data_dir, tmp / "data", symlinks=True)
            for pid in ("postmaster.pid", "postmaster.opts"):
                (tmp / "data" / pid).unlink(missing_ok=True)
            (tmp / MANIFEST).write_text(json.dumps({"format": FORMAT, "key": key, "tables": tables},
                                                   ensure_ascii=False), encoding="utf-8")

        path = _atomic_dir(self.root / key, build)
        self.evict(keep=key)
        return Snapshot(key, path)

    def evict(self, keep: str | None = None) -> list[str]:
        """Remove least recently used snapshots until the folder fits its bound."""
        entries = []
        for path in self.root.iterdir() if self.root.is_dir() else ():
            if path.is_dir() and not path.name.startswith("."):
                size = sum(f.stat().st_size for f in path.rglob("*") if f.is_file())
                entries.append((path.stat().st_mtime, path, size))
        total = sum(size for _, _, size in entries)
        removed = []
        for _, path, size in sorted(entries, key=lambda e: e[0]):
            if total <= self.limit:
                break
            if path.name == keep:
                continue
            shutil.rmtree(path, ignore_errors=True)
            total -= size
            removed.append(path.name)
        return removed


def describe_chunks(chunks: tuple[Chunk, ...]) -> list:
    return [[c.doc_id, c.index, c.text, dict(c.meta)] for c in chunks]

