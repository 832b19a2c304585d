"""``judge --recheck=N``: a judge's stored grades asked again, to catch a model its provider
updated behind the same name (the judge's fingerprint names the model, not its weights).

N of the grades the judge stored (holes and calibration pairs whose question and document still
read as they did) are drawn with a fixed seed and graded again by the same settings; the new
grades are compared with the stored ones, and not written to the judgments file (the runs keep
reading what they read). Agreement on relevance (grade >= ``RELEVANT_FROM`` on both sides) below
``RECHECK_FLOOR``, either kind of stored relevance kept on fewer than ``KEPT_FLOOR`` of its pairs,
or another model answering marks the judge as drifted: every run that uses its grades then warns,
until a recheck meets the floors again. The result is kept per judge fingerprint in
``judgments.recheck.json`` beside the judgments file (as ``judge --validate``'s are in
``judgments.validation.json``).
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Mapping, Sequence

from . import validation
from .judge import Pair
from .grades import is_judged_relevant
from .judges import Judge
from .judgments import Judgment, Judgments, question_sha256

#: the lowest share of rechecked pairs on which the judge must give the relevance it stored (a
#: temperature-0 judge asked again flips a few borderline grades; a new model version flips more)
RECHECK_FLOOR = 0.9
#: the kinds of stored grade a recheck draws from: those a run reads (holes) and those set against
#: the humans (calibration); a candidate's document is not in the corpus, a worksheet's is a person's
RECHECKED_KINDS = ("hole", "calibration")
#: the lowest share of each kind of stored relevance (relevant, not relevant) graded so again
KEPT_FLOOR = 0.5


def recheck_path(judgments: str | Path) -> Path:
    """``judgments.jsonl`` -> ``judgments.recheck.json`` beside it."""
    path = Path(judgments)
    return path.with_name(f"{path.stem}.recheck.json")


def stored_pairs(judgments: Judgments, judge: Judge, questions: Mapping[str, str], corpus: Any,
                 text: Callable[[Any], str]) -> list[tuple[Pair, Judgment]]:
    """``judge``'s stored grades that can be asked again as they were given: of a question
    (``questions``: id -> it as asked now, ``LabeledQuery.asked``) and a document of ``corpus`` that read the same, each
    with the pair to ask (``text``: what the judge reads of a document), in a stable order."""
    out = []
    for j in sorted((j for j in judgments if j.kind in RECHECKED_KINDS and j.judge.fingerprint == judge.fingerprint),
                    key=lambda j: j.key):
        question, doc = questions.get(j.query_id), corpus.get(j.doc_id)
        if question is None or doc is None or not j.reads(question_sha256(question), doc.fingerprint):
            continue
        out.append((Pair(j.query_id, question, j.doc_id, text(doc), doc.fingerprint, j.kind, j.human), j))
    return out


def draw(found: Sequence[tuple[Pair, Judgment]], n: int, seed: int = 0) -> list[tuple[Pair, Judgment]]:
    """Up to ``n`` of the stored grades, uniformly with a fixed seed (all when fewer)."""
    return list(found) if len(found) <= n else random.Random(seed).sample(list(found), n)


@dataclass
class Recheck:
    """The judge's stored grades against the ones it gives now, pair by pair."""

    judge: Judge
    #: (stored grade, grade now) per rechecked pair
    grades: list[tuple[int, int]] = field(default_factory=list)
    stored: int = 0  # grades of the judge that could be drawn
    #: the judge that answered now, when the server names another model than the stored judge's
    answered_by: Judge | None = None

    @property
    def n(self) -> int:
        return len(self.grades)

    @property
    def exact(self) -> float:
        """The share of pairs given the very grade (0-3) stored."""
        return sum(a == b for a, b in self.grades) / self.n if self.n else float("nan")

    @property
    def agreement(self) -> float:
        """The share of pairs given the relevance stored (what the ``+judged`` measures read)."""
        rel = self.relevance()
        return sum(a == b for a, b in rel) / len(rel) if rel else float("nan")

    @property
    def kappa(self) -> float:
        """Cohen's kappa of the relevance stored against the relevance now (NaN: one label throughout)."""
        from ..ir.agreement import cohen_kappa

        rel = self.relevance()
        return cohen_kappa([a for a, _ in rel], [b for _, b in rel])

    def relevance(self) -> list[tuple[int, int]]:
        return [(int(is_judged_relevant(a)), int(is_judged_relevant(b))) for a, b in self.grades]

    def kept(self, relevant: bool) -> float:
        """The share of the pairs stored as relevant (``relevant``), or as not, graded so again."""
        side = [now for was, now in self.relevance() if was == int(relevant)]
        return sum(now == int(relevant) for now in side) / len(side) if side else float("nan")

    @property
    def why_drifted(self) -> str | None:
        """Why the judge counts as drifted, or None: relevance kept on fewer than ``RECHECK_FLOOR``
        of the pairs; or either kind of stored relevance kept on fewer than half of its pairs (the
        share alone passes a judge that now grades everything 0 when few pairs were relevant); or
        the server names another model as answering."""
        if not self.n:
            return None
        if self.agreement < RECHECK_FLOOR:
            return f"it gave the same relevance on {self.agreement:.0%} of them, below {RECHECK_FLOOR:.0%}"
        for relevant in (True, False):
            share = self.kept(relevant)
            if share == share and share < KEPT_FLOOR:
                return (f"of those it stored as {'relevant' if relevant else 'not relevant'}, it grades only "
                        f"{share:.0%} so now, below {KEPT_FLOOR:.0%}")
        if self.answered_by is not None:
            return f"the server names another model as answering ({self.answered_by.model})"
        return None

    @property
    def drifted(self) -> bool:
        return self.why_drifted is not None

    def describe(self) -> str:
        kappa = f"{self.kappa:.2f}" if self.kappa == self.kappa else "undefined (one label throughout)"
        same = sum(a == b for a, b in self.grades)
        same_rel = sum(a == b for a, b in self.relevance())
        return (f"the same grade on {self.exact:.0%} ({same}/{self.n}), the same relevance on {self.agreement:.0%} "
                f"({same_rel}/{self.n}); Cohen's kappa {kappa} on relevance")

    def record(self, when: str) -> dict[str, Any]:
        """What is stored for the judge: the figures printed, the floor and the verdict."""
        def number(x: float) -> float | None:
            return None if x != x else round(x, 6)

        changed: dict[str, dict[str, int]] = {}
        for a, b in self.grades:
            row = changed.setdefault(str(a), {})
            row[str(b)] = row.get(str(b), 0) + 1
        return {"judge": self.judge.to_dict(), "pairs": self.n, "stored": self.stored, "exact": number(self.exact),
                "agreement": number(self.agreement), "kappa": number(self.kappa), "floor": RECHECK_FLOOR,
                "drifted": self.drifted, **({"why": self.why_drifted} if self.drifted else {}),
                "checked": when, "grades": dict(sorted(changed.items())),
                **({"answered_by": self.answered_by.to_dict()} if self.answered_by is not None else {})}


def load(path: str | Path) -> dict[str, dict[str, Any]]:
    """Judge fingerprint -> its last recheck (none when the file does not exist)."""
    return validation.load(path)


def store(path: str | Path, fingerprint: str, record: Mapping[str, Any]) -> None:
    """Keep ``record`` as the judge ``fingerprint``'s last recheck (atomic, under the file's lock)."""
    validation.store(path, fingerprint, record)


def drift_of(judgments_path: str | Path | None, fingerprint: str) -> dict[str, Any] | None:
    """The judge's last recheck when it found the judge drifted, else None (none kept, or met)."""
    if judgments_path is None:
        return None
    found = load(recheck_path(judgments_path)).get(fingerprint)
    return found if found is not None and found.get("drifted") else None
