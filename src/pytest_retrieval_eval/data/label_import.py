"""Labels a team already holds, merged into the questions cache (``label import``): stamped,
their quotes checked, then merged into an existing cache (atomic, under the cache's lock,
nothing lost), a file's row naming a turn (``c1#2``) merged into that turn.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Iterable, Mapping, Sequence

from ..errors import RetrievalEvalError
from ..types import LabeledQuery
from .label_fields import CARRIED
from .label_lifecycle import IMPORTED, check_evidence, stamp
from .labeled import LabeledSet

@dataclass
class ImportReport:
    added: list[str] = field(default_factory=list)
    replaced: list[str] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)  # already there, identical
    removed: list[str] = field(default_factory=list)  # gone: turns of a conversation the file brings anew, and with --sync what this file brought before
    notes: list[str] = field(default_factory=list)  # rows merged into one question, said
    unproven: list[str] = field(default_factory=list)  # --sync: gone from it, but recorded by base name only: kept
    #: same question text, brought up to date by a file that did not write it (``_merge``): its author stays
    updated: list[str] = field(default_factory=list)
    changes: list[str] = field(default_factory=list)  # what the updates did (evidence added, ...), in order
    kept_tags: list[str] = field(default_factory=list)  # updated or replaced, the file carrying no tags: kept
    #: replaced by the file's text, which differs from the cache's only where matching folds
    #: (whitespace, case: an older import folded whitespace): said once, in ``notes``
    respaced: list[str] = field(default_factory=list)

    def summary(self) -> str:
        removed = f", removed {len(self.removed)}" if self.removed else ""
        out = f"added {len(self.added)}, replaced {len(self.replaced)}, unchanged {len(self.skipped)}{removed}"
        if self.updated:
            out += f", updated {len(self.updated)} ({', '.join(self.changes)}; their author and source kept)"
        if self.kept_tags:
            n = len(self.kept_tags)
            out += (", kept their tags" if set(self.kept_tags) == set(self.updated + self.replaced) else
                    f", kept the tags of {n}") + " (the file has no tags)"
        return out


def _key(question: str) -> str:
    from .text import normalise

    return normalise(question)


def _same_text(a: LabeledQuery, b: LabeledQuery) -> bool:
    """The two read alike where matching looks (``normalise``): text and the conversation before."""
    from .labeled import said

    return _key(a.question) == _key(b.question) and said(a.history) == said(b.history)


def source_file(path: str | Path, cache: str | Path) -> str:
    """The file an import came from, as the cache records it (``source.file``): its path relative
    to the cache's folder, with forward slashes, so that two files of one name in two folders are
    two sources, and the same file is one whatever folder the command runs in."""
    path, folder = os.path.abspath(path), os.path.dirname(os.path.abspath(cache))
    try:
        path = os.path.relpath(path, folder)
    except ValueError:  # another drive (Windows): no relative path exists
        pass
    return path.replace(os.sep, "/")


def _from_file(q: LabeledQuery, cache: Path, origin: str | None) -> LabeledQuery:
    """``q`` recording the file it was read from (the reader's ``_file``, else ``origin``)."""
    read = q.source.get("_file") or origin
    if read is None:
        return q
    return replace(q, source={**q.source, "file": source_file(read, cache)})


def _by_name_only(q: LabeledQuery, names: set[str]) -> bool:
    """An entry an older version imported, recording only the file's base name (``by``), which
    names one of this import's: it may come from this file or a namesake in another folder."""
    return "file" not in q.source and str(q.source.get("by") or "") in names


def _owned(q: LabeledQuery, file: str | None, by: str) -> bool:
    """The entry was written by this file (``source.file``; an older entry: its base name, ``by``)."""
    return (file is not None and q.source.get("file") == file) or ("file" not in q.source and q.source.get("by") == by)


def _merge(old: LabeledQuery, new: LabeledQuery, carries: Sequence[str], file: str | None,
           corpus: Any) -> tuple[LabeledQuery, str, list[str]]:
    """``new`` (stamped, from a file) over ``old`` (the cache's entry of that id): the entry, its
    kind (``replaced`` or ``updated``) and what changed. Nothing the file does not mention is lost:

    - tags: the file's when it carries tags (a tags column, a ``tags`` field; an empty cell: none),
      else ``old``'s;
    - same question text, from a file that did not write the entry: ``updated``: ``old``'s source
      is kept (who wrote it, its chunk fingerprints, its file: ``--sync`` ownership), the file
      recorded in ``source.updated_by``; judged documents merge: the file's documents join, with
      the file's grade when it carries grades, else the grade ``old`` gave (1 for a new one);
      documents the file does not name keep their grade and fingerprint; the file's evidence
      replaces that of the documents it quotes, the others keep theirs;
    - the question text changed, or the file wrote the entry: ``replaced`` by the file's version
      (as before), its source the file's, keeping only tags and, when the file carries no evidence,
      the evidence of documents still judged."""
    from .evidence import as_read

    tags = new.tags if "tags" in carries else old.tags
    changes: list[str] = []
    # a turn whose earlier turns changed is another question, as one whose own text did (respaced or
    # recased, ``normalise``: the same question)
    if not _same_text(old, new) or _owned(old, file, str(new.source.get("by"))) or old.answerable != new.answerable:
        evidence = dict(new.source.get("evidence") or {}) if "evidence" in carries else {
            d: v for d, v in (old.source.get("evidence") or {}).items() if d in new.relevant and new.relevant[d] >= 1}
        source = {k: v for k, v in new.source.items() if k != "evidence"}
        if evidence:
            source["evidence"] = evidence
        return replace(new, relevant=dict(new.relevant), source=source, tags=tags), "replaced", changes
    relevant = dict(old.relevant)
    for doc, grade in new.relevant.items():
        if doc not in relevant:
            changes.append("documents added")
        elif "grades" in carries and relevant[doc] != grade:
            changes.append("grades changed")
        relevant[doc] = grade if "grades" in carries or doc not in relevant else relevant[doc]
    evidence = {d: list(v) for d, v in (old.source.get("evidence") or {}).items() if relevant.get(d, 0) >= 1}
    for doc, quotes in (new.source.get("evidence") or {}).items():  # quotes of the same words: kept as written
        if relevant.get(doc, 0) >= 1 and as_read({doc: evidence.get(doc, ())}) != as_read({doc: quotes}):
            changes.append("evidence changed" if doc in evidence else "evidence added")
            evidence[doc] = list(quotes)
    if tuple(tags) != tuple(old.tags):
        changes.append("tags changed")
    source = {k: v for k, v in old.source.items() if k != "evidence"}
    judged = dict(old.source.get("judged_sha256") or {})
    judged.update({d: corpus.get(d).fingerprint for d in new.relevant})  # the file judged these now
    source["judged_sha256"] = {d: judged[d] for d in sorted(relevant) if d in judged}
    if evidence:
        source["evidence"] = evidence
    if file is not None and changes:
        source["updated_by"] = sorted({*(old.source.get("updated_by") or ()), file})
    if new.depends is not None and new.depends != old.depends:
        changes.append("depends changed")
    depends = old.depends if new.depends is None else new.depends
    if new.rewrite is not None and _key(new.rewrite) != _key(old.rewrite or ""):
        changes.append("rewrite changed" if old.rewrite is not None else "rewrite added")
    rewrite = old.rewrite if new.rewrite is None else new.rewrite
    return (replace(old, relevant=relevant, source=source, tags=tags, depends=depends, rewrite=rewrite), "updated",
            changes)


def _in_conversation(q: LabeledQuery, old: LabeledQuery | None, cached: Iterable[LabeledQuery],
                     where: Mapping[str, Any], cache: Path) -> LabeledQuery:
    """``q``, a file's question (no conversation of its own) whose id names a turn of a
    conversation the cache holds (``c1#2``, ``TURN_SEPARATOR``), as that turn: its conversation,
    position, history and depends flag kept, so an ``id,question,doc_id,evidence`` file adds its
    quotes to the turn; refused in one line when the cache holds no such labeled turn or the file
    gives it another text (a turn's text is changed with its conversation). Any other ``q`` as it is."""
    from ..types import TURN_SEPARATOR

    conversation, sep, number = q.query_id.rpartition(TURN_SEPARATOR)
    if q.conversation is not None or not sep or not number.isdigit() or not any(
            c.conversation == conversation for c in cached):
        return q  # a question; an id holding '#' names no turn unless the cache has that conversation
    how = ("a conversation's turns are imported with it: a table with conversation, turn and user columns, or a JSONL "
           "line with conversation and turns")

    def refuse(message: str, fld: str) -> RetrievalEvalError:
        return RetrievalEvalError(f"{message}; {how}", path=where.get("path"), line=where.get("line"),
                                  field=where.get(fld, fld) if where.get("line") else None)

    if old is None or old.conversation != conversation:
        labeled = ", ".join(sorted(c.query_id for c in cached if c.conversation == conversation))
        raise refuse(f"'{q.query_id}' names turn {number} of conversation '{conversation}', which {cache.name} holds "
                     f"without a labeled turn {number} (its labeled turns: {labeled})", "id")
    if _key(q.question) != _key(old.question):
        raise refuse(f"turn '{q.query_id}' reads {old.question!r} in {cache.name}, not {q.question!r}", "question")
    return replace(q, question=old.question, conversation=old.conversation, turn=old.turn, history=old.history,
                   depends=old.depends, rewrite=old.rewrite)


def import_labels(entries: Sequence[LabeledQuery], corpus: Any, cache: str | Path, *, origin: str | None = None,
                  generator_notes: str = "", sync: bool = False) -> ImportReport:
    """Stamp ``entries`` against ``corpus`` and merge them into the cache at ``cache`` (created if
    absent): same id and content -> unchanged; same id, new content -> replaced; else added. A
    question whose id comes from its text matches an entry holding the same question (an older
    id form, or a renamed copy of the file), so importing again adds nothing. Each entry records
    its file (``source.file``, ``source_file``). ``sync``: the file is the source of truth for
    the questions it brought: those recording it and gone from it are removed; an older entry
    recording only a base name (``by``) may be a namesake's, so it is kept (``unproven``).
    Written atomically under the cache's lock; a bad entry stops the import before any write."""
    from .._atomic import locked
    from .evidence import as_read
    from .labeled import load_questions_cache, write_questions_cache

    cache = Path(cache)
    report = ImportReport(notes=[f"{q.query_id}: {n}" for q in entries for n in q.source.get("_notes", ())])
    text_ids = {q.query_id for q in entries if q.source.get("_text_id")}
    carries = [tuple(q.source.get("_carries", CARRIED)) for q in entries]  # before the stamp drops it
    entries = [_from_file(q, cache, origin) for q in entries]
    where = {q.query_id: {"path": q.source.get("_file") or origin, "line": q.source.get("_line"),
                          **(q.source.get("_fields") or {})} for q in entries}  # before the stamp drops them
    check_evidence(entries, corpus, origin)
    done = {q.query_id: q for q in stamp(LabeledSet(tuple(entries), name=cache.name), corpus, origin=origin).labeled.everything}
    stamped = [done[q.query_id] for q in entries]  # in the file's order, unanswerable turns in their place
    with locked(cache):
        existing = load_questions_cache(cache) if cache.exists() else None
        merged = {q.query_id: q for q in (existing.everything if existing is not None else ())}
        by_text = {_key(q.question): q.query_id for q in merged.values() if q.conversation is None}
        stamped = [replace(q, query_id=by_text.get(_key(q.question), q.query_id))
                   if q.query_id in text_ids else q for q in stamped]
        for q, carried in zip(stamped, carries):
            old = merged.get(q.query_id)
            q = _in_conversation(q, old, merged.values(), where.get(q.query_id, {}), cache)
            if old is None:
                report.added.append(q.query_id)
                merged[q.query_id] = q
                continue
            new, kind, changes = _merge(old, q, carried, q.source.get("file"), corpus)
            # kept as it was, source too (a namesake may have brought it), and so are quotes whose words
            # are the same (``as_read``): no measure could tell them apart, so no baseline is refused
            if (old.question, dict(old.relevant), old.tags, as_read(old.source.get("evidence") or {}), old.history,
                    old.depends, old.rewrite, old.answerable) == (new.question, dict(new.relevant), new.tags,
                                                                  as_read(new.source.get("evidence") or {}),
                                                                  new.history, new.depends, new.rewrite, new.answerable):
                report.skipped.append(q.query_id)
                continue
            getattr(report, kind).append(q.query_id)
            if kind == "replaced" and _same_text(old, new) and (old.question, old.history) != (new.question, new.history):
                report.respaced.append(q.query_id)
            report.changes += [c for c in changes if c not in report.changes]
            if "tags" not in carried and old.tags:
                report.kept_tags.append(q.query_id)
            merged[q.query_id] = new
        now = {q.query_id for q in stamped}
        # a conversation the file brings comes whole: its turns' history is the file's, so a cached
        # turn of it the file no longer labels goes (kept, it would hold a history the file replaced)
        brought = {q.conversation for q in stamped if q.conversation is not None}
        report.removed = [i for i, q in merged.items() if q.conversation in brought and i not in now]
        for i in report.removed:
            del merged[i]
        if sync:  # only what provably came from this very file goes; a namesake's questions stay
            files = {q.source["file"] for q in stamped if "file" in q.source}
            names = {str(q.source["by"]) for q in stamped if str(q.source.get("by") or "").startswith(IMPORTED)}
            gone = [q for i, q in merged.items() if i not in now]
            synced = [q.query_id for q in gone if q.source.get("file") in files]
            report.unproven = [q.query_id for q in gone if _by_name_only(q, names)]
            for i in synced:
                del merged[i]
            report.removed += synced
        provenance = existing.provenance if existing is not None else {}
        generator = dict(provenance.get("generator") or {"method": "imported", "model": None, "prompt_sha256": None,
                                                        "temperature": None})
        if generator_notes:
            generator["notes"] = generator_notes
        write_questions_cache(cache, LabeledSet(tuple(merged.values()), name=cache.name), generator=generator,
                              corpus_fingerprint=corpus.fingerprint, splitter=provenance.get("splitter"))
    if report.respaced:
        n = len(report.respaced)
        report.notes.append(f"{n} question{'s' * (n != 1)} differ{'s' * (n == 1)} from the cache's only in whitespace or "
                            "case (an older import folded them): now kept as the file writes them; a baseline compares "
                            "them as the same questions")
    return report
