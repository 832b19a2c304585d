"""The store protocol and the factory that picks a backend."""

from __future__ import annotations

import re
from typing import Protocol

from ..._defaults import BACKENDS
from ...errors import RetrievalEvalError

_IDENT = re.compile(r"^[a-z_][a-z0-9_]{0,62}$")


class Store(Protocol):
    backend: str
    #: libpq connection string; may hold a password, so never print it (see ``redact``)
    dsn: str
    #: the schema the plugin owns on this server and drops at ``stop()``
    schema: str

    def start(self) -> None: ...

    def stop(self) -> None: ...

    def describe(self) -> dict: ...


def check_identifier(name: str, what: str) -> str:
    """Schema and table names reach SQL: only plain lowercase identifiers are accepted (they are
    also quoted with ``psycopg.sql.Identifier`` wherever they are used)."""
    if not isinstance(name, str) or not _IDENT.match(name):
        raise RetrievalEvalError(f"{what} {name!r} must be a plain identifier: a-z, 0-9 and _, not starting with a digit, at most 63 characters")
    return name


def open_store(backend: str, *, dsn: str | None = None, worker: str = "main", schema_prefix: str = "retrieval_eval") -> Store:
    """A not-yet-started store of the named backend; ``worker`` keeps xdist workers apart."""
    if backend == "embedded":
        from .embedded import EmbeddedPostgres

        return EmbeddedPostgres()
    if backend == "dsn":
        from .dsn import DsnStore

        if not dsn:
            raise RetrievalEvalError("store backend 'dsn' needs a connection string: --retrieval-dsn, the "
                                     "retrieval_dsn ini option or the RETRIEVAL_EVAL_DSN environment variable")
        return DsnStore(dsn, worker=worker, prefix=schema_prefix)
    if backend == "testcontainers":
        from .containers import ContainerStore

        return ContainerStore(worker=worker, prefix=schema_prefix)
    raise RetrievalEvalError(f"unknown store backend {backend!r}; choose one of {', '.join(BACKENDS)}")
