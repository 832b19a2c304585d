"""``judge --validate``: the judge graded on human labels it never sees (UMBRELA's check), so
its kappa is read with the base rate it was earned on, and the engines' order on its grades is
set against their order on the humans'.

The hidden labels are every human label of the run's questions, relevant and not: the labeled
set's own judged pairs, and a worksheet's grades of the pairs the labels do not judge (those
are holes, so the judge grades them as ``judge`` does, and a file judged already holds them).
A seeded uniform draw keeps the sample's base rate the labels' own, unlike ``--calibrate``'s
half-and-half draw; the pairs are the ones ``--calibrate`` and ``judge`` grade, so the two share
every line of the judgments file and no pair is asked twice.
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from typing import Any

from ..data.judge import Pair
from ..data.grades import is_judged_relevant
from ..data.judge_agreement import KAPPA_FLOOR, Calibration
from ..data.judges import Judge
from ..data.judgments import Judgments, question_sha256
from .judging import EngineOrder, doc_text, engine_order, labeled_pairs
from .results import RunResults


@dataclass(frozen=True)
class Hidden:
    """One human label hidden from the judge: the pair it grades and the person's grade."""

    pair: Pair
    human: int
    sheet: bool  # a worksheet's grade (the judge's 0-3 scale), else the labels' own


def hidden_labels(run: RunResults, corpus: Any, judgments: Judgments) -> list[Hidden]:
    """Every human label of the run's questions whose document the corpus holds: the labels' own
    (relevant and not), then a worksheet's grades of pairs the labels do not judge, each for the
    question as it reads now and the document as the person read it (an edited one is left out)."""
    out = [Hidden(p, p.human, False) for p in labeled_pairs(run, corpus)]
    seen = {(h.pair.query_id, h.pair.doc_id) for h in out}
    questions = {q.query_id: q.asked for e in run.evaluations for q in e.labeled.queries}
    for j in sorted((j for j in judgments if j.kind == "human"), key=lambda j: (j.query_id, j.doc_id)):
        question, doc = questions.get(j.query_id), corpus.get(j.doc_id)
        if (question is None or doc is None or (j.query_id, j.doc_id) in seen
                or j.question_sha256 != question_sha256(question) or j.doc_sha256 != doc.fingerprint):
            continue
        seen.add((j.query_id, j.doc_id))
        out.append(Hidden(Pair(j.query_id, question, j.doc_id, doc_text(doc), doc.fingerprint), j.grade, True))
    return out


def draw(hidden: list[Hidden], sample: int, seed: int = 0) -> list[Hidden]:
    """Up to ``sample`` of the hidden labels, uniformly with a fixed seed (all when fewer)."""
    if len(hidden) <= sample:
        return list(hidden)
    return random.Random(seed).sample(hidden, sample)


def measured(run: RunResults, drawn: list[Hidden], judgments: Judgments, judge: Judge
             ) -> tuple[Calibration, EngineOrder, int]:
    """(the judge against the drawn labels, the engines' order on both, labels it has no grade
    of: a failed call), from the judge's grades in the file for exactly these pairs."""
    calibration, used, filled, missing = Calibration(judge), [], {}, 0
    for h in drawn:
        p = h.pair
        j = judgments.get(p.query_id, p.doc_id, judge, p.kind)
        if j is None or not j.reads(p.question_sha256, p.doc_sha256):
            missing += 1
            continue
        (calibration.sheet if h.sheet else calibration.pairs).append((h.human, j.grade))
        used.append(j)
        if h.sheet:
            filled.setdefault(p.query_id, {})[p.doc_id] = int(is_judged_relevant(h.human))
    return calibration, engine_order(run, used, human=filled), missing


def passes(calibration: Calibration) -> bool:
    """Does the judge meet the floor: kappa at least ``KAPPA_FLOOR`` on labels of both kinds
    (labels all of one kind prove nothing)?"""
    kappa = calibration.kappa
    return kappa == kappa and kappa >= KAPPA_FLOOR and not calibration.one_sided


def record(run: RunResults, calibration: Calibration, order: EngineOrder, hidden: int) -> dict[str, Any]:
    """What is stored for the judge (``data.validation``): the numbers printed, and what they rest on."""
    def number(x: float) -> float | None:
        return None if x != x else round(x, 6)

    def table(sheet: bool) -> dict[str, dict[str, int]]:
        return {str(h): {str(g): n for g, n in row.items()} for h, row in calibration.confusion(sheet).items()}

    return {"judge": calibration.judge.to_dict(), "pairs": calibration.n, "hidden": hidden,
            "base_rate": number(calibration.base_rate), "kappa": number(calibration.kappa),
            "agreement": number(calibration.agreement), "one_sided": calibration.one_sided,
            "floor": KAPPA_FLOOR, "passed": passes(calibration),
            "confusion": {"labels": table(False), "sheet": table(True)},
            "engines": {"measure": order.measure, "human": [list(p) for p in order.human],
                        "judge": [list(p) for p in order.judge], "kendall_tau": number(order.tau)},
            "labeled": sorted({e.labeled.fingerprint for e in run.evaluations})}
