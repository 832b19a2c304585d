"""A saved run's human worksheet: which questions, which documents, and a filled sheet checked
against the run before its grades are recorded.

A question's rows are the judge's pool of it (``judging.pool``: the unjudged documents of every
engine's top k) and every document its labels judge, so once graded the question is completely
human-judged to depth k on one scale, and its labels are graded too.
"""

from __future__ import annotations

from typing import Any, Collection

from ..data.judgments import Judgment, question_sha256
from ..data.worksheet import Row, Sheet, excerpt, pick
from ..errors import RetrievalEvalError
from .judging import pool
from .results import RunResults


def questions_of(run: RunResults) -> dict[str, Any]:
    """Question id -> its labeled question (the first labeled set that has it)."""
    out: dict[str, Any] = {}
    for e in run.evaluations:
        for q in e.labeled.queries:
            out.setdefault(q.query_id, q)
    return out


def top_docs(run: RunResults, depth: int) -> dict[str, dict[str, None]]:
    """Question id -> every document of every engine's top ``depth`` (ordered, once each)."""
    out: dict[str, dict[str, None]] = {}
    for e in run.evaluations:
        for r in e.results:
            out.setdefault(r.query_id, {}).update(dict.fromkeys(r.doc_ids[:depth]))
    return out


def sheet_rows(run: RunResults, corpus: Any, depth: int) -> tuple[dict[str, list[Row]], dict[str, str]]:
    """(question id -> its rows, question id -> the document that keeps it off a sheet): a
    question with a pooled document the corpus lacks cannot be judged completely."""
    questions = questions_of(run)
    wanted: dict[str, dict[str, None]] = {}
    for h in pool(run, depth):
        wanted.setdefault(h.query_id, {})[h.doc_id] = None
    rows: dict[str, list[Row]] = {}
    lacking: dict[str, str] = {}
    for qid, q in questions.items():
        labeled = [d for d in q.relevant if corpus.get(d) is not None]  # a deleted label has no text to read
        for doc_id in sorted({**wanted.get(qid, {}), **dict.fromkeys(labeled)}):
            doc = corpus.get(doc_id)
            if doc is None:
                lacking.setdefault(qid, doc_id)
                continue
            rows.setdefault(qid, []).append(Row(qid, q.asked, doc_id, doc.title, excerpt(doc.content),
                                                doc.fingerprint))
    return {qid: r for qid, r in rows.items() if qid not in lacking}, lacking


def choose(run: RunResults, eligible: Collection[str], n: int, seed: int = 0) -> list[str]:
    """``n`` of the ``eligible`` questions, stratified by their tags (``data.worksheet.pick``)."""
    questions = questions_of(run)
    return pick([(qid, questions[qid].tags) for qid in questions if qid in eligible], n, seed)


def checked(sheet: Sheet, run: RunResults) -> list[Judgment]:
    """The sheet's grades as judgments, once each row is the run's: a known question in the wording
    the run asked, and every document of its top ``depth`` graded; refused naming file and line."""
    questions = questions_of(run)
    top = top_docs(run, sheet.depth)
    graded: dict[str, set[str]] = {}
    for r in sheet.rows:
        q = questions.get(r.query_id)
        if q is None:
            raise RetrievalEvalError(f"no question {r.query_id!r} in the run: the sheet was written for another run",
                                     path=sheet.path, line=r.line, field="question_id")
        if question_sha256(r.question) != q.asked_sha256:
            raise RetrievalEvalError(f"the question reads otherwise in the run ({q.asked!r}): edited, or "
                                     "written for another wording", path=sheet.path, line=r.line, field="question")
        graded.setdefault(r.query_id, set()).add(r.doc_id)
    for qid, docs in sorted(graded.items()):
        missing = [d for d in top.get(qid, {}) if d not in docs]
        if missing:
            raise RetrievalEvalError(f"question {qid} has no row for {', '.join(missing[:3])}"
                                     f"{' ...' if len(missing) > 3 else ''} of its top {sheet.depth}: a row was "
                                     "deleted, or the sheet is another run's; nothing recorded", path=sheet.path)
    return sheet.judgments()


def unchanged_documents(sheet: Sheet, corpus: Any) -> None:
    """Refuse, naming file, line and field, the first row whose document reads otherwise in the
    corpus than the person read it (``doc_sha256``), or is gone from it: its grade is of another
    text, and recorded it would silently take its question out of the human-judged ones."""
    for r in sheet.rows:
        doc = corpus.get(r.doc_id)
        if doc is None or doc.fingerprint != r.doc_sha256:
            now = ("is not in the corpus" if doc is None else
                   f"reads otherwise than the sheet's doc_sha256 says (corpus {doc.fingerprint[:12]}, sheet "
                   f"{r.doc_sha256[:12]}): changed since the sheet was written, or the cell was edited")
            raise RetrievalEvalError(f"document {r.doc_id} {now}: the grade is of another text; nothing recorded "
                                     f"(delete question {r.query_id}'s rows to record the others, and put it on a new "
                                     "sheet with judge --worksheet=N)", path=sheet.path, line=r.line, field="doc_sha256")
