"""The records that flow down the data path: documents, chunks, labeled queries, query results.

Frozen dataclasses with no behaviour beyond identity and fingerprints, so every other module can
depend on them without depending on each other.
"""

from __future__ import annotations

import hashlib
import json
import re
from dataclasses import dataclass, field
from typing import Any, Mapping, Sequence


def sha256_text(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def question_sha256(text: str) -> str:
    """The hash of a question's text as asked (``LabeledQuery.asked``), whitespace folded: what a
    judgment and a worksheet's grade are keyed by."""
    return sha256_text(" ".join(text.split()))


def sha256_file(path: Any) -> str:
    """A file's sha256, read a megabyte at a time (``hashlib.file_digest`` is Python 3.11's)."""
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def text_problem(value: str) -> str | None:
    """Why a text cannot be written to a UTF-8 file (fingerprints, caches, reports), or None:
    a lone surrogate, which a JSON ``\\ud800`` escape decodes to."""
    try:
        value.encode("utf-8")
    except UnicodeEncodeError as exc:
        return (f"contains an unpaired surrogate ({value[exc.start]!r} at character {exc.start}), which no UTF-8 "
                "file can hold; fix the \\u escape in the source")
    return None


def id_problem(value: str, *, max_length: int | None = None) -> str | None:
    """Why a doc or query id cannot be used, or None: TREC run and qrels files (ours, trec_eval's,
    pytrec_eval's) separate fields by whitespace, so an id must hold none."""
    if value and value.split() != [value]:  # str.split() splits where str.isspace() holds: one C pass
        return f"id {value!r} contains whitespace, which TREC run and qrels files cannot hold"
    if max_length is not None and len(value) > max_length:
        return f"id {value[:40]!r}... is {len(value)} characters; the store's chunk ids (doc_id:index) hold {max_length + 8}"
    return text_problem(value)


def canonical_json(value: Any) -> str:
    """One spelling per value: sorted keys, no whitespace, so hashes are stable across runs."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


@dataclass(frozen=True)
class Doc:
    """A source document. Metadata fields are what a metadata-only engine can see."""

    doc_id: str
    content: str
    title: str = ""
    description: str = ""
    filename: str = ""
    meta: Mapping[str, Any] = field(default_factory=dict, compare=False, hash=False)

    @property
    def fingerprint(self) -> str:
        """sha256 of the fields an engine or a question generator can read."""
        return sha256_text(
            canonical_json(
                {
                    "doc_id": self.doc_id,
                    "title": self.title,
                    "description": self.description,
                    "filename": self.filename,
                    "content": self.content,
                }
            )
        )


@dataclass(frozen=True)
class Chunk:
    """A piece of a document as stored in a search index; ``chunk_id`` is ``doc_id:index``."""

    doc_id: str
    index: int
    text: str
    meta: Mapping[str, Any] = field(default_factory=dict, compare=False, hash=False)

    @property
    def chunk_id(self) -> str:
        return f"{self.doc_id}:{self.index}"

    @property
    def fingerprint(self) -> str:
        return sha256_text(self.text)


#: ids the plugin makes from a question's text (``label import`` without an id column): they
#: say nothing to a reader, so messages name such a question by its text instead
GENERATED_ID = re.compile(r"q\.[0-9a-f]{10}")
NAME_WIDTH = 40


def query_name(query_id: str, question: str | None) -> str:
    """How a message names a question: its id, or, where the id was made from the text, the
    text itself (quoted, shortened to ``NAME_WIDTH``)."""
    if question is None or not GENERATED_ID.fullmatch(query_id):
        return query_id
    import textwrap

    text = " ".join(question.split())
    short = textwrap.shorten(text, NAME_WIDTH, placeholder="…")
    return repr(short if short != "…" else text[: NAME_WIDTH - 1] + "…")  # one word longer than the width


@dataclass(frozen=True)
class Turn:
    """One message of a conversation: who said it (``"user"`` or ``"assistant"``) and its text.
    A conversation engine receives the turns so far, the user's current one last."""

    role: str
    text: str

    def to_dict(self) -> dict[str, str]:
        return {"role": self.role, "text": self.text}


#: how a turn of a conversation is named in query ids and messages: ``conversation-id#turn``
TURN_SEPARATOR = "#"


def turn_id(conversation: str, turn: int) -> str:
    """The query id of a conversation's ``turn`` (1-based, counting the user's turns)."""
    return f"{conversation}{TURN_SEPARATOR}{turn}"


def asked_text(question: str, history: Sequence[Turn] = ()) -> str:
    """A question as it was asked, in one canonical rendering: a question's own text (exactly, so
    the hashes of judgments made before turns existed stay valid), and for a turn with messages
    before it, its text followed by the conversation so far (each message's whitespace folded):
    ``and does it need a code? (earlier in the conversation: user: How do I set up the VPN? /
    assistant: Open the client.)``. What a judge and a worksheet read: "it" means what it meant."""
    if not history:
        return question
    said = " / ".join(f"{t.role}: {' '.join(t.text.split())}" for t in history)
    return f"{' '.join(question.split())} (earlier in the conversation: {said})"


@dataclass(frozen=True)
class LabeledQuery:
    """A question with its judged documents.

    ``relevant`` maps doc ids to graded relevance (trec_eval convention: grade >= 1 is relevant,
    0 is judged not relevant). A synthetic question has one gold document of grade 1; BEIR qrels
    may give several, graded.
    """

    query_id: str
    question: str
    relevant: Mapping[str, int]
    source: Mapping[str, Any] = field(default_factory=dict, compare=False, hash=False)
    #: segments the question belongs to: the team's own tags (a CSV column, a JSONL field, the
    #: cache's ``tags``) and those the plugin derives (``data/segments.py``), sorted
    tags: tuple[str, ...] = field(default=(), compare=False, hash=False)
    #: a turn of a conversation (``conversation`` its id, else None): ``turn`` is its 1-based
    #: position among the user's turns, ``history`` the messages before it (the user's earlier
    #: turns and, where the labels carry them, the assistant's replies), ``depends`` whether it
    #: needs the earlier turns to be understood (the label's flag; None: not stated). Its
    #: ``query_id`` is ``turn_id(conversation, turn)``.
    conversation: str | None = field(default=None, compare=False, hash=False)
    turn: int = field(default=0, compare=False, hash=False)
    history: tuple[Turn, ...] = field(default=(), compare=False, hash=False)
    depends: bool | None = field(default=None, compare=False, hash=False)
    #: a person's rewrite of the turn into a question that stands alone (the label's ``rewrite``;
    #: None: none), what an oracle rewrite searches (``engines.turns.oracle_rewrite``)
    rewrite: str | None = field(default=None, compare=False, hash=False)
    #: False: a turn labeled unanswerable (the label's ``answerable: false``: no relevant document
    #: exists, ``relevant`` holds at most documents judged not relevant), kept beside the scored
    #: questions (``LabeledSet.unanswerable``), never scored as a miss
    answerable: bool = field(default=True, compare=False, hash=False)

    @property
    def turns(self) -> tuple[Turn, ...]:
        """What a conversation engine is given: the history, then this turn's user text."""
        return (*self.history, Turn("user", self.question))

    @property
    def asked(self) -> str:
        """The question as it was asked (``asked_text``): for a turn, its text with the conversation
        before it. Read it wherever a question's text is keyed, prompted or checked; ``question``
        alone is what the user typed at this turn."""
        return asked_text(self.question, self.history)

    @property
    def asked_sha256(self) -> str:
        """The key of the question as asked (``question_sha256`` of ``asked``): a judgment of a
        turn made when its earlier turns read otherwise is another question's. For a question
        without history, the hash of its text, as judgments files always held."""
        return question_sha256(self.asked)

    @property
    def cluster(self) -> str:
        """The unit a resampling draws: the conversation, or the question itself."""
        return self.conversation if self.conversation is not None else self.query_id

    @property
    def name(self) -> str:
        """How messages name this question (``query_name``)."""
        return query_name(self.query_id, self.question)

    @property
    def gold(self) -> tuple[str, ...]:
        """The relevant doc ids, best grade first (ties by id)."""
        return tuple(
            d for d, g in sorted(self.relevant.items(), key=lambda kv: (-kv[1], kv[0])) if g >= 1
        )


@dataclass(frozen=True)
class Stage:
    """Where one stage of an engine put a query's relevant documents (``engines.base.Stages``):
    a ``leg`` (one retriever's candidates) or a ``step`` (a cut of what came before: fusion, the
    rerank window, the rerank); ``size`` documents held, ``ranks`` relevant doc id -> 1-based rank
    (a relevant document it did not hold is not there)."""

    name: str
    kind: str  # "leg" | "step"
    size: int
    ranks: Mapping[str, int] = field(default_factory=dict)

    def to_list(self) -> list:
        return [self.name, self.kind, self.size, dict(sorted(self.ranks.items()))]

    @classmethod
    def from_list(cls, raw: Any) -> "Stage":
        name, kind, size, ranks = raw
        if kind not in ("leg", "step") or not isinstance(size, int) or not isinstance(ranks, dict) or not all(
                isinstance(r, int) and r >= 1 for r in ranks.values()):
            raise ValueError(f"stage {raw!r:.60}: expected [name, 'leg' or 'step', size, {{doc id: rank}}]")
        return cls(str(name), kind, size, dict(ranks))


@dataclass(frozen=True)
class Passage:
    """A retrieved passage: the document it is part of and its text. An engine that answers with
    passages (best first, a document's several passages each in its place) is scored at the
    document level, its passages folded into their documents, and at the evidence level
    (``hit@5+evidence``: ``data/evidence.py``)."""

    doc_id: str
    text: str


@dataclass(frozen=True)
class QueryResult:
    """What one engine returned for one query: a ranking, or the error it raised (never hidden),
    with what it cost: the wall time of the call (``seconds``, a monotonic clock around the
    engine's call only) and of each stage the engine timed, and the HTTP calls and tokens the
    plugin counted for it (``usage``: model -> (calls, input tokens, output tokens))."""

    query_id: str
    doc_ids: tuple[str, ...] = ()
    error: str | None = None
    seconds: float = 0.0
    #: where each of the engine's stages put the relevant documents, when it reports stages
    stages: tuple[Stage, ...] = ()
    stage_seconds: Mapping[str, float] = field(default_factory=dict, compare=False, hash=False)
    usage: Mapping[str, tuple[int, int, int]] = field(default_factory=dict, compare=False, hash=False)
    #: how many passages the engine returned (0: it returned ids only, so no evidence-level value), and
    #: relevant doc id -> the 1-based rank of the first passage carrying it (``data.evidence.passage_ranks``):
    #: all the evidence-level measures read, kept instead of the texts
    passages: int = 0
    passage_ranks: Mapping[str, int] = field(default_factory=dict, compare=False, hash=False)
    #: relevant doc id -> the rank of its first passage, evidence or not: a miss's cause tells "right
    #: document, wrong passage" by it
    first_passages: Mapping[str, int] = field(default_factory=dict, compare=False, hash=False)
    #: the word tokens of each passage returned, in order: what the engine hands a generator
    passage_tokens: tuple[int, ...] = field(default=(), compare=False, hash=False)
    #: what the engine searched in place of a turn, where it said (``TurnContext.record_rewrite``:
    #: a ``rewritten`` engine's rewrite); None: not said
    rewrite: str | None = field(default=None, compare=False, hash=False)
    #: with ``--retrieval-exact-check``: the documents the engine's exact search (``exact_search``, no
    #: approximate index) ranks for the question, as ``doc_ids`` holds the answer's; None: not measured
    exact: tuple[str, ...] | None = field(default=None, compare=False, hash=False)

    @property
    def errored(self) -> bool:
        return self.error is not None
