"""Ingest once per corpus version: stopped PostgreSQL data dirs kept in the cache dir.

A session that ingests into the embedded store keeps, when it stops cleanly, a copy of the
stopped data dir with a manifest: the size and sha256 of every file, and of each table its
chunks, lint and a probe (row count, first row id, rows the engine's filter keeps). The next
session whose ingestion has the same key restores that copy instead of ingesting again.

The key is everything that reaches the table or the engine's filters: the corpus (its name and
every field the ingestion reads), the chunking, the embedder identity (a local model folder by
its content), the PostgreSQL build and the plugin version; any change is another key, so a
snapshot is never stale. A snapshot proves itself before it is used: every file is checked
against the manifest before the restore and the restored tables answer the probe before the
engines run; one that does not (damaged, truncated, unreadable) is set aside with one warning and
the corpus is ingested afresh (in a read-only folder it stays, unused, and the warning says so). Snapshots are written under a private name and renamed into place;
a killed writer leaves only its temp dir, which the next run sweeps once its writer is dead;
several writers of one key keep the first, and the folder is bounded (temp dirs count):
least recently used snapshots go first.
"""

from __future__ import annotations

import importlib.metadata
import json
import os
import shutil
import time
import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .._secrets import mask_and_cap
from ..types import Chunk, canonical_json, sha256_file, sha256_text

FORMAT = 4  # 2: planner statistics; 3: vectors inline; 4: file checksums and table probes in the manifest
MANIFEST = "manifest.json"
#: a temp dir whose writer still runs (pid reused?) is swept once this old
STALE_TEMP_SECONDS = 3600
#: where a warning of this module is cut (see ``mask_and_cap``)
WARNING_CHARS = 300


class SnapshotWarning(UserWarning):
    """A kept store snapshot could not be used or kept; the corpus is ingested afresh."""


def warn(text: str) -> None:
    """One warning line: secrets masked first, then cut."""
    warnings.warn(SnapshotWarning(mask_and_cap(text, WARNING_CHARS)), stacklevel=3)


def cause(exc: BaseException) -> str:
    """An exception as a short cause. ``shutil.Error`` lists every file it could not copy (a
    full disk: hundreds of thousands of characters): the count and the first reason."""
    errors = exc.args[0] if isinstance(exc, shutil.Error) and exc.args else None
    if isinstance(errors, list) and errors:
        first = errors[0][-1] if isinstance(errors[0], tuple) else errors[0]
        return f"{len(errors)} file(s) could not be copied, the first: {first}"
    if isinstance(exc, OSError) and exc.strerror:
        return f"{exc.strerror}{f' ({exc.filename})' if exc.filename else ''}"
    return f"{type(exc).__name__}: {exc}"


def plugin_version() -> str:
    try:
        return importlib.metadata.version("pytest-retrieval-eval")
    except importlib.metadata.PackageNotFoundError:  # a source checkout without metadata
        return "unknown"


def snapshot_key(tables: str | list[str], postgres: str) -> str:
    """The table names already hash corpus, chunking and embedder; add the server and plugin.
    A snapshot of one table keeps the key it has always had."""
    names = sorted([tables] if isinstance(tables, str) else tables)
    return sha256_text(canonical_json([FORMAT, "+".join(names), postgres, plugin_version()]))[:16]


def _paths(root: Path) -> list[str]:
    return [(Path(d) / n).relative_to(root).as_posix() for d, _, names in os.walk(root) for n in names]


def list_files(root: Path) -> dict[str, list]:
    """``{path under root: [size, sha256]}`` of every file (the manifest's proof of the copy)."""
    return {rel: [(root / rel).stat().st_size, sha256_file(root / rel)] for rel in _paths(root)}


@dataclass
class Snapshot:
    """A snapshot whose files matched its manifest when it was found."""

    key: str
    path: Path
    contents: dict[str, Any]  # the manifest, read once: it holds every chunk (megabytes at SciFact's size)

    @property
    def data(self) -> Path:
        return self.path / "data"

    def manifest(self) -> dict[str, Any]:
        return self.contents

    @property
    def tables(self) -> dict[str, dict[str, Any]]:
        return self.contents["tables"]

    def chunks(self, table: str) -> tuple[Chunk, ...]:
        return tuple(Chunk(d, i, text, meta) for d, i, text, meta in self.tables[table]["chunks"])


class Snapshots:
    def __init__(self, root: Path, limit_mb: float) -> None:
        self.root = root
        self.limit = limit_mb * 1024 * 1024
        self._swept = False

    def holding(self, table: str | None, postgres: str) -> Snapshot | None:
        """The newest snapshot of this server and plugin that holds ``table`` (any, for None),
        checked as ``find`` checks it: a session whose tables were kept by sessions with other
        tables beside them (the built-in ingestion and a team's YAML) restores them all the same."""
        self.sweep()
        found = []
        for path in self.root.iterdir() if self.root.is_dir() else ():
            if path.name.startswith(".") or not path.is_dir():
                continue
            try:
                manifest = json.loads((path / MANIFEST).read_text(encoding="utf-8"))
                matches = (manifest.get("postgres") == postgres and manifest.get("plugin") == plugin_version()
                           and (table is None or table in manifest.get("tables", {})))
                found += [(path.stat().st_mtime, path.name, manifest)] if matches else []
            except (OSError, ValueError, AttributeError):
                continue  # unreadable: ``find`` of its own key sets it aside
        for _, key, manifest in sorted(found, key=lambda f: f[:2], reverse=True):
            snapshot = self.find(key, manifest)  # read once: manifests hold every chunk, megabytes
            if snapshot is not None:
                return snapshot
        return None

    def find(self, key: str, manifest: dict[str, Any] | None = None) -> Snapshot | None:
        """The snapshot of ``key`` if it proves itself (``manifest``: its manifest, read already);
        one that does not is set aside (one warning)."""
        self.sweep()
        path = self.root / key
        if not path.is_dir():
            return None
        manifest, problem = self._verify(path, key, manifest)
        if problem is not None:
            self.set_aside(path, problem)
            return None
        try:
            os.utime(path)  # recently used: evicted last
        except OSError:  # a read-only folder (a mounted image): used where it is, evicted by no one
            pass
        return Snapshot(key, path, manifest)

    @staticmethod
    def _verify(path: Path, key: str, manifest: Any = None) -> tuple[dict[str, Any], str | None]:
        """(manifest, None), or (_, why the snapshot cannot be trusted)."""
        try:
            if manifest is None:
                manifest = json.loads((path / MANIFEST).read_text(encoding="utf-8"))
        except FileNotFoundError:
            return {}, "it has no manifest"
        except (OSError, ValueError) as exc:  # truncated, not JSON, not UTF-8, unreadable
            return {}, f"its manifest is unreadable ({type(exc).__name__}: {exc})"
        if (not isinstance(manifest, dict) or manifest.get("format") != FORMAT or manifest.get("key") != key
                or not isinstance(manifest.get("files"), dict) or not isinstance(manifest.get("tables"), dict)
                or not manifest["files"]):
            return {}, f"its manifest is not a format-{FORMAT} manifest of this key"
        data, files = path / "data", manifest["files"]
        try:
            present = set(_paths(data))
            for rel, (size, digest) in files.items():
                file = data / rel
                if rel not in present or not file.is_file():
                    return {}, f"its file data/{rel} is missing"
                if file.stat().st_size != size:
                    return {}, f"its file data/{rel} is {file.stat().st_size} bytes, the manifest says {size}"
                if sha256_file(file) != digest:
                    return {}, f"its file data/{rel} does not match its checksum"
        except (OSError, TypeError, ValueError) as exc:
            return {}, f"its files cannot be checked ({type(exc).__name__}: {exc})"
        extra = sorted(present - set(files))
        if extra:
            return {}, f"its data dir holds {len(extra)} file(s) the manifest does not list (data/{extra[0]})"
        return manifest, None

    def set_aside(self, path: Path, why: str) -> None:
        """Out of the way of every later run (renamed first, so no reader sees it half removed).
        One that cannot be moved (a read-only folder) stays, unused, and the warning says so."""
        aside = path.with_name(f".aside-{path.name}.{os.getpid()}.{os.urandom(4).hex()}")
        try:
            os.rename(path, aside)
        except FileNotFoundError:  # another worker set it aside first
            aside = path
        except OSError as exc:
            warn(f"store snapshot {path.name} not used: {why}; it cannot be set aside ({exc.strerror or cause(exc)}) and stays "
                 "where it is; the corpus is ingested afresh")
            return
        shutil.rmtree(aside, ignore_errors=True)
        warn(f"store snapshot {path.name} set aside: {why}; the corpus is ingested afresh")

    def save(self, key: str, data_dir: Path, tables: dict[str, dict[str, Any]], postgres: str = "") -> Snapshot | None:
        """Keep a copy of the stopped ``data_dir``; the first writer of a key wins."""
        from .store.embedded import atomic_dir

        if self.limit <= 0:
            return None
        self.root.mkdir(parents=True, exist_ok=True)
        self.sweep()
        manifest = {"format": FORMAT, "key": key, "postgres": postgres, "plugin": plugin_version(), "tables": tables}

        def build(tmp: Path) -> None:
            tmp.mkdir()
            shutil.copytree(data_dir, tmp / "data", symlinks=True)
            for pid in ("postmaster.pid", "postmaster.opts"):
                (tmp / "data" / pid).unlink(missing_ok=True)
            manifest["files"] = list_files(tmp / "data")
            (tmp / MANIFEST).write_text(json.dumps(manifest, ensure_ascii=False), encoding="utf-8")

        path = atomic_dir(self.root / key, build)
        self.evict(keep=key)
        return Snapshot(key, path, manifest)

    def sweep(self) -> list[str]:
        """Remove temp dirs of writers that are gone (killed with SIGKILL, say), and any older than
        an hour: a live writer (another xdist worker) copies for seconds, not hours."""
        from .store.platform import alive

        if self._swept or not self.root.is_dir():
            return []
        self._swept = True
        removed = []
        for path in self.root.glob(".*"):
            try:
                pid = int(path.name.rsplit(".", 2)[1])
                old = time.time() - path.lstat().st_mtime > STALE_TEMP_SECONDS
            except (ValueError, IndexError, OSError):
                continue
            if old or not alive(pid):
                shutil.rmtree(path, ignore_errors=True)
                removed += [] if path.exists() else [path.name]  # a read-only folder keeps it
        return removed

    def evict(self, keep: str | None = None) -> list[str]:
        """Remove least recently used snapshots until the folder, temp dirs included, fits its bound."""
        entries, total = [], 0
        for path in self.root.iterdir() if self.root.is_dir() else ():
            if path.is_dir():
                size = sum(f.stat().st_size for f in path.rglob("*") if f.is_file())
                total += size
                if not path.name.startswith("."):  # a temp dir: being written, or swept when its writer dies
                    entries.append((path.stat().st_mtime, path, size))
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


def probe(store: Any, table: str, org_dataset: list[str] | None) -> dict[str, Any]:
    """What a table must answer after a restore: its row count, its first row id and (for the
    built-in table) the rows the engine's org/dataset filter keeps."""
    import psycopg
    from psycopg import sql

    qualified = sql.SQL("{}.{}").format(sql.Identifier(store.schema), sql.Identifier(table))
    org, dataset = org_dataset or ("", "")
    with psycopg.connect(store.dsn, autocommit=True) as conn:
        rows, first, kept = conn.execute(
            sql.SQL("SELECT count(*), min(id), count(*) FILTER (WHERE meta->>'org_id' = %s AND meta->>'dataset' = %s) "
                    "FROM {}").format(qualified), (org, dataset)).fetchone()
    return {"rows": rows, "first_id": first, "filtered": kept if org_dataset else None}
