"""How a session gets an ingested index: ingest, or reuse what an earlier session ingested with
the same key (a snapshot of the embedded store, or a kept table on a ``dsn`` server), and keep
what it ingested for the next one. Each decision is said in ``events`` (terminal, timing.json)."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Callable

from ..errors import RetrievalEvalError
from .ingest import IngestedIndex, ingest, restore_index, table_name
from .snapshots import Snapshot, Snapshots, describe_chunks, probe, snapshot_key


class StoreReuse:
    def __init__(self, cache_dir: Path, limit_mb: float, dsn_keep: bool, progress: Callable[[str], None]) -> None:
        self.snapshots = Snapshots(cache_dir / "snapshots", limit_mb) if limit_mb > 0 else None
        self.dsn_keep = dsn_keep
        self.progress = progress
        self.events: list[str] = []
        self._restored: Snapshot | None = None  # the snapshot this session's store came from
        self._used: list[str] = []  # the tables this session asked for, in order
        self._kept: dict[str, dict] = {}  # table -> chunks, lint and probe, of the tables it ingested

    def index(self, corpus: Any, store: Any, embedder: Any, config: Any) -> IngestedIndex:
        table = table_name(corpus, config, embedder)
        if store.backend == "dsn" and self.dsn_keep:
            return self._kept_table(corpus, store, embedder, config, table)
        org_dataset = [config.org_id, corpus.name]  # what the engine filters on
        snapshot = self._snapshot_with(store, table, org_dataset)
        if snapshot is not None:
            from ..data.lint import LintReport

            entry = snapshot.tables[table]
            lint = LintReport.from_dict(entry["lint"]) if entry.get("lint") else None
            index = restore_index(corpus, store, embedder, config, table, snapshot.chunks(table), lint, snapshot.key)
            self._event(f"{table}: restored from snapshot {snapshot.key}")
            return index
        index = ingest(corpus, store, embedder, config, self.progress)
        self._event(f"{table}: ingested ({len(index.chunks)} chunks)")
        self._keep_at_stop(store, table, index, org_dataset)
        return index

    def index_by(self, store: Any, table: str, build: Callable[[], IngestedIndex],
                 restore: Callable[[], IngestedIndex]) -> tuple[IngestedIndex, bool]:
        """An ingestion that is not the plugin's own (a team's YAML pipeline): restored from the
        snapshot of ``table`` when there is one, else built and kept at stop. (index, restored)"""
        snapshot = self._snapshot_with(store, table, None)
        if snapshot is not None:
            index = restore()
            self.events.append(f"{table}: restored from snapshot {snapshot.key}")
            return index, True
        index = build()
        self.events.append(f"{table}: ingested ({len(index.chunks)} chunks)")
        self._keep_at_stop(store, table, index, None)
        return index, False

    def _event(self, text: str) -> None:
        self.events.append(text)
        self.progress(text)

    def _snapshot_with(self, store: Any, table: str, org_dataset: list | None) -> Snapshot | None:
        """The snapshot this session's store holds ``table`` from. An embedded store nothing was
        written to yet takes, if it proves itself, the newest snapshot holding this table (beside
        others, perhaps), else the newest of this server as a base: a session
        that ingests one table afresh (a team's YAML changed) still restores the others (the
        built-in ingestion), whichever it asks for first."""
        self._used.append(table)
        if self._restored is None and self.snapshots is not None and hasattr(store, "keep_on_stop") and store.fresh:
            found = (self.snapshots.holding(table, store.version) or self.snapshots.find(snapshot_key(table, store.version))
                     or self.snapshots.holding(None, store.version))
            if found is not None:
                self._restored = self._restore(store, found, table, org_dataset)
        if self._restored is None or table not in self._restored.tables:
            return None
        return self._restored

    def _restore(self, store: Any, found: Snapshot, table: str, org_dataset: list | None) -> Snapshot | None:
        """``found`` restored into ``store`` once its tables answer as the manifest says; else set
        aside (one warning) and the store fresh again, for an ingestion."""
        try:
            store.restart_from(found.data)
            problem = _disagreement(store, found, table if table in found.tables else None, org_dataset)
        except RetrievalEvalError as exc:  # the server does not start on it
            problem = f"the store does not start on it ({exc})"
        if problem is None:
            return found
        self.snapshots.set_aside(found.path, problem)
        store.reset()
        return None

    def _keep_at_stop(self, store, table: str, index: IngestedIndex, org_dataset: list | None) -> None:
        """At stop, a snapshot of the tables this session used: those it ingested and those it
        restored (a restored snapshot's tables it did not ask for are dropped first)."""
        if hasattr(store, "fresh"):
            store.fresh = False  # written to: no snapshot may replace it now
        if self.snapshots is None or not hasattr(store, "keep_on_stop"):
            return
        self._kept[table] = {"chunks": describe_chunks(index.chunks),
                             "lint": index.lint.to_dict() if index.lint is not None else None,
                             "filter": org_dataset, "probe": probe(store, table, org_dataset)}
        snapshots, kept, used, restored = self.snapshots, self._kept, self._used, self._restored
        old = restored.tables if restored is not None else {}

        def tables() -> dict[str, dict]:
            return {**{t: old[t] for t in dict.fromkeys(used) if t in old and t not in kept}, **kept}

        store.before_stop = lambda: drop_tables(store, [t for t in old if t not in used])
        store.keep_on_stop = lambda data: snapshots.save(snapshot_key(list(tables()), store.version), data, tables(),
                                                         store.version)

    def _kept_table(self, corpus, store, embedder, config, table) -> IngestedIndex:
        from ..data.lint import LintReport
        from .kept_tables import kept_index

        index, reused = kept_index(
            store, table, build=lambda kept: ingest(corpus, kept, embedder, config, self.progress),
            restore=lambda kept, chunks, lint: restore_index(
                corpus, kept, embedder, config, table, chunks, LintReport.from_dict(lint) if lint else None,
                f"{kept.schema}.{table}"))
        self._event(f"{table}: {'reused the kept table' if reused else 'ingested and kept'} in schema {store.prefix}_kept")
        return index


def drop_tables(store: Any, tables: list[str]) -> None:
    """Drop ``tables`` (a restored snapshot's that this session did not use) before the store
    stops; a lock held elsewhere gives up after two seconds rather than hang the stop."""
    if not tables:
        return
    import psycopg
    from psycopg import sql

    with psycopg.connect(store.dsn, autocommit=True) as conn:
        conn.execute("SET lock_timeout = '2s'")
        for table in tables:
            conn.execute(sql.SQL("DROP TABLE IF EXISTS {}.{} CASCADE").format(sql.Identifier(store.schema),
                                                                               sql.Identifier(table)))


def _disagreement(store: Any, snapshot: Snapshot, table: str | None, org_dataset: list | None) -> str | None:
    """Why the restored store is not what the manifest says (row counts, first row ids, the rows
    the engine's filter keeps), or None. ``table``: the one this session asked for, if the
    snapshot holds it."""
    if table is not None and snapshot.tables[table].get("filter") != org_dataset:
        return f"table {table} was filtered on {snapshot.tables[table].get('filter')}, the engine filters on {org_dataset}"
    for name, entry in snapshot.tables.items():
        expected = entry.get("probe") or {}
        try:
            answer = probe(store, name, entry.get("filter"))
        except Exception as exc:  # psycopg's errors: a table that is not there, a page it cannot read
            return f"table {name} cannot be read ({type(exc).__name__}: {exc})"
        if answer != expected or answer["rows"] != len(entry["chunks"]):
            return (f"table {name} answers {answer['rows']} rows (first id {answer['first_id']!r}, "
                    f"{answer['filtered']} kept by the filter), the manifest says {expected.get('rows')} "
                    f"(first id {expected.get('first_id')!r}, {expected.get('filtered')} kept) and "
                    f"{len(entry['chunks'])} chunks")
    return None
