"""A faithful port of the production knowledge-base service's metadata-only keyword scorer.

This is the baseline every better engine is compared against, so its rules are kept exactly,
quirks included:

- text is normalised: lowercase, runs of ``_``/``-`` become one space, whitespace collapsed,
  trimmed; the query is tokenised into unique terms of 2+ characters, split on anything that is
  not an ASCII letter or digit (``[^a-z0-9]+`` after lowercasing, as the service does: ``café``
  yields the term ``caf``, ``東京`` none);
- each field scores 0 when empty; otherwise ``8*w`` if the whole normalised query occurs in it,
  plus, for every term that occurs in it, ``w + 0.25*w*n`` where ``n`` counts the term's
  non-overlapping occurrences (substring matches, as the service does);
- weights: title 4, description 2, filename 3; the body is never read;
- documents scoring 0 are dropped unless the query is empty (then every document scores 0);
  order is score descending, then doc_id ascending.
"""

from __future__ import annotations

import re
from typing import Iterable, Sequence

from ..types import Doc

WEIGHTS: tuple[tuple[str, float], ...] = (("title", 4.0), ("description", 2.0), ("filename", 3.0))

_DASHES = re.compile(r"[_-]+")
_SPACES = re.compile(r"\s+")
_NOT_ALNUM = re.compile(r"[^a-z0-9]+")  # ASCII only, as production


def normalize(text: str) -> str:
    return _SPACES.sub(" ", _DASHES.sub(" ", text.lower())).strip()


def tokenize(text: str) -> list[str]:
    """Unique terms of 2+ characters, in first-seen order."""
    terms = (t for t in _NOT_ALNUM.split(normalize(text)) if len(t) >= 2)
    return list(dict.fromkeys(terms))


def field_score(field: str, phrase: str, terms: Iterable[str], weight: float) -> float:
    """Score one normalised field; see the module docstring for the rules."""
    if not field:
        return 0.0
    score = 8.0 * weight if phrase and phrase in field else 0.0
    for term in terms:
        n = field.count(term)
        if n:
            score += weight + 0.25 * weight * n
    return score


class KeywordEngine:
    """Scores documents on title, description and filename only."""

    def __init__(self, docs: Iterable[Doc], *, name: str = "keyword") -> None:
        self.name = name
        self._fields = [
            (d.doc_id, tuple((normalize(getattr(d, f)), w) for f, w in WEIGHTS)) for d in docs
        ]

    def describe(self) -> dict:
        return {"engine": "keyword", "fields": "title 4, description 2, filename 3", "reads_body": False}

    def scores(self, query: str) -> dict[str, float]:
        phrase = normalize(query)
        terms = tokenize(query)
        return {
            doc_id: sum(field_score(text, phrase, terms, w) for text, w in fields)
            for doc_id, fields in self._fields
        }

    def retrieve(self, query: str, k: int) -> Sequence[str]:
        scores = self.scores(query)
        keep_zero = not normalize(query)
        ranked = sorted(
            ((s, d) for d, s in scores.items() if keep_zero or s > 0), key=lambda sd: (-sd[0], sd[1])
        )
        return [d for _, d in ranked[:k]]
