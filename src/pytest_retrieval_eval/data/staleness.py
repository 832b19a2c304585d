"""Is the labeled set still about this corpus? Compare each question's source fingerprint with
the corpus, and name what changed, so nobody scores questions against documents that moved on."""

from __future__ import annotations

from dataclasses import dataclass, field

from .corpus import Corpus
from .labeled import LabeledSet


def regenerate_command(corpus_path: str, questions_path: str) -> str:
    return f"python -m pytest_retrieval_eval generate --corpus {corpus_path} --questions {questions_path}"


@dataclass
class Staleness:
    changed: dict[str, list[str]] = field(default_factory=dict)  # doc id -> query ids
    deleted: dict[str, list[str]] = field(default_factory=dict)  # doc id -> query ids (gold or source gone)

    def __bool__(self) -> bool:
        return bool(self.changed or self.deleted)

    @property
    def dead_queries(self) -> set[str]:
        """Queries that can only ever miss: a judged document no longer exists."""
        return {q for qs in self.deleted.values() for q in qs}

    def describe(self, labeled_name: str, corpus_name: str, command: str) -> str:
        lines = [f"{labeled_name} is stale against the corpus {corpus_name}:"]
        for kind, docs in (("changed", self.changed), ("deleted", self.deleted)):
            for doc, queries in sorted(docs.items()):
                lines.append(f"  {kind}: {doc} ({len(queries)} question{'s' * (len(queries) != 1)}: {', '.join(queries[:4])}"
                             f"{', ...' if len(queries) > 4 else ''})")
        lines.append(f"Regenerate the questions of what changed: {command}")
        lines.append("or evaluate anyway with --retrieval-stale=warn (questions about deleted documents are then left out)")
        return "\n".join(lines)


def check(labeled: LabeledSet, corpus: Corpus) -> Staleness:
    """Doc-level check (no chunking needed): a question is stale when its source document's
    fingerprint changed, and dead when a judged document (or its source) is gone."""
    out = Staleness()
    for q in labeled:
        gone = sorted({d for d in q.relevant if d not in corpus} | (
            {q.source["doc_id"]} if q.source.get("doc_id") and q.source["doc_id"] not in corpus else set()))
        for doc in gone:
            out.deleted.setdefault(doc, []).append(q.query_id)
        if gone:
            continue
        source, expected = q.source.get("doc_id"), q.source.get("doc_sha256")
        if source and expected and corpus.get(source).fingerprint != expected:
            out.changed.setdefault(source, []).append(q.query_id)
    return out
