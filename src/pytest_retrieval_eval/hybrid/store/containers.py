"""A throwaway ``pgvector/pgvector`` container through testcontainers, where Docker answers."""

from __future__ import annotations

import secrets

from ..._secrets import SecretText
from ...errors import RetrievalEvalError
from .dsn import drop_schema, prepare_schema

IMAGE = "pgvector/pgvector:pg17"


class StoreUnavailable(RetrievalEvalError):
    """The backend cannot run on this machine (no Docker daemon, package missing)."""


def docker_available() -> str | None:
    """None when a Docker daemon answers, else why not. ``which docker`` is not enough: the
    client can be installed with no daemon behind it."""
    try:
        import docker
    except ImportError:
        return "the docker package is not installed: pip install 'pytest-retrieval-eval[containers]'"
    try:
        docker.from_env().ping()
    except Exception as exc:  # DockerException, connection errors: no daemon
        return f"no Docker daemon answers ({type(exc).__name__})"
    return None


class ContainerStore:
    backend = "testcontainers"

    def __init__(self, *, worker: str = "main", image: str = IMAGE, prefix: str = "retrieval_eval") -> None:
        from .base import check_identifier

        self.image = image
        self.schema = check_identifier(f"{prefix}_{worker}_{secrets.token_hex(4)}".lower()[:63], "schema")
        self.dsn = ""
        self._container = None

    def describe(self) -> dict:
        return {"backend": self.backend, "image": self.image, "schema": self.schema}

    def start(self) -> None:
        why = docker_available()
        if why:
            raise StoreUnavailable(f"store backend 'testcontainers' cannot start: {why}; use the default 'embedded' backend")
        try:
            from testcontainers.community.postgres import PostgresContainer
        except ImportError:
            try:
                from testcontainers.postgres import PostgresContainer  # the older, deprecated path
            except ImportError:
                raise StoreUnavailable("testcontainers is not installed: pip install 'pytest-retrieval-eval[containers]'") from None
        try:
            # The constructor itself talks to Docker, so it is guarded too.
            self._container = PostgresContainer(self.image, driver=None)
            self._container.start()
        except Exception as exc:
            raise StoreUnavailable(f"could not start {self.image}: {type(exc).__name__}: {exc}") from None
        self.dsn = SecretText(self._container.get_connection_url())
        prepare_schema(self.dsn, self.schema)

    def stop(self) -> None:
        container, self._container = self._container, None
        if container is not None:
            try:
                drop_schema(self.dsn, self.schema)
            finally:
                container.stop()
