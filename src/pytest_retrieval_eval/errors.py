"""The one exception type users can act on: it names where the problem is and what to do."""

from __future__ import annotations

from pathlib import Path


class RetrievalEvalError(Exception):
    """Bad input or configuration that the user can fix.

    The message starts with the location (``file:line``, the field, the option) so a user reading
    a CI log knows where to look without a traceback.
    """

    def __init__(
        self,
        message: str,
        *,
        path: str | Path | None = None,
        line: int | None = None,
        field: str | None = None,
    ) -> None:
        self.path = str(path) if path is not None else None
        self.line = line
        self.field = field
        self.detail = message
        super().__init__(self._render())

    def _render(self) -> str:
        where = ""
        if self.path is not None:
            where = self.path if self.line is None else f"{self.path}:{self.line}"
        if self.field is not None:
            where = f"{where}: field '{self.field}'" if where else f"field '{self.field}'"
        return f"{where}: {self.detail}" if where else self.detail
