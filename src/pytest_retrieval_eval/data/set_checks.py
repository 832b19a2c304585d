"""Is the labeled set any good? Checks of the questions themselves, against the corpus only (no
engine run); ``analysis/set_signal.py`` adds those that need rankings. Each finding names its
questions: none is dropped.

- ``near_duplicate``: questions that ask the same thing (the same normalised text, or a Jaccard
  similarity of content words of ``NEAR`` or more, as generation's own filter judges a repeat:
  ``data/question_filters.py``), grouped: a set whose 12 of 20 questions are one question weighs
  that question 12 times. A turn is compared with its history: two follow-ups of one text
  ("and does it need a code?") ask the same thing only after conversations alike by the same
  measure (a question and a first turn have none before them);
- ``leaks_title``: a question whose content words mostly (``LEAK_TITLE``) occur in its gold
  document's title or file name, the fields a metadata-only engine reads: any keyword engine finds
  it, so it measures nothing about retrieval;
- ``leaks_passage``: a question that copies the passage answering it (``LEAK_PASSAGE`` of its
  content words in one passage, or half its word trigrams verbatim): the passage is the document's
  best-matching paragraph today, the labeled evidence where a caller has it (``leak``). A turn is
  given with its conversation, so an earlier message quoting its answer (its evidence, else a
  passage of its document) leaks it too, named ("turn 1's reply quotes ...");
- ``training_copy``: a question near-copying one of an optional file of training or tuning
  questions (``--training=FILE``): a model tuned on it has seen the answer. A training question
  has no conversation before it, so a turn asked after one copies none.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable, Mapping, Sequence

from .._textfiles import read_text
from ..errors import RetrievalEvalError
from .question_filters import QuestionFilter, content_words, normalised

#: what ``check`` names; the kinds of ``analysis/set_signal.py`` follow
KINDS = ("near_duplicate", "leaks_title", "leaks_passage", "training_copy")
#: Jaccard similarity of content words at which two questions ask the same thing
NEAR = QuestionFilter.near_duplicate
#: share of a question's content words in its document's title or file name that leaks it
LEAK_TITLE = 0.6
#: share of a question's content words in one passage that copies it (or ``QuestionFilter.max_copied``
#: of its word trigrams verbatim)
LEAK_PASSAGE = 0.9
#: fewest content words a question needs to be judged near another or leaking (fewer say too little)
MIN_WORDS = 3
_PARAGRAPH = re.compile(r"\n\s*\n")


@dataclass(frozen=True)
class SetFinding:
    """One finding on the labeled set: its ``kind``, the questions it names (ids) and why."""

    kind: str
    query_ids: tuple[str, ...]
    detail: str

    def __str__(self) -> str:
        return f"{self.kind}: {', '.join(self.query_ids)} ({self.detail})"


def similarity(a: str, b: str) -> float:
    """1.0 for the same normalised text, else the Jaccard similarity of content words (0 when
    either has fewer than ``MIN_WORDS``)."""
    if normalised(a) == normalised(b):
        return 1.0
    x, y = set(content_words(a)), set(content_words(b))
    if len(x) < MIN_WORDS or len(y) < MIN_WORDS:
        return 0.0
    return len(x & y) / len(x | y)


def _pairs(texts: Sequence[str], others: Sequence[str] | None, threshold: float) -> list[tuple[int, int, float]]:
    """Index pairs (i into ``texts``, j into ``others``, or into ``texts`` with j > i) whose
    ``similarity`` is at or above ``threshold``: the same normalised text, or content words alike.
    Prefix filtering keeps a large set from being compared pair by pair, exactly: with each set's
    words in one order (rarest first), two sets of Jaccard ``t`` or more share a word among the
    first ``|x| - ceil(t |x|) + 1`` of each."""
    import math
    from collections import Counter

    against = texts if others is None else others
    mine_sets = [frozenset(content_words(t)) for t in texts]
    their_sets = mine_sets if others is None else [frozenset(content_words(t)) for t in against]
    df = Counter(w for x in (*mine_sets, *(their_sets if others is not None else ())) for w in x)

    def prefix(x: frozenset[str]) -> list[str]:
        return sorted(x, key=lambda w: (df[w], w))[:len(x) - math.ceil(threshold * len(x) - 1e-9) + 1]

    index: dict[str, list[int]] = {}
    same: dict[str, list[int]] = {}
    for j, x in enumerate(their_sets):
        same.setdefault(normalised(against[j]), []).append(j)
        if len(x) >= MIN_WORDS:
            for w in prefix(x):
                index.setdefault(w, []).append(j)
    out = []
    for i, t in enumerate(texts):
        found = {j: 1.0 for j in same.get(normalised(t), ())}
        mine = mine_sets[i]
        if len(mine) >= MIN_WORDS:
            for j in {j for w in prefix(mine) for j in index.get(w, ())}:
                if j not in found:
                    inter = len(mine & their_sets[j])
                    found[j] = inter / (len(mine) + len(their_sets[j]) - inter)
        out += [(i, j, s) for j, s in sorted(found.items()) if s >= threshold and (others is not None or j > i)]
    return out


def near_duplicates(questions: Sequence[tuple[str, str]], threshold: float = NEAR,
                    before: Sequence[str] | None = None) -> list[SetFinding]:
    """Groups of questions ((id, text) pairs) that ask the same thing, in set order; ``before``:
    each one's conversation so far (``conversation_before``; "" for a question), which must be
    alike too."""
    parent = list(range(len(questions)))

    def root(i: int) -> int:
        while parent[i] != i:
            parent[i] = parent[parent[i]]
            i = parent[i]
        return i

    least: dict[int, float] = {}
    for i, j, s in _pairs([t for _, t in questions], None, threshold):
        if before is not None and (s := _after(s, before[i], before[j])) < threshold:
            continue  # turns: the same text after another conversation
        a, b = root(i), root(j)
        low = min(s, least.get(a, 1.0), least.get(b, 1.0))
        parent[max(a, b)] = min(a, b)
        least[min(a, b)] = low
    groups: dict[int, list[int]] = {}
    for i in range(len(questions)):
        groups.setdefault(root(i), []).append(i)
    out = []
    for r, members in groups.items():
        if len(members) > 1:
            how = "the same question" if least.get(r, 1.0) >= 1.0 else f"content words {least[r]:.0%}+ alike"
            after = " after conversations alike" if before is not None and before[members[0]] else ""
            out.append(SetFinding("near_duplicate", tuple(questions[i][0] for i in members),
                                  f"{len(members)} questions, {how}: \"{questions[members[0]][1]}\"{after}"))
    return out


def _after(s: float, a: str, b: str) -> float:
    """The similarity ``s`` of two questions' texts, as asked after ``a`` and ``b`` (what was said
    before each, ``conversation_before``): no less alike than those, and unalike when only one of
    them follows a conversation."""
    if not (a or b):
        return s
    return min(s, similarity(a, b)) if a and b else 0.0


def share_in(question: str, text: str) -> float:
    """Share of the question's distinct content words that occur in ``text``."""
    mine = set(content_words(question))
    return len(mine & set(content_words(text))) / len(mine) if mine else 0.0


def leak(question: str, passage: str) -> str | None:
    """Why ``question`` copies ``passage`` (a paragraph of its document, or its labeled evidence),
    or None."""
    if len(set(content_words(question))) < MIN_WORDS:
        return None
    copied = QuestionFilter.copied(question, passage)
    if copied >= QuestionFilter.max_copied:
        return f"{copied:.0%} of its word trigrams verbatim"
    share = share_in(question, passage)
    return f"{share:.0%} of its content words" if share >= LEAK_PASSAGE else None


def passages(text: str) -> list[str]:
    """A document's paragraphs (blank-line separated), the passages a question is held against."""
    return [p for p in (x.strip() for x in _PARAGRAPH.split(text)) if p] or [text]


def leakage(queries: Iterable, docs: Mapping[str, object]) -> list[SetFinding]:
    """Questions that leak their gold document's title or file name, or copy one of its passages;
    ``docs``: doc id -> ``Doc``. A question is held against each document it judges relevant."""
    out = []
    for q in queries:
        gold = [docs[d] for d, g in sorted(q.relevant.items()) if g >= 1 and d in docs]
        words = set(content_words(q.question))
        title = next(((d, share_in(q.question, f"{d.title} {d.filename}")) for d in gold), None)
        if title is not None and len(words) >= MIN_WORDS - 1 and title[1] >= LEAK_TITLE:
            d = title[0]
            out.append(SetFinding("leaks_title", (q.query_id,), f"{title[1]:.0%} of its content words are in the "
                                  f"title of {d.doc_id}: \"{d.title or d.filename}\""))
            continue
        for d in gold:
            found = next(((p, why) for p in passages(d.content) if (why := leak(q.question, p))), None)
            if found is not None:
                out.append(SetFinding("leaks_passage", (q.query_id,),
                                      f"{found[1]} are in a passage of {d.doc_id}: \"{_cut(found[0])}\""))
                break
        else:
            said = _said_before(q, gold)
            if said is not None:
                out.append(SetFinding("leaks_passage", (q.query_id,), said))
    return out


def _said_before(q, gold: Sequence) -> str | None:
    """Where the conversation before a turn gives its answer away, or None: a conversation engine
    is given the history with the question, so an earlier message (the user's, or an assistant's
    reply) that quotes the answer makes the turn as easy as a question copying it. The answer is
    the turn's evidence in a gold document, else each of that document's passages; a message
    quotes it when it ``holds`` it as a passage carries a quote (``OVERLAP``, one run of its
    words; an answer of ``MIN_WORDS`` content words or more). A reply that retells part of the
    document in its own words, as a help desk's does, gives nothing away."""
    from .evidence import OVERLAP, evidence_of, holds
    from .text import words

    quotes = evidence_of(q)
    turn = 0
    for message in q.history:
        turn += message.role == "user"
        whose = f"turn {turn}'s {'question' if message.role == 'user' else 'reply'}" if turn else "the opening message"
        have = words(message.text)
        for d in gold:
            answers = quotes.get(d.doc_id) or passages(d.content)
            found = next((x for x in answers if len(set(content_words(x))) >= MIN_WORDS
                          and holds(have, x, OVERLAP)), None)
            if found is not None:
                what = "its evidence in" if d.doc_id in quotes else "a passage of"
                return f"{whose} quotes {what} {d.doc_id}: \"{_cut(found)}\""
    return None


def training_copies(questions: Sequence[tuple[str, str]], training: Sequence[str],
                    threshold: float = NEAR, before: Sequence[str] | None = None) -> list[SetFinding]:
    """Questions near-copying a training or tuning question, each with the one it copies;
    ``before``: each question's conversation so far, as ``near_duplicates`` takes it. A training
    question has none, so a turn asked after a conversation copies none of them ("and does it need
    a code?" after the VPN is not the line of a training file)."""
    out: dict[int, tuple[int, float]] = {}
    for i, j, s in _pairs([t for _, t in questions], training, threshold):
        if before is not None and (s := _after(s, before[i], "")) < threshold:
            continue
        if i not in out or s > out[i][1]:
            out[i] = (j, s)
    return [SetFinding("training_copy", (questions[i][0],),
                       f"{'the same as' if s >= 1 else f'{s:.0%} alike to'} training question \"{training[j]}\"")
            for i, (j, s) in sorted(out.items())]


def read_training(path: str | Path) -> list[str]:
    """A training or tuning file's questions: one a line (.txt), or JSON Lines with a
    ``question`` (or ``query``) field; a bad line is an error naming the file and line."""
    import json

    path = Path(path)
    text = read_text(path)
    out = []
    for n, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        if path.suffix.lower() not in (".jsonl", ".json"):
            out.append(line.strip())
            continue
        try:
            row = json.loads(line)
        except json.JSONDecodeError as exc:
            raise RetrievalEvalError(f"not JSON ({exc.msg})", path=path, line=n) from None
        found = row.get("question", row.get("query")) if isinstance(row, dict) else None
        if not isinstance(found, str) or not found.strip():
            raise RetrievalEvalError("each line needs a non-empty 'question' (or 'query') string", path=path,
                                     line=n, field="question")
        out.append(found.strip())
    return out


def conversation_before(q) -> str:
    """What was said before a turn (its history's texts, in order), as ``near_duplicates`` compares
    it; "" for a question or a first turn."""
    return " ".join(t.text for t in q.history)


def check_set(labeled, docs: Sequence, training: Sequence[str] = ()) -> list[SetFinding]:
    """Every label-only finding on ``labeled`` against the corpus's ``docs`` (and ``training``)."""
    questions = [(q.query_id, q.question) for q in labeled.queries]
    before = [conversation_before(q) for q in labeled.queries]
    return [*near_duplicates(questions, before=before), *leakage(labeled.queries, {d.doc_id: d for d in docs}),
            *(training_copies(questions, training, before=before) if training else [])]


def _cut(text: str, n: int = 80) -> str:
    text = " ".join(text.split())
    return text if len(text) <= n else text[:n - 1] + "…"
