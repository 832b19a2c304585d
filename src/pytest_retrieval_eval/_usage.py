"""Calls and tokens of the plugin's HTTP calls (engines, embedders, rerankers, generation, the
judge), counted where every call is made (``_http.request_json``) and credited to whatever is
metering at the time: the question an engine is answering, its ``prepare``; what nothing claims
(ingestion, generation, judging) to the process's ``OUTSIDE`` meter, which the run adds up.

A ``ContextVar`` carries the meter, so the credit follows the call into the daemon thread or
event-loop task that makes it (``evaluation/evaluate.py`` copies the context into its threads) and two
engines asked side by side never count each other's calls.
"""

from __future__ import annotations

import threading
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any, Iterator, Mapping

#: how a call's model is named when neither the request nor the answer names one
UNNAMED = "unnamed"


class Meter:
    """Per model: ``[calls, input tokens, output tokens]``. A call counts once per request sent
    (a retry is a call: the server did the work); tokens are what the answer's ``usage`` says."""

    def __init__(self, parent: "Meter | None" = None) -> None:
        self.by_model: dict[str, list[int]] = {}
        self.parent = parent  # credited too: a command's own count still adds up in the run's
        self._lock = threading.Lock()

    def add(self, model: str, calls: int = 0, input_tokens: int = 0, output_tokens: int = 0) -> None:
        with self._lock:
            row = self.by_model.setdefault(model, [0, 0, 0])
            row[0] += calls
            row[1] += input_tokens
            row[2] += output_tokens
        if self.parent is not None:
            self.parent.add(model, calls, input_tokens, output_tokens)

    @property
    def calls(self) -> int:
        with self._lock:
            return sum(row[0] for row in self.by_model.values())

    def to_dict(self) -> dict[str, list[int]]:
        with self._lock:
            return {m: list(v) for m, v in sorted(self.by_model.items())}


_current: ContextVar[Meter | None] = ContextVar("retrieval_eval_meter", default=None)
#: the process's calls no question or engine claims: ingestion's embeddings, generation, the judge
OUTSIDE = Meter()


def summed(*tables: dict) -> dict[str, list[int]]:
    """Several ``Meter.to_dict()`` tables as one (model by model)."""
    out: dict[str, list[int]] = {}
    for table in tables:
        for model, row in table.items():
            out[model] = [a + b for a, b in zip(out.get(model, [0, 0, 0]), row)]
    return dict(sorted(out.items()))


def since(now: dict, before: dict) -> dict[str, list[int]]:
    """What ``now`` holds beyond ``before`` (a later reading of the same meter)."""
    out = {m: [a - b for a, b in zip(row, before.get(m, [0, 0, 0]))] for m, row in now.items()}
    return {m: row for m, row in sorted(out.items()) if any(row)}


@contextmanager
def metering(meter: Meter) -> Iterator[Meter]:
    """Credit the HTTP calls made inside the block (and in what it starts with the context) to ``meter``."""
    token = _current.set(meter)
    try:
        yield meter
    finally:
        _current.reset(token)


@contextmanager
def counting() -> Iterator[Meter]:
    """A meter of the block's own calls (a command's summary: every attempt sent, retries and
    failures too), credited as well to the meter it runs under. Work the block hands to threads
    must carry the context (``contextvars.copy_context().run``)."""
    with metering(Meter(parent=_current.get() or OUTSIDE)) as meter:
        yield meter


def tokens_of(usage: Any) -> tuple[int, int]:
    """(input, output) tokens of an answer's ``usage``: OpenAI's ``prompt_tokens`` /
    ``completion_tokens`` (embeddings report ``prompt_tokens`` only), the Responses and Anthropic
    ``input_tokens`` / ``output_tokens``, a rerank's ``total_tokens``."""
    if not isinstance(usage, Mapping):
        return 0, 0

    def whole(*keys: str) -> int:
        for key in keys:
            value = usage.get(key)
            if isinstance(value, (int, float)) and not isinstance(value, bool) and value >= 0:
                return int(value)
        return 0

    output = whole("completion_tokens", "output_tokens")
    given = whole("prompt_tokens", "input_tokens")
    return (given or max(0, whole("total_tokens") - output)), output


def model_key(asked: str, answered: str = "") -> str:
    """How a call's model is named: the model the request asked for (what the team configured and
    priced), with the name the answer reported where that differs (a dated snapshot, the model
    behind an alias): ``gpt-4o-mini (answered as gpt-4o-mini-2024-07-18)``; ``model_names``
    reads it back."""
    return f"{asked} (answered as {answered})" if asked and answered and answered != asked else asked or answered


def model_names(key: str) -> tuple[str, ...]:
    """(asked, answered) of a ``model_key``; (key,) for a call named once."""
    asked, sep, rest = key.partition(" (answered as ")
    return (asked, rest[:-1]) if sep and rest.endswith(")") else (key,)


def record_call(payload: Any, answer: Any = None) -> None:
    """One request sent; with the decoded ``answer``, the tokens its ``usage`` reports."""
    meter = _current.get() or OUTSIDE

    def named(d: Any) -> str:
        return d["model"] if isinstance(d, Mapping) and isinstance(d.get("model"), str) else ""

    given, output = tokens_of(answer.get("usage") if isinstance(answer, Mapping) else None)
    meter.add(model_key(named(payload), named(answer)) or UNNAMED, 1, given, output)

