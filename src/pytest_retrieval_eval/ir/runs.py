"""Rankings (``Run``) and their file formats: TREC run files, score dicts, ranked lists."""

from __future__ import annotations

from operator import itemgetter
from pathlib import Path
from typing import Iterable, Iterator, Mapping, Sequence

from .._textfiles import read_text
from ..errors import RetrievalEvalError


_SCORE_THEN_DOC = itemgetter(1, 0)
_DOC = itemgetter(0)


def rank_by_score(scores: Mapping[str, float]) -> tuple[str, ...]:
    """trec_eval's order: score descending, ties broken by doc id descending (``strcmp``; code
    point order equals UTF-8 byte order). One C-level sort on (score, doc), reversed."""
    values = list(scores.values())
    if len(set(values)) == len(values) and values == sorted(values, reverse=True):
        return tuple(scores)  # already strictly decreasing (a ranked run, as engines write them)
    return tuple(map(_DOC, sorted(scores.items(), key=_SCORE_THEN_DOC, reverse=True)))


def checked_id(value: object, what: str, where: str) -> str:
    """An id as a string: strings as they are, whole numbers spelled out; anything else is an
    error naming where it was found."""
    if isinstance(value, str):
        return value
    if isinstance(value, int) and not isinstance(value, bool):
        return str(value)
    raise RetrievalEvalError(f"{where}: {what} {value!r} must be a string, got {type(value).__name__}")


def require(module: str, purpose: str):
    """An optional package, or an error saying how to install it."""
    import importlib

    try:
        return importlib.import_module(module)
    except ImportError:
        package = {"ranx": "ranx", "pandas": "pandas"}.get(module, module)
        raise RetrievalEvalError(f"{purpose} needs the optional package {package}: pip install {package}") from None


def dedupe(doc_ids: Iterable[str]) -> tuple[str, ...]:
    """Keep the first occurrence of each doc id: a document can only be retrieved once."""
    return tuple(dict.fromkeys(doc_ids))


class Run(Mapping[str, Sequence[str]]):
    """``{query_id: (doc_id, ...)}``, best first, each doc at most once per query.

    A run made from scores (``from_dict``, ``from_trec``) keeps them and ranks a query only when
    its ranking is asked for: ``evaluate`` reads the rank of each judged document straight from
    the scores, which costs far less than sorting every query."""

    __slots__ = ("_ranked", "_scores", "name")

    def __init__(self, rankings: Mapping[str, Iterable[str]] | None = None, *, name: str = "run") -> None:
        self._ranked: dict[str, tuple[str, ...]] | None = {}
        self._scores: dict[str, dict[str, float]] | None = None
        for q, docs in (rankings or {}).items():
            qid = checked_id(q, "query id", f"query {q!r}")
            if isinstance(docs, (str, bytes, Mapping)) or not isinstance(docs, Iterable):
                raise RetrievalEvalError(f"query '{qid}': expected its doc ids best first (a list), got "
                                         f"{type(docs).__name__}{' (scores? use Run.from_dict)' if isinstance(docs, Mapping) else ''}")
            self._ranked[qid] = dedupe(checked_id(d, "doc id", f"query '{qid}'") for d in docs)
        self.name = name

    @classmethod
    def _from_scores(cls, scores: dict[str, dict[str, float]], name: str) -> "Run":
        """Scores already checked (string ids, numbers): ranked on demand."""
        run = cls.__new__(cls)
        run._ranked, run._scores, run.name = None, scores, name
        return run

    @property
    def rankings(self) -> dict[str, tuple[str, ...]]:
        """Every query's ranking (the run's own dict: read it, do not change it); a scored run
        is ranked here, once."""
        if self._ranked is None:
            self._ranked = {q: rank_by_score(d) for q, d in self._scores.items()}
        return self._ranked

    @property
    def unranked_scores(self) -> dict[str, dict[str, float]] | None:
        """The scores of a scored run not ranked yet (the run's own dict), else None: what
        ``evaluate`` reads ranks from without sorting."""
        return self._scores if self._ranked is None else None

    def __getitem__(self, qid: str) -> tuple[str, ...]:
        if self._ranked is None:
            return rank_by_score(self._scores[qid])
        return self._ranked[qid]

    def __iter__(self) -> Iterator[str]:
        return iter(self._scores if self._ranked is None else self._ranked)

    def __len__(self) -> int:
        return len(self._scores if self._ranked is None else self._ranked)

    def __repr__(self) -> str:
        return f"Run({self.name!r}, {len(self)} queries)"

    @classmethod
    def from_ranked(cls, rankings: Mapping[str, Iterable[str]], *, name: str = "run") -> "Run":
        """Rankings given as ordered lists; a repeated doc id keeps its first (best) rank."""
        return cls(rankings, name=name)

    @classmethod
    def from_dict(cls, scores: Mapping[str, Mapping[str, float]], *, name: str = "run") -> "Run":
        """Scored runs ``{qid: {doc: score}}``, ranked as trec_eval ranks them."""
        out = {}
        for q, docs in scores.items():
            qid = checked_id(q, "query id", f"query {q!r}")
            if not isinstance(docs, Mapping):
                raise RetrievalEvalError(f"query '{qid}': expected {{doc_id: score}}, got {type(docs).__name__}")
            if not set(map(type, docs)) <= {str}:  # ids as strings before ranking: ties break on them
                docs = {checked_id(d, "doc id", f"query '{qid}'"): v for d, v in docs.items()}
            try:
                total = sum(docs.values())  # TypeError for a non-number; NaN if any is NaN
                if total != total and any(v != v for v in docs.values()):
                    raise TypeError
                out[qid] = docs
            except TypeError:
                bad = next(((d, v) for d, v in docs.items()
                            if not isinstance(v, (int, float)) or isinstance(v, bool) or v != v), None)
                if bad is None:
                    raise
                raise RetrievalEvalError(
                    f"score of document '{bad[0]}' for query '{qid}' must be a number, got {bad[1]!r}"
                ) from None
        return cls._from_scores(out, name)

    @classmethod
    def from_trec(cls, path: str | Path, *, name: str | None = None) -> "Run":
        """TREC run file: ``query_id Q0 doc_id rank score tag``, read by trec_eval 10's rules: any
        whitespace between fields, fields after the tag ignored, blank lines and lines whose first
        non-blank character is ``#`` skipped, the run's name from the last line's tag. Order comes
        from the scores (the rank column is ignored, as trec_eval ignores it). A document listed
        twice for one query is an error, as in trec_eval."""
        scores: dict[str, dict[str, float]] = {}
        tag, qid_now, docs = None, None, {}
        for number, line in enumerate(read_text(path).splitlines(), start=1):
            parts = line.split()
            if not parts or parts[0].startswith("#"):
                continue
            if len(parts) < 6:
                raise RetrievalEvalError(f"expected 6 columns 'query_id Q0 doc_id rank score tag', found {len(parts)}",
                                         path=path, line=number)
            qid, _, doc, _, score_text, tag = parts[:6]
            if qid != qid_now:  # lines of one query usually come together: one lookup per query
                qid_now, docs = qid, scores.setdefault(qid, {})
            try:
                score = float(score_text)
            except ValueError:
                raise RetrievalEvalError(f"score must be a number, got {score_text!r}", path=path, line=number,
                                         field="score") from None
            if score != score:
                raise RetrievalEvalError("score is NaN", path=path, line=number, field="score")
            if doc in docs:
                first = next(i for i, l in enumerate(read_text(path).splitlines(), start=1)
                             if l.split()[:3:2] == [qid, doc])
                raise RetrievalEvalError(f"document '{doc}' is listed twice for query '{qid}' (first on line {first})",
                                         path=path, line=number)
            docs[doc] = score
        return cls._from_scores(scores, name=name or tag or Path(path).stem)

    def to_trec(self, path: str | Path, *, tag: str | None = None) -> None:
        """Write a TREC run whose scores (n - rank) reproduce this exact order in trec_eval."""
        tag = (tag or self.name).replace(" ", "_") or "run"
        lines = []
        for qid in sorted(self.rankings):
            docs = self.rankings[qid]
            for rank, doc in enumerate(docs, start=1):
                lines.append(f"{qid} Q0 {doc} {rank} {len(docs) - rank + 1} {tag}\n")
        Path(path).write_text("".join(lines), encoding="utf-8")

    def to_dict(self) -> dict[str, dict[str, float]]:
        """``{qid: {doc: score}}``, each query's documents best first. A scored run keeps its
        scores; a ranked one gets ``n - rank + 1``, as ``to_trec`` writes. Tools that sort ties
        stably (ranx) then rank exactly as here."""
        out: dict[str, dict[str, float]] = {}
        for qid, docs in self.rankings.items():
            if self._scores is not None:
                scores = self._scores[qid]
                out[qid] = {d: scores[d] for d in docs}
            else:
                out[qid] = {d: float(len(docs) - rank) for rank, d in enumerate(docs)}
        return out

    def to_ranx(self):
        """This run as a ``ranx.Run`` (ranx is optional), named as this run is."""
        ranx = require("ranx", "Run.to_ranx()")
        return ranx.Run.from_dict(self.to_dict(), name=self.name)
