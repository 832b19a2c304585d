"""Ingest once per corpus version on an existing server (``--retrieval-store dsn``, opt-in with
``--retrieval-dsn-keep``): ingested tables are kept in a schema of their own (``<prefix>_kept``)
under their fingerprinted name (``chunks_<hash of corpus, chunking, embedder>``), and a later
session with the same ingestion reads them instead of ingesting again.

A table counts only once marked complete (its manifest row, written after the last chunk and the
indexes) and while it answers as its manifest says (row count, first row id): one that does not
(edited or emptied since) is built again, with one warning. An advisory lock on the table name
makes concurrent sessions and xdist workers build it once, the others wait and reuse. The plugin
never drops a kept schema: it is the team's to clear (``DROP SCHEMA <prefix>_kept CASCADE``).
"""

from __future__ import annotations

import json
import zlib
from dataclasses import dataclass
from typing import Any, Callable

from ..types import Chunk
from .snapshots import describe_chunks, plugin_version, probe, warn

MANIFESTS = "retrieval_eval_manifests"


@dataclass
class KeptSchema:
    """What ingestion needs of a store (``dsn``, ``schema``, ``backend``), pointed at the kept schema."""

    dsn: str
    schema: str
    backend: str = "dsn (kept tables)"


def kept_index(store: Any, table: str, build: Callable[[KeptSchema], Any], restore: Callable[..., Any]) -> tuple[Any, bool]:
    """The index of ``table`` in the kept schema: reused when complete, else built once under an
    advisory lock. Returns (index, reused)."""
    import psycopg
    from psycopg import sql

    kept = KeptSchema(store.dsn, f"{store.prefix}_kept")
    lock = zlib.crc32(f"{kept.schema}.{table}".encode())
    with psycopg.connect(store.dsn, autocommit=True) as conn:
        conn.execute(sql.SQL("CREATE SCHEMA IF NOT EXISTS {}").format(sql.Identifier(kept.schema)))
        conn.execute(sql.SQL("CREATE TABLE IF NOT EXISTS {}.{} (name text PRIMARY KEY, version text, manifest jsonb)")
                     .format(sql.Identifier(kept.schema), sql.Identifier(MANIFESTS)))
        conn.execute("SELECT pg_advisory_lock(%s)", (lock,))
        try:
            row = conn.execute(sql.SQL("SELECT manifest FROM {}.{} WHERE name = %s AND version = %s").format(
                sql.Identifier(kept.schema), sql.Identifier(MANIFESTS)), (table, plugin_version())).fetchone()
            if row is not None:
                manifest = row[0] if isinstance(row[0], dict) else json.loads(row[0])
                problem = _disagreement(kept, table, manifest)
                if problem is None:
                    chunks = tuple(Chunk(d, i, text, meta) for d, i, text, meta in manifest["chunks"])
                    return restore(kept, chunks, manifest.get("lint")), True
                warn(f"kept table {kept.schema}.{table} is built again: {problem}")
            conn.execute(sql.SQL("DROP TABLE IF EXISTS {}.{}").format(sql.Identifier(kept.schema), sql.Identifier(table)))
            index = build(kept)
            manifest = {"chunks": describe_chunks(index.chunks),
                        "lint": index.lint.to_dict() if index.lint is not None else None,
                        "probe": probe(kept, table, None)}
            conn.execute(sql.SQL("INSERT INTO {}.{} VALUES (%s, %s, %s) ON CONFLICT (name) DO UPDATE SET "
                                 "version = EXCLUDED.version, manifest = EXCLUDED.manifest").format(
                sql.Identifier(kept.schema), sql.Identifier(MANIFESTS)),
                (table, plugin_version(), json.dumps(manifest, ensure_ascii=False)))
            return index, False
        finally:
            conn.execute("SELECT pg_advisory_unlock(%s)", (lock,))


def _disagreement(kept: KeptSchema, table: str, manifest: dict) -> str | None:
    """Why the kept table is not what its manifest says, or None."""
    import psycopg

    try:
        answer = probe(kept, table, None)
    except psycopg.Error as exc:
        return f"it cannot be read ({type(exc).__name__}: {exc})"
    expected = manifest.get("probe") or {"rows": len(manifest["chunks"]), "first_id": answer["first_id"],
                                         "filtered": None}  # kept before tables carried a probe
    if answer != expected or answer["rows"] != len(manifest["chunks"]):
        return (f"it holds {answer['rows']} rows (first id {answer['first_id']!r}), its manifest says "
                f"{len(manifest['chunks'])} chunks (first id {expected.get('first_id')!r})")
    return None
