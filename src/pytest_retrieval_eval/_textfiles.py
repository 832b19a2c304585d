"""Line reading shared by the TREC, BEIR and JSONL parsers: BOM, CRLF and blank lines handled once."""

from __future__ import annotations

from pathlib import Path
from typing import Iterator

from .errors import RetrievalEvalError


def read_text(path: str | Path) -> str:
    """Read UTF-8 (a leading BOM is dropped); undecodable bytes are an error naming the line."""
    path = Path(path)
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        raise RetrievalEvalError("file not found", path=path) from None
    except IsADirectoryError:
        raise RetrievalEvalError("expected a file, found a directory", path=path) from None
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line = data[: exc.start].count(b"\n") + 1
        raise RetrievalEvalError(
            f"not valid UTF-8 (byte 0x{data[exc.start]:02x} at offset {exc.start})",
            path=path,
            line=line,
        ) from None


def numbered_lines(path: str | Path) -> Iterator[tuple[int, str]]:
    """Yield ``(line_number, stripped_line)`` for non-blank lines, 1-based, CRLF-safe."""
    for number, line in enumerate(read_text(path).splitlines(), start=1):
        line = line.strip()
        if line:
            yield number, line


def json_lines(path: str | Path, *, unique_keys: bool = False) -> Iterator[tuple[int, object]]:
    """Yield ``(line_number, value)`` for each non-blank line of a JSONL file. With
    ``unique_keys``, an object that names one key twice is an error (a JSON reader keeps the
    last silently: labels would vanish)."""
    import json

    hook = _refuse_repeated_keys if unique_keys else None
    for number, line in numbered_lines(path):
        try:
            yield number, json.loads(line, object_pairs_hook=hook)
        except json.JSONDecodeError as exc:
            raise RetrievalEvalError(f"not valid JSON: {exc.msg} (column {exc.colno})", path=path, line=number) from None
        except _RepeatedKey as exc:
            raise RetrievalEvalError(f"key {exc.args[0]!r} appears twice in one object: only one could be read",
                                     path=path, line=number) from None


class _RepeatedKey(ValueError):
    pass


def _refuse_repeated_keys(pairs: list[tuple[str, object]]) -> dict:
    out: dict = {}
    for key, value in pairs:
        if key in out:
            raise _RepeatedKey(key)
        out[key] = value
    return out
