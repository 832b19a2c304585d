"""How a session gets an ingested index: ingest, or reuse what an earlier session ingested with
the same key (a snapshot of the embedded store, or a kept table on a ``dsn`` server), and keep
what it ingested for the next one. Each decision is said in ``events`` (terminal, timing.json)."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Callable

from .ingest import IngestedIndex, ingest, restore_index, table_name
from .snapshots import Snapshot, Snapshots, describe_chunks, snapshot_key


class StoreReuse:
    def __init__(self, cache_dir: Path, limit_mb: float, dsn_keep: bool, progress: Callable[[str], None]) -> None:
        self.snapshots = Snapshots(cache_dir / "snapshots", limit_mb) if limit_mb > 0 else None
        self.dsn_keep = dsn_keep
        self.progress = progress
        self.events: list[str] = []
        self._restored: Snapshot | None = None  # the snapshot this session's store came from
        self._kept: dict[str, dict] = {}  # table -> chunks and lint, for the snapshot kept at stop

    def index(self, corpus: Any, store: Any, embedder: Any, config: Any) -> IngestedIndex:
        table = table_name(corpus, config, embedder)
        if store.backend == "dsn" and self.dsn_keep:
            index = self._kept_table(corpus, store, embedder, config, table)
        else:
            index = self._from_snapshot(corpus, store, embedder, config, table)
            if index is None:
                index = ingest(corpus, store, embedder, config, self.progress)
                self._event(f"{table}: ingested ({len(index.chunks)} chunks)")
                self._keep_at_stop(store, table, index)
        return index

    def index_by(self, store: Any, table: str, build: Callable[[], IngestedIndex],
                 restore: Callable[[], IngestedIndex]) -> tuple[IngestedIndex, bool]:
        """An ingestion that is not the plugin's own (a team's YAML pipeline): restored from the
        snapshot of ``table`` when there is one, else built and kept at stop. (index, restored)"""
        if self.snapshots is not None and hasattr(store, "keep_on_stop") and store.fresh:
            found = self.snapshots.find(snapshot_key(table, store.version))
            if found is not None and table in found.manifest()["tables"]:
                store.restart_from(found.data)
                self._restored = found
                index = restore()
                self.events.append(f"{table}: restored from snapshot {found.key}")
                return index, True
        index = build()
        self.events.append(f"{table}: ingested ({len(index.chunks)} chunks)")
        self._keep_at_stop(store, table, index)
        return index, False

    def _event(self, text: str) -> None:
        self.events.append(text)
        self.progress(text)

    def _from_snapshot(self, corpus, store, embedder, config, table) -> IngestedIndex | None:
        """An embedded store nothing was written to yet takes the snapshot of this ingestion."""
        keeps = self.snapshots is not None and hasattr(store, "keep_on_stop")
        if keeps and store.fresh:
            found = self.snapshots.find(snapshot_key(table, store.version))
            if found is not None and table in found.manifest()["tables"]:
                store.restart_from(found.data)
                self._restored = found
        if self._restored is None or table not in self._restored.manifest()["tables"]:
            return None
        from ..data.lint import LintReport

        entry = self._restored.manifest()["tables"][table]
        lint = LintReport.from_dict(entry["lint"]) if entry.get("lint") else None
        index = restore_index(corpus, store, embedder, config, table, self._restored.chunks(table), lint,
                              self._restored.key)
        self._event(f"{table}: restored from snapshot {self._restored.key}")
        return index

    def _keep_at_stop(self, store, table: str, index: IngestedIndex) -> None:
        if hasattr(store, "fresh"):
            store.fresh = False  # written to: no snapshot may replace it now
        if self.snapshots is None or not hasattr(store, "keep_on_stop") or self._restored is not None:
            return
        self._kept[table] = {"chunks": describe_chunks(index.chunks),
                             "lint": index.lint.to_dict() if index.lint is not None else None}
        key = snapshot_key(next(iter(self._kept)), store.version)
        snapshots, kept = self.snapshots, self._kept
        store.keep_on_stop = lambda data: snapshots.save(key, data, kept)

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
