"""Segments of the labeled set: the tags a question carries, its team's and those derived here.

A team tags questions in its labels (a ``tags`` CSV/TSV column or JSONL field, the questions
cache's ``tags``: product, language, kind); the plugin adds, from the corpus:

- ``body-only``: the question's distinctive terms that occur in its relevant document occur in
  none of that document's title, description or filename (the metadata keyword engine's blind
  spot; terms cut as that engine cuts them: lowercase ASCII words of 2+ characters, matched as
  substrings; common English words left out, which the engine itself still matches);
- ``versioned``: a relevant document carries version fields (``valid_from``, ``version_key`` ...);
- ``multi-gold``: more than one document is relevant;
- ``length:short`` (up to 10 words), ``length:medium``, ``length:long`` (over 20 words);
- for a turn of a conversation only: ``turn:1`` ... ``turn:4``, ``turn:5+`` (its position),
  ``first-turn`` or ``follow-up``, and ``depends`` or ``standalone``: the label's flag where it
  states one, else ``standalone`` for a first turn, else what the turn's human rewrite says, else
  ``depends_guess`` of the turn's text (``depends_of``).

A tag with a ``:`` is one value of a family (``length:``, ``product:``): its values split the
set between them, so reports show no complement for it. ``first-turn``/``follow-up`` and
``depends``/``standalone`` split a conversation's turns in two (``HALVES``): each one's other half
is the other tag, shown under its name, never as ``not first-turn``. Tags naming the same questions
by definition (``turn:1`` is ``first-turn``) are one segment (``distinct``).
"""

from __future__ import annotations

import re
from functools import lru_cache
from dataclasses import replace
from typing import Any, Callable, Iterable, Sequence

from ..errors import RetrievalEvalError
from .labeled import LabeledSet
from .terms import normalize, tokenize
from ..types import LabeledQuery

DERIVED = ("body-only", "versioned", "multi-gold", "length:short", "length:medium", "length:long",
           "first-turn", "follow-up", "depends", "standalone", "turn:1", "turn:2", "turn:3", "turn:4", "turn:5+")
#: the derived tags that split a conversation's turns in two: each tag's other half among the turns
#: (a single question carries neither), what a report shows in place of ``not TAG``
HALVES = {"first-turn": "follow-up", "follow-up": "first-turn", "depends": "standalone", "standalone": "depends"}
#: a tag naming by definition the questions another does: the one shown where both are
SAME = {"turn:1": "first-turn"}
#: positions from which turns share one segment, ``turn:5+``: few conversations run that long
TURN_FOLD = 5
_TAG = re.compile(r"^[\w.+-]+(?::[\w.+-]+)?$")
#: words too common to say where an answer is
STOPWORDS = frozenset("""a an and are as at be been being but by can could did do does doing for from had has have how
i if in into is it its me my no not of on or our should so than that the their them then there these they this to
up us was we what when where which who why will with would you your yours am any all also more most other some such
only own same too very just out about after before again off over under once here both each few nor""".split())


def parse_tags(raw: Any, where: str) -> tuple[str, ...]:
    """Tags as a file holds them: a list of names, or one string of names separated by commas,
    semicolons or ``|``; each a word (``product:bikes`` for a value of a family)."""
    if raw is None or raw == "":
        return ()
    items = re.split(r"[,;|]", raw) if isinstance(raw, str) else raw
    if not isinstance(items, (list, tuple)) or not all(isinstance(t, str) for t in items):
        raise RetrievalEvalError(f"{where}: tags must be a list of names or one string of names separated by commas")
    tags = [t.strip() for t in items if t.strip()]
    bad = next((t for t in tags if not _TAG.match(t)), None)
    if bad is not None:
        raise RetrievalEvalError(f"{where}: tag {bad!r} must be a word of letters, digits, '.', '+', '-' or '_' "
                                 "(with one ':' for a value of a family, e.g. product:bikes)")
    return tuple(sorted(set(tags)))


def _terms(text: str) -> list[str]:
    return [t for t in tokenize(text) if t not in STOPWORDS]


def body_only(question: str, docs: Sequence[Any], read: Callable[[Any], tuple[set[str], str]] | None = None) -> bool:
    """Whether the question's terms found in its relevant documents are in none of their metadata.
    ``read``: a document's (body terms, normalised metadata), remembered by the caller."""
    terms = _terms(question)
    shared = False
    for d in docs:
        body, meta = (read or _read)(d)
        if any(t in meta for t in terms):
            return False
        shared = shared or any(t in body for t in terms)
    return shared


def _read(d: Any) -> tuple[set[str], str]:
    return set(_terms(d.content)), " ".join(normalize(getattr(d, f)) for f in ("title", "description", "filename"))


def length_band(question: str) -> str:
    words = len(question.split())
    return "length:short" if words <= 10 else "length:long" if words > 20 else "length:medium"


#: words that point back to something said before (pronouns, demonstratives, "there")
_POINTERS = frozenset("it its it's they them their theirs that this those these there he she him her his one ones "
                      "such same former latter".split())
#: openings of an elliptical follow-up: "and for students?", "what about Windows?"
_ELLIPSIS = ("and ", "what about ", "how about ", "what if ", "also ", "or ")
#: words of 4+ letters that name nothing a pronoun could point to: they do not make a turn stand alone
_GENERIC = STOPWORDS | frozenset("much many does work works need make take tell give still else well like want know "
                                 "mean happen happens cost costs thing things something anything please thanks "
                                 "more less long later again instead there their theirs these those them they this "
                                 "that same such former latter".split())


#: openings of a correction, a reply to the assistant's answer: "No, I meant ...", "That was not my question"
_CORRECTION = ("no ", "no,", "not ", "i mean ", "i mean,", "i meant ", "that was not ", "that's not ", "that is not ",
               "what i mean")


@lru_cache(maxsize=4096)  # asked per turn by the segments and by every measure of the analysis by turn
def depends_guess(text: str) -> bool:
    """Whether a follow-up likely needs the earlier turns, from its text alone: it holds a pointer
    (a pronoun or demonstrative, not the "there" of "is there") or is elliptical (starts "and",
    "what about", "how about", "what if", ...; or has fewer than 3 words that are not stopwords),
    and it has fewer than 3 content words of 4+ letters (not stopwords, not generic verbs like
    "work" or "cost"): too little of its own for the pointer to refer to; or it opens with a
    correction of the assistant ("No, I meant ..."); or it has fewer than 2 content words. Measured
    against MTRAG's human rewrites (docs/conversations.md). A guess, used only where the label
    states no ``depends`` and the turn has no human rewrite (``depends_of``)."""
    lowered = " ".join(text.lower().replace("’", "'").split())
    words = re.findall(r"[a-z][a-z']*", lowered)
    existential = {i + 1 for i, w in enumerate(words[:-1]) if w in ("is", "are", "was", "were", "isn't", "aren't")
                   and words[i + 1] == "there"}
    pointer = any(w in _POINTERS for i, w in enumerate(words) if i not in existential)
    elliptical = lowered.startswith(_ELLIPSIS) or len([w for w in words if w not in STOPWORDS]) < 3
    content = {w for w in words if len(w) >= 4 and w not in _GENERIC}
    correction = lowered.lstrip(" \"'").startswith(_CORRECTION)
    return ((pointer or elliptical) and len(content) < 3) or correction or len(content) < 2


def _content(text: str) -> set[str]:
    from .text import words

    return {w for w in words(text) if len(w) >= 3 and w not in STOPWORDS}


def rewrite_needs_history(q: LabeledQuery) -> bool | None:
    """Whether a turn's human rewrite says it needs the conversation: the rewrite holds a content
    word (3+ letters, not a stopword, ``data.text.words``) that the turn lacks and the conversation
    before it holds. None without a rewrite or a conversation before it."""
    if q.rewrite is None or not q.history:
        return None
    added = _content(q.rewrite) - _content(q.question)
    return bool(added & set().union(*(_content(t.text) for t in q.history)))


def depends_of(q: LabeledQuery) -> bool:
    """Whether a turn needs the earlier turns: the label's ``depends`` where it states one; a
    first turn does not (nothing came before); else what its human rewrite says
    (``rewrite_needs_history``); else ``depends_guess`` of its text."""
    if q.depends is not None:
        return q.depends
    if q.turn <= 1 and not q.history:
        return False
    said = rewrite_needs_history(q)
    return said if said is not None else depends_guess(q.question)


def turn_tags(q: LabeledQuery) -> set[str]:
    """The derived tags of a conversation's turn (none for a single question)."""
    if getattr(q, "conversation", None) is None:
        return set()
    return {f"turn:{q.turn}" if q.turn < TURN_FOLD else f"turn:{TURN_FOLD}+",
            "first-turn" if q.turn == 1 else "follow-up", "depends" if depends_of(q) else "standalone"}


def derive(labeled: LabeledSet, docs: Iterable[Any]) -> LabeledSet:
    """``labeled`` with the derived tags added to each question's own (``docs``: the corpus)."""
    from .freshness import is_versioned

    by_id = {d.doc_id: d for d in docs}
    read: dict[str, tuple[set[str], str]] = {}  # each relevant document read once

    def remembered(d: Any) -> tuple[set[str], str]:
        if d.doc_id not in read:
            read[d.doc_id] = _read(d)
        return read[d.doc_id]

    queries = []
    for q in labeled.queries:
        gold = [by_id[d] for d in q.gold if d in by_id]
        tags = set(q.tags)
        tags.add(length_band(q.question))
        tags |= turn_tags(q)
        if len(q.gold) > 1:
            tags.add("multi-gold")
        if gold and body_only(q.question, gold, remembered):
            tags.add("body-only")
        if any(is_versioned(d.meta) for d in gold):
            tags.add("versioned")
        queries.append(replace(q, tags=tuple(sorted(tags))))
    return LabeledSet(tuple(queries), name=labeled.name, provenance=labeled.provenance,
                      unanswerable=labeled.unanswerable)  # asked, never scored: no segment


def members(labeled: LabeledSet, tag: str) -> list[str]:
    """The ids of the questions carrying ``tag``, in labeled-set order."""
    return [q.query_id for q in labeled.queries if tag in q.tags]


def distinct(tags: Iterable[str]) -> list[str]:
    """``tags`` with one name per segment: a tag naming by definition the questions of another
    there (``SAME``: ``turn:1`` is ``first-turn``) left out, so a report comparing every tag shows
    no segment twice, nor counts it twice in a correction."""
    tags = list(dict.fromkeys(tags))
    return [t for t in tags if SAME.get(t) not in tags]


def all_tags(labeled: LabeledSet) -> list[str]:
    """Every tag some question carries: the derived ones first, in their order, then the team's."""
    found = {t for q in labeled.queries for t in q.tags}
    return [t for t in DERIVED if t in found] + sorted(found - set(DERIVED))
