"""Which generated questions are worth keeping. What question-generation pipelines learned
(InPars, Promptagator, ragas users): models prepend chatter, ask two things at once, copy the
passage (a question that repeats the passage's words is found by any keyword engine and measures
nothing), and repeat themselves. Each rejected answer is counted by reason, never dropped silently.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Iterable

REASONS = ("preamble", "several_questions", "too_short", "too_long", "copies_passage", "near_duplicate",
           "not_a_question")
_WORD = re.compile(r"[^\W_]+", re.UNICODE)
_PREAMBLE = re.compile(r"^\s*(here(?:'s| is| are)\b|sure\b|certainly\b|of course\b|question\s*\d*\s*:|q\s*:|"
                       r"based on (?:the|this) (?:passage|text)|according to (?:the|this) (?:passage|text)|"
                       r"a question (?:that|a user))", re.I)
_INTERROGATIVE = frozenset("how what why when where who whom whose which can could do does did is are was were "
                           "should will would may might must shall have has am i my our".split())
_STOP = frozenset("a an the and or but of to in on at for by with from as is are was were be been it its this "
                  "that these those i my me you your we our they their he she his her do does did how what why "
                  "when where who which can could should would will if not no so than then there".split())


def words(text: str) -> list[str]:
    return [w.lower() for w in _WORD.findall(text)]


def content_words(text: str) -> list[str]:
    return [w for w in words(text) if w not in _STOP and len(w) > 2]


@dataclass(frozen=True)
class QuestionFilter:
    min_words: int = 4
    max_words: int = 40
    #: share of the question's word trigrams found verbatim in the passage at which it "copies"
    max_copied: float = 0.5
    #: Jaccard similarity of content words at which a question repeats one already kept
    near_duplicate: float = 0.8

    def reject(self, question: str, passage: str, kept: Iterable[str] = ()) -> str | None:
        """The reason to drop ``question``, or None to keep it."""
        text = question.strip()
        n = len(words(text))
        if _PREAMBLE.match(text):
            return "preamble"
        if text.count("?") > 1:
            return "several_questions"
        if n < self.min_words:
            return "too_short"
        if n > self.max_words:
            return "too_long"
        first = words(text)[0] if n else ""
        if not text.endswith("?") and first not in _INTERROGATIVE:
            return "not_a_question"
        if self.copied(text, passage) >= self.max_copied:
            return "copies_passage"
        mine = set(content_words(text))
        for other in kept if len(mine) >= 3 else ():  # too few content words to judge
            theirs = set(content_words(other))
            if len(theirs) >= 3 and len(mine & theirs) / len(mine | theirs) >= self.near_duplicate:
                return "near_duplicate"
        return None

    @staticmethod
    def copied(question: str, passage: str) -> float:
        """Share of the question's word trigrams that occur verbatim in the passage."""
        q, p = words(question), words(passage)
        grams = {tuple(q[i:i + 3]) for i in range(len(q) - 2)}
        if not grams:
            return 0.0
        present = {tuple(p[i:i + 3]) for i in range(len(p) - 2)}
        return len(grams & present) / len(grams)
