"""What a candidate document would add to the corpus: its novelty against what is there.

``--retrieval-candidates PATH`` names documents a change would add (a corpus folder or file).
Each is split as the corpus is, and each of its chunks is compared with every existing chunk:

- **lexical** novelty: 1 - the largest Jaccard similarity of normalised token sets (lower-cased
  words of two or more characters) with an existing chunk; no model;
- **semantic** novelty, with an embedder: 1 - the largest cosine similarity of embeddings
  (batched, from the embedding cache);

a candidate of several chunks scores the mean over its chunks. Its novelty is the mean of the two
(the lexical one alone without an embedder); a shadow comparison's knowledge gain is blended with
the candidates' mean novelty at ``--retrieval-novelty-weight`` (``analysis/shadow.py``). With a judge,
each candidate is also graded against the labeled questions nearest to it in words, and the
questions it would answer (grade 2 or more) are listed.
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass, field
from typing import Any, Callable, Mapping, Sequence

from ..types import Chunk

_WORD = re.compile(r"\w\w+")
#: labeled questions nearest in words a judge grades each candidate against
QUESTIONS_PER_CANDIDATE = 5


def tokens(text: str) -> frozenset[str]:
    return frozenset(_WORD.findall(text.lower()))


@dataclass(frozen=True)
class Novelty:
    """One candidate against the corpus."""

    doc_id: str
    lexical: float
    nearest: str  # the existing chunk most like it in words (of its chunk most like one)
    semantic: float | None = None
    semantic_nearest: str | None = None
    #: (question id, grade) of the labeled questions the judge says it answers, best first
    answers: tuple[tuple[str, int], ...] = field(default=())

    @property
    def value(self) -> float:
        return self.lexical if self.semantic is None else (self.lexical + self.semantic) / 2

    def describe(self) -> str:
        text = f"{self.doc_id}: novelty {self.value:.2f} (lexical {self.lexical:.2f}, nearest {self.nearest}"
        if self.semantic is not None:
            text += f"; semantic {self.semantic:.2f}, nearest {self.semantic_nearest}"
        text += ")"
        if self.answers:
            text += "; would answer " + ", ".join(f"{q} (grade {g})" for q, g in self.answers)
        return text

    def to_dict(self) -> dict[str, Any]:
        return {"doc_id": self.doc_id, "lexical": self.lexical, "nearest": self.nearest, "semantic": self.semantic,
                "semantic_nearest": self.semantic_nearest, "answers": [list(a) for a in self.answers]}

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> "Novelty":
        return cls(d["doc_id"], float(d["lexical"]), d["nearest"], d.get("semantic"), d.get("semantic_nearest"),
                   tuple((q, int(g)) for q, g in d.get("answers", [])))


def _lexical(candidate: Sequence[Chunk], existing: Sequence[Chunk], index: Mapping[str, list[int]],
             sets: Sequence[frozenset[str]]) -> tuple[float, str]:
    sims, nearest, best_overall = [], "", -1.0
    for chunk in candidate:
        mine = tokens(chunk.text)
        overlap: Counter[int] = Counter()
        for t in mine:
            overlap.update(index.get(t, ()))
        best, at = 0.0, -1
        for i, inter in overlap.items():
            sim = inter / (len(mine) + len(sets[i]) - inter)
            if sim > best:
                best, at = sim, i
        sims.append(best)
        if best > best_overall and at >= 0:
            best_overall, nearest = best, existing[at].chunk_id
    return 1.0 - sum(sims) / len(sims), nearest


def novelty(candidates: Sequence[Chunk], existing: Sequence[Chunk],
            embed: Callable[[Sequence[str]], Any] | None = None) -> list[Novelty]:
    """Each candidate document's novelty (its chunks ``candidates``) against ``existing`` chunks."""
    import numpy as np

    sets = [tokens(c.text) for c in existing]
    index: dict[str, list[int]] = {}
    for i, s in enumerate(sets):
        for t in s:
            index.setdefault(t, []).append(i)
    by_doc: dict[str, list[Chunk]] = {}
    for c in candidates:
        by_doc.setdefault(c.doc_id, []).append(c)
    semantic: dict[str, tuple[float, str]] = {}
    if embed is not None and existing and candidates:
        def unit(texts):
            v = np.asarray(embed(texts), dtype=np.float64)
            return v / np.maximum(np.linalg.norm(v, axis=1, keepdims=True), 1e-12)

        corpus_vectors, mine = unit([c.text for c in existing]), unit([c.text for c in candidates])
        cosine = mine @ corpus_vectors.T
        best, at = cosine.max(axis=1), cosine.argmax(axis=1)
        for doc, chunks in by_doc.items():
            rows = [i for i, c in enumerate(candidates) if c.doc_id == doc]
            top = max(rows, key=lambda i: best[i])
            semantic[doc] = (float(1.0 - np.clip(best[rows], -1, 1).mean()), existing[int(at[top])].chunk_id)
    out = []
    for doc, chunks in by_doc.items():
        lexical, nearest = _lexical(chunks, existing, index, sets) if existing else (1.0, "")
        sem = semantic.get(doc)
        out.append(Novelty(doc, lexical, nearest, sem[0] if sem else None, sem[1] if sem else None))
    return out


def nearest_questions(candidate_text: str, questions: Sequence[tuple[str, str]],
                      k: int = QUESTIONS_PER_CANDIDATE) -> list[str]:
    """The ids of the ``k`` labeled questions (id, text) sharing most words with a candidate."""
    mine = tokens(candidate_text)
    scored = [(len(mine & tokens(text)) / max(1, len(tokens(text))), qid) for qid, text in questions]
    return [qid for score, qid in sorted(scored, key=lambda p: (-p[0], p[1]))[:k] if score > 0]
