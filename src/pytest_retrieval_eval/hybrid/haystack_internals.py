"""The one place the plugin reaches into third-party internals (pgvector-haystack's store,
Haystack's component sockets). Each use is one function here, and tests/system/test_haystack_internals.py
checks each attribute on the real dependency, so an upgrade that renames one fails a test
instead of silently losing a speed-up."""

from __future__ import annotations

import contextlib
import weakref
from typing import Any, Iterator

#: HNSW candidates per vector query: above every top k the engine asks for (50 by default)
EF_SEARCH = 200


def connection(document_store: Any) -> Any:
    """The open psycopg connection of a connected ``PgvectorDocumentStore`` (None before it
    connects, or if the store no longer keeps it there). The store has no public accessor; its
    ``_connection`` is what it queries on."""
    return getattr(document_store, "_connection", None)


def fetch_binary(document_store: Any, ef_search: int = EF_SEARCH) -> bool:
    """Let retrieval fetch rows in binary. In pgvector's text format the server prints, and
    Python parses, every float of every returned embedding: a quarter of a hybrid query's time
    here. The store re-creates its cursors (in text) if it ever reconnects: still correct.
    Whether it applied: a store not yet connected (or one whose internals moved, which the
    tests catch) is left as it is, still correct, only slower."""
    from psycopg.rows import dict_row

    conn = connection(document_store)
    if conn is None or not hasattr(document_store, "_dict_cursor"):
        return False
    document_store._dict_cursor = conn.cursor(row_factory=dict_row, binary=True)
    # the HNSW search visits 40 candidates by default, fewer than the retriever's top k: every
    # query would get 40 rows at most where an exact scan gives 50
    set_ef_search(document_store, ef_search)
    return True


def set_ef_search(document_store: Any, candidates: int) -> None:
    """How many HNSW candidates the store's connection visits per vector query."""
    configure(document_store, ef_search=candidates)


#: what each connection's HNSW settings are (weakly: a store that reconnects starts afresh)
_APPLIED: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()
#: a setting never changed on a connection taken as at this value, and not set to it: a server with
#: pgvector before 0.8 knows no ``hnsw.iterative_scan``, not even ``off`` (``ef_search`` is always set
#: once: a server's configuration may have changed its default)
HNSW_DEFAULTS = {"hnsw.iterative_scan": "off"}


def configure(document_store: Any, *, ef_search: int | None = None, iterative_scan: str | None = None) -> None:
    """The store connection's HNSW settings for the next vector queries, each set only where it
    differs from what the connection has: one connection serves every engine on an index (a sweep
    over ``ef_search`` asks them in turn), so each engine says its own before each query."""
    conn = connection(document_store)
    if conn is None:
        return
    applied = _APPLIED.setdefault(conn, {})
    for name, value in (("hnsw.ef_search", None if ef_search is None else int(ef_search)),
                        ("hnsw.iterative_scan", iterative_scan)):
        if value is not None and applied.get(name, HNSW_DEFAULTS.get(name)) != value:
            conn.execute(f"SET {name} = {value}")  # a whole number, or one of ITERATIVE_SCANS: no quoting needed
            applied[name] = value


@contextlib.contextmanager
def exact_scan(document_store: Any) -> Iterator[None]:
    """The store's vector queries inside run as an exact scan over the same rows: with index scans
    off the planner cannot use the HNSW index (which has no bitmap scan either), so it reads every
    row the filter keeps and sorts them by distance."""
    conn = connection(document_store)
    if conn is None:
        raise RuntimeError("the document store is not connected: no exact scan")
    conn.execute("SET enable_indexscan = off")
    try:
        yield
    finally:
        conn.execute("RESET enable_indexscan")


#: pgvector's HNSW build defaults, where an index was made without its own
HNSW_BUILD_DEFAULTS = {"m": 16, "ef_construction": 64}


def vector_index(document_store: Any) -> dict[str, Any] | None:
    """The table's vector index as the catalog has it: its access method (``hnsw``, ``ivfflat``)
    and build settings (an HNSW index's ``m`` and ``ef_construction``, pgvector's defaults where it
    was built without them); None where the table has no index on its embedding column (every
    vector query is then an exact scan) or the store is not connected."""
    conn = connection(document_store)
    if conn is None:
        return None
    row = conn.execute(
        "SELECT a.amname, c.reloptions FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid "
        "JOIN pg_am a ON a.oid = c.relam JOIN pg_class t ON t.oid = i.indrelid "
        "JOIN pg_namespace n ON n.oid = t.relnamespace JOIN pg_attribute col ON col.attrelid = t.oid "
        "AND col.attnum = ANY(i.indkey) WHERE n.nspname = %s AND t.relname = %s AND col.attname = 'embedding' "
        "ORDER BY c.relname LIMIT 1", (document_store.schema_name, document_store.table_name)).fetchone()
    if row is None:
        return None
    method, options = row[0], dict(o.split("=", 1) for o in (row[1] or ()))
    if method != "hnsw":
        return {"type": method, **options}
    return {"type": "hnsw", **{k: int(options.get(k, v)) for k, v in HNSW_BUILD_DEFAULTS.items()}}


def output_sockets(component: Any) -> set[str]:
    """The output socket names of a Haystack component instance (Haystack keeps them on
    ``__haystack_output__``, a ``Sockets`` whose mapping is ``_sockets_dict``)."""
    return set(component.__haystack_output__._sockets_dict)


#: the columns of pgvector-haystack's table, in its own order
COLUMNS = ("id", "embedding", "content", "blob_data", "blob_meta", "blob_mime_type", "meta")
#: their types, for a binary ``COPY``
COPY_TYPES = ("text", "vector", "text", "bytea", "jsonb", "text", "jsonb")


def copy_documents(document_store: Any, documents: list) -> int:
    """``documents`` written into the store's table with one ``COPY``, as ``write_documents``
    with ``DuplicatePolicy.OVERWRITE`` writes them: the same columns and values as its converter
    makes them (``_from_haystack_to_pg_documents``: content without NUL bytes, meta and blob meta
    as JSONB; tests/system/test_haystack_internals.py compares the rows), a repeated id written
    once (the last), an id already in the table replaced. Its ``executemany`` asks one INSERT ...
    RETURNING per document; a COPY streams them all. The converter is not called: it deep-copies
    every embedding through ``Document.to_dict``, which costs more than the COPY itself."""
    import numpy as np
    from psycopg import sql
    from psycopg.types.json import Jsonb

    # binary for ``vector`` columns: formatting 384 floats as text (and PostgreSQL parsing them
    # back) was most of the COPY's time; ``halfvec`` keeps text (the server rounds to half)
    binary = getattr(document_store, "vector_type", "vector") == "vector"
    rows = {}
    for doc in documents:
        blob = doc.blob
        rows[doc.id] = {"id": doc.id, "embedding": doc.embedding,
                        "content": doc.content.replace("\x00", "") if doc.content else doc.content,
                        "blob_data": blob.data if blob else None,
                        "blob_meta": Jsonb(blob.meta) if blob and blob.meta else None,
                        "blob_mime_type": blob.mime_type if blob and blob.mime_type else None,
                        "meta": Jsonb(doc.meta)}
    if not rows:
        return 0
    conn = connection(document_store)
    if conn is None or conn.closed:  # connect (and create the table) as any first use does, once:
        document_store.count_documents()  # its COUNT(*) reads the whole table, each batch a longer read
        conn = connection(document_store)
    table = sql.Identifier(document_store.schema_name, document_store.table_name)
    with conn.transaction():
        with conn.cursor() as cur:
            cur.execute(sql.SQL("DELETE FROM {} WHERE id = ANY(%s)").format(table), [list(rows)])
            statement = sql.SQL("COPY {} ({}) FROM STDIN{}").format(
                table, sql.SQL(", ").join(map(sql.Identifier, COLUMNS)), sql.SQL(" (FORMAT BINARY)" if binary else ""))
            with cur.copy(statement) as copy:
                if binary:
                    copy.set_types(COPY_TYPES)
                for d in rows.values():
                    vector = d.get("embedding")
                    if vector is None:
                        value = None
                    elif binary:  # pgvector's own binary dumper: the float32s as they are
                        value = np.asarray(vector, dtype=np.float32)
                    else:
                        value = "[" + ",".join(map(repr, vector)) + "]"
                    copy.write_row((d["id"], value, *(d.get(c) for c in COLUMNS[2:])))
    return len(rows)
