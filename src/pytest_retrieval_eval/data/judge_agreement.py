"""How far judges can be trusted: a judge against the human labels (``Calibration``, Cohen's
kappa, ``judge --calibrate`` and ``--validate``) and a panel's members against each other
(``Agreement``, Fleiss' and Cohen's kappa).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Mapping, Sequence

from .grades import GRADES, is_judged_relevant
from .judges import Judge

#: a judge whose agreement with the human labels (``judge --calibrate``) is below this Cohen's kappa
#: draws a warning in every run that uses its judgments ("moderate" agreement starts at 0.41)
KAPPA_FLOOR = 0.4


@dataclass(frozen=True)
class Agreement:
    """How a panel's members agree on the pairs every one of them graded: Fleiss' kappa on
    relevance (the cut the ``+judged`` measures make) and on the 0-3 grades, Cohen's kappa on
    relevance for each two members, and the share of pairs all call alike."""

    #: (fingerprint, model) per member
    members: tuple[tuple[str, str], ...]
    pairs: int
    fleiss: float
    fleiss_grades: float
    #: (fingerprint, fingerprint, Cohen's kappa on relevance)
    pairwise: tuple[tuple[str, str, float], ...]
    unanimous: float

    @classmethod
    def of(cls, members: Sequence[Judge], grades: Sequence[Sequence[int]]) -> "Agreement":
        """From each pair's grades, one per member in ``members``' order."""
        from ..ir.agreement import cohen_kappa, fleiss_kappa

        rel = [[int(is_judged_relevant(g)) for g in row] for row in grades]
        fleiss = fleiss_kappa([[r.count(0), r.count(1)] for r in rel])
        fleiss_grades = fleiss_kappa([[list(row).count(g) for g in GRADES] for row in grades])
        pairwise = tuple((a.fingerprint, b.fingerprint, cohen_kappa([r[i] for r in rel], [r[j] for r in rel]))
                         for i, a in enumerate(members) for j, b in enumerate(members) if i < j)
        unanimous = sum(len(set(r)) == 1 for r in rel) / len(rel) if rel else float("nan")
        return cls(tuple((m.fingerprint, m.model) for m in members), len(grades), fleiss, fleiss_grades, pairwise,
                   unanimous)

    def describe(self) -> str:
        def k(x: float) -> str:
            return f"{x:.2f}" if x == x else "undefined"

        models = dict(self.members)
        two = ", ".join(f"{models[a]} ~ {models[b]} {k(x)}" for a, b, x in self.pairwise)
        share = f"{self.unanimous:.0%}" if self.unanimous == self.unanimous else "none"
        return (f"Fleiss' kappa {k(self.fleiss)} on relevance ({k(self.fleiss_grades)} on the 0-3 grades) over the "
                f"{self.pairs} pair(s) all {len(self.members)} graded, {share} unanimous; Cohen's kappa by two: {two}")

    def to_dict(self) -> dict[str, Any]:
        def number(x: float) -> float | None:
            return None if x != x else round(x, 6)

        return {"members": [list(m) for m in self.members], "pairs": self.pairs, "fleiss": number(self.fleiss),
                "fleiss_grades": number(self.fleiss_grades),
                "pairwise": [[a, b, number(x)] for a, b, x in self.pairwise], "unanimous": number(self.unanimous)}

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> "Agreement":
        def number(x: Any) -> float:
            return float("nan") if x is None else float(x)

        return cls(tuple((str(f), str(m)) for f, m in d["members"]), int(d["pairs"]), number(d["fleiss"]),
                   number(d["fleiss_grades"]), tuple((str(a), str(b), number(x)) for a, b, x in d["pairwise"]),
                   number(d["unanimous"]))


@dataclass
class Calibration:
    """A judge against the human labels on the documents both judged (``judge --calibrate`` and
    ``--validate``): the labels' own grades (relevant from 1) and a worksheet's (the judge's 0-3
    scale, relevant from ``RELEVANT_FROM``), each on its own scale, never mixed in one table."""

    judge: Judge
    #: (the labels' grade, judge's grade) per calibrated pair
    pairs: list[tuple[int, int]] = field(default_factory=list)
    #: (a worksheet's grade, judge's grade) per pair a person graded that the labels do not judge
    sheet: list[tuple[int, int]] = field(default_factory=list)

    @property
    def n(self) -> int:
        return len(self.pairs) + len(self.sheet)

    def relevance(self) -> list[tuple[int, int]]:
        """(human, judge) relevance 0/1 per pair: the one cut every number below reads."""
        return ([(int(h >= 1), int(is_judged_relevant(g))) for h, g in self.pairs]
                + [(int(is_judged_relevant(h)), int(is_judged_relevant(g))) for h, g in self.sheet])

    @property
    def kappa(self) -> float:
        """Cohen's kappa on relevance: human grade >= 1 (a worksheet's >= ``RELEVANT_FROM``) against
        judged grade >= ``RELEVANT_FROM`` (NaN with no pair, or one label used by both throughout)."""
        from ..ir.agreement import cohen_kappa

        rel = self.relevance()
        return cohen_kappa([h for h, _ in rel], [g for _, g in rel])

    @property
    def base_rate(self) -> float:
        """The share of the pairs the humans call relevant: kappa is read against it (a rare or
        near-universal label leaves little chance agreement to beat, and kappa swings)."""
        rel = self.relevance()
        return sum(h for h, _ in rel) / len(rel) if rel else float("nan")

    @property
    def one_sided(self) -> bool:
        """The sample's human labels are all of one kind (qrels that judge relevant documents
        alone): kappa is then 0 whatever the judge says, and says nothing of it."""
        return len({h for h, _ in self.relevance()}) == 1

    @property
    def agreement(self) -> float:
        """The share of pairs on which the judge and the humans agree about relevance."""
        rel = self.relevance()
        if not rel:
            return float("nan")
        return sum(h == g for h, g in rel) / len(rel)

    def describe(self) -> str:
        why = (" (the sample's human labels are all of one kind: kappa is 0 whatever the judge says, so read the "
               "agreement)" if self.one_sided else "")
        k = f"{self.kappa:.2f}" if self.kappa == self.kappa else "undefined"
        return f"Cohen's kappa {k}{why}, agreement {self.agreement:.0%} against the human labels on {self.n} pairs"

    def confusion(self, sheet: bool = False) -> dict[int, dict[int, int]]:
        """Human grade -> judged grade -> pairs (``sheet``: of the worksheet's grades)."""
        out: dict[int, dict[int, int]] = {}
        for h, g in self.sheet if sheet else self.pairs:
            row = out.setdefault(h, {x: 0 for x in GRADES})
            row[g] += 1
        return dict(sorted(out.items()))

    def confusion_lines(self) -> list[str]:
        out = []
        for sheet, who in ((False, "human"), (True, "sheet")):  # the labels, a worksheet
            table = self.confusion(sheet)
            if table or (not sheet and not self.sheet):
                head = who + " \\ judge"
                out.append(f"{head:>13} " + " ".join(f"{g:>5}" for g in GRADES))
                out += [f"{h:>13} " + " ".join(f"{row[g]:>5}" for g in GRADES) for h, row in table.items()]
        return out
