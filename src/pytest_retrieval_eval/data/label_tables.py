"""A team's CSV/TSV label tables: their columns found by ``Columns`` and ``ALIASES``, one row per
(question, judged document), a conversation's turns as rows; each read entry records its file,
line and fields, so the import and the stamp name them in an error."""

from __future__ import annotations

import csv
import io
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Sequence

from .._textfiles import read_text
from ..errors import RetrievalEvalError
from ..ir.qrels import add_grade, parse_grade
from ..types import LabeledQuery
from .label_lifecycle import IMPORTED
from .labeled import query_problem
from .text import normalise
from .label_fields import EVIDENCE_COLUMNS, TAG_COLUMNS, carried, evidence_of, fields_of, question_id, tags_of


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
            entry["tags"].update(tags_of(row.get(tcol), path, number, tcol))
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
            evidence_of(entry["evidence"], entry["relevant"], path, number, ecol)
    out: list[LabeledQuery] = []
    carries = carried(tags=tcol, grades=gcol, evidence=ecol)
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
        source["_fields"] = {**source["_fields"], **fields_of(None, None, icol, qcol)["_fields"]}
        out.append(LabeledQuery(qid, entry["question"], entry["relevant"], source, tuple(sorted(entry["tags"]))))
    return out


#: role -> header names (any case) of the columns of a conversation's turns in a labels table
CONVERSATION_COLUMNS = {"conversation": ("conversation", "conversation_id"), "turn": ("turn",),
                        "assistant": ("assistant",), "depends": ("depends",), "user": ("user",),
                        "rewrite": ("rewrite",), "answerable": ("answerable",)}


def _table_source(entry: dict[str, Any], path: str | Path, carries: tuple[str, ...], ecol: str | None,
                  dcol: str | None) -> dict:
    source: dict[str, Any] = {"by": f"{IMPORTED}:{Path(path).name}", "_line": entry["line"], "_file": str(path),
                              "_carries": carries, **fields_of(dcol, ecol)}
    if entry["notes"]:
        source["_notes"] = entry["notes"]
    if not entry["given"]:
        source["_text_id"] = True
    if entry["evidence"]:
        source["evidence"] = evidence_of(entry["evidence"], entry["relevant"], path, entry["line"], ecol or "evidence")
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
