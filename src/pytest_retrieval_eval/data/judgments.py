"""LLM relevance judgments of the documents the labels left unjudged: the file a team commits.

``judgments.jsonl`` holds one JSON object per line (schema: ``judgments.schema.json``): the
question and document ids, the judge's grade on UMBRELA's 0-3 scale with each vote, the hashes
of what it read (the question as asked, a turn with its conversation so far:
``LabeledQuery.asked_sha256``; the document's fields), and the judge that gave it
(model, prompt hash, temperature, votes, endpoint host; their hash is the judge's fingerprint). A grade of
``RELEVANT_FROM`` (2: "has the answer") or more makes the document relevant in the ``+judged``
measures, a lower one judged not relevant; human labels always win.

Nothing is lost: judgments are appended one whole line at a time under a lock as they arrive, so
a killed run keeps every finished one (a line cut off mid-write, not JSON, is dropped on the next
write and said so; a whole last line without its newline, a grade corrected by hand, is kept), and
only a run that finished rewrites the file, atomically, in a stable order for review diffs. A
judgment whose document changed is stale, and one made for another wording of its question (or,
for a turn, of the conversation before it) is not used: both are listed and left out of the
numbers, and ``judge`` asks them again. Lines written before questions were hashed (no
``question_sha256``) are used as they are, with a warning, and asked again by the next ``judge``,
which keys them.
"""

from __future__ import annotations

import json
import os
from functools import cached_property, lru_cache
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Collection, Iterable, Iterator, Mapping, Sequence

from .._atomic import write_text_atomic
from ..errors import RetrievalEvalError
from ..ir.qrels import Qrels, parse_grade
from ..types import canonical_json, question_sha256, sha256_text  # noqa: F401  (question_sha256: re-exported)

#: the lowest judged grade (0-3) that counts as relevant in ``+judged`` measures: read it through
#: ``is_judged_relevant``, the one place the cut is made
RELEVANT_FROM = 2
#: a judge whose agreement with the human labels (``judge --calibrate``) is below this Cohen's kappa
#: draws a warning in every run that uses its judgments ("moderate" agreement starts at 0.41)
KAPPA_FLOOR = 0.4
GRADES = (0, 1, 2, 3)
KINDS = ("hole", "calibration", "candidate", "human")


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


@dataclass(frozen=True)
class Judge:
    """Who judged: what a grade depends on besides the question and the document."""

    model: str
    prompt_sha256: str
    temperature: float = 0.0
    votes: int = 1
    host: str = ""
    #: the model name sent, when the server said another model answered (``model``): how the
    #: next run finds this judge before asking; not part of who judged, so not of the fingerprint
    asked_as: str = ""

    @cached_property
    def fingerprint(self) -> str:
        """Hashed once per judge (the object is frozen): every judgment of a file carries its
        judge, and a run's attach asks each one's fingerprint several times."""
        return sha256_text(canonical_json(self.to_dict(fingerprint=False)))[:16]

    def to_dict(self, *, fingerprint: bool = True) -> dict[str, Any]:
        d = {"model": self.model, "prompt_sha256": self.prompt_sha256, "temperature": self.temperature,
             "votes": self.votes, "host": self.host}
        if not fingerprint:
            return d
        return {**d, "fingerprint": self.fingerprint, **({"asked_as": self.asked_as} if self.asked_as else {})}

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> "Judge":
        if "panel" in d:  # a panel's record (results.json, a validation), never a line of the file
            return Panel.from_dict(d)  # type: ignore[return-value]
        return _judge(str(d["model"]), str(d["prompt_sha256"]), float(d.get("temperature", 0.0)), int(d.get("votes", 1)),
                      str(d.get("host", "")), str(d.get("asked_as") or ""))

    def describe(self) -> str:
        votes = f"{self.votes} vote{'s' if self.votes != 1 else ''}"
        asked = f", asked as {self.asked_as}" if self.asked_as else ""
        return (f"{self.model} (temperature {self.temperature:g}, {votes}, host {self.host or '?'}{asked}, "
                f"fingerprint {self.fingerprint})")


@lru_cache(maxsize=256)
def _judge(*fields: Any) -> Judge:
    """One ``Judge`` per setting: a judgments file names its judge on every line, and each
    line's judge is then the same object, its fingerprint hashed once."""
    return Judge(*fields)


@dataclass(frozen=True)
class Panel:
    """Several judges read as one: a pair's grade is the majority of the members' grades (a tie
    to the lower grade, as a judge's own votes), given only where every member graded the pair
    for the same question and document text. Its identity is its members': the fingerprint is
    the hash of theirs, in any order, so validations and runs key on it as on one judge."""

    members: tuple[Judge, ...]

    def __post_init__(self) -> None:
        unique = {m.fingerprint: m for m in self.members}
        object.__setattr__(self, "members", tuple(sorted(unique.values(), key=lambda m: (m.model, m.fingerprint))))

    @cached_property
    def fingerprint(self) -> str:
        return sha256_text(canonical_json({"panel": sorted(m.fingerprint for m in self.members)}))[:16]

    @property
    def model(self) -> str:
        return f"panel of {len(self.members)} ({', '.join(m.model for m in self.members)})"

    # what a run and a message read of any judge
    votes = property(lambda self: len(self.members))
    temperature = property(lambda self: 0.0)
    asked_as = property(lambda self: "")

    def to_dict(self, *, fingerprint: bool = True) -> dict[str, Any]:
        d = {"model": self.model, "panel": [m.to_dict(fingerprint=fingerprint) for m in self.members]}
        return {**d, "fingerprint": self.fingerprint} if fingerprint else d

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> "Panel":
        return cls(tuple(Judge.from_dict(m) for m in d["panel"]))

    def describe(self) -> str:
        return (f"a panel of {len(self.members)} by majority (a tie to the lower grade): "
                + "; ".join(m.describe() for m in self.members) + f"; panel fingerprint {self.fingerprint}")


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
        from ..ir.stats import cohen_kappa, fleiss_kappa

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


@dataclass(frozen=True)
class Judgment:
    """One (question, document) graded by one judge."""

    query_id: str
    doc_id: str
    grade: int
    votes: tuple[int, ...]
    doc_sha256: str
    judge: Judge
    #: ``hole`` (a document the labels left unjudged), ``calibration`` (one they judged: ``human``
    #: holds their grade), ``candidate`` (a document a change would add to the corpus) or
    #: ``human`` (a person's grade from a worksheet: ``depth`` says how deep its question is judged)
    kind: str = "hole"
    human: int | None = None
    #: ``question_sha256`` of the question the judge read; None on lines written before it was
    #: recorded (used, with a warning, and asked again by ``judge``)
    question_sha256: str | None = None
    #: kind ``human``: every document of the question's top ``depth`` (all engines) is graded
    depth: int | None = None

    def reads(self, question_hash: str, doc_sha256: str) -> bool:
        """Was this grade given for this question text and this document text?"""
        return self.question_sha256 == question_hash and self.doc_sha256 == doc_sha256

    @property
    def relevance(self) -> int:
        """The grade as a label of the ``+judged`` measures: 1 from ``RELEVANT_FROM``, else 0."""
        return int(is_judged_relevant(self.grade))

    @property
    def key(self) -> tuple[str, str, str, str]:
        return (self.kind, self.query_id, self.doc_id, self.judge.fingerprint)

    def to_dict(self) -> dict[str, Any]:
        d: dict[str, Any] = {"query_id": self.query_id, "doc_id": self.doc_id, "grade": self.grade,
                             "votes": list(self.votes), "doc_sha256": self.doc_sha256, "judge": self.judge.to_dict(),
                             "kind": self.kind}
        if self.human is not None:
            d["human"] = self.human
        if self.question_sha256 is not None:
            d["question_sha256"] = self.question_sha256
        if self.depth is not None:
            d["depth"] = self.depth
        return d


def _whole(value: Any) -> int | None:
    """A JSON grade read as every file of grades reads one (``parse_grade``: ``2.0`` is 2, as the
    schema's "integer" allows; a string is none); None when it is not one."""
    try:
        return parse_grade(None if isinstance(value, str) else value)
    except RetrievalEvalError:
        return None


def _problem(d: Any) -> tuple[str, str] | None:
    """(field, what is wrong) with one line's object, or None: what the schema says, in words."""
    if not isinstance(d, dict):
        return "", "each line must be a JSON object"
    for key in ("query_id", "doc_id", "doc_sha256"):
        if not isinstance(d.get(key), str) or not d.get(key):
            return key, f"{key} must be a non-empty string"
    if "question_sha256" in d and (not isinstance(d["question_sha256"], str) or not d["question_sha256"]):
        return "question_sha256", "question_sha256 must be a non-empty string (the hash of the question the judge read)"
    if _whole(d.get("grade")) not in GRADES:
        return "grade", f"grade must be 0, 1, 2 or 3, got {d.get('grade')!r}"
    votes = d.get("votes")
    if not isinstance(votes, list) or not votes or any(_whole(v) not in GRADES for v in votes):
        return "votes", "votes must be a non-empty list of grades 0-3"
    if d.get("kind", "hole") not in KINDS:
        return "kind", f"kind must be one of {', '.join(KINDS)}, got {d.get('kind')!r}"
    if d.get("kind") == "calibration" and _whole(d.get("human")) is None:
        return "human", "a calibration judgment records the human grade (an integer)"
    if d.get("kind") == "human" or "depth" in d:
        depth = d.get("depth")
        if isinstance(depth, bool) or not isinstance(depth, int) or depth < 1 or d.get("kind") != "human":
            return "depth", "a human judgment records depth, a whole number >= 1 (and only a human one does)"
        if "question_sha256" not in d:
            return "question_sha256", "a human judgment records question_sha256 (the question the person read)"
    judge = d.get("judge")
    if not isinstance(judge, dict):
        return "judge", "judge must be an object (model, prompt_sha256, temperature, votes, host, fingerprint)"
    for key in ("model", "prompt_sha256"):
        if not isinstance(judge.get(key), str) or not judge.get(key):
            return f"judge.{key}", f"judge.{key} must be a non-empty string"
    if isinstance(judge.get("votes", 1), bool) or not isinstance(judge.get("votes", 1), int) or judge.get("votes", 1) < 1:
        return "judge.votes", "judge.votes must be a whole number >= 1"
    temperature = judge.get("temperature", 0.0)
    if isinstance(temperature, bool) or not isinstance(temperature, (int, float)):
        return "judge.temperature", "judge.temperature must be a number"
    if "asked_as" in judge and not isinstance(judge["asked_as"], str):
        return "judge.asked_as", "judge.asked_as must be a string (the model name sent)"
    recorded = judge.get("fingerprint")
    if recorded is not None and recorded != Judge.from_dict(judge).fingerprint:
        return "judge.fingerprint", (f"judge.fingerprint {recorded!r} is not the hash of the judge's settings "
                                     f"({Judge.from_dict(judge).fingerprint}): a setting was edited")
    return None


def parse_line(text: str, *, path: Any = None, line: int | None = None) -> Judgment:
    try:
        d = json.loads(text)
    except json.JSONDecodeError as exc:
        raise RetrievalEvalError(f"not valid JSON: {exc.msg}", path=path, line=line) from None
    problem = _problem(d)
    if problem is not None:
        raise RetrievalEvalError(problem[1], path=path, line=line, field=problem[0] or None)
    human = d.get("human")
    return Judgment(d["query_id"], d["doc_id"], _whole(d["grade"]), tuple(map(_whole, d["votes"])), d["doc_sha256"],
                    Judge.from_dict(d["judge"]), d.get("kind", "hole"), human if human is None else _whole(human),
                    d.get("question_sha256"), d.get("depth"))


def _is_json(text: str) -> bool:
    try:
        json.loads(text)
    except ValueError:
        return False
    return True


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
        from ..ir.stats import cohen_kappa

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


class Judgments:
    """The judgments of one file, the newest line winning per (kind, question, document, judge)."""

    def __init__(self, entries: Iterable[Judgment] = (), path: Path | None = None) -> None:
        self.path = path
        #: the line number of a last line cut off mid-write (not JSON), dropped; None when whole
        self.cut_off: int | None = None
        self._by_key: dict[tuple[str, str, str, str], Judgment] = {}
        for j in entries:
            self._by_key.pop(j.key, None)
            self._by_key[j.key] = j  # order of arrival: the last line's judge is the newest

    def __len__(self) -> int:
        return len(self._by_key)

    def __iter__(self) -> Iterator[Judgment]:
        return iter(self._by_key.values())

    @classmethod
    def load(cls, path: str | Path) -> "Judgments":
        """The file's judgments (none when it does not exist); a malformed line is refused naming
        the file, line and field, except a last line cut off mid-write (no newline, not JSON),
        which is dropped and noted in ``cut_off``."""
        path = Path(path)
        if path.is_dir():
            raise RetrievalEvalError("is a folder, not a judgments file: give the path of a .jsonl file, such as "
                                     f"{path / 'judgments.jsonl'}", path=path)
        if not path.exists():
            return cls(path=path)
        try:
            raw = path.read_bytes()
        except OSError as exc:
            raise RetrievalEvalError(f"cannot read the judgments file: {exc.strerror or exc}", path=path) from None
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError as exc:
            line = raw[: exc.start].count(b"\n") + 1
            raise RetrievalEvalError("not UTF-8 text", path=path, line=line) from None
        lines = text.split("\n")
        entries, cut_off = [], None
        for number, line in enumerate(lines, start=1):
            if not line.strip():
                continue
            try:
                entries.append(parse_line(line, path=path, line=number))
            except RetrievalEvalError:
                if number == len(lines) and not _is_json(line):
                    cut_off = number  # the write a kill interrupted: the judgment is asked again
                    continue
                raise
        found = cls(entries, path)
        found.cut_off = cut_off
        return found

    def get(self, query_id: str, doc_id: str, judge: Judge, kind: str = "hole") -> Judgment | None:
        return self._by_key.get((kind, query_id, doc_id, judge.fingerprint))

    def judges(self, *, people: bool = True) -> list[Judge]:
        """Every judge in the file, newest (the last line's) last; with ``people=False`` the LLM
        judges alone (a worksheet's grades are no judge a run reads in place of the labels)."""
        seen: dict[str, Judge] = {}
        for j in self._by_key.values():
            if not people and j.kind == "human":
                continue
            seen.pop(j.judge.fingerprint, None)
            seen[j.judge.fingerprint] = j.judge
        return list(seen.values())

    def current(self, fingerprint: str | None = None) -> Judge | None:
        """The LLM judge a run reads: the one with ``fingerprint`` (a prefix will do), else the newest."""
        judges = self.judges(people=False)
        if fingerprint is None:
            return judges[-1] if judges else None
        found = [j for j in judges if j.fingerprint.startswith(fingerprint)]
        if len(found) != 1:
            known = ", ".join(f"{j.fingerprint} ({j.model})" for j in judges) or "none"
            raise RetrievalEvalError(f"{'no' if not found else 'more than one'} judge with fingerprint {fingerprint!r} "
                                     f"(in the file: {known})", path=self.path)
        return found[0]

    def with_panel(self, members: Sequence[str]) -> tuple["Judgments", Panel]:
        """(these judgments with the panel's, the panel) of the LLM judges ``members`` names by
        fingerprint (a prefix will do), or ``all`` of them; two judges or more."""
        judges = self.judges(people=False)
        chosen = judges if [m.strip() for m in members] == ["all"] else [self.current(m.strip()) for m in members]
        panel = Panel(tuple(j for j in chosen if j is not None))
        if len(panel.members) < 2:
            known = ", ".join(f"{j.fingerprint} ({j.model})" for j in judges) or "none"
            raise RetrievalEvalError(f"a panel reads two judges or more by majority, got {len(panel.members)} "
                                     f"(in the file: {known}); grade with another model first (judge --model=NAME)",
                                     path=self.path)
        found = Judgments([*self, *self.panel_judgments(panel)], self.path)
        found.cut_off = self.cut_off
        return found, panel

    def panel_judgments(self, panel: Panel) -> list[Judgment]:
        """The panel's judgments: per (kind, question, document) every member graded for the same
        question and document text, the majority of their grades (their votes, in the members'
        order: ``votes``)."""
        by: dict[tuple[str, str, str], dict[str, Judgment]] = {}
        fingerprints = {m.fingerprint for m in panel.members}
        for j in self._by_key.values():
            if j.kind != "human" and j.judge.fingerprint in fingerprints:
                by.setdefault((j.kind, j.query_id, j.doc_id), {})[j.judge.fingerprint] = j
        out = []
        for (kind, q, d), graded in by.items():
            if len(graded) < len(panel.members):
                continue
            each = [graded[m.fingerprint] for m in panel.members]
            if len({(j.question_sha256, j.doc_sha256) for j in each}) != 1:
                continue  # the members read different texts: no grade of the panel's
            first = each[0]
            grades = tuple(j.grade for j in each)
            out.append(Judgment(q, d, majority(grades), grades, first.doc_sha256, panel, kind,  # type: ignore[arg-type]
                                first.human, first.question_sha256))
        return out

    def agreement(self, panel: Panel, kinds: Collection[str] = ("hole", "calibration", "candidate")) -> Agreement:
        """How the panel's members agree on the pairs all of them graded (of ``kinds``)."""
        rows = [j.votes for j in self._by_key.values() if j.judge.fingerprint == panel.fingerprint and j.kind in kinds]
        if not rows:
            rows = [j.votes for j in self.panel_judgments(panel) if j.kind in kinds]
        return Agreement.of(panel.members, rows)

    def holes(self, judge: Judge, fingerprints: Mapping[str, str] | None = None
              ) -> tuple[dict[str, dict[str, Judgment]], list[Judgment]]:
        """(question id -> doc id -> fresh judgment, stale judgments) of ``judge``; a judgment is
        stale when its document's fingerprint is not the corpus's (``fingerprints``: doc id ->
        sha256; None: not checked) or the document is gone."""
        fresh: dict[str, dict[str, Judgment]] = {}
        stale = []
        for j in self._by_key.values():
            if j.kind != "hole" or j.judge.fingerprint != judge.fingerprint:
                continue
            if fingerprints is not None and fingerprints.get(j.doc_id) != j.doc_sha256:
                stale.append(j)
            else:
                fresh.setdefault(j.query_id, {})[j.doc_id] = j
        return fresh, stale

    def calibration(self, judge: Judge, questions: Mapping[str, Collection[str]] | None = None) -> Calibration:
        """``judge``'s calibration pairs, those made for another wording of their question left out
        (``questions``: question id -> hashes of its text now; None: not checked)."""
        return Calibration(judge, [(j.human, j.grade) for j in self.of_kind("calibration", judge, questions)
                                   if j.human is not None])

    def human_judged(self, questions: Mapping[str, Collection[str]] | None = None,
                     fingerprints: Mapping[str, str] | None = None) -> dict[str, tuple[int, dict[str, int]]]:
        """Question id -> (depth, doc id -> grade) of the questions a worksheet graded completely
        (kind ``human``); with ``questions`` (id -> hashes of its text now), not a question graded
        in another wording; with ``fingerprints`` (doc id -> sha256 now), not a grade of a document
        that changed since. The depth is the deepest import's: each one was complete at its own."""
        out: dict[str, tuple[int, dict[str, int]]] = {}
        for j in self._by_key.values():
            if j.kind != "human" or (questions is not None and j.question_sha256 not in questions.get(j.query_id, ())):
                continue
            if fingerprints is not None and fingerprints.get(j.doc_id) != j.doc_sha256:
                continue
            depth, grades = out.get(j.query_id, (0, {}))
            grades[j.doc_id] = j.grade
            out[j.query_id] = (max(depth, j.depth or 0), grades)
        return dict(sorted(out.items()))

    def of_kind(self, kind: str, judge: Judge, questions: Mapping[str, Collection[str]] | None = None
                ) -> list[Judgment]:
        """``judge``'s judgments of ``kind``; with ``questions`` (question id -> hashes of its text
        now), not those made for another wording (an unkeyed line is kept)."""
        return [j for j in self._by_key.values() if j.kind == kind and j.judge.fingerprint == judge.fingerprint
                and (questions is None or j.question_sha256 is None or j.question_sha256 in questions.get(j.query_id, ()))]


def append(path: str | Path, judgments: Sequence[Judgment]) -> str | None:
    """Add whole lines at the end (the caller holds ``locked``). A last line without its newline
    is kept when it is whole JSON (a grade corrected by hand: the newline is added) and cut away
    when it is not (a write a kill interrupted), so the file never holds half a judgment before a
    whole one; returns what was cut away (None: nothing)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    text = "".join(canonical_json(j.to_dict()) + "\n" for j in judgments)
    dropped = None
    with open(path, "a+b") as fh:
        fh.seek(0, os.SEEK_END)
        size = fh.tell()
        if size:
            fh.seek(max(0, size - 1))
            if fh.read(1) != b"\n":
                fh.seek(0)
                data = fh.read()
                start = data.rfind(b"\n") + 1
                tail = data[start:].decode("utf-8", errors="replace")
                if not tail.strip() or _is_json(tail):
                    text = "\n" + text  # a whole line: kept
                else:  # an interrupted line: back to the end of the last whole one
                    fh.truncate(start)
                    dropped = tail
        fh.seek(0, os.SEEK_END)
        fh.write(text.encode("utf-8"))
        fh.flush()
    return dropped


def rewrite(path: str | Path, judgments: Judgments) -> None:
    """The whole file in a stable order, written atomically: what a finished run leaves for
    review. Judges stay in the order they came (the newest last: the one a run reads by default),
    each one's judgments by kind, question and document."""
    age = {judge.fingerprint: i for i, judge in enumerate(judgments.judges())}
    ordered = sorted(judgments, key=lambda j: (age[j.judge.fingerprint], j.key))
    write_text_atomic(path, "".join(canonical_json(j.to_dict()) + "\n" for j in ordered))
