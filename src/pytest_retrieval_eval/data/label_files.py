"""A team's label files, read: CSV/TSV tables (their columns found by ``Columns`` and
``ALIASES``, a conversation's turns as rows), JSONL (questions, or a conversation a line),
rig-style ``qrels.jsonl`` and a BEIR folder's queries + qrels; and such a file given in place of
the questions cache (``load_labels``). Each read entry records its file, line and fields, so
the import (``data/label_import.py``) and the stamp name them in an error.
"""

from __future__ import annotations

import csv
import io
import json
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Sequence

from .._textfiles import read_text
from ..errors import RetrievalEvalError
from ..ir.qrels import add_grade, parse_grade
from ..types import LabeledQuery
from .label_lifecycle import IMPORTED
from .labeled import LabeledSet, query_problem
from .text import normalise


def _evidence(raw: Any, relevant: dict[str, int], path: str | Path, line: int | None, field: str) -> dict:
    """A record's evidence field (``data.evidence.parse_evidence``), refused naming file, line and field."""
    from .evidence import parse_evidence

    try:
        return parse_evidence(raw, relevant)
    except ValueError as exc:
        raise RetrievalEvalError(str(exc), path=path, line=line, field=field) from None


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
        out.append(LabeledQuery(qid, text, relevant, source))
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
    ccol, ncol, acol, pcol, ucol, rcol, bcol = (conv_cols[r] for r in CONVERSATION_COLUMNS)
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
        question = row.get(qcol) or ""  # as written; rows of one question match by ``normalise``
        question = question if question.strip() else ""
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
                                             "turn": int(row[ncol]), "assistant": None, "depends": None,
                                             "rewrite": None, "answerable": None})
            if normalise(entry["question"]) != normalise(question):
                raise RetrievalEvalError(f"turn {entry['turn']} of conversation '{conv}' appears twice with two texts "
                                         f"({entry['question']!r} on line {entry['line']}): number each turn once",
                                         path=path, line=number, field=ncol)
            _turn_cells(entry, row, path, number, acol, pcol, rcol, bcol)
        else:
            key = given or question_id(path, question)
            entry = grouped.setdefault(key, {"question": question, "relevant": {}, "line": number, "notes": [],
                                             "given": bool(given), "tags": set(), "evidence": {}})
        if tcol:
            entry["tags"].update(_tags(row.get(tcol), path, number, tcol))
        if normalise(entry["question"]) != normalise(question):
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
                out += _table_turns(entry["conversation"], grouped, path, carries, col, ncol, ccol, ecol, bcol)
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
                        "assistant": ("assistant",), "depends": ("depends",), "user": ("user",),
                        "rewrite": ("rewrite",), "answerable": ("answerable",)}


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
                pcol: str | None, rcol: str | None = None, bcol: str | None = None) -> None:
    """A turn row's assistant reply, depends flag and rewrite, merged with its other rows' (two
    values refused, each quoted, the earlier with its line; texts kept as the first row writes
    them, matched by ``normalise``)."""
    from .conversations import depends_cell

    def twice(what: str, here: str, before: tuple[str, int], fld: str | None) -> RetrievalEvalError:
        return RetrievalEvalError(f"two {what} for turn '{entry['conversation']}#{entry['turn']}': {here!r} here, "
                                  f"{before[0]!r} on line {before[1]}: give one (the other rows may leave it empty)",
                                  path=path, line=number, field=fld)

    for key, col, what in (("assistant", acol, "assistant replies"), ("rewrite", rcol, "rewrites")):
        text = (row.get(col) or "") if col else ""  # as written; matched by ``normalise``
        if text.strip():
            if entry[key] is not None and normalise(entry[key]) != normalise(text):
                raise twice(what, text, (entry[key], entry[f"{key}_line"]), col)
            if entry[key] is None:  # the first row's spelling
                entry[key], entry[f"{key}_line"] = text, number
    for key, col in (("depends", pcol), ("answerable", bcol)):
        if not col:
            continue
        cell = (row.get(col) or "").strip()
        try:
            flag = depends_cell(row.get(col))
        except ValueError as exc:
            raise RetrievalEvalError(str(exc), path=path, line=number, field=col) from None
        if flag is not None:
            if entry[key] not in (None, flag):
                raise twice(f"{key} values", cell, entry[f"{key}_cell"], col)
            entry[key], entry[f"{key}_cell"] = flag, entry.get(f"{key}_cell") or (cell, number)


def _table_turns(conv: str, grouped: dict[str, dict[str, Any]], path: str | Path, carries: tuple[str, ...],
                 col: dict[str, str | None], ncol: str | None, ccol: str | None, ecol: str | None, bcol: str | None = None) -> list[LabeledQuery]:
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
        unanswerable = e.get("answerable") is False  # no relevant document exists
        if unanswerable and relevant and (found := next((d for d, g in relevant.items() if g >= 1), None)):
            raise RetrievalEvalError(f"turn {e['turn']} of '{conv}' is unanswerable (no relevant document exists) but "
                                     f"judges '{found}' relevant (grade {relevant[found]}): give it grade 0 or leave "
                                     "the answerable cell empty", path=path, line=e["line"], field=bcol)
        if relevant is not None and not unanswerable:
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
                                e["depends"], tuple(e["tags"]), e["rewrite"], not unanswerable))
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
        question = str(record.get("question") or "")  # as written
        if not question.strip():
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
        stated = record["turns"][q.turn - 1].get("answerable") is False  # no relevant document exists
        if not stated and not any(g >= 1 for g in q.relevant.values()):
            raise bad(f"turn '{q.query_id}': needs at least one document with grade >= 1 (answerable: false says "
                      "no relevant document exists)", f"{fld}.relevant")
        problem = query_problem(q.query_id, q.question, q.relevant, unanswerable=stated)
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


FORMATS = ("csv", "tsv", "jsonl", "qrels-jsonl", "beir", "mtrag", "mtrag-conversations", "topics")


def detect_format(path: Path) -> str:
    """The format ``auto`` reads ``path`` as: a folder of MTRAG retrieval tasks or a BEIR folder; an
    MTRAG conversation file or a CAsT / iKAT topic file; else by its suffix."""
    from .benchmarks import is_mtrag_conversations, is_mtrag_tasks, is_topics

    if path.is_dir():
        return "mtrag" if is_mtrag_tasks(path) else "beir"
    if is_mtrag_conversations(path):
        return "mtrag-conversations"
    if is_topics(path):
        return "topics"
    if path.suffix == ".json":
        raise RetrievalEvalError("a .json file is read as an MTRAG conversation file (tasks with 'input') or a CAsT / "
                                 "iKAT topic file (topics with 'number' and 'turn'), and this is neither; name its "
                                 f"format with --format ({', '.join(FORMATS)})", path=path)
    return ("tsv" if path.suffix in (".tsv", ".tab") else "jsonl" if path.suffix in (".jsonl", ".ndjson") else "csv")


def read_labels(path: str | Path, *, fmt: str = "auto", columns: Columns = Columns(), split: str = "test",
                qrels: str | Path | None = None, rewrites: str | Path | None = None) -> list[LabeledQuery]:
    """The labeled questions of a file in one of ``FORMATS`` (``qrels``: a topic file's TREC qrels;
    ``rewrites``: MTRAG's ``*_rewrite.jsonl`` for a conversation file's turns), as an ``Entries``
    list that also says which conversations had no labeled turn; a file that holds none is an error."""
    from .benchmarks import Entries, read_mtrag_conversations, read_mtrag_tasks, read_rewrites, read_topics

    path = Path(path)
    if fmt == "auto":
        fmt = detect_format(path)
    readers = {"beir": lambda: read_beir(path, split), "qrels-jsonl": lambda: read_qrels_jsonl(path),
               "jsonl": lambda: read_jsonl(path),
               "csv": lambda: read_table(path, delimiter=",", columns=columns),
               "tsv": lambda: read_table(path, delimiter="\t", columns=columns),
               "mtrag": lambda: read_mtrag_tasks(path),
               "mtrag-conversations": lambda: read_mtrag_conversations(
                   path, read_rewrites(rewrites) if rewrites is not None else None),
               "topics": lambda: read_topics(path, qrels)}
    if fmt not in readers:
        raise RetrievalEvalError(f"unknown label format {fmt!r}; choose one of auto, {', '.join(FORMATS)}")
    if rewrites is not None and fmt != "mtrag-conversations":
        raise RetrievalEvalError(f"--rewrites adds MTRAG's rewrites to an MTRAG conversation file, not to {fmt}", path=path)
    entries = readers[fmt]()
    if not isinstance(entries, Entries):
        entries = Entries(entries, _left_out(path, fmt, entries))
    if not entries:
        left = f": {_no_labeled_turn(entries.left_out)}" if entries.left_out else ""
        raise RetrievalEvalError(f"no labeled questions in the file (read as {fmt}){left}", path=path)
    return entries


def _no_labeled_turn(conversations: Sequence[str]) -> str:
    n = len(conversations)
    return f"{n} conversation{'s' * (n != 1)} had no labeled turn (left out)"


def _left_out(path: Path, fmt: str, entries: Sequence[LabeledQuery]) -> list[str]:
    """The conversations of a JSONL or CSV/TSV labels file with no labeled turn, in file order:
    each feeds no question, so the import leaves it out, and says how many."""
    labeled = {q.conversation for q in entries if q.conversation is not None}
    named: dict[str, None] = {}
    if fmt == "jsonl":
        from .._textfiles import json_lines

        for _, record in json_lines(path):
            if isinstance(record, dict) and isinstance(record.get("conversation"), (str, int)):
                named[str(record["conversation"])] = None
    elif fmt in ("csv", "tsv"):
        reader = csv.DictReader(io.StringIO(read_text(path)), delimiter="," if fmt == "csv" else "\t")
        col = next((h for h in reader.fieldnames or [] if h and h.strip().lower() in CONVERSATION_COLUMNS["conversation"]),
                   None)
        if col is not None:
            named.update((c, None) for row in reader if (c := (row.get(col) or "").strip()))
    return [c for c in named if c not in labeled]


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
