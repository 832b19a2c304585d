"""Relevance judgements (``Qrels``) and their file formats: TREC qrels, BEIR tsv, plain dicts."""

from __future__ import annotations

import numbers
from pathlib import Path
from typing import Iterator, Mapping

from .._textfiles import numbered_lines, read_text
from ..errors import RetrievalEvalError


def parse_grade(value: object, *, path=None, line=None, field="grade") -> int:
    """A relevance grade as trec_eval reads it: a whole number (a negative one is in the pool but
    unjudged). An integral float (``1.0``, as pandas writes qrels; a JSON ``2.0``) is that number;
    a fraction, NaN, infinity, a bool or anything else is refused naming ``path``, ``line`` and
    ``field``. The one parser of every file of grades (qrels, BEIR, label import, the questions
    cache), so what one reads the others read alike."""
    number: object = value
    if isinstance(value, str):
        text = value.strip()
        number = None
        if text.isascii() and "_" not in text:  # int() would take '1_0' and other scripts' digits
            try:
                number = int(text)
            except ValueError:
                try:
                    number = float(text)
                except ValueError:
                    pass
    if isinstance(number, float) and number.is_integer():  # numpy's float64 too
        return int(number)
    if isinstance(number, numbers.Integral) and not isinstance(number, bool):  # numpy's int64 too
        return int(number)
    raise RetrievalEvalError(f"relevance grade must be an integer, got {value!r}", path=path, line=line, field=field)


#: judged documents per query below which labels "judge few" (see ``Qrels.judges_few``)
FEW_JUDGED = 2.0


class Qrels(Mapping[str, Mapping[str, int]]):
    """``{query_id: {doc_id: grade}}``; grade >= 1 is relevant, 0 judged not relevant.

    Every query present is *judged*: under trec_eval ``-c`` semantics it counts in the mean even
    when a run leaves it out or it has no relevant document.
    """

    __slots__ = ("_data",)

    def __init__(self, data: Mapping[str, Mapping[str, int]] | None = None) -> None:
        from .runs import checked_id

        self._data: dict[str, dict[str, int]] = {}
        for q, docs in (data or {}).items():
            qid = checked_id(q, "query id", f"query {q!r}")
            if not isinstance(docs, Mapping):
                raise RetrievalEvalError(f"query '{qid}': expected {{doc_id: grade}}, got {type(docs).__name__}")
            self._data[qid] = {checked_id(d, "doc id", f"query '{qid}'"): parse_grade(g, field=f"{qid}/{d}") for d, g in docs.items()}

    # Mapping protocol
    @property
    def judgements(self) -> dict[str, dict[str, int]]:
        """``{query_id: {doc_id: grade}}``, the qrels' own dicts (read them, do not change them):
        what ``evaluate`` reads per query without a method call."""
        return self._data

    def __getitem__(self, qid: str) -> Mapping[str, int]:
        return self._data[qid]

    def __iter__(self) -> Iterator[str]:
        return iter(self._data)

    def __len__(self) -> int:
        return len(self._data)

    def __repr__(self) -> str:
        n = sum(len(v) for v in self._data.values())
        return f"Qrels({len(self._data)} queries, {n} judgements)"

    def to_dict(self) -> dict[str, dict[str, int]]:
        return {q: dict(d) for q, d in self._data.items()}

    def judged_per_query(self) -> float:
        """Judged documents (grade >= 0) per query, on average; NaN with no query."""
        if not self._data:
            return float("nan")
        return sum(sum(1 for g in d.values() if g >= 0) for d in self._data.values()) / len(self._data)

    def judges_few(self) -> bool:
        """The labels judge fewer than ``FEW_JUDGED`` documents per query (one gold document each,
        as generated questions have): most of what an engine retrieves is then unjudged and counts
        as not relevant, so ``judged@k`` belongs beside the gated measures."""
        return self.judged_per_query() < FEW_JUDGED

    def to_ranx(self):
        """These judgements as a ``ranx.Qrels`` (ranx is optional)."""
        from .runs import require

        return require("ranx", "Qrels.to_ranx()").Qrels.from_dict(self.to_dict())

    @classmethod
    def from_dict(cls, data: Mapping[str, Mapping[str, int]]) -> "Qrels":
        return cls(data)

    @classmethod
    def from_trec(cls, path: str | Path) -> "Qrels":
        """TREC qrels: ``query_id iteration doc_id grade`` per line, any whitespace between fields.
        As in trec_eval 10, a line starting with ``#`` is a comment (a ``#`` later in a line is part
        of it); blank lines are skipped; a fifth field is an error, as trec_eval refuses it."""
        data: dict[str, dict[str, int]] = {}
        for number, line in enumerate(read_text(path).splitlines(), start=1):
            if line.startswith("#"):
                continue
            parts = line.split()
            if not parts:
                continue
            if len(parts) != 4:
                raise RetrievalEvalError(
                    f"expected 4 columns 'query_id iteration doc_id grade', found {len(parts)}",
                    path=path,
                    line=number,
                )
            qid, _, doc, grade = parts
            _add(data, qid, doc, parse_grade(grade, path=path, line=number), path, number)
        qrels = cls.__new__(cls)  # ids are strings and grades checked: no second pass
        qrels._data = data
        return qrels

    @classmethod
    def from_beir_tsv(cls, path: str | Path) -> "Qrels":
        """BEIR qrels: ``query-id<TAB>corpus-id<TAB>score``, an optional header line, CRLF ok."""
        data: dict[str, dict[str, int]] = {}
        for number, line in numbered_lines(path):
            parts = [p.strip() for p in line.split("\t")]
            if len(parts) != 3:
                raise RetrievalEvalError(
                    f"expected 3 tab-separated columns 'query-id corpus-id score', found {len(parts)}",
                    path=path,
                    line=number,
                )
            qid, doc, grade = parts
            if number == 1 and not _looks_like_int(grade):
                continue  # header: query-id corpus-id score
            _add(data, qid, doc, parse_grade(grade, path=path, line=number, field="score"), path, number)
        return cls(data)

    def to_trec(self, path: str | Path) -> None:
        lines = [
            f"{q} 0 {d} {g}\n" for q in sorted(self._data) for d, g in sorted(self._data[q].items())
        ]
        Path(path).write_text("".join(lines), encoding="utf-8")


def _looks_like_int(text: str) -> bool:
    try:
        float(text)
        return True
    except ValueError:
        return False


def add_grade(docs: dict[str, int], doc: str, grade: int, *, who: str, path=None, line=None, field=None) -> None:
    """Record ``doc``'s grade in ``docs``, one question's judgements read from a file: the same
    document again with another grade is refused, as trec_eval refuses it; the same grade again is
    one judgement. Every reader of grades (the qrels loaders, label import) adds through here."""
    if doc in docs and docs[doc] != grade:
        raise RetrievalEvalError(f"{who} judges document '{doc}' twice with different grades ({docs[doc]} and {grade})",
                                 path=path, line=line, field=field)
    docs[doc] = grade


def _add(data, qid, doc, grade, path, number) -> None:
    add_grade(data.setdefault(qid, {}), doc, grade, who=f"query '{qid}'", path=path, line=number)
