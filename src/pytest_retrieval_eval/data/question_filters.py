"""Which generated questions are worth keeping. What question-generation pipelines learned
(InPars, Promptagator, ragas users): models prepend chatter, ask two things at once, copy the
passage (a question that repeats the passage's words is found by any keyword engine and measures
nothing), ask about the passage itself ("What is the passage about?", "According to the text,
...": no user asks that of a search box), and repeat themselves, word for word across chunks (a
short question escapes any similarity measure, so the normalised text is compared first). Each
rejected answer is counted by reason, never dropped silently.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Iterable

from .text import words

REASONS = ("about_the_passage", "preamble", "several_questions", "too_short", "too_long", "copies_passage",
           "duplicate", "near_duplicate", "not_a_question")
_PREAMBLE = re.compile(r"^\s*(here(?:'s| is| are)\b|sure\b|certainly\b|of course\b|question\s*\d*\s*:|q\s*:|"
                       r"based on (?:the|this) (?:passage|text)|according to (?:the|this) (?:passage|text)|"
                       r"a question (?:that|a user))", re.I)
#: what a model calls the text it was given: "the passage" is always that; "the text" or "the
#: document" only with a pointing word ("this", "above") or in a frame that asks about it
_STRONG = r"(?:passage|excerpt|snippet|chunk)s?"
_WEAK = r"(?:text|document|article|paragraph|section|context|content|source|extract|material)s?"
_ABOUT_THE_PASSAGE = re.compile("|".join((
    rf"\b(?:the|this|that|these|those|above|given|provided|following|preceding|same)\s+{_STRONG}\b",
    rf"\b(?:this|these|above|given|provided|following|preceding|aforementioned|said)\s+{_WEAK}\b",
    rf"\b(?:according\s+to|based\s+on|judging\s+by|in\s+light\s+of|as\s+(?:stated|described|mentioned|explained|"
    rf"discussed|shown|noted|outlined|given)\s+in|(?:mentioned|described|discussed|stated|explained|presented|covered|"
    rf"outlined|referred\s+to|shown|given)\s+in)\s+the\s+(?:{_WEAK}|author|writer)\b",
    rf"\bwhat\s+(?:is|'s|are|was)\s+the\s+{_WEAK}\s+(?:about|saying|describing|discussing|referring\s+to)\b",
    rf"\b(?:does|do|did)\s+the\s+(?:{_WEAK}|author|writer)\s+(?:say|mention|describe|discuss|state|explain|cover|"
    rf"talk|tell|suggest|claim|note|refer|highlight|address|imply|indicate|focus|present|outline|argue|convey)\b",
    rf"\b(?:topic|subject|theme|purpose|gist|summary|idea|point|message|focus|takeaway)s?\s+of\s+the\s+{_WEAK}"
    rf"\s*(?:[?.!,;:]|$)",
    r"\b(?:in|from|within|throughout)\s+the\s+(?:text|article|paragraph|extract|context)\s*[?.!]*\s*$",
    r"^\s*(?:summari[sz]e|paraphrase|describe)\s+(?:the|this)\b",
)), re.I)
_INTERROGATIVE = frozenset("how what why when where who whom whose which can could do does did is are was were "
                           "should will would may might must shall have has am i my our".split())
_STOP = frozenset("a an the and or but of to in on at for by with from as is are was were be been it its this "
                  "that these those i my me you your we our they their he she his her do does did how what why "
                  "when where who which can could should would will if not no so than then there".split())


def content_words(text: str) -> list[str]:
    return [w for w in words(text) if w not in _STOP and len(w) > 2]


def normalised(text: str) -> str:
    """A question as compared for repeats: case, width, punctuation and spacing aside."""
    return " ".join(words(text))


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
        if n > self.max_words:  # first: the patterns below took 0.7 s over a megabyte a model sent back
            return "too_long"
        if _ABOUT_THE_PASSAGE.search(text):
            return "about_the_passage"
        if _PREAMBLE.match(text):
            return "preamble"
        if text.count("?") > 1:
            return "several_questions"
        if n < self.min_words:
            return "too_short"
        first = words(text)[0] if n else ""
        if not text.endswith("?") and first not in _INTERROGATIVE:
            return "not_a_question"
        if self.copied(text, passage) >= self.max_copied:
            return "copies_passage"
        kept = list(kept)
        same = normalised(text)
        if any(normalised(other) == same for other in kept):
            return "duplicate"
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
