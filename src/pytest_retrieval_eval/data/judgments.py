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
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Collection, Iterable, Iterator, Mapping, Sequence

from .._atomic import write_text_atomic
from ..errors import RetrievalEvalError
from ..ir.qrels import parse_grade
from ..types import canonical_json, question_sha256  # noqa: F401  (question_sha256: re-exported)
from .grades import GRADES, is_judged_relevant, majority
from .judge_agreement import Agreement, Calibration
from .judges import Judge, Panel

KINDS = ("hole", "calibration", "candidate", "human")


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
