"""Measure names: parsing, validation and the canonical spelling that is a measure's identity.

Like ir_measures, a measure is a small value object; ``Measure.parse("nDCG@10")`` and
``Measure.parse("ndcg_cut_10")`` are the same measure, spelled ``ndcg@10``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from ..errors import RetrievalEvalError

#: family -> (needs a cutoff, trec_eval name used in docs and by the oracle tests)
FAMILIES: dict[str, tuple[bool, str]] = {
    "hit": (True, "success"),
    "mrr": (False, "recip_rank"),
    "recall": (True, "recall"),
    "precision": (True, "P"),
    "ndcg": (False, "ndcg_cut"),
    "map": (False, "map"),
    # from the corpus's document versions, not from qrels (see data/freshness.py)
    "freshness.stale_free": (True, ""),
    "freshness.conflict_free": (True, ""),
}

_ALIASES = {
    "hit": "hit",
    "hits": "hit",
    "success": "hit",
    "mrr": "mrr",
    "rr": "mrr",
    "recip_rank": "mrr",
    "recall": "recall",
    "r": "recall",
    "precision": "precision",
    "p": "precision",
    "ndcg": "ndcg",
    "ndcg_cut": "ndcg",
    "map": "map",
    "ap": "map",
    "map_cut": "map",
}

_PATTERN = re.compile(r"^\s*([a-z_]+?)(?:(?:@|_|\.)([+-]?\d+))?\s*$")
_FRESHNESS = re.compile(r"^\s*freshness\.(stale_free|conflict_free)(?:@([+-]?\d+))?\s*$")


@dataclass(frozen=True, order=True)
class Measure:
    """A retrieval measure; ``k`` is the rank cutoff, ``None`` for the whole ranking."""

    family: str
    k: int | None = None

    def __post_init__(self) -> None:
        if self.family not in FAMILIES:
            raise RetrievalEvalError(
                f"unknown measure family '{self.family}'; known: {', '.join(FAMILIES)}"
            )
        needs_k, _ = FAMILIES[self.family]
        if needs_k and self.k is None:
            raise RetrievalEvalError(f"measure '{self.family}' needs a cutoff, e.g. {self.family}@10")
        if self.k is not None and (not isinstance(self.k, int) or self.k < 1):
            raise RetrievalEvalError(
                f"measure cutoff must be a whole number >= 1, got {self.family}@{self.k}"
            )

    @property
    def freshness(self) -> bool:
        """Judged on the corpus's document versions rather than on relevance labels."""
        return self.family.startswith("freshness.")

    @property
    def name(self) -> str:
        return self.family if self.k is None else f"{self.family}@{self.k}"

    def __str__(self) -> str:
        return self.name

    @classmethod
    def parse(cls, text: "str | Measure") -> "Measure":
        """Parse ``hit@5``, ``MRR``, ``nDCG@10``, ``P@10``, ``success_5``, ``recall.100`` ..."""
        if isinstance(text, Measure):
            return text
        if not isinstance(text, str):
            raise RetrievalEvalError(f"a measure name must be a string, got {text!r}")
        m = _PATTERN.match(text.lower())
        family = _ALIASES.get(m.group(1)) if m else None
        fresh = _FRESHNESS.match(text.lower())
        if fresh is not None:
            m, family = fresh, f"freshness.{fresh.group(1)}"
        if m is None or family is None:
            known = ", ".join(["hit@k", "mrr", "mrr@k", "recall@k", "precision@k", "ndcg@k", "map", "map@k",
                               "freshness.stale_free@k", "freshness.conflict_free@k"])
            raise RetrievalEvalError(f"unknown measure '{text}'; known measures: {known}")
        k = int(m.group(2)) if m.group(2) is not None else None
        if k is not None and k < 1:
            raise RetrievalEvalError(
                f"measure '{text}': the cutoff must be a whole number >= 1 (got {k})"
            )
        return cls(family, k)


def parse_measures(items) -> list[Measure]:
    """Parse and de-duplicate, keeping the caller's order."""
    out: list[Measure] = []
    for item in items:
        m = Measure.parse(item)
        if m not in out:
            out.append(m)
    return out


#: The measures a summary table shows unless configured otherwise.
DEFAULT_TABLE_MEASURES = tuple(
    Measure.parse(n) for n in ("hit@1", "hit@3", "hit@5", "hit@10", "hit@20", "mrr")
)

#: The weights of a shadow comparison's knowledge gain unless configured (``run/shadow.py``):
#: finding the gold documents counts twice as much as ordering them.
DEFAULT_GAIN_WEIGHTS = "recall@5=2,ndcg@5=1"
