"""The judge's grade scale: UMBRELA's 0-3, the one cut that makes a grade relevant, and how
votes become one grade. Every surface that reads a judged grade (measures, causes, the page,
calibration, candidates) cuts it here.
"""

from __future__ import annotations

from typing import Mapping, Sequence

from ..ir.qrels import Qrels

#: the lowest judged grade (0-3) that counts as relevant in ``+judged`` measures: read it through
#: ``is_judged_relevant``, the one place the cut is made
RELEVANT_FROM = 2
GRADES = (0, 1, 2, 3)


def is_judged_relevant(grade: int) -> bool:
    """Does the judge's grade make a document relevant (``RELEVANT_FROM``, "has the answer", or
    more)? The cut every surface makes: measures, causes, the page, calibration, candidates."""
    return grade >= RELEVANT_FROM


def judged_qrels(human: Qrels, judged: Mapping[str, Mapping[str, int]]) -> Qrels:
    """The labels the ``+judged`` measures read: ``human`` with the judge's grades of its holes
    (question id -> doc id -> grade 0-3) filled in as relevant (1) or judged not relevant (0) by
    ``is_judged_relevant``. A human label always wins; a question the humans do not judge stays
    out, as trec_eval scores only judged questions. Pure: neither input changes."""
    return Qrels({q: {**{d: int(is_judged_relevant(g)) for d, g in judged.get(q, {}).items()}, **docs}
                  for q, docs in human.judgements.items()})


def majority(votes: Sequence[int]) -> int:
    """The most given grade; a tie goes to the lower grade (a doubtful document is not relevant)."""
    return max(sorted(set(votes)), key=lambda g: (votes.count(g), -g))
