"""The labeled set: questions with judged documents, and the committed questions cache format.

``questions.cache.json`` (format version 1)::

    {
      "format": "pytest-retrieval-eval/questions",
      "version": 1,
      "generator": {"method": "...", "model": ..., "prompt_sha256": ..., "temperature": ..., "notes": "..."},
      "splitter": {...} | null,          # chunking the questions were written against
      "corpus_fingerprint": "<sha256>",  # of the corpus the set was made from
      "queries": [
        {"id": "...", "question": "...", "relevant": {"<doc_id>": 1},
         "source": {"doc_id": "...", "doc_sha256": "...", "chunk_id": null, "chunk_sha256": null,
                    "evidence": {"<doc_id>": ["a passage of its text that answers it", ...]}}}
      ],
      "conversations": [                 # optional (``data/conversations.py``)
        {"id": "c1", "tags": [...], "turns": [
          {"user": "...", "assistant": "..."},                   # searches nothing: history only
          {"user": "...", "relevant": {"<doc_id>": 1}, "source": {...}, "depends": true, "tags": [...]}]}
      ]
    }

A searching turn is a labeled query ``c1#2`` (``types.turn_id``); '#' in a conversation id is
refused, since it names the turns.

A labeled set can also come from BEIR queries + qrels (see ``corpus.BeirFolder``); both end up
as a ``LabeledSet``.
"""

from __future__ import annotations

import json
import zlib
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Any, Iterable, Iterator, Mapping

from .._atomic import write_text_atomic
from .._textfiles import read_text
from ..errors import RetrievalEvalError
from ..ir.qrels import Qrels, parse_grade
from ..types import LabeledQuery, Turn, canonical_json, id_problem, sha256_text, text_problem
from .text import normalise

FORMAT = "pytest-retrieval-eval/questions"
VERSION = 1


@dataclass(frozen=True)
class LabeledSet:
    """An ordered, id-unique collection of labeled queries plus where it came from."""

    queries: tuple[LabeledQuery, ...]
    name: str = "labeled"
    provenance: Mapping[str, Any] = field(default_factory=dict, compare=False, hash=False)
    #: turns labeled unanswerable (no relevant document exists: ``LabeledQuery.answerable`` false),
    #: held beside the scored questions: engines are asked them and the run says what came back
    #: (``analysis/unanswerable.py``), but no measure, count or fingerprint reads them. A query
    #: given in ``queries`` labeled unanswerable is moved here.
    unanswerable: tuple[LabeledQuery, ...] = field(default=(), compare=False, hash=False)

    def __post_init__(self) -> None:
        if any(not q.answerable for q in self.queries):
            object.__setattr__(self, "unanswerable", (*self.unanswerable, *(q for q in self.queries
                                                                            if not q.answerable)))
            object.__setattr__(self, "queries", tuple(q for q in self.queries if q.answerable))
        seen: set[str] = set()
        for q in (*self.queries, *self.unanswerable):
            if q.query_id in seen:
                raise RetrievalEvalError(f"labeled set '{self.name}': duplicate query id '{q.query_id}'")
            seen.add(q.query_id)
        both = sorted(seen & {q.conversation for q in self.queries if q.conversation is not None})
        if both:  # the question and the conversation's turns would be resampled as one
            raise RetrievalEvalError(f"labeled set '{self.name}': '{both[0]}' is both a question's id and a "
                                     "conversation's: rename one")

    def __len__(self) -> int:
        return len(self.queries)

    @property
    def everything(self) -> tuple[LabeledQuery, ...]:
        """The scored questions and the unanswerable turns: what a questions cache holds."""
        return (*self.queries, *self.unanswerable)

    def __iter__(self) -> Iterator[LabeledQuery]:
        return iter(self.queries)

    @cached_property
    def multi_judged(self) -> bool:
        """Judged like a qrels file (several documents or grades per query), not one gold each:
        then nDCG@10 is the measure people compare, and the report adds it. A slice answers for
        its whole set, so every CI job's table has the columns the unsliced run's has."""
        whole = self.provenance.get("slice", {}).get("multi_judged")
        if whole is not None:
            return bool(whole)
        return any(len(q.relevant) != 1 or set(q.relevant.values()) != {1} for q in self.queries)

    @cached_property
    def qrels(self) -> Qrels:
        return Qrels.from_dict({q.query_id: dict(q.relevant) for q in self.queries})

    @cached_property
    def fingerprint(self) -> str:
        """sha256 over ids, questions and judgements: what the scores depend on (computed once:
        the set is frozen). A turn's human rewrite is part of its label (what the oracle searches)."""
        from .evidence import evidence_of

        return sha256_text(  # evidence, history and rewrite only where there is some: a set without keeps its fingerprint
            canonical_json([[q.query_id, q.question, dict(q.relevant), *([ev] if (ev := {
                d: list(x) for d, x in evidence_of(q).items()}) else []),
                *([[t.to_dict() for t in q.history]] if q.history else []),
                *([q.rewrite] if q.rewrite is not None else [])] for q in self.queries])
        )

    @cached_property
    def has_conversations(self) -> bool:
        """Some question is a turn of a conversation: turn-level figures apply, and intervals
        resample conversations, not turns. A slice or share answers for its whole set, so every
        worker and CI job records what its engines were given alike."""
        whole = self.provenance.get("slice", {}).get("has_conversations", self.provenance.get("conversations"))
        if whole is not None:
            return bool(whole)
        return any(q.conversation is not None for q in self.queries)

    @cached_property
    def clusters(self) -> dict[str, str]:
        """query id -> the unit a resampling draws (``LabeledQuery.cluster``): a conversation's
        turns are not independent, so they are drawn together."""
        return {q.query_id: q.cluster for q in self.queries}

    @cached_property
    def has_evidence(self) -> bool:
        """Some question records evidence (``data/evidence.py``): evidence-level measures apply. A
        slice answers for its whole set, as ``multi_judged`` does."""
        from .evidence import evidence_of

        whole = self.provenance.get("slice", {}).get("has_evidence")
        if whole is not None:
            return bool(whole)
        return any(evidence_of(q) for q in self.queries)

    def by_id(self) -> dict[str, LabeledQuery]:
        return dict(self._by_id)

    @cached_property
    def _by_id(self) -> dict[str, LabeledQuery]:
        return {q.query_id: q for q in self.queries}

    def slice(self, i: int, n: int) -> "LabeledSet":
        """Slice ``i`` of ``n`` (1-based): every ``n``-th question from the ``i``-th (as even as
        slices go), recorded in its provenance (which slice, of which whole set, and where each
        question sits in it), so the slices' results are put back together (``archive/combine.py``)."""
        positions = list(range(i - 1, len(self.queries), n))
        return LabeledSet(tuple(self.queries[p] for p in positions), name=self.name,
                          unanswerable=self.unanswerable if i == 1 else (), provenance={  # listed by one slice
            **self.provenance, "slice": {"index": i, "count": n, "of": self.fingerprint, "of_n": len(self),
                                         "positions": positions, "multi_judged": self.multi_judged,
                                         **({"has_evidence": True} if self.has_evidence else {}),
                                         **({"has_conversations": True} if self.has_conversations else {})}})

    def shard(self, k: int, n: int) -> "LabeledSet":
        """Share ``k`` of ``n``: the queries whose id hashes (crc32, stable across processes) to
        ``k``; the shares of ``0..n-1`` are disjoint and together the whole set, order kept. A
        share answers ``has_conversations`` for the whole set, as a slice does."""
        def mine(q: LabeledQuery) -> bool:
            return zlib.crc32(q.query_id.encode("utf-8")) % n == k

        return LabeledSet(tuple(q for q in self.queries if mine(q)), unanswerable=tuple(filter(mine, self.unanswerable)),
                          name=self.name, provenance={**self.provenance, **(
                              {"conversations": True} if self.has_conversations else {})})


def question_changes(before: LabeledQuery, after: LabeledQuery) -> list[str]:
    """What differs between two versions of one question, of all the set's fingerprint reads of
    it: ``reworded`` (its text), ``history changed`` (the conversation before a turn: "it" may
    mean another thing), ``labels`` (its judged documents), ``rewrite changed`` (a turn's human
    rewrite: what the oracle searches), ``evidence changed`` (its quotes as the
    ``+evidence`` measures read them, ``evidence.as_read``: a quote recased or given a full stop
    is the same quote); empty when the question is unchanged. Texts are compared as matching
    compares them (``text.normalise``): a text respaced or recased is the same question, so a
    baseline whose texts an older import folded compares with one of the texts as written. The
    one test of "the same question" a comparison of two runs makes."""
    from .evidence import as_read, evidence_of

    return [part for part, moved in (("reworded", normalise(before.question) != normalise(after.question)),
                                     ("history changed", said(before.history) != said(after.history)),
                                     ("labels", dict(before.relevant) != dict(after.relevant)),
                                     ("rewrite changed", _folded(before.rewrite) != _folded(after.rewrite)),
                                     ("evidence changed", as_read(evidence_of(before)) != as_read(evidence_of(after))))
            if moved]


def _folded(text: str | None) -> str | None:
    return None if text is None else normalise(text)


def said(history: Iterable[Turn]) -> tuple[tuple[str, str], ...]:
    """A conversation so far as matching reads it: each message's role and ``normalise``d text."""
    return tuple((t.role, normalise(t.text)) for t in history)


def query_problem(qid: str, question: str, relevant: Mapping[str, int], *,
                  unanswerable: bool = False) -> tuple[str, str] | None:
    """(what is wrong, which field) of a labeled query that the questions cache cannot hold, or
    None. The importers and the loader both ask it, so whatever an import writes, the loader reads."""
    if not qid:
        return "query id is empty", "id"
    problem = id_problem(qid)
    if problem:
        return f"query {problem}", "id"
    problem = text_problem(question)
    if problem:
        return f"query '{qid}': {problem}", "question"
    for doc in relevant:
        problem = id_problem(str(doc))
        if problem:
            return f"query '{qid}': judged document {problem}", "relevant"
    if relevant and not unanswerable and not any(g >= 1 for g in relevant.values()):  # (none at all: not asked here)
        return f"query '{qid}': no document has grade >= 1, so no answer could ever count", "relevant"
    return None


def _line_of(text: str, needle: str) -> int | None:
    pos = text.find(needle)
    return None if pos < 0 else text.count("\n", 0, pos) + 1


def load_questions_cache(path: str | Path, *, known_doc_ids: Iterable[str] | None = None) -> LabeledSet:
    """Load and validate a questions cache. With ``known_doc_ids``, every gold document must exist:
    a query whose gold document is gone can only ever miss, so it is an error, not a silent 0."""
    path = Path(path)
    text = read_text(path)
    try:
        raw = json.loads(text)
    except json.JSONDecodeError as exc:
        raise RetrievalEvalError(f"not valid JSON: {exc.msg} (column {exc.colno})", path=path, line=exc.lineno) from None
    if not isinstance(raw, dict):
        raise RetrievalEvalError("expected a JSON object at the top level", path=path, line=1)
    if raw.get("format") != FORMAT:
        raise RetrievalEvalError(f"not a questions cache (expected \"format\": \"{FORMAT}\")", path=path, field="format")
    if raw.get("version") != VERSION:
        raise RetrievalEvalError(
            f"unsupported format version {raw.get('version')!r}; this plugin reads version {VERSION}",
            path=path,
            line=_line_of(text, '"version"'),
            field="version",
        )
    entries = raw.get("queries")
    if not isinstance(entries, list):
        raise RetrievalEvalError("must be a list of query objects", path=path, field="queries")
    known = set(known_doc_ids) if known_doc_ids is not None else None
    queries: list[LabeledQuery] = []
    seen: dict[str, int] = {}
    for i, entry in enumerate(entries):
        qid = entry.get("id") if isinstance(entry, dict) else None
        line = _line_of(text, f'"id": {json.dumps(qid)}') if isinstance(qid, str) else None
        where = f"queries[{i}]"

        def bad(message: str, fld: str) -> RetrievalEvalError:
            return RetrievalEvalError(message, path=path, line=line, field=f"{where}.{fld}")

        if not isinstance(entry, dict):
            raise RetrievalEvalError("must be an object", path=path, field=where)
        if not isinstance(qid, str) or not qid.strip():
            raise bad("must be a non-empty string", "id")
        if qid in seen:
            raise bad(f"duplicate query id '{qid}' (first at queries[{seen[qid]}])", "id")
        seen[qid] = i
        question = entry.get("question")
        if not isinstance(question, str) or not question.strip():
            raise bad(f"query '{qid}': must be a non-empty string", "question")
        relevant = entry.get("relevant")
        if not isinstance(relevant, dict) or not relevant:
            raise bad(f"query '{qid}': must map at least one doc id to a grade", "relevant")
        grades: dict[str, int] = {}
        for doc_id, grade in relevant.items():  # a JSON number, read as every file of grades is (2.0 is 2)
            try:
                grades[doc_id] = parse_grade(None if isinstance(grade, str) else grade)
            except RetrievalEvalError:
                raise bad(f"query '{qid}': grade of '{doc_id}' must be an integer, got {grade!r}", "relevant") from None
        relevant = grades
        problem = query_problem(qid, question, relevant)
        if problem:
            raise bad(*problem)
        if known is not None:
            missing = sorted(d for d in relevant if d not in known)
            if missing:
                raise bad(
                    f"query '{qid}': gold document(s) {', '.join(missing)} not in the corpus; "
                    "regenerate the questions or fix the id",
                    "relevant",
                )
        source = entry.get("source") or {}
        if not isinstance(source, dict):
            raise bad(f"query '{qid}': must be an object", "source")
        if "evidence" in source:
            from .evidence import parse_evidence

            try:
                source = {**source, "evidence": parse_evidence(source["evidence"], relevant)}
            except ValueError as exc:
                raise bad(f"query '{qid}': {exc}", "source.evidence") from None
        from .segments import parse_tags

        try:
            tags = parse_tags(entry.get("tags"), "tags")
        except RetrievalEvalError as exc:
            raise bad(f"query '{qid}': {exc.detail.split(': ', 1)[-1]}", "tags") from None
        queries.append(LabeledQuery(qid, question, dict(relevant), source, tags))  # as written
    queries += _conversations(raw.get("conversations"), text, path, known, seen)
    provenance = {k: raw.get(k) for k in ("generator", "splitter", "corpus_fingerprint")}
    provenance["path"] = str(path)
    return LabeledSet(tuple(queries), name=path.name, provenance=provenance)


def _conversations(entries: Any, text: str, path: Path, known: set[str] | None,
                   question_ids: Mapping[str, int]) -> list[LabeledQuery]:
    """The cache's optional ``conversations``: each searching turn a labeled query
    (``conversations.turns_of``), checked as a question is, errors naming ``conversations[i].turns[j]``."""
    from .conversations import conversation_problem, parse_turns, turns_of
    from .segments import parse_tags

    if entries is None:
        return []
    start = text.find('"conversations"')
    if not isinstance(entries, list):
        raise RetrievalEvalError("must be a list of conversation objects", path=path, line=_line_of(text, '"conversations"'),
                                 field="conversations")
    out: list[LabeledQuery] = []
    seen: dict[str, int] = {}
    for i, entry in enumerate(entries):
        cid = entry.get("id") if isinstance(entry, dict) else None
        at = text.find(f'"id": {json.dumps(cid)}', start) if isinstance(cid, str) else -1
        line = text.count("\n", 0, at) + 1 if at >= 0 else None

        def bad(message: str, fld: str, line: int | None = line) -> RetrievalEvalError:
            return RetrievalEvalError(message, path=path, line=line, field=f"conversations[{i}].{fld}")

        def at_turn(message: str, fld: str) -> RetrievalEvalError:  # the line of turns[j]'s "user"
            j = int(fld[6:].split("]")[0]) if fld.startswith("turns[") else -1
            pos = at
            for _ in range(j + 1):
                pos = text.find('"user"', pos + 1) if pos >= 0 else -1
            return bad(f"conversation '{cid}': {message}", fld, text.count("\n", 0, pos) + 1 if pos >= 0 and j >= 0 else line)

        if not isinstance(entry, dict):
            raise RetrievalEvalError("must be an object", path=path, field=f"conversations[{i}]")
        if not isinstance(cid, str) or not cid.strip():
            raise bad("must be a non-empty string", "id")
        problem = conversation_problem(cid)
        if problem:
            raise bad(problem, "id")
        if cid in seen:
            raise bad(f"duplicate conversation id '{cid}' (first at conversations[{seen[cid]}])", "id")
        seen[cid] = i
        try:
            tags = parse_tags(entry.get("tags"), "tags")
        except RetrievalEvalError as exc:
            raise bad(f"conversation '{cid}': {exc.detail.split(': ', 1)[-1]}", "tags") from None
        turns = parse_turns(entry.get("turns"), at_turn, grades_as_text=False, evidence_key="source.evidence")
        for q in turns_of(cid, turns, tags):
            fld = f"turns[{q.turn - 1}].relevant"
            if q.query_id in question_ids:
                raise at_turn(f"turn '{q.query_id}' has the id of queries[{question_ids[q.query_id]}]: rename one",
                              f"turns[{q.turn - 1}]")
            stated = entry["turns"][q.turn - 1].get("answerable") is False
            problem = query_problem(q.query_id, q.question, q.relevant, unanswerable=stated)
            if problem:
                raise at_turn(problem[0], f"turns[{q.turn - 1}].{'user' if problem[1] == 'question' else problem[1]}")
            if known is not None and (missing := sorted(d for d in q.relevant if d not in known)):
                raise at_turn(f"gold document(s) {', '.join(missing)} not in the corpus; fix the id", fld)
            out.append(q)
    return out


def dump_questions_cache(labeled: LabeledSet, *, generator: Mapping[str, Any], corpus_fingerprint: str,
                         splitter: Mapping[str, Any] | None = None) -> str:
    """Serialise deterministically: same set, same bytes."""
    doc: dict[str, Any] = {
        "format": FORMAT,
        "version": VERSION,
        "generator": dict(generator),
        "splitter": dict(splitter) if splitter is not None else None,
        "corpus_fingerprint": corpus_fingerprint,
        "queries": [
            {
                "id": q.query_id,
                "question": q.question,
                "relevant": dict(sorted(q.relevant.items())),
                "source": dict(sorted(q.source.items())),
                **({"tags": list(q.tags)} if q.tags else {}),
            }
            for q in labeled.queries if q.conversation is None
        ],
    }
    if labeled.has_conversations or labeled.unanswerable:
        from .conversations import grouped

        doc["conversations"] = grouped(labeled.everything)
    return json.dumps(doc, indent=2, ensure_ascii=False) + "\n"


def write_questions_cache(path: str | Path, labeled: LabeledSet, **kwargs: Any) -> None:
    write_text_atomic(path, dump_questions_cache(labeled, **kwargs))
