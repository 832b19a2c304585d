"""Is the labeled set still about this corpus? Compare each question's recorded fingerprints
with the corpus, and name what changed, so nobody scores questions against documents that moved
on. Four findings, each said in its own words:

- ``changed``: a document the entry fingerprinted has other content now (for a label with
  evidence, only when a quote of its evidence is gone from the document: an edit elsewhere keeps
  the label fresh);
- ``deleted``: a document the entry fingerprinted (so it existed) is gone;
- ``unknown``: a judged id the corpus never had, with the nearest id (a typo, usually);
- ``unchecked``: an entry that records no fingerprint: nothing would notice a change.
"""

from __future__ import annotations

import os
import shlex
from dataclasses import dataclass, field
from typing import Any, Callable, Mapping

from .corpus import Corpus
from .evidence import evidence_of, stale_quotes
from .label_files import is_team_file
from .label_lifecycle import did_you_mean, fingerprinted, fingerprints_of, is_generated, unchecked
from .labeled import LabeledSet


def _command(verb: str, corpus_path: str, questions_path: str) -> str:
    """A command as it is printed: it works when pasted, spaces in paths included."""
    return (f"python -m pytest_retrieval_eval {verb} --corpus {shlex.quote(str(corpus_path))} "
            f"--questions {shlex.quote(str(questions_path))}")


def regenerate_command(corpus_path: str, questions_path: str) -> str:
    return _command("generate", corpus_path, questions_path)


def check_command(corpus_path: str, questions_path: str) -> str:
    return _command("check", corpus_path, questions_path)


def stamp_command(corpus_path: str, questions_path: str) -> str:
    """The command that records the judged documents' fingerprints. The team's own file (a
    rig-style ``qrels.jsonl``, a labels CSV) has no place for them (``label stamp`` refuses it):
    importing it into a questions cache beside it records them, so that is the command said, for
    every message that says one."""
    if is_team_file(questions_path):
        return import_command(questions_path, corpus_path, imported_cache(questions_path))
    return _command("label stamp", corpus_path, questions_path)


def imported_cache(qrels_path: str) -> str:
    """Where the team's own file (``qrels.jsonl``, a labels CSV) is imported to:
    ``questions.cache.json`` beside it."""
    return os.path.join(os.path.dirname(str(qrels_path)), "questions.cache.json")


_IMPORT = "python -m pytest_retrieval_eval label import "


def import_command(labels_path: str, corpus_path: str, questions_path: str) -> str:
    return (f"{_IMPORT}{shlex.quote(str(labels_path))} "
            f"--corpus {shlex.quote(str(corpus_path))} --questions {shlex.quote(str(questions_path))}")


def remove_command(questions_path: str, ids: list[str]) -> str:
    return (f"python -m pytest_retrieval_eval label remove {' '.join(shlex.quote(i) for i in ids)} "
            f"--questions {shlex.quote(str(questions_path))}")


def list_command(corpus_path: str, questions_path: str) -> str:
    return _command("label list", corpus_path, questions_path)


def drop_command(corpus_path: str, questions_path: str) -> str:
    """``label stamp --drop-deleted``; none for the team's own file (nothing to stamp: its judged
    documents were never fingerprinted, so none is known as deleted)."""
    if is_team_file(questions_path):
        return ""
    return stamp_command(corpus_path, questions_path) + " --drop-deleted"


def state(query_id: str, stale: "Staleness") -> str:
    """``label list``'s state of one question: stale, unchecked or fresh."""
    return "stale" if query_id in stale.why() else "unchecked" if query_id in stale.unchecked else "fresh"


@dataclass
class Staleness:
    changed: dict[str, list[str]] = field(default_factory=dict)  # doc id -> query ids
    deleted: dict[str, list[str]] = field(default_factory=dict)  # doc id -> query ids (gold or source gone)
    unknown: dict[str, list[str]] = field(default_factory=dict)  # doc id never in the corpus -> query ids
    suggestions: dict[str, str] = field(default_factory=dict)  # unknown doc id -> " (did you mean 'x'?)"
    unchecked: list[str] = field(default_factory=list)  # query ids without fingerprints
    corpus_changed: tuple[str, str] | None = None  # (recorded, now) corpus fingerprints, when they differ
    generated: set[str] = field(default_factory=set)  # ids of per-chunk questions, which ``generate`` maintains
    #: query id -> doc id -> the quotes of its evidence no longer in that changed document
    evidence_gone: dict[str, dict[str, list[str]]] = field(default_factory=dict)

    def __bool__(self) -> bool:
        return bool(self.changed or self.deleted or self.unknown)

    def why(self) -> dict[str, list[str]]:
        """Query id -> what changed under it (``changed: vpn-setup``), for every stale question."""
        out: dict[str, list[str]] = {}
        for kind, docs in (("changed", self.changed), ("deleted", self.deleted), ("unknown id", self.unknown)):
            for doc, queries in sorted(docs.items()):
                for q in queries:
                    gone = self.evidence_gone.get(q, {}).get(doc) if kind == "changed" else None
                    out.setdefault(q, []).append(f"{kind}: {doc}" + (f" (its evidence {gone[0]!r:.60} is gone)"
                                                                      if gone else ""))
        return out

    def left_out(self, labeled: LabeledSet) -> str:
        """The stale questions a run leaves out of its numbers and gates, one line each."""
        why = self.why()
        kept = sum(q.query_id not in why for q in labeled)
        lines = [f"{labeled.name or 'the labeled set'}: n {kept}, {len(why)} stale left out of the numbers and the "
                 "gates (--retrieval-stale=warn evaluates them anyway, =error blocks the run):"]
        for q in labeled:
            if q.query_id in why:
                text = q.question if len(q.question) <= 70 else q.question[:67] + "..."
                lines.append(f"  {q.query_id} {text!r}: {', '.join(why[q.query_id])}")
        return "\n".join(lines)

    def describe(self, labeled_name: str, corpus_name: str, command: str, stamp: str = "", drop: str = "") -> str:
        lines = [f"{labeled_name} is stale against the corpus {corpus_name}:"]
        for kind, docs in (("changed", self.changed), ("deleted", self.deleted)):
            for doc, queries in sorted(docs.items()):
                lines.append(f"  {kind}: {doc} ({_queries(queries)})")
                lines += [f"    {q}: its evidence {self.evidence_gone[q][doc][0]!r:.70} is no longer in {doc}"
                          for q in queries if kind == "changed" and doc in self.evidence_gone.get(q, {})]
        for doc, queries in sorted(self.unknown.items()):
            lines.append(f"  unknown document id '{doc}'{self.suggestions.get(doc, '')} ({_queries(queries)})")
        if self.unknown:
            lines.append(f"Fix the unknown ids in {labeled_name}.")
        # generate fixes only its own questions; the team's (imported, hand-written) are theirs to check
        moved = {q for docs in (self.changed, self.deleted) for qs in docs.values() for q in qs}
        if moved & self.generated:
            lines.append(f"Regenerate the questions of what changed: {command}")
        gone = sorted(q for q in self.evidence_gone if q not in self.generated)
        if gone:  # a stamp refuses a quote its document no longer holds: these need new evidence first
            lines.append(f"Give {', '.join(gone)} evidence the document holds (label import a table of "
                         f"id,question,doc_id,evidence), or remove {'it' if len(gone) == 1 else 'them'}: "
                         f"{remove_command(labeled_name, gone)}")
        if any(q not in self.generated for qs in self.changed.values() for q in qs):
            lines.append(f"Check the questions about what changed, then record the new fingerprints: {stamp or command}")
        if any(q not in self.generated for qs in self.deleted.values() for q in qs):
            lines.append(f"Drop the judgments of deleted documents: {drop}" if drop else
                         f"Fix or remove the questions that judge a deleted document in {labeled_name}.")
        lines.append("or evaluate anyway with --retrieval-stale=warn (questions about missing documents are then left out)")
        return "\n".join(lines)

    def unchecked_message(self, labeled_name: str, total: int, stamp: str) -> str:
        n = len(self.unchecked)
        into = " in a questions cache (then evaluate that file)" if stamp.startswith(_IMPORT) else ""
        once = " (once the unknown document ids are fixed: it stops at one)" if self.unknown else ""
        return (f"{labeled_name}: {n} of {total} questions unchecked (no fingerprint of their judged documents: a "
                f"change in those documents would go unnoticed); record them{into}{once} with: {stamp}")


def _queries(queries: list[str]) -> str:
    return (f"{len(queries)} question{'s' * (len(queries) != 1)}: {', '.join(queries[:4])}"
            f"{', ...' if len(queries) > 4 else ''}")


def check(labeled: LabeledSet, corpus: Corpus,
          chunk_fingerprints: Callable[[str], Mapping[str, str]] | None = None) -> Staleness:
    """Each question at its own grain: a hand label against its judged documents; a generated
    question against the text of its source chunk, when ``chunk_fingerprints`` (doc id -> its
    chunks' fingerprints now) is given, so an edit elsewhere in the document leaves it fresh.
    Without it, the check is doc-level and needs no chunking."""
    chunks = _memo(chunk_fingerprints)
    out = Staleness(unchecked=unchecked(labeled), generated={q.query_id for q in labeled if is_generated(q)})
    recorded = labeled.provenance.get("corpus_fingerprint")
    if recorded and recorded != corpus.fingerprint:
        out.corpus_changed = (recorded, corpus.fingerprint)
    for q in labeled:
        known_before = fingerprinted(q)
        judged = set(q.relevant) | ({q.source["doc_id"]} if q.source.get("doc_id") else set())
        gone = sorted(d for d in judged if d not in corpus)
        for doc in gone:
            if doc in known_before:
                out.deleted.setdefault(doc, []).append(q.query_id)
            else:
                out.unknown.setdefault(doc, []).append(q.query_id)
                out.suggestions.setdefault(doc, did_you_mean(doc, corpus.doc_ids))
        if gone:
            continue
        moved = [doc for doc, sha in sorted(fingerprints_of(q).items()) if corpus.get(doc).fingerprint != sha]
        if moved and chunks is not None and _chunk_unchanged(q, chunks):
            continue  # a generated question's answer is its chunk: that text is as it was
        quoted = evidence_of(q)
        for doc in moved:
            if quoted.get(doc):  # a label with evidence goes stale only when its evidence went
                gone = stale_quotes(q, doc, corpus.get(doc).content)
                if not gone:
                    continue
                out.evidence_gone.setdefault(q.query_id, {})[doc] = gone
            out.changed.setdefault(doc, []).append(q.query_id)
    return out


def _chunk_unchanged(q, chunks: Callable[[str], Mapping[str, str]]) -> bool:
    src = q.source
    if not (is_generated(q) and src.get("chunk_sha256") and src.get("doc_id")):
        return False
    return chunks(src["doc_id"]).get(src["chunk_id"]) == src["chunk_sha256"]


def _memo(fn: Callable[[str], Mapping[str, str]] | None) -> Callable[[str], Mapping[str, str]] | None:
    """Each changed document chunked once, however many questions it has."""
    if fn is None:
        return None
    seen: dict[str, Mapping[str, str]] = {}
    return lambda doc: seen[doc] if doc in seen else seen.setdefault(doc, fn(doc))


def chunk_fingerprints(corpus: Corpus, labeled: LabeledSet, chunking: Any = None) -> Callable[[str], Mapping[str, str]]:
    """doc id -> {chunk id: fingerprint} of that document split now as the questions were written
    against (the cache's recorded splitter; else ``chunking``, else the default)."""
    from .chunking import Chunking, chunk_corpus

    recorded = labeled.provenance.get("splitter") or {}
    if recorded.get("split_length") is not None:
        chunking = Chunking(split_length=recorded["split_length"], split_overlap=recorded.get("split_overlap", 0))
    chunking = chunking or Chunking()

    def of(doc_id: str) -> Mapping[str, str]:
        one = Corpus((corpus.get(doc_id),), name=corpus.name)
        return {c.chunk_id: c.fingerprint for c in chunk_corpus(one, chunking)}
    return of
