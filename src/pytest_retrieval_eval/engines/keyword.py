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

from typing import Iterable, Sequence

from ..data.terms import normalize, tokenize  # noqa: F401  (tokenize: re-exported)
from ..types import Doc

WEIGHTS: tuple[tuple[str, float], ...] = (("title", 4.0), ("description", 2.0), ("filename", 3.0))
#: terms whose occurrences are remembered (then forgotten all at once)
MEMO_TERMS = 4096


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
    """Scores documents on title, description and filename only.

    The rules are ``field_score``'s, applied to all documents at once: each field kind's texts
    are joined into one string (normalised text holds no newline, and no term or phrase does),
    every occurrence of a term is found in one scan of it (non-overlapping, left to right, as
    ``str.count``), and occurrences are mapped to their documents by offset. Scores are sums of
    multiples of 0.25 times small weights, so the order of additions cannot change them."""

    def __init__(self, docs: Iterable[Doc], *, name: str = "keyword") -> None:
        import numpy as np

        self.name = name
        docs = list(docs)
        self._ids = [d.doc_id for d in docs]
        self._id_rank = np.empty(len(docs), dtype=np.int64)  # position in doc_id order, for ties
        self._id_rank[sorted(range(len(docs)), key=self._ids.__getitem__)] = np.arange(len(docs))
        self._kinds = []
        for field, weight in WEIGHTS:
            texts = [normalize(getattr(d, field)) for d in docs]
            starts = np.cumsum([0] + [len(t) + 1 for t in texts[:-1]]) if texts else np.zeros(0, dtype=np.int64)
            self._kinds.append(("\n".join(texts), starts, weight))
        self._memo: dict[tuple[int, str], tuple] = {}

    def describe(self) -> dict:
        return {"engine": "keyword", "fields": "title 4, description 2, filename 3", "reads_body": False}

    def _occurrences(self, kind: int, needle: str):
        """(documents, counts) of ``needle`` in one field kind; remembered, since questions
        share most of their terms."""
        import numpy as np

        hit = self._memo.get((kind, needle))
        if hit is None:
            text, starts, _ = self._kinds[kind]
            at = np.fromiter(_starts(text, needle), dtype=np.int64)
            docs, counts = np.unique(np.searchsorted(starts, at, side="right") - 1, return_counts=True)
            if len(self._memo) >= MEMO_TERMS:
                self._memo.clear()
            hit = self._memo[(kind, needle)] = (docs, counts)
        return hit

    def _score_array(self, query: str):
        import numpy as np

        phrase, terms = normalize(query), tokenize(query)
        total = np.zeros(len(self._ids), dtype=np.float64)
        for kind, (text, _, w) in enumerate(self._kinds):
            if not text.strip("\n"):
                continue  # no document has this field
            if phrase:
                docs, _ = self._occurrences(kind, phrase)
                total[docs] += 8.0 * w
            for term in terms:
                docs, counts = self._occurrences(kind, term)
                total[docs] += w + 0.25 * w * counts
        return total

    def scores(self, query: str) -> dict[str, float]:
        return dict(zip(self._ids, self._score_array(query).tolist()))

    def retrieve_stages(self, query: str, k: int):
        """One leg, ``metadata``: every document a term of the question occurs in the title,
        description or filename of. A relevant document outside it shares no term with them,
        which is what its miss is attributed to ("never a candidate")."""
        from .base import Stages

        matched = list(self.retrieve(query, len(self._ids)))  # every document scoring above 0
        return Stages(matched[: max(k, 0)], {"metadata": matched})

    def retrieve(self, query: str, k: int) -> Sequence[str]:
        import numpy as np

        total = self._score_array(query)
        keep = np.arange(len(self._ids)) if not normalize(query) else np.flatnonzero(total > 0)
        order = keep[np.lexsort((self._id_rank[keep], -total[keep]))][: max(k, 0)]  # score desc, then doc_id
        return [self._ids[i] for i in order.tolist()]


def _starts(text: str, needle: str):
    """Where ``needle`` occurs in ``text``, left to right, without overlaps (as a regex of the
    literal finds it, without compiling one per question: most of a question's phrase is new)."""
    step, at = len(needle) or 1, text.find(needle)
    while at >= 0:
        yield at
        at = text.find(needle, at + step)
