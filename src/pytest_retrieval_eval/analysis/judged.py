"""How much of each top k the labels judge (ir_measures' ``Judged@k``), per evaluation whose
labels judge few documents or which reads a judge's grades: what the reports say under the
table (``report/judged.py``), computed once here. Generated questions judge one gold document
each, so precision, map and ndcg are then lower bounds, and a reader should see that."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Sequence

from ..ir.measures import Measure
from .scores import Scores


@dataclass(frozen=True)
class JudgedAt:
    """judged@k of one evaluation at one cutoff, by the labels and with the judge's grades."""

    k: int
    #: the share of the top k the labels judge
    labels: float
    #: the share with the judge's grades too; None without judgments
    judged: float | None
    #: the measures the rules judge (else the table's) at this cutoff that the engine has a value
    #: of: what a mostly unjudged top k leaves as lower bounds
    rests: tuple[str, ...] = ()


@dataclass(frozen=True)
class Judged:
    """One evaluation's judged@k at the table's cutoffs."""

    engine: str
    labeled: str
    #: documents the labels judge per question (``Qrels.judged_per_query``)
    per_question: float
    at: tuple[JudgedAt, ...] = ()


def cutoffs(measures: Sequence[str]) -> list[int]:
    """The cutoffs of the tabled (and so gated) relevance measures, ascending."""
    return sorted({m.k for m in map(Measure.parse, measures) if not m.freshness and m.k is not None})


def gated(settings: Any, measures: Sequence[str]) -> list[str]:
    """The measures the rules judge, on the human labels, else (no rules) the table's."""
    from ..rules.thresholds import measures_needed

    s = settings
    named = [*(d.measure for d in s.max_drops), *measures_needed(s.thresholds)]
    return list(dict.fromkeys(Measure.parse(m).on_human_labels.name for m in named)) or list(measures)


def judged_of(run: Any, settings: Any, measures: Sequence[str]) -> list[Judged]:
    """Per evaluation whose labels judge fewer than two documents per question or which reads
    judgments, judged@k at the cutoffs of ``measures``, in run order."""
    ks, named = cutoffs(measures), gated(settings, measures)
    out = []
    for e in run.evaluations:
        if not (e.labeled.qrels.judges_few() or e.judge is not None):
            continue
        at = tuple(JudgedAt(k, Scores.of(e).mean(f"judged@{k}"), Scores.of(e).mean(f"judged@{k}+judged") if e.judge is not None else None,
                            tuple(m for m in named if (p := Measure.parse(m)).k == k and not p.judge_dependent
                                  and not p.freshness and Scores.of(e).has_value(m)))
                   for k in ks)
        out.append(Judged(e.engine, e.labeled.name, e.labeled.qrels.judged_per_query(), at))
    return out
