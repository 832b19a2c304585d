"""What a run measured, by content, and what changed between two runs, by name.

results.json's ``"fingerprints"`` records the corpus (its fingerprint, and a short digest per
document, so a later comparison can name the documents added, removed or edited), the labeled
sets, the judgments file (a digest of its bytes) and each engine's embedder canary (its
``engine_info["embedder_canary"]``, where the engine reports one). A comparison refused or forced across
another corpus or judgments then says what changed, not only that a fingerprint differs.

A run history keeps each corpus's digests once, in ``corpora/<fingerprint>.json`` beside its
records (``archive/history.py``), since one corpus repeats in almost every record; a record names
its corpus by fingerprint and ``with_documents`` puts the digests back when they are read.
"""

from __future__ import annotations

import hashlib
import json
import re
from pathlib import Path
from typing import Any, Mapping, Sequence

#: hex characters kept of each document's fingerprint: 48 bits tell an edit apart, and keep the
#: map small (about 30 bytes a document in results.json)
DOC_DIGEST = 12
#: names shown of each kind of change before the rest are counted
CHANGES_NAMED = 3
#: the history folder's subfolder of corpus maps, one file per corpus fingerprint
CORPORA = "corpora"
#: a corpus map file's ``"format"``
MAP_FORMAT = "pytest-retrieval-eval/corpus-documents"
#: a corpus fingerprint that names a file (sha256 hex); any other keeps its digests in the record
_FILE_FINGERPRINT = re.compile(r"^[0-9a-f]{16,128}$")


def named(names: Sequence[str]) -> str:
    """The first ``CHANGES_NAMED`` names, then how many more."""
    more = len(names) - CHANGES_NAMED
    return ", ".join(names[:CHANGES_NAMED]) + (f" and {more} more" if more > 0 else "")


def changes(added: Sequence[str], removed: Sequence[str], changed: Sequence[str]) -> str:
    """``2 added (a, b); 1 removed (c); ...``: each kind that happened, counted and named; '' for none."""
    return "; ".join(f"{len(names)} {kind} ({named(names)})"
                     for kind, names in (("added", added), ("removed", removed), ("changed", changed)) if names)


def diff(before: Mapping[str, Any], after: Mapping[str, Any]) -> tuple[list[str], list[str], list[str]]:
    """Keys (added, removed, changed), each sorted: the order a message names them in, whatever
    order the maps were built in."""
    return (sorted(k for k in after if k not in before), sorted(k for k in before if k not in after),
            sorted(k for k in after if k in before and after[k] != before[k]))


def document_digests(corpus: Any) -> dict[str, str]:
    """doc id -> the first ``DOC_DIGEST`` hex characters of its fingerprint (``Doc.fingerprint``)."""
    return {d.doc_id: d.fingerprint[:DOC_DIGEST] for d in corpus.docs}


def file_digest(path: str | Path) -> str | None:
    """sha256 of a file's bytes, or None when it cannot be read."""
    try:
        return hashlib.sha256(Path(path).read_bytes()).hexdigest()
    except OSError:
        return None


def record(run: Any, corpus: Any = None, *, judgments: str | Path | None = None) -> dict[str, Any]:
    """The ``"fingerprints"`` section of ``run``'s results.json: ``corpus`` (when an evaluation
    searched it) with its document digests, the labeled sets, the ``judgments`` file used, and
    the engines' canaries."""
    searched = {e.corpus_fingerprint for e in run.evaluations}
    corpora = ({corpus.fingerprint: {"name": corpus.name, "documents": document_digests(corpus)}}
               if corpus is not None and corpus.fingerprint in searched else {})
    digest = file_digest(judgments) if judgments is not None else None
    return {"corpora": corpora,
            "labeled": {e.labeled.name: e.labeled.fingerprint for e in run.evaluations},
            "judgments": {"sha256": digest} if digest else None,
            "canaries": {e.engine: e.engine_info["embedder_canary"] for e in run.evaluations
                          if "embedder_canary" in e.engine_info}}


def checked(raw: Any) -> dict[str, Any]:
    """A results file's ``"fingerprints"`` as read (``{}`` when absent: a file saved before they
    were kept); ValueError when its shape is wrong."""
    if raw is None:
        return {}
    corpora = raw.get("corpora", {}) if isinstance(raw, dict) else None
    if not isinstance(corpora, dict) or not all(
            isinstance(c, dict) and isinstance(c.get("documents"), dict)
            and all(isinstance(k, str) and isinstance(v, str) for k, v in c["documents"].items())
            for c in corpora.values()):
        raise ValueError("'fingerprints' must hold corpora: {fingerprint: {name, documents: {doc id: digest}}}")
    judgments = raw.get("judgments")
    if judgments is not None and not (isinstance(judgments, dict) and isinstance(judgments.get("sha256"), str)):
        raise ValueError("'fingerprints' judgments must be null or {sha256: digest}")
    return dict(raw)


def map_path(folder: str | Path, fingerprint: str) -> Path | None:
    """Where a history folder keeps the digests of the corpus ``fingerprint``; None for a
    fingerprint that is not a hex digest (never a path made of an arbitrary string)."""
    return Path(folder) / CORPORA / f"{fingerprint}.json" if _FILE_FINGERPRINT.match(fingerprint) else None


def map_text(fingerprint: str, name: Any, documents: Mapping[str, str]) -> str:
    """A corpus map file: compact, as size is the reason it exists (about 30 bytes a document)."""
    return json.dumps({"format": MAP_FORMAT, "fingerprint": fingerprint, "name": name, "documents": documents},
                      sort_keys=True, separators=(",", ":"), ensure_ascii=False) + "\n"


def read_map(folder: str | Path, fingerprint: str) -> dict[str, str] | None:
    """The document digests ``folder`` keeps for the corpus ``fingerprint``, or None (missing,
    deleted by hand, unreadable, another corpus's): the change then cannot be itemised, as for
    a record written before digests were kept."""
    path = map_path(folder, fingerprint)
    try:
        doc = json.loads(path.read_text(encoding="utf-8")) if path is not None else None
    except (OSError, ValueError):
        return None
    documents = doc.get("documents") if isinstance(doc, dict) else None
    if (doc is None or doc.get("format") != MAP_FORMAT or doc.get("fingerprint") != fingerprint
            or not isinstance(documents, dict)
            or not all(isinstance(k, str) and isinstance(v, str) for k, v in documents.items())):
        return None
    return documents


def with_documents(raw: Any, refs: Mapping[str, Any], folder: str | Path) -> Any:
    """A record's ``"fingerprints"`` (``raw``) with the digests of the corpora ``refs`` names
    (fingerprint -> ``{"name": ...}``) read back from ``folder``'s maps; a corpus whose map
    cannot be read stays without digests. ``raw`` is not changed."""
    if not isinstance(raw, dict) or not isinstance(raw.get("corpora", {}), dict):
        return raw  # refused as malformed by ``checked``
    corpora = dict(raw.get("corpora") or {})
    for fingerprint, ref in refs.items():
        documents = read_map(folder, fingerprint) if fingerprint not in corpora else None
        if documents is not None:
            corpora[fingerprint] = {"name": ref.get("name") if isinstance(ref, dict) else None, "documents": documents}
    return {**raw, "corpora": corpora}


def corpus_changes(base: Mapping[str, Any], now: Mapping[str, Any], base_corpus: str, now_corpus: str) -> str:
    """The documents added, removed and changed between the corpus ``base_corpus`` (its
    fingerprint) that the baseline's fingerprints (``base``) record and ``now_corpus`` in this
    run's (``now``); or why they cannot be itemised."""
    before = ((base.get("corpora") or {}).get(base_corpus) or {}).get("documents")
    after = ((now.get("corpora") or {}).get(now_corpus) or {}).get("documents")
    if before is None or after is None:
        whose = "the baseline records" if before is None else "this run records"
        return f"the change cannot be itemised: {whose} no document digests"
    said = changes(*diff(before, after))
    return f"documents: {said}" if said else "no document's digest differs"


def grades_changes(base: Mapping[str, Mapping[str, int]], now: Mapping[str, Mapping[str, int]]) -> str:
    """The judge's grades (question id -> doc id -> grade) added, removed and changed, each named
    ``question/doc`` (a change with its grades: ``q1/d2 1->3``); '' when none differs."""
    before = {f"{q}/{d}": g for q, docs in base.items() for d, g in docs.items()}
    after = {f"{q}/{d}": g for q, docs in now.items() for d, g in docs.items()}
    added, removed, changed = diff(before, after)
    said = changes(added, removed, [f"{k} {before[k]}->{after[k]}" for k in changed])
    return f"grades {said}" if said else ""


def judgments_changes(base: Mapping[str, Any], now: Mapping[str, Any], base_grades: Mapping[str, Mapping[str, int]],
                      now_grades: Mapping[str, Mapping[str, int]]) -> str:
    """What differs between the judgments a baseline and this run used: the file (when both
    recorded its digest) and the grades read from it; '' when nothing is seen to differ."""
    a, b = (base.get("judgments") or {}).get("sha256"), (now.get("judgments") or {}).get("sha256")
    grades = grades_changes(base_grades, now_grades)
    parts = ([f"the judgments file differs (sha256 {a[:12]} -> {b[:12]})"] if a and b and a != b else []) + \
            ([grades] if grades else ["the grades used are the same"] if a and b and a != b else [])
    return "; ".join(parts)
