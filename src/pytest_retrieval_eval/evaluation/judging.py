"""From a run to its judgments and back: the pool of unjudged documents to grade, the judged
labels attached to every evaluation (what ``+judged`` measures read), and what they rest on.

Pooling follows TREC: per question, the top ``depth`` documents of every pooled engine that the
human labels do not judge, once each; every engine is then scored on the same filled labels, so
the judgments favour no engine that happened to be judged first.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field, replace
from typing import Any, Iterable, Mapping, Sequence

from ..data.judge import Pair
from ..data.judge_agreement import KAPPA_FLOOR
from ..data.judges import Judge
from ..data.judgments import Judgment, Judgments
from ..data.recheck import drift_of
from ..errors import RetrievalEvalError
from ..ir.metrics import evaluate
from ..ir.qrels import Qrels
from ..ir.agreement import kendall_tau
from ..types import TURN_SEPARATOR
from .results import RunResults
from .results import Evaluation

#: documents of each engine's ranking pooled per question unless told otherwise
DEFAULT_POOL_DEPTH = 10


@dataclass(frozen=True)
class Hole:
    """A document an engine ranked in a question's top k that the labels do not judge."""

    query_id: str
    #: the question as asked (``LabeledQuery.asked``: a turn with its conversation so far)
    question: str
    doc_id: str


def pool(run: RunResults, depth: int = DEFAULT_POOL_DEPTH, engines: Sequence[str] = ()) -> list[Hole]:
    """The unjudged documents of the top ``depth`` of ``engines`` (default: every engine), per
    question, once each, in the order the engines ranked them."""
    known = sorted({e.engine for e in run.evaluations})
    unknown = [e for e in engines if e not in known]
    if unknown:
        raise RetrievalEvalError(f"no evaluation of engine(s) {', '.join(unknown)} to pool; the run has "
                                 f"{', '.join(known) or 'none'}")
    seen: dict[tuple[str, str], Hole] = {}
    for e in run.evaluations:
        if engines and e.engine not in engines:
            continue
        human, by_id = e.labeled.qrels.judgements, e.labeled.by_id()
        for r in e.results:
            for doc in r.doc_ids[:depth]:
                if doc not in human.get(r.query_id, {}) and (r.query_id, doc) not in seen:
                    seen[(r.query_id, doc)] = Hole(r.query_id, by_id[r.query_id].asked, doc)
    return list(seen.values())


def doc_text(doc: Any) -> str:
    """What the judge reads of a document: its title, then its text; once, where the text begins
    with its title (a Markdown article's first heading is both)."""
    from ..data.text import normalise

    first = doc.content.lstrip().split("\n", 1)[0]
    if not doc.title or normalise(first) == normalise(doc.title):
        return doc.content
    return f"{doc.title}\n{doc.content}"


def pairs(holes: Iterable[Hole], corpus: Any) -> tuple[list[Pair], list[str]]:
    """(pairs to grade, doc ids the corpus lacks: not judged, named)."""
    out, missing = [], []
    for h in holes:
        doc = corpus.get(h.doc_id)
        if doc is None:
            missing.append(h.doc_id)
        else:
            out.append(Pair(h.query_id, h.question, h.doc_id, doc_text(doc), doc.fingerprint))
    return out, sorted(set(missing))


def labeled_pairs(run: RunResults, corpus: Any) -> list[Pair]:
    """Every (question, document) the labels judge, relevant or not, once each, whose document
    the corpus holds: as calibration pairs carrying the human grade."""
    out, seen = [], set()
    for e in run.evaluations:
        for q in e.labeled.queries:
            for doc_id, grade in sorted(q.relevant.items()):
                doc = corpus.get(doc_id)
                if doc is None or (q.query_id, doc_id) in seen:
                    continue
                seen.add((q.query_id, doc_id))
                out.append(Pair(q.query_id, q.asked, doc_id, doc_text(doc), doc.fingerprint, "calibration", grade))
    return out


def calibration_pairs(run: RunResults, corpus: Any, sample: int = 100, seed: int = 0) -> list[Pair]:
    """Up to ``sample`` documents the humans judged, half relevant and half judged not relevant
    where the labels carry such (the rest relevant), drawn with a fixed seed."""
    relevant, other = [], []
    for pair in labeled_pairs(run, corpus):
        (relevant if pair.human >= 1 else other).append(pair)
    rng = random.Random(seed)
    rng.shuffle(relevant)
    rng.shuffle(other)
    take_other = min(len(other), sample // 2)
    return other[:take_other] + relevant[: sample - take_other]


@dataclass
class JudgmentsUsed:
    """What a run's judged labels rest on (results.json's ``judgments``)."""

    path: str
    judge: Judge
    used: int = 0  # judged holes attached
    stale: list[tuple[str, str]] = field(default_factory=list)  # (question, document) whose document changed
    other_judges: int = 0  # judgments in the file by other judges, not used
    calibrated: int = 0
    kappa: float | None = None  # None: not calibrated
    agreement: float | None = None
    one_sided: bool = False  # the calibrated human labels all of one kind: kappa says nothing
    checked: bool = True  # staleness checked against the corpus
    #: (question, document) graded for another wording of the question: not used
    reworded: list[tuple[str, str]] = field(default_factory=list)
    #: judgments used from lines written before questions were hashed (their question unchecked)
    unkeyed: int = 0
    #: the line number of a last line cut off mid-write (not JSON), not read; None when whole
    cut_off: int | None = None
    #: what ``judge --validate`` stored for this judge (``data.validation``: kappa, base rate,
    #: pairs, floor, passed); None when it was never validated
    validation: dict[str, Any] | None = None
    #: the results.json a ``judge --validate`` reads, as shown (None: the run wrote none)
    results: str | None = None
    #: a panel's members' agreement on the pairs all of them graded (``data.judge_agreement.Agreement``)
    agreement_of_members: dict[str, Any] | None = None
    #: the corpus the judge reads, as shown, for the ``judge`` command (None: the one the run recorded)
    corpus: str | None = None
    #: questions a worksheet graded completely (as they read now, their documents unchanged)
    human_judged: int = 0
    #: the judge's last ``judge --recheck`` when it found the judge drifted (``data/recheck.py``), else None
    recheck: dict | None = None

    @property
    def validation_state(self) -> str:
        """``passed``, ``failed`` (below the floor at its last ``judge --validate``) or ``unvalidated``."""
        if self.validation is None:
            return "unvalidated"
        return "passed" if self.validation.get("passed") else "failed"

    def validate_command(self) -> str:
        """The command that validates this judge again, as printed (the run's results.json: the one
        it read, else the one ``--retrieval-report-dir=out`` writes)."""
        import shlex

        results = self.results or "out/results.json"
        members = getattr(self.judge, "members", ())
        who = (f"--judges={','.join(m.fingerprint for m in members)}" if members else
               f"--model={shlex.quote(self.judge.asked_as or self.judge.model)}"
               + (f" --votes={self.judge.votes}" if self.judge.votes != 1 else "")
               + (f" --temperature={self.judge.temperature:g}" if self.judge.temperature else ""))
        corpus = f" --corpus={shlex.quote(self.corpus)}" if self.corpus else ""
        command = (f"python -m pytest_retrieval_eval judge {shlex.quote(results)} --validate "
                   f"--judgments={shlex.quote(self.path)}{corpus} {who}")
        return command

    def validate_hint(self) -> str:
        """The command in backticks, and where its results.json comes from when the run wrote none."""
        note = "" if self.results else " (the run's results.json: write it with --retrieval-report-dir=out)"
        return f"`{self.validate_command()}`{note}"

    def validation_text(self) -> str:
        """What the stored validation says of the judge, in one clause."""
        v = self.validation or {}
        kappa = v.get("kappa")
        shown = f"{kappa:.2f}" if isinstance(kappa, (int, float)) else "undefined"
        base = v.get("base_rate")
        rate = f", base rate {base:.0%}" if isinstance(base, (int, float)) else ""
        one = " (human labels of one kind only)" if v.get("one_sided") else ""
        return (f"Cohen's kappa {shown}{one} on {v.get('pairs', 0)} hidden human label(s){rate}, "
                f"floor {v.get('floor', KAPPA_FLOOR)}")

    def warnings(self) -> list[str]:
        out = []
        if self.recheck is not None:
            r = self.recheck
            why = r.get("why") or (f"it gave the same relevance on {float(r.get('agreement') or 0):.0%} of them, "
                                   f"below {float(r.get('floor') or 0):.0%}")
            out.append(f"judge {self.judge.model} ({self.judge.fingerprint}) drifted: graded again on {r.get('pairs')} "
                       f"of its stored pairs ({str(r.get('checked', '?'))[:10]}), {why}: the "
                       "model changed under the same name, and the +judged numbers rest on grades it no longer gives "
                       "(judge --recheck)")
        if self.validation_state == "unvalidated":
            out.append(f"judge not validated: {self.judge.model} ({self.judge.fingerprint}) has no stored "
                       f"validation beside {self.path}; run {self.validate_hint()}")
        elif self.validation_state == "failed":
            out.append(f"judge {self.judge.model} ({self.judge.fingerprint}) failed validation: "
                       f"{self.validation_text()}; its +judged numbers are doubtful")
        if self.validation is not None and self.validation.get("other_labels"):
            out.append(f"judge {self.judge.model} ({self.judge.fingerprint}) was validated on other labels than this "
                       f"run's (its stored validation is of another labeled set, or an older version of it): validate "
                       f"it on these with {self.validate_hint()}")
        if self.kappa is not None and self.kappa == self.kappa and self.kappa < KAPPA_FLOOR and not self.one_sided:
            out.append(f"judge {self.judge.model} agrees too little with the human labels: Cohen's kappa "
                       f"{self.kappa:.2f} on {self.calibrated} calibrated pairs, below {KAPPA_FLOOR} (judge "
                       f"{self.judge.fingerprint}); its +judged numbers are doubtful")
        if self.stale:
            shown = ", ".join(f"{q}/{d}" for q, d in self.stale[:3]) + (" ..." if len(self.stale) > 3 else "")
            out.append(f"{len(self.stale)} judgment(s) in {self.path} are stale (their document changed: {shown}); "
                       "left out of the +judged numbers: judge again to grade the new text")
        if self.reworded:
            shown = ", ".join(f"{q}/{d}" for q, d in self.reworded[:3]) + (" ..." if len(self.reworded) > 3 else "")
            out.append(f"{len(self.reworded)} judgment(s) in {self.path} were made for another wording of their "
                       f"question ({shown}); left out of the +judged numbers: judge again to grade the question as "
                       "it reads now" + (" (a turn: with the conversation before it)"
                                         if any(TURN_SEPARATOR in q for q, _ in self.reworded) else ""))
        if self.cut_off is not None:
            out.append(f"the last line of {self.path} (line {self.cut_off}) is cut off, not a whole judgment: not "
                       "read; the next judge cuts it away and asks for it again")
        if self.unkeyed:
            out.append(f"{self.unkeyed} judgment(s) in {self.path} predate question hashes (no question_sha256), so "
                       "the question they graded is not checked; used as they are: judge again to have them asked "
                       "and keyed")
        return out

    def lines(self) -> list[str]:
        """What the table says under it about the judged labels."""
        if not self.calibrated:
            calibration = "not calibrated against the human labels (the judge command's --calibrate)"
        else:
            shown = f"{self.kappa:.2f}" if self.kappa is not None and self.kappa == self.kappa else "undefined"
            kappa = f"Cohen's kappa {shown}" + (" (one kind of human label)" if self.one_sided else "")
            calibration = f"{kappa}, agreement {self.agreement:.0%} against the human labels on {self.calibrated} pairs"
        out = [f"+judged: human labels with {self.used} judged hole(s) from {self.path}, judge {self.judge.describe()}; "
               f"{calibration}"]
        if self.agreement_of_members is not None:
            from ..data.judge_agreement import Agreement

            out.append(f"  the panel's members: {Agreement.from_dict(self.agreement_of_members).describe()}")
        if self.validation is not None:
            out.append(f"  judge --validate: {'passed' if self.validation_state == 'passed' else 'FAILED'}, "
                       f"{self.validation_text()}")
        if not self.checked:
            out.append("  (staleness of the judgments not checked: no corpus to check them against)")
        if self.other_judges:
            out.append(f"  {self.other_judges} judgment(s) by other judges in the file are not used")
        return out

    def to_dict(self) -> dict[str, Any]:
        return {"path": self.path, "judge": self.judge.to_dict(), "used": self.used,
                "stale": [list(p) for p in self.stale], "other_judges": self.other_judges,
                "calibrated": self.calibrated, "kappa": self.kappa, "agreement": self.agreement,
                "one_sided": self.one_sided, "checked": self.checked, "reworded": [list(p) for p in self.reworded],
                "unkeyed": self.unkeyed, "cut_off": self.cut_off,
                **({"validation": self.validation} if self.validation is not None else {}),
                **({"results": self.results} if self.results is not None else {}),
                **({"members_agreement": self.agreement_of_members} if self.agreement_of_members is not None else {}),
                **({"corpus": self.corpus} if self.corpus is not None else {}),
                **({"human_judged": self.human_judged} if self.human_judged else {}),
                **({"recheck": self.recheck} if self.recheck is not None else {})}

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> "JudgmentsUsed":
        return cls(d["path"], Judge.from_dict(d["judge"]), int(d.get("used", 0)),
                   [tuple(p) for p in d.get("stale", [])], int(d.get("other_judges", 0)), int(d.get("calibrated", 0)),
                   d.get("kappa"), d.get("agreement"), bool(d.get("one_sided", False)), bool(d.get("checked", True)),
                   [tuple(p) for p in d.get("reworded", [])], int(d.get("unkeyed", 0)), d.get("cut_off"),
                   d.get("validation"), d.get("results"), d.get("members_agreement"), d.get("corpus"),
                   int(d.get("human_judged", 0)), d.get("recheck"))


def question_hashes(run: RunResults) -> dict[str, set[str]]:
    """Question id -> the hashes of it as asked in the run's labeled sets (``LabeledQuery.asked_sha256``:
    a turn with its conversation so far): what a judgment must have read."""
    out: dict[str, set[str]] = {}
    for e in run.evaluations:
        for q in e.labeled.queries:
            out.setdefault(q.query_id, set()).add(q.asked_sha256)
    return out


def hole_grades(human: Qrels, fresh: Mapping[str, Mapping[str, Judgment]], asked: Mapping[str, str]
                ) -> tuple[dict[str, dict[str, int]], set[tuple[str, str]], set[tuple[str, str]]]:
    """(question id -> doc id -> the judge's grade, reworded, unkeyed) of one labeled set: of the
    ``fresh`` judgments, those of its holes (a question ``human`` judges, a document it does not)
    made for the question as it reads now (``asked``: question id -> hash); a judgment made for
    another wording is left out (reworded), one that predates the hashes is used (unkeyed). Pure:
    the grades go to ``judged_qrels`` through the evaluation, which does not choose them."""
    labels = human.judgements
    grades: dict[str, dict[str, int]] = {}
    reworded: set[tuple[str, str]] = set()
    unkeyed: set[tuple[str, str]] = set()
    for q, docs in fresh.items():
        for d, j in docs.items():
            if q not in labels or d in labels[q]:
                continue
            if j.question_sha256 is None:
                unkeyed.add((q, d))
            elif j.question_sha256 != asked.get(q):  # graded for another wording of the question
                reworded.add((q, d))
                continue
            grades.setdefault(q, {})[d] = j.grade
    return grades, reworded, unkeyed


def complete_human(e: Evaluation, people: Mapping[str, tuple[int, Mapping[str, int]]]
                   ) -> tuple[dict[str, dict[str, int]], dict[str, int]]:
    """(question id -> the worksheet's grades of the documents the labels leave unjudged, question
    id -> depth) of the human-judged questions (``Judgments.human_judged``) whose grades cover
    every document of this engine's top to that depth: only those are the humans' complete view of
    its ranking (a document it ranks that no person read leaves the question out)."""
    labels = e.labeled.qrels.judgements
    ranked = {r.query_id: r.doc_ids for r in e.results}
    grades, depths = {}, {}
    for qid, (depth, graded) in people.items():
        if qid not in ranked or qid not in labels:
            continue
        judged = labels[qid]
        if all(d in graded or d in judged for d in ranked[qid][:depth]):
            grades[qid] = {d: g for d, g in graded.items() if d not in judged}
            depths[qid] = depth
    return grades, depths


def with_judgments(run: RunResults, judgments: Judgments, *, shown_path: str, judge: str | None = None,
                   fingerprints: Mapping[str, str] | None = None,
                   validations: Mapping[str, Mapping[str, Any]] | None = None, results: str | None = None,
                   panel: Sequence[str] = (), corpus: str | None = None) -> tuple[RunResults, JudgmentsUsed | None]:
    """A new run whose evaluations carry the judge's labels of the holes (fresh ones only; a human
    label always wins) and which records what they rest on, and that record; ``run`` itself, and
    None, when the file holds no judgment. ``panel``: the fingerprints (prefixes, or ``all``) of
    judges read as one, by majority (``Judgments.with_panel``), in place of ``judge``;
    ``validations``: judge fingerprint -> what ``judge --validate`` stored (``data.validation``);
    ``results``, ``corpus``: the run's results.json and corpus as shown (what the command that
    validates the judge reads)."""
    members: tuple[Judge, ...] = ()
    agreement = None
    if panel:
        judgments, current = judgments.with_panel(panel)
        members = current.members
        agreement = judgments.agreement(current).to_dict()
    else:
        current = judgments.current(judge)
    if current is None:
        return run, None
    fresh, stale = judgments.holes(current, fingerprints)
    used: set[tuple[str, str]] = set()
    reworded: set[tuple[str, str]] = set()
    unkeyed: set[tuple[str, str]] = set()
    attached = []
    people = judgments.human_judged(question_hashes(run), fingerprints)
    for e in run.evaluations:
        asked = {q.query_id: q.asked_sha256 for q in e.labeled.queries}
        judged, off, old = hole_grades(e.labeled.qrels, fresh, asked)
        reworded |= off
        unkeyed |= old
        used |= {(q, d) for q, docs in judged.items() for d in docs}
        attached.append(e.with_judged(judged, current.to_dict(), *complete_human(e, people)))
    calibration = judgments.calibration(current, question_hashes(run))
    record = JudgmentsUsed(shown_path, current, len(used), sorted((j.query_id, j.doc_id) for j in stale),
                           sum(1 for j in judgments if j.judge.fingerprint not in {current.fingerprint,
                                                                                     *(m.fingerprint for m in members)}
                               and j.kind != "human"),
                           calibration.n, calibration.kappa if calibration.n and calibration.kappa == calibration.kappa
                           else None,  # one kind of human label: kappa says nothing, null (results.json is strict)
                           calibration.agreement if calibration.n else None, calibration.n > 0 and calibration.one_sided,
                           fingerprints is not None, sorted(reworded - used), len(unkeyed & used),
                           getattr(judgments, "cut_off", None), _validation(validations, current.fingerprint, run), results,
                           agreement, corpus, len(people), drift_of(judgments.path, current.fingerprint))
    return replace(run, evaluations=attached, judgments=record.to_dict()), record


def _validation(validations: Mapping[str, Mapping[str, Any]] | None, fingerprint: str, run: RunResults
                ) -> dict[str, Any] | None:
    """What a run records of the judge's stored validation: its numbers, not its tables, and
    whether it was made on other labeled sets than the run's (``other_labels``)."""
    found = (validations or {}).get(fingerprint)
    if found is None:
        return None
    out = {k: found.get(k) for k in ("kappa", "base_rate", "pairs", "one_sided", "floor", "passed")}
    labeled = found.get("labeled")
    if isinstance(labeled, list) and not {e.labeled.fingerprint for e in run.evaluations} <= set(labeled):
        out["other_labels"] = True
    return out


def used(run: RunResults) -> JudgmentsUsed | None:
    """What ``with_judgments`` recorded on ``run`` (also as read from results.json)."""
    recorded = getattr(run, "judgments", None)
    return JudgmentsUsed.from_dict(recorded) if recorded else None


@dataclass(frozen=True)
class EngineOrder:
    """The engines' means of one measure on the human labels and on the judge's (``--calibrate``,
    ``--validate``)."""

    measure: str
    human: tuple[tuple[str, float], ...]  # (engine, mean), best first
    judge: tuple[tuple[str, float], ...]

    @property
    def tau(self) -> float:
        by_judge = dict(self.judge)
        return kendall_tau([v for _, v in self.human], [by_judge[e] for e, _ in self.human])

    def lines(self) -> list[str]:
        def order(pairs):
            return " > ".join(f"{e} {v:.3f}" for e, v in pairs)

        same = [e for e, _ in self.human] == [e for e, _ in self.judge]
        tau = self.tau
        return [f"engines by {self.measure}, human labels: {order(self.human)}",
                f"engines by {self.measure}, the judge's grades in their place: {order(self.judge)}",
                f"  {'the same order' if same else 'the order changes'}"
                + (f" (Kendall's tau {tau:.2f})" if tau == tau else "")]


def engine_order(run: RunResults, calibrated: Iterable[Any], measure: str = "ndcg@10",
                 human: Mapping[str, Mapping[str, int]] | None = None) -> EngineOrder:
    """Each engine's mean of ``measure`` on the human labels, and with the calibrated documents'
    human grades replaced by the judge's (how the disagreement would reorder the engines);
    ``human`` (question id -> doc id -> 0/1): human labels beside the labeled set's, such as a
    worksheet's grades of its holes, on both sides before the judge's replace them."""
    swapped: dict[str, dict[str, int]] = {}
    for j in calibrated:
        swapped.setdefault(j.query_id, {})[j.doc_id] = j.relevance
    extra = human or {}
    out_human, out_judge = [], []
    for e in run.evaluations:
        qrels = {q: {**extra.get(q, {}), **docs} for q, docs in e.labeled.qrels.judgements.items()}
        replaced = {q: {**docs, **swapped.get(q, {})} for q, docs in qrels.items()}
        name = f"{e.engine}" if len({x.labeled.name for x in run.evaluations}) == 1 else f"{e.engine} ({e.labeled.name})"
        out_human.append((name, evaluate(qrels, e.run, [measure])[measure]))
        out_judge.append((name, evaluate(replaced, e.run, [measure])[measure]))
    return EngineOrder(measure, tuple(sorted(out_human, key=lambda p: -p[1])),
                       tuple(sorted(out_judge, key=lambda p: -p[1])))


def judge_problem(now: Mapping[str, Any] | None, base: Mapping[str, Any] | None) -> str | None:
    """Why the numbers of two evaluations cannot be compared as they stand: their judged labels
    come from two judges (by fingerprint), so a +judged number would move with the judge."""
    if now is None or base is None or now.get("fingerprint") == base.get("fingerprint"):
        return None
    return (f"judged with another judge ({base.get('model')}, fingerprint {base.get('fingerprint')} -> "
            f"{now.get('model')}, fingerprint {now.get('fingerprint')}): its +judged numbers would move with the judge")


def with_judgments_file(run: RunResults, path: Any, *, shown_path: str, corpus: Any = None,
                        judge: str | None = None, results: str | None = None, panel: Sequence[str] = (),
                        corpus_path: str | None = None) -> tuple[RunResults, JudgmentsUsed | None]:
    """``with_judgments`` of the file at ``path``, their staleness checked against ``corpus`` when
    given (doc id -> fingerprint), by the judge ``judge`` names (default: the newest) or the
    ``panel`` of judges; with the validations ``judge --validate`` stored beside it."""
    from ..data.validation import load as load_validations, validation_path

    fingerprints = {d.doc_id: d.fingerprint for d in corpus.docs} if corpus is not None else None
    return with_judgments(run, Judgments.load(path), shown_path=shown_path, judge=judge, fingerprints=fingerprints,
                          validations=load_validations(validation_path(path)), results=results, panel=panel,
                          corpus=corpus_path)


def candidate_pairs(candidates: Any, run: RunResults) -> list[Pair]:
    """Each candidate document against the labeled questions nearest to it in words."""
    from ..data.novelty import nearest_questions

    questions = {q.query_id: q.asked for e in run.evaluations for q in e.labeled.queries}
    out = []
    for doc in candidates.docs:
        text = doc_text(doc)
        for qid in nearest_questions(text, list(questions.items())):
            out.append(Pair(qid, questions[qid], doc.doc_id, text, doc.fingerprint, "candidate"))
    return out


def candidates_record(candidates: Any, corpus: Any, chunking: Any, *, shown_path: str, weight: float,
                      embed: Any = None, judgments: Judgments | None = None, judge: Judge | None = None,
                      chunks: Sequence[Any] | None = None, run: RunResults | None = None) -> dict[str, Any]:
    """What results.json keeps of the candidates: each one's novelty against ``corpus`` (split
    with ``chunking``, or its ``chunks`` as ingested), with the questions ``judge`` says it
    answers (as ``run``'s questions read now, when given); the weight of the blend."""
    from dataclasses import replace

    from ..data.chunking import chunk_corpus
    from ..data.grades import is_judged_relevant
    from ..data.novelty import novelty

    existing = chunks if chunks is not None else chunk_corpus(corpus, chunking)
    found = novelty(chunk_corpus(candidates, chunking), existing, embed)
    if judgments is not None and judge is not None:
        fingerprints = {d.doc_id: d.fingerprint for d in candidates.docs}
        answers: dict[str, list[tuple[str, int]]] = {}
        for j in judgments.of_kind("candidate", judge, question_hashes(run) if run is not None else None):
            if is_judged_relevant(j.grade) and fingerprints.get(j.doc_id) == j.doc_sha256:
                answers.setdefault(j.doc_id, []).append((j.query_id, j.grade))
        found = [replace(n, answers=tuple(sorted(answers.get(n.doc_id, []), key=lambda a: (-a[1], a[0]))))
                 for n in found]
    return {"path": shown_path, "weight": weight, "items": [n.to_dict() for n in found]}
