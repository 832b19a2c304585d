"""Labels a team already holds, brought into the questions cache: importers (CSV/TSV, JSONL,
rig-style ``qrels.jsonl``, BEIR queries + qrels), fingerprint stamping without an LLM, and the
merge into an existing cache (atomic, under the cache's lock, nothing lost).

Every imported or stamped entry records the fingerprint of each judged document
(``source.judged_sha256``), so the staleness check sees a judged document change; an entry
without any fingerprint is *unchecked* and said so.
"""

from __future__ import annotations

import csv
import difflib
import io
import json
import os
import unicodedata
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Iterable, Mapping, Sequence

from .._textfiles import read_text
from ..errors import RetrievalEvalError
from ..ir.qrels import add_grade, parse_grade
from ..types import LabeledQuery
from .labeled import LabeledSet, query_problem

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
    for q in labeled:  # deleted: fingerprinted once, so it existed; unknown: a typo, usually
        for d in sorted(d for d in q.relevant if d not in corpus and d in fingerprinted(q)):
            lost.setdefault(d, []).append(q.query_id)
    going = [q.query_id for q in labeled if not any(g >= 1 for g in _left(q, lost).values())]
    if lost and not drop_deleted:
        listed = "; ".join(f"{d} ({', '.join(qs)})" for d, qs in sorted(lost.items()))
        who = f" ({', '.join(going)} would have none left)" if going else ""
        raise RetrievalEvalError(f"{sum(map(len, lost.values()))} judgment(s) of deleted documents: {listed}; drop "
                                 f"them (a question left with no judged document goes too{who}) with: "
                                 f"{command} --drop-deleted"
                                 if command else f"judged documents deleted from the corpus: {listed}",
                                 path=origin or labeled.provenance.get("path"))
    out, removed, restamped = [], {}, []
    for q in labeled:
        source = {k: v for k, v in q.source.items() if not k.startswith("_")}
        line = q.source.get("_line")
        relevant = _left(q, lost)
        if q.query_id in going:
            removed[q.query_id] = relevant  # every judged document of grade >= 1 it had is gone
            continue
        missing = [d for d in relevant if d not in corpus]
        if missing:
            where = f"query '{q.query_id}'"
            raise RetrievalEvalError(unknown_ids_message(missing, corpus.doc_ids, where),
                                     path=origin or labeled.provenance.get("path"), line=line,
                                     field=(q.source.get("_fields") or {}).get("docs") if line else None)
        source["judged_sha256"] = {d: corpus.get(d).fingerprint for d in sorted(relevant)}
        if any(fingerprints_of(q).get(d, sha) != sha for d, sha in source["judged_sha256"].items()):
            restamped.append(q.query_id)
        if by and "by" not in source:
            source["by"] = by
        out.append(replace(q, relevant=relevant, source=source))  # a turn keeps its conversation
    return Stamped(LabeledSet(tuple(out), name=labeled.name, provenance=labeled.provenance), lost, removed,
                   restamped)


# --- readers -------------------------------------------------------------------------------------

def _evidence(raw: Any, relevant: dict[str, int], path: str | Path, line: int | None, field: str) -> dict:
    """A record's evidence field (``data.evidence.parse_evidence``), refused naming file, line and field."""
    from .evidence import parse_evidence

    try:
        return parse_evidence(raw, relevant)
    except ValueError as exc:
        raise RetrievalEvalError(str(exc), path=path, line=line, field=field) from None


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


def question_id(path: str | Path, question: str) -> str:
    """An id for a question that has none, from its text alone (never the file name): the same
    question imported again, from this file or a renamed copy, keeps its id and adds nothing."""
    from ..types import sha256_text, text_problem
    from .text import normalise

    if text_problem(question):
        return "unnamed"  # the question itself is refused right after, naming its line
    return f"q.{sha256_text(normalise(question))[:10]}"


def read_qrels_jsonl(path: str | Path) -> list[LabeledQuery]:
    """Rig-style ``qrels.jsonl``: one object per line with ``query_id``, ``query`` and
    ``relevant_docs`` ({doc: grade}, [{"doc_id", "relevance"}] or [doc, ...]); an optional
    ``reference_answer`` is kept in the entry's source, an optional ``evidence`` (a quote, quotes,
    or {doc: quotes}) too."""
    from .._textfiles import json_lines

    out, seen = [], {}
    for number, record in json_lines(path, unique_keys=True):
        def bad(message: str, fld: str) -> RetrievalEvalError:
            return RetrievalEvalError(message, path=path, line=number, field=fld)

        if not isinstance(record, dict):
            raise bad("expected an object", "line")
        qid, text, docs = record.get("query_id"), record.get("query"), record.get("relevant_docs")
        if not isinstance(qid, (str, int)) or not str(qid).strip():
            raise bad("must be a non-empty string", "query_id")
        qid = str(qid)
        if qid in seen:
            raise bad(f"duplicate query id '{qid}' (first on line {seen[qid]})", "query_id")
        seen[qid] = number
        if not isinstance(text, str) or not text.strip():
            raise bad(f"query '{qid}': must be a non-empty string", "query")
        relevant: dict[str, int] = {}
        if isinstance(docs, dict):
            relevant = {str(d): parse_grade(g, path=path, line=number, field="relevant_docs") for d, g in docs.items()}
        elif isinstance(docs, list):
            for item in docs:
                if isinstance(item, dict) and "doc_id" in item:
                    grade = parse_grade(item.get("relevance", item.get("grade", 1)), path=path, line=number,
                                        field="relevant_docs")
                    add_grade(relevant, str(item["doc_id"]), grade, who=f"query '{qid}'", path=path, line=number,
                              field="relevant_docs")
                elif isinstance(item, (str, int)):
                    add_grade(relevant, str(item), 1, who=f"query '{qid}'", path=path, line=number, field="relevant_docs")
                else:
                    raise bad(f"query '{qid}': an entry must be a doc id or {{\"doc_id\", \"relevance\"}}", "relevant_docs")
        if not relevant or not any(g >= 1 for g in relevant.values()):
            raise bad(f"query '{qid}': needs at least one document with relevance >= 1", "relevant_docs")
        problem = query_problem(qid, text, relevant)
        if problem:
            raise bad(problem[0], {"id": "query_id", "question": "query", "relevant": "relevant_docs"}[problem[1]])
        graded = isinstance(docs, dict) or any(isinstance(i, dict) and ("relevance" in i or "grade" in i) for i in docs)
        source = {"by": f"{IMPORTED}:{Path(path).name}", "_line": number, "_file": str(path),
                  "_carries": _carried(tags=False, grades=graded, evidence="evidence" in record),
                  **_fields("relevant_docs", "evidence")}
        if record.get("reference_answer"):
            source["reference_answer"] = str(record["reference_answer"])
        if record.get("evidence"):
            source["evidence"] = _evidence(record["evidence"], relevant, path, number, "evidence")
        out.append(LabeledQuery(qid, " ".join(text.split()), relevant, source))
    return out


@dataclass(frozen=True)
class Columns:
    """Which columns of a CSV/TSV hold what (header names, matched case-insensitively); ``None``
    finds the column by its common names (``ALIASES``), and a query id column is optional."""

    question: str | None = None
    doc: str | None = None
    grade: str | None = None
    id: str | None = None


#: role -> (the CLI flag naming its column, the header names found without it)
ALIASES = {
    "question": ("--question-column", ("question", "query", "query_text", "question_text")),
    "doc": ("--doc-column", ("doc_id", "doc_ids", "docid", "docids", "document_id", "document_ids", "gold",
                             "gold_doc", "relevant", "relevant_docs")),
    "grade": ("--grade-column", ("grade", "relevance")),
    "id": ("--id-column", ("query_id", "qid", "id")),
}


def _columns(header: Sequence[str], columns: Columns, path: str | Path) -> dict[str, str | None]:
    """The header name of each role; a named or required column that is missing is refused with
    the flag that chooses it."""
    lower = {h.strip().lower(): h for h in header if h}
    found: dict[str, str | None] = {}
    for role, (flag, aliases) in ALIASES.items():
        asked = getattr(columns, role)
        names = (asked,) if asked else aliases
        found[role] = next((lower[n.strip().lower()] for n in names if n.strip().lower() in lower), None)
        if found[role] is None and (asked or role in ("question", "doc")):
            nor = "" if asked else f", nor {', '.join(aliases[1:])}"
            raise RetrievalEvalError(f"no column '{asked or aliases[0]}' for the {'doc id' if role == 'doc' else role} "
                                     f"(columns: {', '.join(header) or 'none'}{nor}); name it with {flag} NAME",
                                     path=path, line=1)
    return found


def read_table(path: str | Path, *, delimiter: str | None = None, columns: Columns = Columns()) -> list[LabeledQuery]:
    """CSV or TSV with a header row: one row per (question, judged document); several doc ids in
    one cell may be separated by ``;`` or ``|``; an ``evidence`` column quotes the row's document.
    Rows of the same question (or query id) merge,
    and each merge is said in the entry's ``_notes``. Without an id column, a question's id is
    derived from its text (``question_id``). With a ``conversation`` column, a row that names a
    conversation is one of its turns (``turn``: 1-based; ``user``, or the question column: its
    text; ``assistant``, ``depends``: optional); a turn's rows merge as a question's do, and a
    turn row with no document searches nothing."""
    text = read_text(path)
    delimiter = delimiter or ("\t" if str(path).endswith((".tsv", ".tab")) else ",")
    reader = csv.DictReader(io.StringIO(text), delimiter=delimiter)
    header = reader.fieldnames or []
    _refuse_duplicate_columns(header, path)
    conv_cols = {role: next((h for h in header if h and h.strip().lower() in names), None)
                 for role, names in CONVERSATION_COLUMNS.items()}
    ccol, ncol, acol, pcol, ucol = (conv_cols[r] for r in CONVERSATION_COLUMNS)
    if ccol and ncol is None:
        raise RetrievalEvalError(f"a '{ccol}' column needs a 'turn' column: each turn's 1-based position", path=path,
                                 line=1, field=ccol)
    if ccol and ucol and columns.question is None and not any(h.strip().lower() in ALIASES["question"][1]
                                                              for h in header if h):
        columns = replace(columns, question=ucol)  # the user's text is the turn's question
    col = _columns(header, columns, path)
    qcol, dcol, gcol, icol = col["question"], col["doc"], col["grade"], col["id"]
    tcol = next((h for h in header if h and h.strip().lower() in TAG_COLUMNS), None)
    ecol = next((h for h in header if h and h.strip().lower() in EVIDENCE_COLUMNS), None)
    grouped: dict[str, dict[str, Any]] = {}
    for number, row in enumerate(reader, start=2):
        if row.get(None):  # cells beyond the header: a delimiter inside an unquoted cell, usually
            raise RetrievalEvalError(f"{len(header) + len(row[None])} cells, but the header has {len(header)}: quote a "
                                     f"cell that holds {delimiter!r}", path=path, line=number)
        question = " ".join((row.get(qcol) or "").split())
        cell = (row.get(dcol) or "").strip()
        conv = (row.get(ccol) or "").strip() if ccol else ""
        if not question and not cell and not conv:
            continue  # a blank line
        if not question:
            raise RetrievalEvalError("empty question", path=path, line=number, field=qcol)
        if not cell and not conv:
            raise RetrievalEvalError(f"no doc id for {question!r}", path=path, line=number, field=dcol)
        grade = (parse_grade(row[gcol], path=path, line=number, field=gcol) if gcol and (row.get(gcol) or "").strip()
                 else 1)
        given = (row.get(icol) or "").strip() if icol else ""
        if conv:
            key = _turn_row(row, conv, given, path, number, conv_cols, icol)
            entry = grouped.setdefault(key, {"question": question, "relevant": {}, "line": number, "notes": [],
                                             "given": True, "tags": set(), "evidence": {}, "conversation": conv,
                                             "turn": int(row[ncol]), "assistant": None, "depends": None})
            if entry["question"] != question:
                raise RetrievalEvalError(f"turn {entry['turn']} of conversation '{conv}' appears twice with two texts "
                                         f"({entry['question']!r} on line {entry['line']}): number each turn once",
                                         path=path, line=number, field=ncol)
            _turn_cells(entry, row, path, number, acol, pcol)
        else:
            key = given or question_id(path, question)
            entry = grouped.setdefault(key, {"question": question, "relevant": {}, "line": number, "notes": [],
                                             "given": bool(given), "tags": set(), "evidence": {}})
        if tcol:
            entry["tags"].update(_tags(row.get(tcol), path, number, tcol))
        if entry["question"] != question:
            raise RetrievalEvalError(f"query id '{key}' has two questions ({entry['question']!r} on line "
                                     f"{entry['line']})", path=path, line=number, field=icol or qcol)
        docs = [d for d in (d.strip() for d in cell.replace("|", ";").split(";")) if d]
        if number != entry["line"] and not conv:  # a turn's documents are listed a row each: no repeat
            new = [d for d in docs if d not in entry["relevant"]]
            entry["notes"].append(f"line {number} repeats the question of line {entry['line']}: "
                                  + (f"its judgments merged ({', '.join(new)} added)" if new else
                                     "the same judgments, counted once"))
        for doc in docs:
            who = f"turn '{key}'" if conv else f"query '{given}'" if given else f"question {question!r}"
            add_grade(entry["relevant"], doc, grade, who=who, path=path, line=number, field=gcol or dcol)
        quote = " ".join((row.get(ecol) or "").split()) if ecol else ""
        if quote:
            if len(docs) != 1 or grade < 1:
                raise RetrievalEvalError("a quote is the evidence of one relevant document: give it a row of its own "
                                         f"(this row names {len(docs)}, grade {grade})", path=path, line=number, field=ecol)
            entry["evidence"].setdefault(docs[0], []).append(quote)
            _evidence(entry["evidence"], entry["relevant"], path, number, ecol)
    out: list[LabeledQuery] = []
    carries = _carried(tags=tcol, grades=gcol, evidence=ecol)
    done: set[str] = set()
    for qid, entry in grouped.items():
        if "conversation" in entry:
            if entry["conversation"] not in done:  # a conversation's turns, where its first row is
                done.add(entry["conversation"])
                out += _table_turns(entry["conversation"], grouped, path, carries, col, ncol, ccol, ecol)
            continue
        if not any(g >= 1 for g in entry["relevant"].values()):
            raise RetrievalEvalError(f"every grade of {entry['question']!r} is below 1, so no answer could ever count: "
                                     "give at least one judged document grade >= 1", path=path, line=entry["line"],
                                     field=gcol or dcol)
        problem = query_problem(qid, entry["question"], entry["relevant"])
        if problem:
            field = {"id": icol or qcol, "question": qcol, "relevant": dcol}[problem[1]]
            raise RetrievalEvalError(problem[0], path=path, line=entry["line"], field=field)
        source = _table_source(entry, path, carries, ecol, dcol)
        source["_fields"] = {**source["_fields"], **_fields(None, None, icol, qcol)["_fields"]}
        out.append(LabeledQuery(qid, entry["question"], entry["relevant"], source, tuple(sorted(entry["tags"]))))
    return out


#: role -> header names (any case) of the columns of a conversation's turns in a labels table
CONVERSATION_COLUMNS = {"conversation": ("conversation", "conversation_id"), "turn": ("turn",),
                        "assistant": ("assistant",), "depends": ("depends",), "user": ("user",)}


def _table_source(entry: dict[str, Any], path: str | Path, carries: tuple[str, ...], ecol: str | None,
                  dcol: str | None) -> dict:
    source: dict[str, Any] = {"by": f"{IMPORTED}:{Path(path).name}", "_line": entry["line"], "_file": str(path),
                              "_carries": carries, **_fields(dcol, ecol)}
    if entry["notes"]:
        source["_notes"] = entry["notes"]
    if not entry["given"]:
        source["_text_id"] = True
    if entry["evidence"]:
        source["evidence"] = _evidence(entry["evidence"], entry["relevant"], path, entry["line"], ecol or "evidence")
    return source


def _turn_row(row: dict, conv: str, given: str, path: str | Path, number: int, cols: dict[str, str | None],
              icol: str | None) -> str:
    """The id of the turn a table row belongs to (``conversation#turn``), its cells checked."""
    from ..types import turn_id
    from .conversations import conversation_problem

    problem = conversation_problem(conv)
    if problem:
        raise RetrievalEvalError(problem, path=path, line=number, field=cols["conversation"])
    raw = (row.get(cols["turn"]) or "").strip()
    if not (raw.isascii() and raw.isdigit() and int(raw) >= 1):
        raise RetrievalEvalError(f"must be the turn's 1-based position (1, 2, ...), got {raw!r}", path=path,
                                 line=number, field=cols["turn"])
    row[cols["turn"]] = raw
    if given and given != turn_id(conv, int(raw)):
        raise RetrievalEvalError(f"a turn's id is conversation#turn ({turn_id(conv, int(raw))}): leave this cell "
                                 "empty on a conversation's rows", path=path, line=number, field=icol)
    return turn_id(conv, int(raw))


def _turn_cells(entry: dict[str, Any], row: dict, path: str | Path, number: int, acol: str | None,
                pcol: str | None) -> None:
    """A turn row's assistant reply and depends flag, merged with its other rows' (two values
    refused, each quoted, the earlier with its line)."""
    from .conversations import depends_cell

    def twice(what: str, here: str, before: tuple[str, int], fld: str | None) -> RetrievalEvalError:
        return RetrievalEvalError(f"two {what} for turn '{entry['conversation']}#{entry['turn']}': {here!r} here, "
                                  f"{before[0]!r} on line {before[1]}: give one (the other rows may leave it empty)",
                                  path=path, line=number, field=fld)

    reply = " ".join((row.get(acol) or "").split()) if acol else ""
    if reply:
        if entry["assistant"] not in (None, reply):
            raise twice("assistant replies", reply, (entry["assistant"], entry["assistant_line"]), acol)
        entry["assistant"], entry["assistant_line"] = reply, entry.get("assistant_line") or number
    if pcol:
        cell = (row.get(pcol) or "").strip()
        try:
            flag = depends_cell(row.get(pcol))
        except ValueError as exc:
            raise RetrievalEvalError(str(exc), path=path, line=number, field=pcol) from None
        if flag is not None:
            if entry["depends"] not in (None, flag):
                raise twice("depends values", cell, entry["depends_cell"], pcol)
            entry["depends"], entry["depends_cell"] = flag, entry.get("depends_cell") or (cell, number)


def _table_turns(conv: str, grouped: dict[str, dict[str, Any]], path: str | Path, carries: tuple[str, ...],
                 col: dict[str, str | None], ncol: str | None, ccol: str | None, ecol: str | None) -> list[LabeledQuery]:
    """A conversation's searching turns from its rows (``grouped``): numbered 1..N without gaps."""
    from .conversations import TurnLabel, turns_of

    entries = sorted((e for e in grouped.values() if e.get("conversation") == conv), key=lambda e: e["turn"])
    numbers = [e["turn"] for e in entries]
    if numbers != list(range(1, len(numbers) + 1)):
        gap = next(n for n in range(1, max(numbers) + 1) if n not in numbers)
        after = next(e for e in entries if e["turn"] > gap)  # the row the gap is noticed at: the next turn's
        raise RetrievalEvalError(f"conversation '{conv}' has turns {', '.join(map(str, numbers))}: turn {gap} is "
                                 "missing (number a conversation's turns 1, 2, ... without gaps)", path=path,
                                 line=after["line"], field=ncol)
    labels = []
    for e in entries:
        relevant = e["relevant"] or None
        if relevant is not None:
            if not any(g >= 1 for g in relevant.values()):
                raise RetrievalEvalError(f"every grade of turn {e['turn']} of '{conv}' is below 1, so no answer could "
                                         "ever count: give at least one judged document grade >= 1 (or none: the "
                                         "turn then searches nothing)", path=path, line=e["line"],
                                         field=col["grade"] or col["doc"])
            problem = query_problem(f"{conv}#{e['turn']}", e["question"], relevant)
            if problem:
                field = {"id": ccol, "question": col["question"], "relevant": col["doc"]}[problem[1]]
                raise RetrievalEvalError(problem[0], path=path, line=e["line"], field=field)
        labels.append(TurnLabel(e["question"], e["assistant"], relevant,
                                _table_source(e, path, carries, ecol, col["doc"]),
                                e["depends"], tuple(e["tags"])))
    return turns_of(conv, labels)


def _fields(docs: str | None, evidence: str | None = None, ident: str | None = None,
            question: str | None = None) -> dict[str, str]:
    """Where a read entry's judged documents, evidence, id and question are in its file
    (``source._fields``), as the file spells it (a column, ``turns[1].relevant``): the stamp's,
    the evidence check's and the import's errors name it beside the line."""
    return {"_fields": {k: v for k, v in (("docs", docs), ("evidence", evidence), ("id", ident),
                                          ("question", question)) if v}}


def _carried(**fields: Any) -> tuple[str, ...]:
    """The fields a file's record carries (``source._carries``), of ``CARRIED``: an import over an
    existing question keeps what its file does not carry (``_merge``)."""
    return tuple(f for f in CARRIED if fields.get(f))


#: the fields a label file may carry or not: a tags column, a grade column, an evidence column
CARRIED = ("tags", "grades", "evidence")


#: header names of the optional column of a question's tags (its segments)
TAG_COLUMNS = ("tags", "tag", "segments")
#: header names of the optional column of a row's evidence: a quote of its document that answers
#: the question (several quotes: several rows)
EVIDENCE_COLUMNS = ("evidence", "quote")


def _tags(raw: Any, path: str | Path, line: int, field: str) -> tuple[str, ...]:
    from .segments import parse_tags

    try:
        return parse_tags(raw, field)
    except RetrievalEvalError as exc:
        raise RetrievalEvalError(exc.detail.split(": ", 1)[-1], path=path, line=line, field=field) from None


def _refuse_duplicate_columns(header: Sequence[str], path: str | Path) -> None:
    """Two columns of one name: a reader keeps only one of them, silently. Refused instead."""
    positions: dict[str, list[int]] = {}
    for i, name in enumerate(header, start=1):
        if name and name.strip():
            positions.setdefault(name, []).append(i)
    for name, where in positions.items():
        if len(where) > 1:
            raise RetrievalEvalError(f"column '{name}' appears {len(where)} times in the header (columns "
                                     f"{', '.join(map(str, where))}): only one could be read; rename or remove the "
                                     "others", path=path, line=1, field=name)


def read_jsonl(path: str | Path) -> list[LabeledQuery]:
    """JSONL of ``{"id"?, "question", "relevant": {doc: grade}}`` or ``{"question", "doc_id"}``, with
    an optional ``evidence`` (a quote, quotes, or {doc: quotes}); a line may instead hold a
    conversation, ``{"conversation": id, "tags"?, "turns": [...]}`` (``_conversation_line``)."""
    from .._textfiles import json_lines

    out, seen, talks = [], {}, {}
    for number, record in json_lines(path, unique_keys=True):
        if not isinstance(record, dict):
            raise RetrievalEvalError("expected an object", path=path, line=number)
        if "relevant_docs" in record:
            return read_qrels_jsonl(path)
        if "conversation" in record:
            cid = record["conversation"]
            if isinstance(cid, str) and cid in talks:  # its turns' histories would be two conversations' mixed
                raise RetrievalEvalError(f"conversation '{cid}' is on line {talks[cid]} already: one line holds a "
                                         "whole conversation", path=path, line=number, field="conversation")
            talks[cid] = number
            for q in _conversation_line(record, path, number):
                if q.query_id in seen:
                    raise RetrievalEvalError(f"duplicate turn '{q.query_id}', first on line {seen[q.query_id]}",
                                             path=path, line=number, field="conversation")
                seen[q.query_id] = number
                out.append(q)
            continue
        question = " ".join(str(record.get("question") or "").split())
        if not question:
            raise RetrievalEvalError("empty question", path=path, line=number, field="question")
        doc = record.get("doc_id")
        if doc is not None and (isinstance(doc, bool) or not isinstance(doc, (str, int))):
            raise RetrievalEvalError(f"must be a string, got {type(doc).__name__}", path=path, line=number, field="doc_id")
        relevant = record.get("relevant") or ({doc: 1} if doc not in (None, "") else None)
        if not isinstance(relevant, dict) or not relevant:
            raise RetrievalEvalError("needs 'relevant' ({doc: grade}) or 'doc_id'", path=path, line=number,
                                     field="relevant")
        qid = str(record.get("id") or question_id(path, question))
        if qid in seen:
            what = f"query id '{qid}'" if record.get("id") else f"question {question!r} (id '{qid}', from its text)"
            raise RetrievalEvalError(f"duplicate {what}, first on line {seen[qid]}: merge the two lines or give each "
                                     "its own 'id'", path=path, line=number, field="id" if record.get("id") else "question")
        seen[qid] = number
        relevant = {str(d): parse_grade(g, path=path, line=number, field="relevant") for d, g in relevant.items()}
        problem = query_problem(qid, question, relevant)
        if problem:
            raise RetrievalEvalError(problem[0], path=path, line=number, field=problem[1])
        source = {"by": f"{IMPORTED}:{Path(path).name}", "_line": number, "_file": str(path),
                  "_carries": _carried(tags="tags" in record, grades="relevant" in record, evidence="evidence" in record),
                  **_fields("relevant" if record.get("relevant") else "doc_id", "evidence", "id", "question")}
        if record.get("evidence"):
            source["evidence"] = _evidence(record["evidence"], relevant, path, number, "evidence")
        out.append(LabeledQuery(qid, question, relevant, source, _tags(record.get("tags"), path, number, "tags")))
    return out


def _conversation_line(record: dict, path: str | Path, number: int) -> list[LabeledQuery]:
    """A JSONL line holding a conversation: its searching turns, checked as questions are, each
    recording the line (errors name ``turns[i].field``)."""
    from .conversations import conversation_problem, parse_turns, turns_of

    def bad(message: str, fld: str) -> RetrievalEvalError:
        return RetrievalEvalError(message, path=path, line=number, field=fld)

    cid = record.get("conversation")
    if isinstance(cid, int) and not isinstance(cid, bool):
        cid = str(cid)
    if not isinstance(cid, str):
        raise bad("must be a non-empty string (the conversation's id)", "conversation")
    problem = conversation_problem(cid)
    if problem:
        raise bad(problem, "conversation")
    turns = parse_turns(record.get("turns"), lambda m, f: bad(f"conversation '{cid}': {m}", f), grades_as_text=True,
                        evidence_key="evidence")
    out = []
    for q in turns_of(cid, turns, _tags(record.get("tags"), path, number, "tags")):
        fld = f"turns[{q.turn - 1}]"
        if not any(g >= 1 for g in q.relevant.values()):
            raise bad(f"turn '{q.query_id}': needs at least one document with grade >= 1", f"{fld}.relevant")
        problem = query_problem(q.query_id, q.question, q.relevant)
        if problem:
            raise bad(problem[0], f"{fld}.{'user' if problem[1] == 'question' else problem[1]}")
        raw = record["turns"][q.turn - 1]
        source = {**q.source, "by": f"{IMPORTED}:{Path(path).name}", "_line": number, "_file": str(path),
                  "_carries": _carried(tags="tags" in raw or "tags" in record, grades=True, evidence="evidence" in raw),
                  **_fields(f"{fld}.relevant", f"{fld}.evidence")}
        out.append(replace(q, source=source))
    return out


def read_beir(folder: str | Path, split: str = "test") -> list[LabeledQuery]:
    from .corpus import BeirFolder

    labeled = BeirFolder(Path(folder), split=split).labeled()
    for q in labeled:  # what the questions cache cannot hold is refused here, not when it is loaded
        if not q.question.strip():
            raise RetrievalEvalError(f"query '{q.query_id}': the text is empty", path=Path(folder) / "queries.jsonl",
                                     line=_first_line(Path(folder) / "queries.jsonl", f'"{q.query_id}"'), field="text")
        if not any(g >= 1 for g in q.relevant.values()):
            qrels = Path(folder) / "qrels" / f"{split}.tsv"
            raise RetrievalEvalError(f"query '{q.query_id}': every score is below 1, so no answer could ever count: "
                                     "give at least one judged document score >= 1", path=qrels,
                                     line=_first_line(qrels, q.query_id + "\t"))
    qrels = str(Path(folder) / "qrels" / f"{split}.tsv")  # the file a split's judgments come from
    quotes = _beir_evidence(Path(folder) / "qrels" / f"{split}.evidence.jsonl", {q.query_id: q for q in labeled})
    carries = _carried(grades=True, evidence=(Path(folder) / "qrels" / f"{split}.evidence.jsonl").is_file())
    return [LabeledQuery(q.query_id, q.question, dict(q.relevant), {"by": f"{IMPORTED}:beir/{split}", "_file": qrels,
                                                                    "_carries": carries,
                                                                    **({"evidence": quotes[q.query_id]}
                                                                       if q.query_id in quotes else {})})
            for q in labeled]


def _beir_evidence(path: Path, queries: dict) -> dict[str, dict]:
    """A BEIR folder's evidence beside its qrels (``qrels/SPLIT.evidence.jsonl``): one object per
    line, ``{"query-id", "corpus-id", "text"}``; query id -> {doc: quotes}."""
    from .._textfiles import json_lines

    if not path.is_file():
        return {}
    raw: dict[str, dict[str, list[str]]] = {}
    lines: dict[str, int] = {}
    for number, record in json_lines(path):
        qid, doc, text = (record.get(k) if isinstance(record, dict) else None for k in ("query-id", "corpus-id", "text"))
        if qid is None or str(qid) not in queries:
            raise RetrievalEvalError(f"no query {qid!r} in the split's qrels", path=path, line=number, field="query-id")
        if not isinstance(text, str) or not text.strip():
            raise RetrievalEvalError("must be a non-empty quote", path=path, line=number, field="text")
        raw.setdefault(str(qid), {}).setdefault(str(doc), []).append(text)
        lines.setdefault(str(qid), number)
    return {q: _evidence(ev, dict(queries[q].relevant), path, lines[q], "corpus-id") for q, ev in raw.items()}


def _first_line(path: Path, start: str) -> int | None:
    """The first line of ``path`` that starts with (or, for a quoted id, holds) ``start``."""
    from .._textfiles import numbered_lines

    return next((n for n, line in numbered_lines(path) if line.startswith(start) or (start[0] == '"' and start in line)),
                None)


FORMATS = ("csv", "tsv", "jsonl", "qrels-jsonl", "beir")


def read_labels(path: str | Path, *, fmt: str = "auto", columns: Columns = Columns(),
                split: str = "test") -> list[LabeledQuery]:
    """The labeled questions of a file in one of ``FORMATS``; a file that holds none is an error."""
    path = Path(path)
    if fmt == "auto":
        fmt = ("beir" if path.is_dir() else "tsv" if path.suffix in (".tsv", ".tab") else
               "jsonl" if path.suffix in (".jsonl", ".ndjson") else "csv")
    readers = {"beir": lambda: read_beir(path, split), "qrels-jsonl": lambda: read_qrels_jsonl(path),
               "jsonl": lambda: read_jsonl(path),
               "csv": lambda: read_table(path, delimiter=",", columns=columns),
               "tsv": lambda: read_table(path, delimiter="\t", columns=columns)}
    if fmt not in readers:
        raise RetrievalEvalError(f"unknown label format {fmt!r}; choose one of auto, {', '.join(FORMATS)}")
    entries = readers[fmt]()
    if not entries:
        raise RetrievalEvalError(f"no labeled questions in the file (read as {fmt})", path=path)
    return entries


def load_labels(path: str | Path) -> LabeledSet:
    """``retrieval_questions``: the questions cache, or the team's own file in its place (a
    rig-style ``qrels.jsonl``, a labels CSV/TSV), read by the reader ``label import`` uses, so
    both accept, grade and refuse a file alike."""
    from .labeled import load_questions_cache

    if is_team_file(path):
        read = read_qrels_jsonl(path) if is_qrels_jsonl(path) else read_labels(path)
        entries = [replace(q, relevant=dict(q.relevant), source={k: v for k, v in q.source.items() if not k.startswith("_")})
                   for q in read]
        return LabeledSet(tuple(entries), name=Path(path).name, provenance={"path": str(path)})
    return load_questions_cache(path)


#: endings of a labels table read directly as ``retrieval_questions``
TABLE_SUFFIXES = (".csv", ".tsv", ".tab")


def is_team_file(path: str | Path) -> bool:
    """The team's own labels given as ``retrieval_questions`` (a rig-style ``qrels.jsonl`` or a
    CSV/TSV): read as it is, never rewritten, with no place for fingerprints."""
    return is_qrels_jsonl(path) or (Path(path).suffix.lower() in TABLE_SUFFIXES and Path(path).is_file())


def is_qrels_jsonl(path: str | Path) -> bool:
    """A rig-style ``qrels.jsonl`` given as ``retrieval_questions``."""
    path = Path(path)
    if path.suffix not in (".jsonl", ".ndjson") or not path.is_file():
        return False
    with open(path, encoding="utf-8-sig") as fh:
        first = next((line for line in fh if line.strip()), "")
    try:
        return "relevant_docs" in json.loads(first)
    except ValueError:
        return False


# --- merging into the cache ----------------------------------------------------------------------

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

    def summary(self) -> str:
        removed = f", removed {len(self.removed)}" if self.removed else ""
        out = f"added {len(self.added)}, replaced {len(self.replaced)}, unchanged {len(self.skipped)}{removed}"
        if self.updated:
            out += f", updated {len(self.updated)} ({', '.join(self.changes)}; their author and source kept)"
        if self.kept_tags:
            n = len(self.kept_tags)
            out += (f", kept their tags" if set(self.kept_tags) == set(self.updated + self.replaced) else
                    f", kept the tags of {n}") + " (the file has no tags)"
        return out


def _key(question: str) -> str:
    from .text import normalise

    return normalise(question)


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
    # a turn whose earlier turns changed is another question, as one whose own text did
    if (new.question, new.history) != (old.question, old.history) or _owned(old, file, str(new.source.get("by"))):
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
    return replace(old, relevant=relevant, source=source, tags=tags, depends=depends), "updated", changes


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
    if " ".join(q.question.split()) != " ".join(old.question.split()):
        raise refuse(f"turn '{q.query_id}' reads {old.question!r} in {cache.name}, not {q.question!r}", "question")
    return replace(q, question=old.question, conversation=old.conversation, turn=old.turn, history=old.history,
                   depends=old.depends)


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
    stamped = stamp(LabeledSet(tuple(entries), name=cache.name), corpus, origin=origin).labeled
    with locked(cache):
        existing = load_questions_cache(cache) if cache.exists() else None
        merged = {q.query_id: q for q in (existing or ())}
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
                    old.depends) == (new.question, dict(new.relevant), new.tags, as_read(new.source.get("evidence") or {}),
                                     new.history, new.depends):
                report.skipped.append(q.query_id)
                continue
            getattr(report, kind).append(q.query_id)
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
    return report


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
        known = [q.query_id for q in labeled]
        missing = [i for i in ids if i not in known]
        if missing:
            raise RetrievalEvalError("; ".join(f"no question '{i}' in the cache{did_you_mean(i, known)}" for i in missing)
                                     + ": see the ids with 'label list'", path=cache)
        kept = tuple(q for q in labeled if q.query_id not in set(ids))
        provenance = labeled.provenance
        write_questions_cache(cache, LabeledSet(kept, name=labeled.name), generator=provenance.get("generator") or {},
                              corpus_fingerprint=provenance.get("corpus_fingerprint"),
                              splitter=provenance.get("splitter"))
    return [i for i in known if i in set(ids)]
