"""The team's own search, two ways, as teams run it:

- ``bm25``: a plain function over title, description and body, answering ``{doc_id: score}``;
- ``haystack_pipeline()``: a Haystack pipeline (cleaner, splitter, in-memory BM25 over chunks)
  of the kind a team runs in production; its chunks carry their document's id in ``meta``;
- ``chat_search``: the help desk's chat assistant's search, which rewrites a follow-up ("and
  what if I swap mobiles?") by putting the conversation's first question before it.

None knows about pytest-retrieval-eval: ``conftest.py`` plugs them in with one adapter each.
"""

from __future__ import annotations

import json
import math
import re
from collections import Counter
from functools import lru_cache
from pathlib import Path

KB = Path(__file__).parent / "kb"
WORD = re.compile(r"[a-z0-9]+")
STOP = frozenset("a an and are at be can do for how i if in is it my of on or the to what when where who why will with you your".split())


def words(text: str) -> list[str]:
    return [w for w in WORD.findall(text.lower()) if w not in STOP]


def articles() -> list[dict]:
    return [json.loads(p.read_text(encoding="utf-8")) for p in sorted(KB.glob("*.json"))]


class BM25:
    def __init__(self, docs: list[dict], k1: float = 1.2, b: float = 0.75) -> None:
        self.k1, self.b = k1, b
        self.ids = [d["doc_id"] for d in docs]
        self.tf = [Counter(words(" ".join((d.get("title", ""), d.get("description", ""), d["content"])))) for d in docs]
        self.lengths = [sum(tf.values()) for tf in self.tf]
        self.avg = sum(self.lengths) / max(len(self.lengths), 1)
        df = Counter(w for tf in self.tf for w in tf)
        self.idf = {w: math.log(1 + (len(docs) - f + 0.5) / (f + 0.5)) for w, f in df.items()}

    def scores(self, query: str) -> dict[str, float]:
        out = {}
        for doc_id, tf, length in zip(self.ids, self.tf, self.lengths):
            s = sum(self.idf[t] * tf[t] * (self.k1 + 1) / (tf[t] + self.k1 * (1 - self.b + self.b * length / self.avg))
                    for t in words(query) if tf.get(t))
            if s > 0:
                out[doc_id] = s
        return out


@lru_cache(maxsize=1)
def _index() -> BM25:
    return BM25(articles())


def bm25(query: str, k: int) -> dict[str, float]:
    """The team's search function: the best ``k`` articles with their scores."""
    scores = _index().scores(query)
    return dict(sorted(scores.items(), key=lambda kv: (-kv[1], kv[0]))[:k])


def haystack_pipeline(split_length: int = 60):
    """The team's Haystack query pipeline over an in-memory store of article chunks."""
    from haystack import Document, Pipeline
    from haystack.components.preprocessors import DocumentSplitter
    from haystack.components.retrievers.in_memory import InMemoryBM25Retriever
    from haystack.document_stores.in_memory import InMemoryDocumentStore

    splitter = DocumentSplitter(split_by="word", split_length=split_length, split_overlap=10)
    docs = [Document(content=f"{a['title']}\n\n{a['content']}", meta={"doc_id": a["doc_id"]}) for a in articles()]
    store = InMemoryDocumentStore()
    store.write_documents(splitter.run(documents=docs)["documents"])
    pipeline = Pipeline()
    pipeline.add_component("retriever", InMemoryBM25Retriever(document_store=store, top_k=20))
    return pipeline


def rewrite(turns) -> str:
    """The chat assistant's query rewrite: the user's latest turn, after the conversation's first
    question when there was one (a follow-up rarely names its subject; the first question does).
    ``turns`` are the messages so far, oldest first, each with ``role`` and ``text``."""
    asked = [t.text for t in turns if t.role == "user"]
    return asked[-1] if len(asked) == 1 else f"{asked[0]} {asked[-1]}"


def chat_search(turns, k: int) -> dict[str, float]:
    """The chat assistant's search: the rewritten question through ``bm25``."""
    return bm25(rewrite(turns), k)
