"""Freshness: which documents are out of date on a given day, and which are versions of one thing.

A knowledge base changes: a price list is replaced, a policy expires. A retriever that ranks the
old version first answers wrong while every relevance measure stays green. Documents say what
they are with four optional metadata fields (JSON corpus: top-level fields; BEIR: top-level or
inside ``metadata``):

- ``version_key``: documents that are versions of the same thing share it;
- ``valid_from`` / ``valid_until``: ISO dates (``2026-01-01``), both inclusive;
- ``superseded_by``: the doc id of the document that replaces this one.

On the run's "as of" day (``--retrieval-as-of``, default today) a document is **stale** when it
is marked superseded by a document of the corpus that is in effect that day (its ``valid_from``,
if any, not after the day: a successor that starts later replaces nothing yet), when a newer
version of its key is in effect (a document with the same ``version_key`` whose ``valid_from`` is
later than this one's, or this one has none, and not after the as-of day), or when the day is
outside its validity. ``superseded_by`` may chain but not loop. Two
versions of one key in the same top k are a **conflict**. ``ir.measures`` names the measures
(``freshness.stale_free@k``, ``freshness.conflict_free@k``); ``evaluation.results`` computes them.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass, field
from typing import Any, Iterable, Mapping, Sequence

from ..errors import RetrievalEvalError

FIELDS = ("version_key", "valid_from", "valid_until", "superseded_by")


def parse_day(text: Any) -> dt.date:
    """An ISO date, ``YYYY-MM-DD``; ValueError saying what was expected otherwise."""
    if not isinstance(text, str):
        raise ValueError(f"must be a date written YYYY-MM-DD, got {text!r}")
    try:
        return dt.date.fromisoformat(text.strip())
    except ValueError:
        raise ValueError(f"must be a date written YYYY-MM-DD, got {text!r}") from None


def field_problem(meta: Mapping[str, Any]) -> tuple[str, str] | None:
    """(field, what is wrong) for the first bad freshness field of one document, or None."""
    for name in ("version_key", "superseded_by"):
        value = meta.get(name)
        if value is not None and not (isinstance(value, str) and value.strip()):
            return name, f"must be a non-empty string, got {value!r}"
    days = {}
    for name in ("valid_from", "valid_until"):
        if meta.get(name) is not None:
            try:
                days[name] = parse_day(meta[name])
            except ValueError as exc:
                return name, str(exc)
    if len(days) == 2 and days["valid_from"] > days["valid_until"]:
        return "valid_until", f"{meta['valid_until']} is before valid_from {meta['valid_from']}"
    return None


def is_versioned(meta: Mapping[str, Any]) -> bool:
    return any(meta.get(name) is not None for name in FIELDS)


@dataclass(frozen=True)
class Freshness:
    """The corpus's versioned documents on one day: stale ones with why, and version keys."""

    as_of: str  # ISO date
    stale: Mapping[str, str] = field(default_factory=dict)  # doc id -> reason
    versions: Mapping[str, str] = field(default_factory=dict)  # doc id -> version_key

    @classmethod
    def of(cls, docs: Iterable[Any], as_of: dt.date) -> "Freshness | None":
        """None when no document carries a freshness field (the measures then do not apply)."""
        docs = [d for d in docs if is_versioned(d.meta)]
        if not docs:
            return None
        start = {d.doc_id: parse_day(d.meta["valid_from"]) for d in docs if d.meta.get("valid_from")}
        by_key: dict[str, list[str]] = {}
        for d in docs:
            if d.meta.get("version_key"):
                by_key.setdefault(d.meta["version_key"], []).append(d.doc_id)
        stale: dict[str, str] = {}
        for d in docs:
            meta, reasons = d.meta, []
            newer = meta.get("superseded_by")
            if newer and not (newer in start and start[newer] > as_of):  # the successor's validity decides
                reasons.append(f"superseded by {newer}")
            for other in by_key.get(meta.get("version_key") or "", ()):
                if other == d.doc_id or other == newer or other not in start or start[other] > as_of:
                    continue
                if d.doc_id not in start or start[other] > start[d.doc_id]:
                    reasons.append(f"superseded by {other}, a newer version of {meta['version_key']}")
            if meta.get("valid_until") and parse_day(meta["valid_until"]) < as_of:
                reasons.append(f"expired {meta['valid_until']}")
            if d.doc_id in start and start[d.doc_id] > as_of:
                reasons.append(f"not valid until {meta['valid_from']}")
            if reasons:
                stale[d.doc_id] = "; ".join(reasons)
        return cls(as_of.isoformat(), dict(sorted(stale.items())),
                   {d.doc_id: d.meta["version_key"] for d in sorted(docs, key=lambda d: d.doc_id)
                    if d.meta.get("version_key")})

    # --- per query --------------------------------------------------------------------------------
    def stale_hits(self, ranked: Sequence[str], k: int) -> list[str]:
        return [d for d in ranked[:k] if d in self.stale]

    def conflicts(self, ranked: Sequence[str], k: int) -> list[tuple[str, ...]]:
        """Version keys with two or more documents in the top k, as the documents of each."""
        seen: dict[str, list[str]] = {}
        for d in ranked[:k]:
            key = self.versions.get(d)
            if key is not None and d not in seen.setdefault(key, []):
                seen[key].append(d)
        return [tuple(v) for v in seen.values() if len(v) > 1]

    def value(self, kind: str, ranked: Sequence[str], k: int) -> float:
        """1.0 when the top k holds no stale document (``stale_free``) or no two versions of
        one key (``conflict_free``), else 0.0."""
        if kind == "stale_free":
            return 0.0 if self.stale_hits(ranked, k) else 1.0
        if kind == "conflict_free":
            return 0.0 if self.conflicts(ranked, k) else 1.0
        raise ValueError(f"unknown freshness measure {kind!r}")

    # --- serialisation ----------------------------------------------------------------------------
    def to_dict(self) -> dict[str, Any]:
        return {"as_of": self.as_of, "stale": dict(self.stale), "versions": dict(self.versions)}

    @classmethod
    def from_dict(cls, d: Mapping[str, Any] | None) -> "Freshness | None":
        if not d:
            return None
        parse_day(d["as_of"])
        if not all(isinstance(v, str) for v in {**d.get("stale", {}), **d.get("versions", {})}.values()):
            raise ValueError("freshness: reasons and version keys must be strings")
        return cls(d["as_of"], dict(d.get("stale", {})), dict(d.get("versions", {})))


def check_references(docs: Iterable[Any], source: str = "", origin: Mapping[str, str] | None = None) -> None:
    """A ``superseded_by`` naming no document of the corpus, the document itself or a loop back
    to it is an error: the marking would say nothing, a typo would hide a stale document, and in a
    loop every version says another one replaces it, so none is current. ``origin`` (doc id ->
    its file, or file:line) lets the message name the document's own file instead of ``source``."""
    docs = list(docs)
    ids = {d.doc_id for d in docs}

    def where(doc_id: str) -> str | None:
        return (origin or {}).get(doc_id) or source or None

    for d in docs:
        target = d.meta.get("superseded_by")
        if target and target not in ids:
            raise RetrievalEvalError(f"document '{d.doc_id}': superseded_by names '{target}', which is not a "
                                     "document of the corpus", path=where(d.doc_id), field="superseded_by")
        if target == d.doc_id:
            raise RetrievalEvalError(f"document '{d.doc_id}': superseded_by names the document itself",
                                     path=where(d.doc_id), field="superseded_by")
    loop = _first_cycle({d.doc_id: d.meta["superseded_by"] for d in docs if d.meta.get("superseded_by")})
    if loop:
        shown = " -> ".join(loop if len(loop) <= 9 else [*loop[:4], "...", *loop[-4:]])
        raise RetrievalEvalError(f"superseded_by goes round in a loop of {len(loop) - 1} documents ({shown}), "
                                 "so none is current: remove superseded_by from the newest one",
                                 path=where(loop[0]), field="superseded_by")


def _first_cycle(successor: Mapping[str, str]) -> list[str]:
    """The first loop of ``id -> superseded_by`` links, as ids ending where they start, or []."""
    done: set[str] = set()
    for first in successor:
        path: dict[str, int] = {}  # id -> its place on this walk
        at = first
        while at in successor and at not in done and at not in path:
            path[at] = len(path)
            at = successor[at]
        if at in path:
            return [*list(path)[path[at]:], at]
        done.update(path)
    return []
