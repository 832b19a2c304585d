"""Evidence: the passages of a relevant document's text that answer a question, anchored by
text (never by chunk id), so a label survives re-chunking.

A labeled question records its evidence in ``source["evidence"]``: doc id -> quotes (one or
more, any of them answers). Three things read it:

- ``label import`` checks each quote occurs in its document (``quote_problem``: case and
  whitespace normalised; a near miss is named with the document's closest passage);
- the evidence-level measures (``hit@5+evidence``): a retrieved passage carries a document's
  evidence when it ``covers`` one of its quotes, i.e. holds at least ``OVERLAP`` of the quote's
  word tokens, in order (``passage_ranks``);
- the staleness check: an edited document keeps a label whose quotes all still occur in it.
"""

from __future__ import annotations

import difflib
import re
from typing import Any, Mapping, Sequence

#: the share of a quote's word tokens a passage must hold, in order, to carry the evidence: a
#: quote cut by a chunk boundary still counts when most of it is in one passage
OVERLAP = 0.8
_WORD = re.compile(r"\w+")


def normalised(text: str) -> str:
    """Lower case, every run of whitespace one space: how a quote is looked for in its document."""
    return " ".join(text.lower().split())


def tokens(text: str) -> list[str]:
    return _WORD.findall(text.lower())


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
        if not all(tokens(x) for x in quotes):
            raise ValueError(f"evidence of '{doc}': a quote holds no word")
        out[doc] = list(dict.fromkeys(" ".join(x.split()) for x in quotes))
    return dict(sorted(out.items()))


def evidence_of(query: Any) -> dict[str, tuple[str, ...]]:
    """doc id -> quotes of a labeled question (``source["evidence"]``); empty without evidence."""
    raw = (query.source or {}).get("evidence") or {}
    return {d: tuple(q) for d, q in raw.items()} if isinstance(raw, Mapping) else {}


def occurs(quote: str, text: str) -> bool:
    return normalised(quote) in normalised(text)


def closest_passage(quote: str, text: str) -> tuple[float, str]:
    """(similarity 0-1, the passage of ``text`` as long as ``quote`` that is most like it)."""
    words, want = text.split(), quote.split()
    n = max(1, len(want))
    target = normalised(quote)
    best = (0.0, "")
    for start in range(0, max(1, len(words) - n + 1)):
        window = " ".join(words[start:start + n])
        matcher = difflib.SequenceMatcher(None, target, window.lower(), autojunk=False)
        if matcher.quick_ratio() > best[0] and (ratio := matcher.ratio()) > best[0]:
            best = (ratio, window)
    return best


def quote_problem(quote: str, doc_id: str, text: str) -> str | None:
    """Why ``quote`` is no evidence in document ``doc_id`` (its text), or None when it occurs."""
    if occurs(quote, text):
        return None
    ratio, passage = closest_passage(quote, text)
    near = f"; its closest passage ({ratio:.0%} alike) is {passage!r}" if ratio >= 0.6 else ""
    return f"evidence {quote!r:.80} does not occur in document '{doc_id}'{near}"


def stale_quotes(query: Any, doc_id: str, text: str) -> list[str]:
    """The quotes of ``doc_id``'s evidence that no longer occur in its ``text``."""
    return [q for q in evidence_of(query).get(doc_id, ()) if not occurs(q, text)]


def covers(passage: str, quote: str, *, _passage_tokens: Sequence[str] | None = None) -> bool:
    """Whether ``passage`` holds at least ``OVERLAP`` of ``quote``'s word tokens, in order."""
    want = tokens(quote)
    have = list(_passage_tokens) if _passage_tokens is not None else tokens(passage)
    if not want or not have:
        return False
    present = set(have)
    if sum(t in present for t in want) < OVERLAP * len(want):  # an upper bound of the in-order match
        return False
    matcher = difflib.SequenceMatcher(None, want, have, autojunk=False)
    return sum(b.size for b in matcher.get_matching_blocks()) >= OVERLAP * len(want)


def passage_ranks(relevant: Mapping[str, int], evidence: Mapping[str, Sequence[str]],
                  passages: Sequence[tuple[str, str]]) -> dict[str, int]:
    """Relevant doc id -> 1-based rank of the first of ``passages`` ((doc id, text), best first)
    that carries it: one that covers a quote of its evidence, or, for a relevant document
    labeled without evidence, any passage of it."""
    out: dict[str, int] = {}
    for rank, (doc, text) in enumerate(passages, start=1):
        if doc in out or relevant.get(doc, 0) < 1:
            continue
        quotes = evidence.get(doc)
        if not quotes:
            out[doc] = rank
            continue
        have = tokens(text)
        if any(covers(text, q, _passage_tokens=have) for q in quotes):
            out[doc] = rank
    return out


def first_passages(relevant: Mapping[str, int], passages: Sequence[tuple[str, str]]) -> dict[str, int]:
    """Relevant doc id -> the 1-based rank of its first passage, whatever it holds."""
    out: dict[str, int] = {}
    for rank, (doc, _) in enumerate(passages, start=1):
        if relevant.get(doc, 0) >= 1:
            out.setdefault(doc, rank)
    return out
