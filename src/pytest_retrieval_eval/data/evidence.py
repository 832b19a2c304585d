"""Evidence: the passages of a relevant document's text that answer a question, anchored by
text (never by chunk id), so a label survives re-chunking.

A labeled question records its evidence in ``source["evidence"]``: doc id -> quotes (one or
more, any of them answers). One rule says whether a text holds a quote, ``holds``, on the words
of ``data/text.py`` (NFKC, case folded, punctuation and whitespace aside, "1.5" one word): the
text holds at least a share of the quote's words, in order, within a span of its words at most as
much longer than the quote as the quote may lack words. Its readers differ only in the share:

- ``label import`` (``quote_problem``), ``generate`` (a model's quote of its passage) and the
  staleness check (``stale_quotes``: an edited document keeps a label whose quotes it still
  holds) ask for all of the quote's words: one run of whole words of the document. A quote cut
  mid-word ("get a daily co") or mid-number ("5 euros" of "15 euros") is none;
- the evidence-level measures (``hit@5+evidence``, ``passage_ranks``) ask a passage for
  ``OVERLAP`` (80%) of them, so a quote cut by a chunk boundary still counts when most of it is
  in one passage. The span may exceed the quote by as many words as the quote may lack (2 for a
  10-word quote, none below 5 words): a passage may differ from the quote by a fifth of it
  either way (words cut off at a boundary, or a word inserted), never be a passage about
  something else that happens to use the quote's words.
"""

from __future__ import annotations

import difflib
import math
from bisect import bisect_left
from collections import Counter
from typing import Any, Mapping, Sequence

from .text import normalise, words

#: the share of a quote's words a passage must hold, in order and as one run of its text, to
#: carry the evidence: a quote cut by a chunk boundary still counts when most of it is in one passage
OVERLAP = 0.8


class Quote:
    """A quote's words, read once for every text it is looked for in."""

    __slots__ = ("text", "words", "_run", "_counts", "_masks")

    def __init__(self, text: str):
        self.text = text
        self.words = tuple(words(text))
        self._run = f" {' '.join(self.words)} "
        self._counts = Counter(self.words)
        self._masks: dict[str, int] = {}
        for i, w in enumerate(self.words):  # word -> bit i set where the quote has it (for _in_order)
            self._masks[w] = self._masks.get(w, 0) | 1 << i

    def _in_order(self, window: Sequence[str]) -> int:
        """How many of the quote's words ``window`` holds in order: their longest common
        subsequence, bit-parallel (Allison and Dix), one step a word."""
        full = v = (1 << len(self.words)) - 1
        for w in window:
            u = v & self._masks.get(w, 0)
            v = (v + u) | (v - u)
        return len(self.words) - bin(v & full).count("1")


def holds(text: str | Sequence[str], quote: str | Quote, share: float = 1.0) -> bool:
    """Whether ``text`` (or its ``words``) holds ``quote``: at least ``share`` of the quote's words,
    in order, within a span of the text's words no longer than the quote plus the words it may
    lack. ``share`` 1 (import, staleness): the quote as one run of whole words; ``OVERLAP`` (the
    measures): most of it, as one run (see the module's docstring)."""
    q = quote if isinstance(quote, Quote) else Quote(quote)
    have = words(text) if isinstance(text, str) else text
    n = len(q.words)
    if not n or not have:
        return False
    if q._run in f" {' '.join(have)} ":
        return True
    need = max(1, math.ceil(share * n - 1e-9))
    if need >= n:
        return False
    found = Counter(w for w in have if w in q._counts)
    if sum(min(k, found[w]) for w, k in q._counts.items()) < need:  # too few of its words anywhere
        return False
    span = n + (n - need)
    at = [i for i, w in enumerate(have) if w in q._counts]
    for a, start in enumerate(at):
        b = bisect_left(at, start + span, a)
        if b - a >= need and q._in_order(have[start:at[b - 1] + 1]) >= need:
            return True
    return False


def parse_evidence(raw: Any, relevant: Mapping[str, int]) -> dict[str, list[str]]:
    """A label's evidence as doc id -> quotes: a quote or a list of quotes (for the one document
    of grade >= 1), or a mapping doc id -> quote(s). ``ValueError`` says what is wrong."""
    if raw is None or raw == "" or raw == [] or raw == {}:
        return {}
    if isinstance(raw, (str, list)):
        gold = [d for d, g in relevant.items() if g >= 1]
        if len(gold) != 1:
            raise ValueError(f"a bare quote needs exactly one relevant document, there are {len(gold)}: "
                             "map each doc id to its quotes")
        raw = {gold[0]: raw}
    if not isinstance(raw, Mapping):
        raise ValueError(f"must be a quote, a list of quotes or {{doc id: quotes}}, got {type(raw).__name__}")
    out: dict[str, list[str]] = {}
    for doc, quotes in raw.items():
        doc = str(doc)
        if relevant.get(doc, 0) < 1:
            raise ValueError(f"evidence for '{doc}', which is not a relevant document of the question")
        quotes = [quotes] if isinstance(quotes, str) else quotes
        if not isinstance(quotes, list) or not quotes or not all(isinstance(x, str) and x.strip() for x in quotes):
            raise ValueError(f"evidence of '{doc}' must be a non-empty quote or list of non-empty quotes")
        if not all(words(x) for x in quotes):
            raise ValueError(f"evidence of '{doc}': a quote holds no word")
        out[doc] = list(dict.fromkeys(" ".join(x.split()) for x in quotes))
    return dict(sorted(out.items()))


def evidence_of(query: Any) -> dict[str, tuple[str, ...]]:
    """doc id -> quotes of a labeled question (``source["evidence"]``); empty without evidence."""
    raw = (query.source or {}).get("evidence") or {}
    return {d: tuple(q) for d, q in raw.items()} if isinstance(raw, Mapping) else {}


def as_read(evidence: Mapping[str, Sequence[str]]) -> dict[str, frozenset[tuple[str, ...]]]:
    """Evidence as ``holds`` reads it: doc id -> its quotes' ``words``, in any order. Two spellings
    of a label's evidence that differ only where the rule does not look (case, punctuation,
    whitespace, Unicode form, the order of the quotes) are one evidence: no passage carries one
    and not the other, so the one test of "the evidence changed" compares these."""
    return {d: frozenset(tuple(words(q)) for q in qs) for d, qs in evidence.items() if qs}


def closest_passage(quote: str, text: str) -> tuple[float, str]:
    """(similarity 0-1, the passage of ``text`` as long as ``quote``, in whole words, that is most like it)."""
    spaced, n = text.split(), max(1, len(quote.split()))
    target = normalise(quote)
    best = (0.0, "")
    for start in range(0, max(1, len(spaced) - n + 1)):
        window = " ".join(spaced[start:start + n])
        matcher = difflib.SequenceMatcher(None, target, normalise(window), autojunk=False)
        if matcher.quick_ratio() > best[0] and (ratio := matcher.ratio()) > best[0]:
            best = (ratio, window)
    return best


def quote_problem(quote: str, doc_id: str, text: str) -> str | None:
    """Why ``quote`` is no evidence in document ``doc_id`` (its text), or None when the document
    ``holds`` all of it."""
    if holds(text, quote):
        return None
    ratio, passage = closest_passage(quote, text)
    if normalise(quote) in normalise(text):  # its letters are there, not on word boundaries
        return (f"evidence {quote!r:.80} is cut mid-word in document '{doc_id}' (a quote is whole words); "
                f"its closest whole-word passage is {passage!r}")
    near = f"; its closest passage ({ratio:.0%} alike) is {passage!r}" if ratio >= 0.6 else ""
    return f"evidence {quote!r:.80} does not occur in document '{doc_id}'{near}"


def stale_quotes(query: Any, doc_id: str, text: str) -> list[str]:
    """The quotes of ``doc_id``'s evidence its ``text`` no longer ``holds``."""
    have = words(text)
    return [q for q in evidence_of(query).get(doc_id, ()) if not holds(have, q)]


def passage_ranks(relevant: Mapping[str, int], evidence: Mapping[str, Sequence[str]],
                  passages: Sequence[tuple[str, str]]) -> dict[str, int]:
    """Relevant doc id -> 1-based rank of the first of ``passages`` ((doc id, text), best first)
    that carries it: one that ``holds`` ``OVERLAP`` of a quote of its evidence, or, for a relevant
    document labeled without evidence, any passage of it."""
    out: dict[str, int] = {}
    quotes = {doc: [Quote(q) for q in qs] for doc, qs in evidence.items() if qs}  # each read once
    for rank, (doc, text) in enumerate(passages, start=1):
        if doc in out or relevant.get(doc, 0) < 1:
            continue
        if doc not in quotes:
            out[doc] = rank
            continue
        have = words(text)
        if any(holds(have, q, OVERLAP) for q in quotes[doc]):
            out[doc] = rank
    return out


def first_passages(relevant: Mapping[str, int], passages: Sequence[tuple[str, str]]) -> dict[str, int]:
    """Relevant doc id -> the 1-based rank of its first passage, whatever it holds."""
    out: dict[str, int] = {}
    for rank, (doc, _) in enumerate(passages, start=1):
        if relevant.get(doc, 0) >= 1:
            out.setdefault(doc, rank)
    return out
