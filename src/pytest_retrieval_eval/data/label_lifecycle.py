"""A labeled entry's life in the questions cache once it is there: who wrote it (``IMPORTED``,
``is_generated``), the fingerprints it records of its judged documents (``stamp``, ``label stamp``),
its quotes checked against their documents, and its removal (``label remove``).

Every imported or stamped entry records the fingerprint of each judged document
(``source.judged_sha256``), so the staleness check sees a judged document change; an entry
without any fingerprint is *unchecked* and said so.
"""

from __future__ import annotations

import difflib
import unicodedata
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Iterable, Sequence

from ..errors import RetrievalEvalError
from ..types import LabeledQuery
from .labeled import LabeledSet

#: how an entry says who labeled it
IMPORTED = "imported"


def did_you_mean(doc_id: str, known: Iterable[str]) -> str:
    """The nearest known id, as `` (did you mean 'x'?)``; an id that differs only in Unicode
    normalisation is said so, since the two print identically."""
    known = list(known)
    nfc = unicodedata.normalize("NFC", doc_id)
    same = next((k for k in known if k != doc_id and unicodedata.normalize("NFC", k) == nfc), None)
    if same is not None:
        return (f" ('{doc_id}' differs from the corpus id '{same}' only in Unicode normalisation "
                f"({_form(doc_id)} vs {_form(same)}))")
    close = difflib.get_close_matches(doc_id, known, n=1, cutoff=0.6)
    return f" (did you mean '{close[0]}'?)" if close else ""


def _form(text: str) -> str:
    return next((f for f in ("NFC", "NFD") if unicodedata.is_normalized(f, text)), "mixed")


def unknown_ids_message(ids: Sequence[str], known: Iterable[str], where: str) -> str:
    known = list(known)
    parts = [f"unknown document id '{d}'{did_you_mean(d, known)}" for d in ids]
    return f"{where}: {'; '.join(parts)}"


def fingerprinted(q: LabeledQuery) -> set[str]:
    """The judged documents whose fingerprint the entry records."""
    return set(fingerprints_of(q))


def fingerprints_of(q: LabeledQuery) -> dict[str, str]:
    """doc id -> the fingerprint the entry records of it (``judged_sha256``, else the source
    chunk's document's ``doc_sha256``), as the staleness check reads them."""
    out = dict(q.source.get("judged_sha256") or {})
    if q.source.get("doc_id") and q.source.get("doc_sha256"):
        out.setdefault(q.source["doc_id"], q.source["doc_sha256"])
    return out


def is_generated(q: LabeledQuery) -> bool:
    """A per-chunk question, which ``generate`` maintains (drops when stale, replaces with
    ``--regenerate``): the generator's own, or one written in its shape, as the bundled set is.
    Imported labels and entries without a source chunk are the team's: generate never touches them."""
    return bool(q.source.get("chunk_id")) and not str(q.source.get("by") or "").startswith(IMPORTED)


def unchecked(labeled: Iterable[LabeledQuery]) -> list[str]:
    """Entries that record no fingerprint: nothing would notice their documents changing."""
    return [q.query_id for q in labeled if not fingerprinted(q)]


@dataclass
class Stamped:
    """What ``stamp`` made: the set, doc id -> the questions that lost its judgment (deleted),
    question id -> the judgments it still had when it went (a question left with no judged
    document of grade >= 1 is removed, and a removal is always named), and the questions whose
    recorded fingerprint of a judged document differed (stale, now re-stamped as current)."""

    labeled: LabeledSet
    lost: dict[str, list[str]] = field(default_factory=dict)
    removed: dict[str, dict[str, int]] = field(default_factory=dict)
    restamped: list[str] = field(default_factory=list)

    def lines(self) -> list[str]:
        """Each dropped judgment and each removed question, by name."""
        out = [f"deleted {doc}: its judgment dropped from {', '.join(qs)}" for doc, qs in sorted(self.lost.items())]
        for qid, rest in self.removed.items():
            deleted = sorted(d for d, qs in self.lost.items() if qid in qs)
            also = "".join(f"; its judgment of {d} (grade {g}) dropped with it" for d, g in sorted(rest.items()))
            out.append(f"removed {qid}: no judged document of grade >= 1 left (deleted: {', '.join(deleted)}){also}")
        return out


def _left(q: LabeledQuery, lost: dict[str, list[str]]) -> dict[str, int]:
    return {d: g for d, g in q.relevant.items() if q.query_id not in lost.get(d, ())}


def stamp(labeled: LabeledSet, corpus: Any, *, by: str | None = None, origin: str | None = None,
          drop_deleted: bool = False, command: str = "") -> Stamped:
    """Every entry with the current fingerprint of each judged document, and the judgments of
    deleted documents dropped when asked (``drop_deleted``; a question left with none goes too).
    An id the corpus never had stops it, naming the file and line it came from (``origin``,
    ``source["_line"]``), the entry and the nearest id; a deleted one stops it too unless dropped,
    listing who lost it, who would go, and ``command``."""
    lost: dict[str, list[str]] = {}
    everything = labeled.everything if isinstance(labeled, LabeledSet) else tuple(labeled)  # unanswerable turns too
    for q in everything:  # deleted: fingerprinted once, so it existed; unknown: a typo, usually
        for d in sorted(d for d in q.relevant if d not in corpus and d in fingerprinted(q)):
            lost.setdefault(d, []).append(q.query_id)
    going = [q.query_id for q in everything if q.answerable and not any(g >= 1 for g in _left(q, lost).values())]
    if lost and not drop_deleted:
        listed = "; ".join(f"{d} ({', '.join(qs)})" for d, qs in sorted(lost.items()))
        who = f" ({', '.join(going)} would have none left)" if going else ""
        raise RetrievalEvalError(f"{sum(map(len, lost.values()))} judgment(s) of deleted documents: {listed}; drop "
                                 f"them (a question left with no judged document goes too{who}) with: "
                                 f"{command} --drop-deleted"
                                 if command else f"judged documents deleted from the corpus: {listed}",
                                 path=origin or labeled.provenance.get("path"))
    out, removed, restamped = [], {}, []
    for q in everything:
        source = {k: v for k, v in q.source.items() if not k.startswith("_")}
        line = q.source.get("_line")
        relevant = _left(q, lost)
        if q.query_id in going:
            removed[q.query_id] = relevant  # every judged document of grade >= 1 it had is gone
            continue
        missing = [d for d in relevant if d not in corpus]
        if missing:
            where = f"query '{q.query_id}'"
            raise RetrievalEvalError(unknown_ids_message(missing, corpus.doc_ids, where),  # the file of its line
                                     path=(q.source.get("_file") if line else None) or origin
                                     or labeled.provenance.get("path"), line=line,
                                     field=(q.source.get("_fields") or {}).get("docs") if line else None)
        source["judged_sha256"] = {d: corpus.get(d).fingerprint for d in sorted(relevant)}
        if any(fingerprints_of(q).get(d, sha) != sha for d, sha in source["judged_sha256"].items()):
            restamped.append(q.query_id)
        if by and "by" not in source:
            source["by"] = by
        out.append(replace(q, relevant=relevant, source=source))  # a turn keeps its conversation
    return Stamped(LabeledSet(tuple(out), name=labeled.name, provenance=labeled.provenance), lost, removed,
                   restamped)


def check_evidence(entries: Sequence[LabeledQuery], corpus: Any, origin: str | None = None) -> None:
    """Every quote of every entry is a run of whole words of its document (``data.evidence.holds``);
    the first that is not stops the import, naming its file, line and the closest passage."""
    from .evidence import quote_problem

    for q in entries:
        for doc, quotes in (q.source.get("evidence") or {}).items():
            if doc not in corpus:
                continue  # an unknown id is refused by the stamp, with the nearest id
            for quote in quotes:
                problem = quote_problem(quote, doc, corpus.get(doc).content)
                if problem:
                    raise RetrievalEvalError(f"query '{q.query_id}': {problem}", path=q.source.get("_file") or origin,
                                             line=q.source.get("_line"),
                                             field=(q.source.get("_fields") or {}).get("evidence", "evidence"))


def stamp_cache(cache: str | Path, corpus: Any, *, drop_deleted: bool = False,
                command: str = "") -> tuple[int, Stamped]:
    """``label stamp``: record the current fingerprints in a hand-edited cache (dropping the
    judgments of deleted documents when asked); returns how many entries were unchecked before,
    and what the stamp dropped and removed."""
    from .._atomic import locked
    from .labeled import load_questions_cache, write_questions_cache

    with locked(Path(cache)):
        labeled = load_questions_cache(cache)
        before = len(unchecked(labeled))
        provenance = labeled.provenance
        try:  # a stamp says "checked against this text": a quote the text no longer holds is not
            check_evidence([q for q in labeled if all(d in corpus for d in q.relevant)], corpus, origin=str(cache))
        except RetrievalEvalError as exc:
            raise RetrievalEvalError(f"{exc.detail}: a stamp would call the label fresh; give it evidence the document "
                                     "holds (label import a table of id,question,doc_id,evidence) or remove it "
                                     "(label remove ID)", path=exc.path, line=exc.line, field=exc.field) from None
        done = stamp(labeled, corpus, drop_deleted=drop_deleted, command=command, origin=str(cache))
        write_questions_cache(cache, done.labeled, generator=provenance.get("generator") or {},
                              corpus_fingerprint=corpus.fingerprint, splitter=provenance.get("splitter"))
    return before, done


def remove_labels(cache: str | Path, ids: Sequence[str]) -> list[str]:
    """``label remove``: take these questions out of the cache; an id it lacks stops it, with the
    nearest id, before any write."""
    from .._atomic import locked
    from .labeled import load_questions_cache, write_questions_cache

    with locked(Path(cache)):
        labeled = load_questions_cache(cache)
        known = [q.query_id for q in labeled.everything]
        missing = [i for i in ids if i not in known]
        if missing:
            raise RetrievalEvalError("; ".join(f"no question '{i}' in the cache{did_you_mean(i, known)}" for i in missing)
                                     + ": see the ids with 'label list'", path=cache)
        kept = tuple(q for q in labeled.everything if q.query_id not in set(ids))
        provenance = labeled.provenance
        write_questions_cache(cache, LabeledSet(kept, name=labeled.name), generator=provenance.get("generator") or {},
                              corpus_fingerprint=provenance.get("corpus_fingerprint"),
                              splitter=provenance.get("splitter"))
    return [i for i in known if i in set(ids)]
