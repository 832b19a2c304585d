"""What the run knew of the relevant documents besides the rankings (``Evidence``), gathered
when an engine is run on a corpus and recorded with its evaluation: what a miss's cause
(``analysis/causes.py``) rests on, so ``report`` rebuilds every cause from results.json."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any, Container, Iterable, Mapping, Sequence

from ..types import Chunk, LabeledQuery

_CHUNK_IDS = re.compile(r"(\S+?):\d+\b")


@dataclass(frozen=True)
class Evidence:
    """What the run knew of the relevant documents besides the rankings: those not in the
    corpus, those with no chunk in the engine's store, those with a chunk past the embedder's
    window (doc id -> what the lint found), and those another document duplicates (doc id ->
    the other documents, from the lint's exact and near-duplicate checks)."""

    missing: tuple[str, ...] = ()
    not_ingested: tuple[str, ...] = ()
    truncated: Mapping[str, str] = field(default_factory=dict)
    duplicates: Mapping[str, tuple[str, ...]] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return {"missing": list(self.missing), "not_ingested": list(self.not_ingested),
                "truncated": dict(sorted(self.truncated.items())),
                "duplicates": {d: list(v) for d, v in sorted(self.duplicates.items())}}

    @classmethod
    def merged(cls, parts: Iterable["Evidence | None"]) -> "Evidence":
        """The evidence of several shares of one labeled set, as one."""
        found = [p for p in parts if p is not None]
        dupes: dict[str, set[str]] = {}
        for p in found:
            for d, v in p.duplicates.items():
                dupes.setdefault(d, set()).update(v)
        return cls(tuple(sorted({d for p in found for d in p.missing})),
                   tuple(sorted({d for p in found for d in p.not_ingested})),
                   dict(sorted({d: t for p in found for d, t in p.truncated.items()}.items())),
                   {d: tuple(sorted(v)) for d, v in sorted(dupes.items())})

    @classmethod
    def from_dict(cls, d: Mapping[str, Any] | None) -> "Evidence | None":
        if d is None:
            return None
        if not isinstance(d, Mapping) or not all(isinstance(v, str) for v in d.get("truncated", {}).values()):
            raise ValueError("'evidence' must map missing, not_ingested, truncated and duplicates")
        return cls(tuple(d.get("missing", ())), tuple(d.get("not_ingested", ())), dict(d.get("truncated", {})),
                   {k: tuple(v) for k, v in d.get("duplicates", {}).items()})


def gather(queries: Iterable[LabeledQuery], corpus: Container[str] | None, chunks: Sequence[Chunk] | None = None,
           lint: Any = None) -> Evidence:
    """The evidence on the relevant documents of ``queries``: ``corpus`` (ids), the engine's
    ingested ``chunks`` and their ``lint`` where it reads a store of the plugin's."""
    relevant = sorted({d for q in queries for d, g in q.relevant.items() if g >= 1})
    missing = tuple(d for d in relevant if corpus is not None and d not in corpus)
    stored = {c.doc_id for c in chunks} if chunks is not None else None
    not_ingested = tuple(d for d in relevant if stored is not None and d not in missing and d not in stored)
    truncated: dict[str, list[str]] = {}
    duplicates: dict[str, set[str]] = {}
    wanted = set(relevant)
    for f in getattr(lint, "findings", ()) or ():
        doc = f.chunk_id.rsplit(":", 1)[0]
        if f.kind == "truncated" and doc in wanted:
            truncated.setdefault(doc, []).append(f"{f.chunk_id}: {f.detail.split(':')[0]}")
        elif f.kind in ("duplicate", "near_duplicate"):
            others = {m for m in _CHUNK_IDS.findall(f.detail)} - {doc}
            for other in others:
                if doc in wanted:
                    duplicates.setdefault(doc, set()).add(other)
                if other in wanted:
                    duplicates.setdefault(other, set()).add(doc)
    return Evidence(missing, not_ingested, {d: "; ".join(v) for d, v in sorted(truncated.items())},
                    {d: tuple(sorted(v)) for d, v in sorted(duplicates.items())})
