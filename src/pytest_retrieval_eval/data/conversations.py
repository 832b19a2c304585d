"""Conversations in the labels: a conversation is an id and its ordered turns, each the user's
text, optionally the assistant's reply, and, for the turns that search, their relevance labels.

Each searching turn becomes one ``LabeledQuery`` (query id ``conversation#n``, ``n`` its 1-based
position among the turns) carrying the turns before it as ``history``; a turn without labels
only feeds later turns' history. The questions cache, the JSONL and the CSV importers all build
turns here (``turns_of``), and the cache writes them back grouped (``grouped``), so every format
reads a conversation alike. What follows a conversation's last searching turn feeds no turn, so
no format keeps it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Iterable, Mapping, Sequence

from ..errors import RetrievalEvalError
from ..ir.qrels import parse_grade
from ..types import TURN_SEPARATOR, LabeledQuery, Turn, id_problem, turn_id


@dataclass(frozen=True)
class TurnLabel:
    """One turn as a file holds it: ``relevant`` None when the turn searches nothing."""

    user: str
    assistant: str | None = None
    relevant: Mapping[str, int] | None = None
    source: Mapping[str, Any] = field(default_factory=dict)
    depends: bool | None = None
    tags: tuple[str, ...] = ()
    #: a person's rewrite of the turn that stands alone (``LabeledQuery.rewrite``), None: none
    rewrite: str | None = None
    #: False: the turn searches, but no relevant document exists (``relevant`` holds at most
    #: documents judged not relevant); kept as an unanswerable turn (``LabeledSet.unanswerable``)
    answerable: bool = True


def conversation_problem(cid: str) -> str | None:
    """Why ``cid`` cannot name a conversation, or None: a turn is named ``cid#n``, so the id holds
    no '#' (nor whitespace, as every id)."""
    if not cid:
        return "conversation id is empty"
    if TURN_SEPARATOR in cid:
        return f"conversation id {cid!r} contains '{TURN_SEPARATOR}', which names its turns (conversation#turn)"
    problem = id_problem(cid)
    return f"conversation {problem}" if problem else None


def turns_of(conversation: str, turns: Sequence[TurnLabel], tags: Iterable[str] = ()) -> list[LabeledQuery]:
    """The searching turns of a conversation as labeled queries, in order: each with the messages
    before it (the user's earlier turns and the assistant's replies, in order) and the tags of
    the conversation and of the turn."""
    out: list[LabeledQuery] = []
    history: list[Turn] = []
    for n, t in enumerate(turns, start=1):
        if t.relevant is not None or not t.answerable:
            out.append(LabeledQuery(turn_id(conversation, n), t.user, dict(t.relevant or {}), dict(t.source),
                                    tuple(sorted({*tags, *t.tags})), conversation=conversation, turn=n,
                                    history=tuple(history), depends=t.depends, rewrite=t.rewrite,
                                    answerable=t.answerable))
        history.append(Turn("user", t.user))
        if t.assistant:
            history.append(Turn("assistant", t.assistant))
    return out


def parse_turns(raw: Any, bad: Callable[[str, str], RetrievalEvalError], *, grades_as_text: bool,
                evidence_key: str) -> list[TurnLabel]:
    """A JSON list of turn objects (``{"user", "assistant"?, "relevant"?, "source"?, "depends"?,
    "tags"?, "rewrite"?, "answerable"?}``); ``bad(message, field)`` makes the error (fields named ``turns[i].relevant``).
    ``evidence_key``: where a turn's evidence is, ``source.evidence`` (the cache) or ``evidence``
    (JSONL); ``grades_as_text``: a grade may be a string ("2"), as a JSONL line's may."""
    from .evidence import parse_evidence
    from .segments import parse_tags

    if not isinstance(raw, list) or not raw:
        raise bad("must be a non-empty list of turns", "turns")
    out = []
    for i, turn in enumerate(raw):
        where = f"turns[{i}]"
        if not isinstance(turn, dict):
            raise bad("must be an object with the user's text ('user')", where)
        user = turn.get("user")
        if not isinstance(user, str) or not user.strip():
            raise bad("must be a non-empty string (the user's text)", f"{where}.user")
        assistant = turn.get("assistant")
        if assistant is not None and not isinstance(assistant, str):
            raise bad("must be a string (the assistant's reply)", f"{where}.assistant")
        depends = turn.get("depends")
        if depends is not None and not isinstance(depends, bool):
            raise bad(f"must be true or false, got {depends!r}", f"{where}.depends")
        answerable = turn.get("answerable", True)
        if not isinstance(answerable, bool):
            raise bad(f"must be true or false (false: no relevant document exists), got {answerable!r}",
                      f"{where}.answerable")
        rewrite = turn.get("rewrite")
        if rewrite is not None and (not isinstance(rewrite, str) or not rewrite.strip()):
            raise bad(f"must be a non-empty string (a rewrite of the turn that stands alone), got {rewrite!r}",
                      f"{where}.rewrite")
        relevant = turn.get("relevant")
        source = turn.get("source") or {}
        if not isinstance(source, dict):
            raise bad("must be an object", f"{where}.source")
        grades: dict[str, int] | None = None
        if relevant is not None:
            if not isinstance(relevant, dict) or (not relevant and answerable):
                raise bad("must map at least one doc id to a grade (leave it out: the turn searches nothing)",
                          f"{where}.relevant")
            grades = {}
            for doc, grade in relevant.items():
                try:
                    grades[str(doc)] = parse_grade(grade if grades_as_text or not isinstance(grade, str) else None)
                except RetrievalEvalError:
                    raise bad(f"grade of '{doc}' must be an integer, got {grade!r}", f"{where}.relevant") from None
            if not answerable and (found := next((d for d, g in grades.items() if g >= 1), None)) is not None:
                raise bad(f"an unanswerable turn (no relevant document exists) judges '{found}' relevant (grade "
                          f"{grades[found]}): give it grade 0 or leave answerable out", f"{where}.answerable")
            ev_raw = source.get("evidence") if evidence_key == "source.evidence" else turn.get("evidence")
            if ev_raw is not None:
                try:
                    evidence = parse_evidence(ev_raw, grades)
                except ValueError as exc:
                    raise bad(str(exc), f"{where}.{evidence_key}") from None
                source = {k: v for k, v in source.items() if k != "evidence"}
                if evidence:
                    source["evidence"] = evidence
        try:
            tags = parse_tags(turn.get("tags"), "tags")
        except RetrievalEvalError as exc:
            raise bad(exc.detail.split(": ", 1)[-1], f"{where}.tags") from None
        out.append(TurnLabel(user, assistant if assistant and assistant.strip() else None,  # as written
                             grades, source, depends, tags, rewrite, answerable))
    return out


def grouped(queries: Iterable[LabeledQuery]) -> list[dict[str, Any]]:
    """The turns among ``queries`` as the questions cache writes them: one object per
    conversation (in order of first appearance), its turns rebuilt from the last searching
    turn's history; a tag every searching turn carries is the conversation's."""
    by_conv: dict[str, list[LabeledQuery]] = {}
    for q in queries:
        if q.conversation is not None:
            by_conv.setdefault(q.conversation, []).append(q)
    out = []
    for cid, turns in by_conv.items():
        turns = sorted(turns, key=lambda q: q.turn)
        last = turns[-1]
        texts: list[dict[str, Any]] = []
        for message in last.history:
            if message.role == "user" or not texts:
                texts.append({"user": message.text} if message.role == "user" else {"user": "", "assistant": message.text})
            else:
                texts[-1]["assistant"] = message.text
        texts.append({"user": last.question})
        if len(texts) != last.turn:
            raise RetrievalEvalError(f"turn '{last.query_id}': its history holds {len(texts) - 1} user turns, "
                                     f"not {last.turn - 1}")
        for q in turns[:-1]:  # every turn's messages open the last one's: one conversation, not two
            if last.turns[:len(q.turns)] != q.turns:
                raise RetrievalEvalError(f"turn '{q.query_id}' and turn '{last.query_id}' disagree on what was said "
                                         f"before (their histories differ): one conversation id names two conversations")
        common = set.intersection(*(set(q.tags) for q in turns))
        for q in turns:
            entry = texts[q.turn - 1]
            entry["user"] = q.question
            if not q.answerable:
                entry["answerable"] = False
            if q.relevant or q.answerable:
                entry["relevant"] = dict(sorted(q.relevant.items()))
            if q.source:
                entry["source"] = dict(sorted(q.source.items()))
            if q.depends is not None:
                entry["depends"] = q.depends
            if q.rewrite is not None:
                entry["rewrite"] = q.rewrite
            if set(q.tags) - common:
                entry["tags"] = sorted(set(q.tags) - common)
        out.append({"id": cid, **({"tags": sorted(common)} if common else {}), "turns": texts})
    return out


#: how a CSV cell says whether a turn depends on the earlier ones
DEPENDS_CELLS = {"yes": True, "true": True, "1": True, "y": True, "no": False, "false": False, "0": False, "n": False,
                 "": None}


def depends_cell(value: str | None) -> bool | None:
    """A ``depends`` cell: yes/no, true/false, 1/0 (any case), or empty (not stated); ValueError else."""
    text = (value or "").strip().lower()
    if text not in DEPENDS_CELLS:
        raise ValueError(f"must be yes, no, true, false, 1, 0 or empty, got {value!r}")
    return DEPENDS_CELLS[text]
