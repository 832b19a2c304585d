"""Frozen dataclasses to plain JSON values and back, exactly, driven by their type hints.

The analysis of a run (``analysis/analyse.py``) is written into results.json in this form and read
back by ``report``, so a saved run renders byte-identical artefacts without computing a single
statistic again. One generic pair instead of a hand-written ``from_dict`` per type keeps the
two directions from drifting apart: a field added to a type is written and read with no more
code. Floats survive the trip exactly (``json`` writes their shortest repr).

JSON has no NaN (Node's ``JSON.parse`` and GitHub's ``fromJSON`` refuse it), so nothing is
written as one (``strict_json``). A missing value is None, null in the file. A statistic of
nothing (the p of no test, the interval of no question), a NaN in a field typed ``float``, is
written null too and read back as NaN; read from an old file, a ``NaN`` is null (``loads``).
"""

from __future__ import annotations

import dataclasses
import json
import math
import sys
import types
import typing
from typing import Any, Mapping

_HINTS: dict[type, dict[str, Any]] = {}
_SHAPES: dict[Any, tuple[Any, tuple]] = {}


def to_plain(value: Any) -> Any:
    """``value`` as JSON's types: dataclasses as objects of their init fields (private ones left
    out), tuples and lists as lists, mappings as objects with string keys."""
    kind = type(value)
    if kind is float:
        return value if value == value else None  # NaN: no number, null
    if kind is str or kind is int or kind is bool or value is None:  # most of it, checked first
        return value
    if kind is tuple or kind is list:
        return [to_plain(v) for v in value]
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: to_plain(getattr(value, f.name)) for f in dataclasses.fields(value)
                if f.init and not f.name.startswith("_")}
    if isinstance(value, Mapping):
        return {str(k): to_plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [to_plain(v) for v in value]
    if isinstance(value, bool) or value is None or isinstance(value, (str, int)):
        return value
    if isinstance(value, float) or hasattr(value, "__float__"):
        number = float(value)
        return number if number == number else None
    raise TypeError(f"cannot write a {type(value).__name__} as JSON")


def from_plain(hint: Any, data: Any) -> Any:
    """The value of type ``hint`` that ``to_plain`` wrote as ``data``."""
    origin, args = _shape(hint)
    if data is None and hint is float:  # a statistic of nothing, written null (``to_plain``)
        return math.nan
    if hint is Any or hint is object or data is None:
        return data
    if origin in (typing.Union, types.UnionType):
        if data is None and type(None) in args:
            return None
        kinds = [a for a in args if a is not type(None)]
        return from_plain(kinds[0], data) if len(kinds) == 1 else data
    if isinstance(hint, type) and dataclasses.is_dataclass(hint):
        if not isinstance(data, Mapping):
            raise ValueError(f"expected an object for {hint.__name__}, got {type(data).__name__}")
        hints = _hints(hint)
        return hint(**{f.name: from_plain(hints[f.name], data[f.name]) for f in dataclasses.fields(hint)
                       if f.init and not f.name.startswith("_") and f.name in data})
    if origin is tuple:
        if len(args) == 2 and args[1] is Ellipsis:
            if args[0] is float:  # per-query values: most of a saved analysis, read without a call each
                return tuple(math.nan if v is None else float(v) for v in data)
            return tuple(from_plain(args[0], v) for v in data)
        if args and len(args) != len(data):
            raise ValueError(f"expected {len(args)} values, got {len(data)}")
        return tuple(from_plain(a, v) for a, v in zip(args, data)) if args else tuple(data)
    if origin is list:
        return [from_plain(args[0] if args else Any, v) for v in data]
    if origin in (dict, Mapping, typing.Mapping) or (isinstance(origin, type) and issubclass(origin, Mapping)):
        value = args[1] if len(args) == 2 else Any
        return {k: from_plain(value, v) for k, v in data.items()}
    if hint is float:
        return float(data)
    if hint in (int, str, bool):
        if not isinstance(data, hint) or (hint is int and isinstance(data, bool)):
            raise ValueError(f"expected {hint.__name__}, got {data!r:.40}")
        return data
    if hint in (tuple, list, dict):
        return hint(data)
    return data


def _shape(hint: Any) -> tuple[Any, tuple]:
    """``hint``'s origin and arguments, looked up once per hint (a saved analysis asks for the
    same few hundreds of thousands of times)."""
    try:
        return _SHAPES[hint]
    except KeyError:
        shape = _SHAPES[hint] = (typing.get_origin(hint), typing.get_args(hint))
        return shape
    except TypeError:  # an unhashable hint
        return typing.get_origin(hint), typing.get_args(hint)


def _hints(cls: type) -> dict[str, Any]:
    if cls not in _HINTS:
        _HINTS[cls] = typing.get_type_hints(cls, vars(sys.modules[cls.__module__]))
    return _HINTS[cls]


def strict_json(value: Any, **options: Any) -> str:
    """``json.dumps`` of ``value`` as every JSON parser reads it: a NaN or an infinity is refused
    (a missing value is None, null), naming where it is, so a regression fails where it is written
    rather than in the reader of the file."""
    try:
        return json.dumps(value, allow_nan=False, **options)
    except ValueError:
        where = _not_a_number(value, "")
        if where is None:
            raise
        raise ValueError(f"not JSON: {where[0] or 'the value'} is {where[1]}, which JSON cannot hold; "
                         "a missing value is None (null)") from None


def _not_a_number(value: Any, path: str) -> tuple[str, float] | None:
    """The path (``a[1].b``) and value of the first float in ``value`` that is no finite number."""
    if isinstance(value, float):
        return None if math.isfinite(value) else (path, value)
    if isinstance(value, Mapping):
        items = ((f"{path}.{k}" if path else str(k), v) for k, v in value.items())
    elif isinstance(value, (list, tuple)):
        items = ((f"{path}[{i}]", v) for i, v in enumerate(value))
    else:
        return None
    return next((found for p, v in items if (found := _not_a_number(v, p)) is not None), None)


def loads(text: str) -> Any:
    """JSON text as ``json.loads`` reads it, but a ``NaN`` or ``Infinity`` that files written
    before ``strict_json`` hold is None: a missing value, never a number."""
    return json.loads(text, parse_constant=lambda _: None)
