"""What the labeled set covers: the share of the corpus's documents (and chunks) that some
question judges (any grade, 0 included: a judged document is one the labels say something
about), overall and per tag, and the largest documents no question reaches. A labeled set that
judges 5% of the corpus says nothing of the other 95%, whatever its hit@5; the record lets a
rule (``coverage.documents>=0.5``) and every report say so."""

from __future__ import annotations

from typing import Any, Container, Iterable, Sequence

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


def coverage_line(record: dict[str, Any]) -> str | None:
    """The table's footer line, or None without a record."""
    if not record:
        return None
    d = record["documents"]
    line = f"coverage: the questions judge {d['judged']} of {d['total']} documents ({_share(d)})"
    if "chunks" in record:
        c = record["chunks"]
        line += f" and {c['judged']} of {c['total']} chunks ({_share(c)})"
    if record.get("unreached"):
        named = ", ".join(f"{doc} ({words:,} words)" for doc, words in record["unreached"][:3])
        more = record["unreached_count"] - min(3, len(record["unreached"]))
        line += f"; the largest no question reaches: {named}" + (f" and {more} more" if more > 0 else "")
    return line


def tag_lines(record: dict[str, Any], tags: Container[str]) -> list[str]:
    """For each of ``tags`` with questions, the share of the corpus they judge."""
    total = record.get("documents", {}).get("total") or 0
    return [f"  {tag}: {n} of {total} documents ({n / total:.1%})" for tag, n in record.get("by_tag", {}).items()
            if total and tag in tags]


def _share(part: dict[str, int]) -> str:
    return f"{part['judged'] / part['total']:.1%}" if part["total"] else "n/a"
