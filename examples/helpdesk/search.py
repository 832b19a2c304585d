"""The team's own search: BM25 over title, description and body, in plain Python.

Stands for whatever a team already runs (a function, an HTTP service, a retriever); the plugin
only needs ``name`` and ``retrieve(query, k) -> [doc_id, ...]``.
"""

from __future__ import annotations

import math
import re
from collections import Counter

WORD = re.compile(r"[a-z0-9]+")
STOP = frozenset("a an and are at be can do for how i if in is it my of on or the to what when where who why will with you your".split())


def words(text: str) -> list[str]:
    return [w for w in WORD.findall(text.lower()) if w not in STOP]


class HelpdeskSearch:
    name = "helpdesk-bm25"

    def __init__(self, docs, k1: float = 1.2, b: float = 0.75) -> None:
        self.k1, self.b = k1, b
        self.ids = [d.doc_id for d in docs]
        self.tf = [Counter(words(" ".join((d.title, d.description, d.content)))) for d in docs]
        self.lengths = [sum(tf.values()) for tf in self.tf]
        self.avg = sum(self.lengths) / max(len(self.lengths), 1)
        df = Counter(w for tf in self.tf for w in tf)
        n = len(docs)
        self.idf = {w: math.log(1 + (n - f + 0.5) / (f + 0.5)) for w, f in df.items()}

    def describe(self) -> dict:
        return {"engine": "bm25", "k1": self.k1, "b": self.b, "fields": "title+description+body"}

    def retrieve(self, query: str, k: int) -> list[str]:
        terms = words(query)
        scores = []
        for doc_id, tf, length in zip(self.ids, self.tf, self.lengths):
            s = 0.0
            for t in terms:
                f = tf.get(t, 0)
                if f:
                    s += self.idf[t] * f * (self.k1 + 1) / (f + self.k1 * (1 - self.b + self.b * length / self.avg))
            if s > 0:
                scores.append((s, doc_id))
        return [d for _, d in sorted(scores, key=lambda x: (-x[0], x[1]))][:k]
