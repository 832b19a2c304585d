"""The human worksheet: a CSV a person fills with 0-3 grades, and the grades read back.

The sheet is plain CSV with one header row, so a spreadsheet, ``csv`` and pandas read it with
no option: a ``#`` comment line would be a data row in all of them. The 0-3 scale travels in the
grade column's name, which stays in sight while the column is filled and goes wherever the sheet
goes (an upload, a mail); its full wording, the judge's own (``data/judge.py``), is in the
README written beside it. ``depth`` and ``doc_sha256`` are what the import records: the depth
the question is completely judged to and the text the person read.

Rows are sorted by question, then document id, and a labeled document is not marked or
prefilled: grading blind keeps every grade of a question on one scale by one person, where labels
are often binary (a label's 1 is "relevant", the scale's 1 "related, no answer").
"""

from __future__ import annotations

import csv
import io
import random
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Sequence

from ..errors import RetrievalEvalError
from ..types import sha256_text
from .judge import USER_PROMPT
from .grades import GRADES
from .judges import Judge
from .judgments import Judgment, question_sha256

#: characters of a document's text shown in the excerpt column (cut on a word boundary)
EXCERPT_CHARS = 300
#: the judge's own scale, line by line, as its prompt states it
SCALE = tuple(line.strip() for line in USER_PROMPT.splitlines() if re.match(r"[0-3] = ", line))
GRADE_COLUMN = "grade 0-3 (0 nothing to do with it, 1 related but no answer, 2 some answer, 3 the exact answer)"
COLUMNS = ("question_id", "question", "doc_id", "title", "excerpt", GRADE_COLUMN, "depth", "doc_sha256")
#: who grades a worksheet: one judge for every person, so the newest import of a pair wins
HUMAN = Judge("human", sha256_text("\n".join(SCALE)), 0.0, 1, "worksheet")
_SHA = re.compile(r"^[0-9a-f]{64}$")


@dataclass(frozen=True)
class Row:
    """One (question, document) of the sheet; ``grade`` None until a person fills it."""

    query_id: str
    question: str
    doc_id: str
    title: str
    excerpt: str
    doc_sha256: str
    grade: int | None = None
    line: int | None = None


@dataclass(frozen=True)
class Sheet:
    """A filled sheet as read: every row graded 0-3, one depth."""

    path: str
    depth: int
    rows: tuple[Row, ...]

    def judgments(self) -> list[Judgment]:
        """The rows as ``human`` judgments, keyed by the question and document text the person read."""
        return [Judgment(r.query_id, r.doc_id, r.grade, (r.grade,), r.doc_sha256, HUMAN, "human", None,
                         question_sha256(r.question), self.depth) for r in self.rows if r.grade is not None]


def fold(text: str) -> str:
    """One line: a cell a spreadsheet shows whole and a CSV line a message can name."""
    return " ".join(text.split())


def excerpt(text: str, limit: int = EXCERPT_CHARS) -> str:
    """``text`` on one line, cut to ``limit`` characters at the last word boundary (``…`` said)."""
    text = fold(text)
    if len(text) <= limit:
        return text
    cut = text[: limit + 1].rsplit(" ", 1)[0] if " " in text[: limit + 1] else text[:limit]
    return cut.rstrip(" ,;:") + " …"


def pick(questions: Sequence[tuple[str, Sequence[str]]], n: int, seed: int = 0) -> list[str]:
    """``n`` question ids of ``questions`` (id, tags), stratified by tags with proportional
    allocation (largest remainder): each combination of tags gets its share, so a mean over the
    picked questions estimates the mean over all. Seeded: the same input picks the same ids."""
    strata: dict[tuple[str, ...], list[str]] = {}
    for qid, tags in questions:
        strata.setdefault(tuple(sorted(tags)), []).append(qid)
    total = sum(len(ids) for ids in strata.values())
    if n >= total:
        return sorted(qid for ids in strata.values() for qid in ids)
    rng = random.Random(seed)
    keys = sorted(strata)
    quota = {k: n * len(strata[k]) / total for k in keys}
    take = {k: int(quota[k]) for k in keys}
    tiebreak = {k: rng.random() for k in keys}
    for k in sorted(keys, key=lambda k: (-(quota[k] - take[k]), tiebreak[k]))[: n - sum(take.values())]:
        take[k] += 1
    return sorted(qid for k in keys for qid in rng.sample(sorted(strata[k]), take[k]))


def worksheet_csv(rows: Sequence[Row], depth: int) -> str:
    """The sheet's text: a BOM (so Excel reads it as UTF-8), the header, a row per document."""
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(COLUMNS)
    for r in rows:
        writer.writerow([r.query_id, fold(r.question), r.doc_id, fold(r.title), r.excerpt,
                         "" if r.grade is None else r.grade, depth, r.doc_sha256])
    return "\ufeff" + out.getvalue()


def readme(sheet: str, questions: int, rows: int, depth: int, import_command: str) -> str:
    """The sidecar: the scale in the judge's words, what to fill and how the sheet comes back."""
    scale = "\n".join(f"- {line}" for line in SCALE)
    return (f"# {sheet}: a human relevance worksheet\n\n"
            f"{rows} rows: every document any engine ranked in the top {depth} of {questions} question(s), and the "
            "documents the labels judge for them. Fill the grade column of every row with a whole number 0-3, "
            "the scale the LLM judge uses:\n\n"
            f"{scale}\n\n"
            "A turn of a conversation is shown with the conversation before it (in parentheses): grade the "
            "document for the question as it was meant there. "
            "The excerpt is the start of the document; grade the document, not the excerpt, when it is cut (…). "
            "Leave question_id, question, doc_id, depth and doc_sha256 as they are: they say what was read. "
            "Rows may be sorted or filtered, not deleted: a question comes back only with every row graded.\n\n"
            f"When filled, save as CSV and record the grades:\n\n    {import_command}\n")


def read_worksheet(path: str | Path) -> Sheet:
    """The filled sheet at ``path``; a row whose grade is empty or not 0-3, or any other field a
    sheet cannot be read by, is refused naming the file, line and field (nothing is read)."""
    path = Path(path)
    try:
        text = path.read_bytes().decode("utf-8-sig")
    except OSError as exc:
        raise RetrievalEvalError(f"cannot read the worksheet: {exc.strerror or exc}", path=path) from None
    except UnicodeDecodeError as exc:
        line = path.read_bytes()[: exc.start].count(b"\n") + 1
        raise RetrievalEvalError("not UTF-8 text: save the sheet as CSV UTF-8", path=path, line=line) from None
    first = text.split("\n", 1)[0]
    delimiter = max(",;\t", key=first.count)  # a spreadsheet in a comma-decimal locale writes ';'
    reader = csv.reader(io.StringIO(text, newline=""), delimiter=delimiter)
    header = [h.strip() for h in next(reader, [])]
    index = {h: i for i, h in enumerate(header)}
    grade_at = next((i for i, h in enumerate(header) if h.lower().startswith("grade")), None)
    for name in ("question_id", "question", "doc_id", "depth", "doc_sha256"):
        if name not in index:
            raise RetrievalEvalError(f"no {name} column in the header: write the sheet with judge --worksheet=N",
                                     path=path, line=1, field=name)
    if grade_at is None:
        raise RetrievalEvalError("no grade column in the header", path=path, line=1, field="grade")
    rows, bad, seen, depths = [], [], {}, set()
    for cells in reader:
        line = reader.line_num
        if not any(c.strip() for c in cells):
            continue

        def cell(i: int) -> str:
            return cells[i].strip() if i < len(cells) else ""

        def refuse(fld: str, why: str) -> RetrievalEvalError:
            return RetrievalEvalError(why, path=path, line=line, field=fld)

        qid, doc = cell(index["question_id"]), cell(index["doc_id"])
        for name, value in (("question_id", qid), ("question", cell(index["question"])), ("doc_id", doc)):
            if not value:
                raise refuse(name, f"{name} is empty")
        if (qid, doc) in seen:
            raise refuse("doc_id", f"{qid}/{doc} is graded twice (also line {seen[qid, doc]})")
        seen[qid, doc] = line
        sha = cell(index["doc_sha256"])
        if not _SHA.match(sha):
            raise refuse("doc_sha256", f"doc_sha256 must be the 64 hex digits the sheet was written with, got {sha!r}")
        depth = cell(index["depth"])
        if not depth.isdigit() or int(depth) < 1:
            raise refuse("depth", f"depth must be the whole number the sheet was written with, got {depth!r}")
        depths.add((int(depth), line))
        raw = cell(grade_at)
        grade = _grade(raw)
        if grade is None:
            bad.append((line, f"grade is {'empty' if not raw else repr(raw) + ', not a grade'}: give every row "
                              "a whole number 0-3"))
        rows.append(Row(qid, cell(index["question"]), doc, cell(index.get("title", -1)) if "title" in index else "",
                        "", sha, grade, line))
    if bad:
        more = f" ({len(bad) - 1} more row(s) too, lines {', '.join(str(b[0]) for b in bad[1:6])}" \
               f"{' ...' if len(bad) > 6 else ''})" if len(bad) > 1 else ""
        raise RetrievalEvalError(bad[0][1] + more + "; nothing recorded", path=path, line=bad[0][0], field="grade")
    if not rows:
        raise RetrievalEvalError("no row to record", path=path)
    if len({d for d, _ in depths}) > 1:
        first_depth = min(depths, key=lambda d: d[1])[0]
        odd = min((d for d in depths if d[0] != first_depth), key=lambda d: d[1])
        raise RetrievalEvalError(f"depth {odd[0]} where the sheet's other rows say {first_depth}", path=path,
                                 line=odd[1], field="depth")
    return Sheet(str(path), depths.pop()[0], tuple(rows))


def filled_in(path: str | Path) -> list[tuple[str, str, int | None]]:
    """(question id, doc id, grade; None where what is written is no grade 0-3) of every row of
    the sheet at ``path`` whose grade cell is not empty, read leniently (a half-filled sheet too):
    what writing a new sheet over it would lose. Nothing when there is no such file, or it is no
    sheet (no grade column)."""
    path = Path(path)
    try:
        text = path.read_bytes().decode("utf-8-sig", errors="replace")
    except OSError:
        return []
    first = text.split("\n", 1)[0]
    reader = csv.reader(io.StringIO(text, newline=""), delimiter=max(",;\t", key=first.count))
    header = [h.strip() for h in next(reader, [])]
    grade_at = next((i for i, h in enumerate(header) if h.lower().startswith("grade")), None)
    if grade_at is None:
        return []
    at = {h: i for i, h in enumerate(header)}

    def cell(cells: list[str], name: str) -> str:
        i = at.get(name, len(cells))
        return cells[i].strip() if i < len(cells) else ""

    return [(cell(cells, "question_id"), cell(cells, "doc_id"), _grade(cells[grade_at].strip())) for cells in reader
            if grade_at < len(cells) and cells[grade_at].strip()]


def _grade(raw: str) -> int | None:
    """A filled grade: a whole number 0-3 (``2.0``, as a spreadsheet may save it, is 2)."""
    try:
        value = float(raw) if raw and raw.isascii() else None
    except ValueError:
        return None
    return int(value) if value is not None and value.is_integer() and int(value) in GRADES else None
