"""What every label format reads alike: a record's evidence and tags (refused naming file, line
and field), the id of a question that has none, and where a read entry's fields are in its file
(``source._fields``, ``source._carries``)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ..errors import RetrievalEvalError


def evidence_of(raw: Any, relevant: dict[str, int], path: str | Path, line: int | None, field: str) -> dict:
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


def fields_of(docs: str | None, evidence: str | None = None, ident: str | None = None,
            question: str | None = None) -> dict[str, str]:
    """Where a read entry's judged documents, evidence, id and question are in its file
    (``source._fields``), as the file spells it (a column, ``turns[1].relevant``): the stamp's,
    the evidence check's and the import's errors name it beside the line."""
    return {"_fields": {k: v for k, v in (("docs", docs), ("evidence", evidence), ("id", ident),
                                          ("question", question)) if v}}


def carried(**fields: Any) -> tuple[str, ...]:
    """The fields a file's record carries (``source._carries``), of ``CARRIED``: an import over an
    existing question keeps what its file does not carry (``label_import``'s merge)."""
    return tuple(f for f in CARRIED if fields.get(f))


#: the fields a label file may carry or not: a tags column, a grade column, an evidence column
CARRIED = ("tags", "grades", "evidence")


#: header names of the optional column of a question's tags (its segments)
TAG_COLUMNS = ("tags", "tag", "segments")
#: header names of the optional column of a row's evidence: a quote of its document that answers
#: the question (several quotes: several rows)
EVIDENCE_COLUMNS = ("evidence", "quote")


def tags_of(raw: Any, path: str | Path, line: int, field: str) -> tuple[str, ...]:
    from .segments import parse_tags

    try:
        return parse_tags(raw, field)
    except RetrievalEvalError as exc:
        raise RetrievalEvalError(exc.detail.split(": ", 1)[-1], path=path, line=line, field=field) from None
