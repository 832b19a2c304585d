"""What the labeled set covers: the share of the corpus's documents (and chunks) that some
question judges (any grade, 0 included: a judged document is one the labels say something
about), overall and per tag, and the largest documents no question reaches. A labeled set that
judges 5% of the corpus says nothing of the other 95%, whatever its hit@5; the record lets a
rule (``coverage.documents>=0.5``) and every report say so (``report/misses.py`` words it)."""

from __future__ import annotations

from typing import Any, Iterable, Sequence

from ..data.segments import all_tags

#: the documents no question reaches that the record names, largest first
UNREACHED_SHOWN = 20


def coverage_record(docs: Sequence[Any], labeled_sets: Iterable[Any],
                    chunk_docs: Sequence[str] | None = None) -> dict[str, Any]:
    """The record results.json keeps: ``documents`` and ``chunks`` ({judged, total}), ``by_tag``
    (tag -> documents its questions judge), ``unreached`` ([doc id, words], largest first) and
    ``unreached_count``; ``chunk_docs``: the document of each ingested chunk."""
    ids = {d.doc_id for d in docs}
    sets = list(labeled_sets)
    judged = {d for labeled in sets for q in labeled.queries for d in q.relevant if d in ids}
    record: dict[str, Any] = {"documents": {"judged": len(judged), "total": len(ids)}}
    if chunk_docs:
        record["chunks"] = {"judged": sum(1 for d in chunk_docs if d in judged), "total": len(chunk_docs)}
    by_tag: dict[str, int] = {}
    for labeled in sets:
        for tag in all_tags(labeled):
            docs_of = {d for q in labeled.queries if tag in q.tags for d in q.relevant if d in ids}
            by_tag[tag] = max(by_tag.get(tag, 0), len(docs_of))
    record["by_tag"] = dict(sorted(by_tag.items()))
    unreached = sorted(((d.doc_id, len(d.content.split())) for d in docs if d.doc_id not in judged),
                       key=lambda p: (-p[1], p[0]))
    record["unreached"] = [list(p) for p in unreached[:UNREACHED_SHOWN]]
    record["unreached_count"] = len(unreached)
    return record
