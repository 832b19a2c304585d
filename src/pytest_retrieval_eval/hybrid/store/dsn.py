"""An existing PostgreSQL server (a CI service container, a shared dev database).

The plugin creates a schema of its own, named with the worker and a random suffix so that
pytest-xdist workers and concurrent CI jobs never share tables, and drops only that schema.
"""

from __future__ import annotations

import secrets

from ..._secrets import SecretText, dsn_passwords, redact, redact_dsn, register_secret
from ...errors import RetrievalEvalError
from .base import check_identifier


def prepare_schema(dsn: str, schema: str) -> None:
    import psycopg
    from psycopg import sql

    try:
        with psycopg.connect(dsn, autocommit=True, connect_timeout=10) as conn:
            has_vector = conn.execute("SELECT 1 FROM pg_extension WHERE extname = 'vector'").fetchone()
            if not has_vector:
                try:
                    conn.execute("CREATE EXTENSION IF NOT EXISTS vector")
                except psycopg.Error as exc:
                    raise RetrievalEvalError(
                        f"the server has no pgvector extension and it could not be created ({type(exc).__name__}); "
                        "install pgvector or run CREATE EXTENSION vector as a superuser"
                    ) from None
            conn.execute(sql.SQL("CREATE SCHEMA {}").format(sql.Identifier(schema)))
    except psycopg.OperationalError as exc:
        raise RetrievalEvalError(f"cannot connect to {redact_dsn(dsn)}: {redact_dsn(str(exc)).strip()}") from None


def drop_schema(dsn: str, schema: str) -> None:
    import psycopg
    from psycopg import sql

    with psycopg.connect(dsn, autocommit=True, connect_timeout=10) as conn:
        conn.execute(sql.SQL("DROP SCHEMA IF EXISTS {} CASCADE").format(sql.Identifier(schema)))


def register_password(dsn: str) -> None:
    """Mask the DSN's password in everything printed from now on. A DSN that does not parse is
    a clear error, and whatever looks like its password is masked first."""
    import psycopg
    from psycopg.conninfo import conninfo_to_dict

    for password in dsn_passwords(dsn):
        register_secret(password)
    try:
        register_secret(conninfo_to_dict(dsn).get("password"))
    except psycopg.Error as exc:
        raise RetrievalEvalError(f"the dsn store's connection string {redact_dsn(dsn)!r} does not parse: "
                                 f"{redact(str(exc)).strip()}; expected postgresql://USER:PASSWORD@HOST:PORT/DB "
                                 "or key=value pairs") from None


class DsnStore:
    backend = "dsn"

    def __init__(self, dsn: str, *, worker: str = "main", prefix: str = "retrieval_eval", schema: str | None = None) -> None:
        register_password(dsn)
        self.dsn = SecretText(dsn)
        self.prefix = check_identifier(prefix, "schema prefix")
        self.schema = check_identifier(schema or f"{prefix}_{worker}_{secrets.token_hex(4)}".lower()[:63], "schema")
        self._created = False

    def describe(self) -> dict:
        return {"backend": self.backend, "server": redact_dsn(self.dsn), "schema": self.schema}

    def __repr__(self) -> str:
        return f"DsnStore(server={redact_dsn(self.dsn)!r}, schema={self.schema!r})"

    def start(self) -> None:
        prepare_schema(self.dsn, self.schema)
        self._created = True

    def stop(self) -> None:
        if self._created:
            self._created = False
            drop_schema(self.dsn, self.schema)
