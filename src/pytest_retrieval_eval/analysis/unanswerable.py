"""What each engine returned for the labeled set's unanswerable turns (``LabeledSet.unanswerable``:
no relevant document exists), computed once here and listed by the reports
(``report/unanswerable.py``). Such a turn is no question of any measure: as trec_eval skips a
query without a relevant document, a hit@k of 0 there would say nothing of the engine, and one
of 1 cannot be. What an engine hands a generator for it is what matters (a system that
answers from whatever comes back will answer anyway), so the run lists it: per turn, the
documents at the top, and how many turns got any."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Returned:
    """One unanswerable turn: its id, and what the engine returned at the top (or its error)."""

    query_id: str
    top: tuple[str, ...]
    error: str | None = None


@dataclass(frozen=True)
class Unanswered:
    """One evaluation's unanswerable turns: how many, how many came back with documents in the
    top ``k``, each turn's top ``k``."""

    engine: str
    labeled: str
    k: int
    n: int
    #: turns the engine returned at least one document for (an error returns none)
    returned: int
    turns: tuple[Returned, ...] = ()


def unanswered_of(run: Any, k: int) -> list[Unanswered]:
    """Per evaluation whose labeled set has unanswerable turns, in run order, their top ``k``."""
    out = []
    for e in run.evaluations:
        results = getattr(e, "unanswerable", ())
        if not results:
            continue
        turns = tuple(Returned(r.query_id, tuple(r.doc_ids[:k]), r.error) for r in results)
        out.append(Unanswered(e.engine, e.labeled.name, k, len(turns), sum(1 for t in turns if t.top), turns))
    return out
