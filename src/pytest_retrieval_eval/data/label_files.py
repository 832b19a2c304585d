"""A team's label files, read: CSV/TSV tables (``data/label_tables.py``), JSONL (questions, or a conversation a line),
rig-style ``qrels.jsonl`` and a BEIR folder's queries + qrels; and such a file given in place of
the questions cache (``load_labels``). Each read entry records its file, line and fields, so
the import (``data/label_import.py``) and the stamp name them in an error.
"""

from __future__ import annotations

import csv
import io
import json
from dataclasses import replace
from pathlib import Path
from typing import Sequence

from .._textfiles import read_text
from ..errors import RetrievalEvalError
from ..ir.qrels import add_grade, parse_grade
from ..types import LabeledQuery
from .label_fields import carried, evidence_of, fields_of, question_id, tags_of
from .label_lifecycle import IMPORTED
from .label_tables import CONVERSATION_COLUMNS, Columns, read_table
from .labeled import LabeledSet, query_problem


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
                  "_carries": carried(tags=False, grades=graded, evidence="evidence" in record),
                  **fields_of("relevant_docs", "evidence")}
        if record.get("reference_answer"):
            source["reference_answer"] = str(record["reference_answer"])
        if record.get("evidence"):
            source["evidence"] = evidence_of(record["evidence"], relevant, path, number, "evidence")
        out.append(LabeledQuery(qid, text, relevant, source))
    return out


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
                  "_carries": carried(tags="tags" in record, grades="relevant" in record, evidence="evidence" in record),
                  **fields_of("relevant" if record.get("relevant") else "doc_id", "evidence", "id", "question")}
        if record.get("evidence"):
            source["evidence"] = evidence_of(record["evidence"], relevant, path, number, "evidence")
        out.append(LabeledQuery(qid, question, relevant, source, tags_of(record.get("tags"), path, number, "tags")))
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
    for q in turns_of(cid, turns, tags_of(record.get("tags"), path, number, "tags")):
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
                  "_carries": carried(tags="tags" in raw or "tags" in record, grades=True, evidence="evidence" in raw),
                  **fields_of(f"{fld}.relevant", f"{fld}.evidence")}
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
    carries = carried(grades=True, evidence=(Path(folder) / "qrels" / f"{split}.evidence.jsonl").is_file())
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
    return {q: evidence_of(ev, dict(queries[q].relevant), path, lines[q], "corpus-id") for q, ev in raw.items()}


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
