"""Drift canaries: a model that changes behind an unchanged name is caught before its cached
vectors are reused.

The embedding cache is keyed by the embedder's identity (its name, a local folder's content, the
built-in's weights). A service upgraded in place, a hub model updated, or a library upgrade that
changes a local model's numbers keeps that identity while the vectors move, so old and new
vectors would mix. Before an embedder's first use in a process, the pinned ``CANARY_TEXTS`` are
embedded and compared with the vectors the cache stored for it the first time (table
``canaries`` of ``embeddings.sqlite3``). The lowest cosine below ``DRIFT_FLOOR`` means the model
changed: the embedder's canary generation goes up, which is part of the identity every cache key,
table name and snapshot key is made from, so none of the old ones is reused; the old vectors are
deleted; the new canaries become the reference; the run warns, naming the embedder and the cosine.

A local model (the built-in MiniLM, a model folder) whose weights the identity pins is embedded
again only when the libraries that run it changed (``canary_stamp``): a warm run loads no model.
A service, or a hub name, is asked every run: one request of a few short texts.
"""

from __future__ import annotations

import hashlib
import threading
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from .._secrets import mask_and_cap, redact
from ..errors import RetrievalEvalError

#: embedded at the start of every run (a local model: when its libraries changed) and compared
#: with the stored ones; short, varied (prose, code, numbers, another language), never changed
#: (a new set is stored as the reference afresh, without counting as drift)
CANARY_TEXTS = (
    "The quick brown fox jumps over the lazy dog.",
    "How do I reset my password if I no longer have access to my email?",
    "def fibonacci(n): return n if n < 2 else fibonacci(n - 1) + fibonacci(n - 2)",
    "Quarterly revenue rose 4.2% to $1.38 billion, driven by subscriptions.",
    "La tour Eiffel a été construite pour l'Exposition universelle de 1889.",
)
TEXTS_SHA256 = hashlib.sha256("\x1f".join(CANARY_TEXTS).encode("utf-8")).hexdigest()
#: the lowest cosine between a canary's vector now and its stored one that is still the same
#: model. The same weights on another runtime (ONNX against torch) differ by about 2e-7, a
#: float32 service's batching or hardware by about 1e-6; a new model version is far below (0.9
#: and less). Below the floor the embedder has drifted.
DRIFT_FLOOR = 0.999


def keyed(model: str, generation: int) -> str:
    """The identity the cache, the table and the snapshots are keyed by: ``model`` as it always
    was until its first drift, then with the canary generation (old keys are never met again)."""
    return model if generation == 0 else f"{model}#canary-{generation}"


def fingerprint(vectors: np.ndarray) -> str:
    """sha256 of the reference canary vectors (float32 bytes) with their texts: what results.json
    records of the embedder's numbers. It stays the same while the cache keeps its reference (the
    model unchanged); a new cache of a service that is not bit-for-bit deterministic makes another."""
    data = TEXTS_SHA256.encode() + np.ascontiguousarray(vectors, dtype=np.float32).tobytes()
    return hashlib.sha256(data).hexdigest()[:16]


def min_cosine(now: np.ndarray, stored: np.ndarray) -> float:
    """The lowest cosine between each canary's vector now and its stored one, in float64 (-1 when
    the dimension changed: another model, whatever the cosine)."""
    if now.shape != stored.shape:
        return -1.0
    if np.array_equal(now, stored):  # the same floats: 1, not 1 less a rounding
        return 1.0
    a, b = now.astype(np.float64), stored.astype(np.float64)
    norms = np.linalg.norm(a, axis=1) * np.linalg.norm(b, axis=1)
    cosines = np.where(norms > 0, (a * b).sum(axis=1) / np.where(norms > 0, norms, 1.0), 0.0)
    return float(min(1.0, cosines.min()))


@dataclass(frozen=True)
class Stored:
    """A cache's reference canaries of one model."""

    generation: int
    texts: str  # ``TEXTS_SHA256`` of the texts they embed
    stamp: str | None  # the local runtime that embedded them (None: a service, embedded each run)
    vectors: np.ndarray


@dataclass(frozen=True)
class CanaryCheck:
    """What the check found for one embedder (``model``: its backend's identity)."""

    model: str
    generation: int
    fingerprint: str | None  # None: not checked
    #: the lowest cosine of this run's canaries against the reference; None when they were not
    #: embedded (a local model on the same libraries) or there was no reference yet
    cosine: float | None = None
    drifted: bool = False
    dropped: int = 0  # cached vectors of the drifted generation deleted
    #: why the canaries could not be embedded (the service down): the cache is used unchecked
    unchecked: str | None = None
    #: the server answered, but with what is no vector per text (token vectors: no pooling)
    answered: bool = False
    #: vectors the cache held for it when it went unchecked (None: not counted)
    cached: int | None = None

    @property
    def identity(self) -> str:
        return keyed(self.model, self.generation)

    def warning(self) -> str | None:
        """The run's warning (None: nothing to say); the identity is shown without credentials."""
        name = redact(self.model)
        if self.unchecked is not None:
            head = (f"embedder {name}: drift not checked, its server answered the canary texts with no usable vector "
                    f"({self.unchecked})" if self.answered else
                    f"embedder {name}: drift not checked, its canary texts could not be embedded ({self.unchecked})")
            if self.cached == 0:  # nothing was read from the cache: "used unchecked" would say otherwise
                return f"{head}; the cache holds no vector of it, so none was used unchecked"
            return f"{head}; its cached vectors were used unchecked"
        if not self.drifted:
            return None
        cosine = "another dimension" if self.cosine is not None and self.cosine < -0.5 else f"{self.cosine:.4f}"
        return (f"embedder {name} drifted: its canary texts embed at a lowest cosine of {cosine} to the vectors "
                f"stored for it (floor {DRIFT_FLOOR}), so the model changed under the same name; its "
                f"{self.dropped} cached vector(s) and its snapshots are not reused (canary generation "
                f"{self.generation})")


_lock = threading.Lock()  # one check at a time: an engine's query threads share the embedder


def check(backend: Any, cache: Any) -> CanaryCheck:
    """The canary check of ``backend`` against ``cache`` (an ``EmbeddingCache``), once per cache
    connection (a session's) and model, kept in ``cache.checked``; xdist workers each ask once,
    and the cache's transaction makes the first to see a drift the one that moves the generation:
    the others then match the new reference."""
    with _lock:
        if backend.identity not in cache.checked:
            cache.checked[backend.identity] = _check(backend, cache)
        return cache.checked[backend.identity]


def warnings_of(cache: Any) -> list[str]:
    """What the checks made through ``cache`` have to say (drifted, or not checked)."""
    with _lock:
        found = list(getattr(cache, "checked", {}).values())
    return [w for w in (c.warning() for c in found) if w]


def _count(cache: Any, identity: str) -> int | None:
    """The vectors ``cache`` holds for ``identity`` (None when it cannot say)."""
    count = getattr(cache, "count", None)
    try:
        return int(count(identity)) if callable(count) else None
    except Exception:  # noqa: BLE001 - a count is for the wording only
        return None


def _check(backend: Any, cache: Any) -> CanaryCheck:
    model = backend.identity
    stamp = getattr(backend, "canary_stamp", None)
    stored = cache.canaries(model)
    if stored is not None and stamp is not None and stored.stamp == stamp and stored.texts == TEXTS_SHA256:
        return CanaryCheck(model, stored.generation, fingerprint(stored.vectors))  # the same weights, the same code
    try:
        now = np.asarray(backend.embed(list(CANARY_TEXTS)), dtype=np.float32)
    except RetrievalEvalError as exc:
        generation = stored.generation if stored is not None else 0
        return CanaryCheck(model, generation, None, unchecked=mask_and_cap(str(exc).splitlines()[0], 600),
                           answered=bool(getattr(exc, "answered", False)), cached=_count(cache, keyed(model, generation)))

    def decide(stored: Stored | None) -> tuple[Stored | None, str | None, CanaryCheck]:
        """(the reference to write, the identity whose vectors to delete, the check)."""
        if stored is None or stored.texts != TEXTS_SHA256:  # the first time (or a new set of texts)
            generation = stored.generation if stored is not None else 0
            return Stored(generation, TEXTS_SHA256, stamp, now), None, CanaryCheck(model, generation, fingerprint(now))
        cosine = min_cosine(now, stored.vectors)
        if cosine >= DRIFT_FLOOR:  # the same model: the reference stays (no creep), the runtime is noted
            write = Stored(stored.generation, stored.texts, stamp, stored.vectors) if stamp != stored.stamp else None
            return write, None, CanaryCheck(model, stored.generation, fingerprint(stored.vectors), cosine)
        generation = stored.generation + 1
        return (Stored(generation, TEXTS_SHA256, stamp, now), keyed(model, stored.generation),
                CanaryCheck(model, generation, fingerprint(now), cosine, drifted=True))

    result, deleted = cache.swap_canaries(model, decide)
    return replace(result, dropped=deleted) if result.drifted else result
