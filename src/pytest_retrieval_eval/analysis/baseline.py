"""Compare a run with a saved baseline: deltas, wins/losses/ties over queries, the biggest
per-query movers, and a paired test that says whether a delta is beyond noise.

Runs are only compared when they measured the same thing: the same corpus, the same labeled
set and the same metric definitions (by fingerprint). Otherwise the comparison is refused,
unless forced, and the refusal (or the forced comparison's note) says which fingerprint differs
and what changed: the questions, the documents (``evaluation/fingerprints.py``). Every number
of a comparison, means included, is over the questions both sides hold: two means over
different questions (a question removed, one added) can agree while a question went from hit
to miss. A question one side left out as stale (its document changed, not its labels) is no
change of the labeled set: it is said so and the comparison goes over the questions both hold.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace
from typing import Any, Mapping, Sequence

import numpy as np

from ..data.labeled import question_changes
from ..data.segments import all_tags, distinct
from ..ir.measures import Measure
from ..ir.paired import Paired, corrected, paired
from ..evaluation.fingerprints import CHANGES_NAMED, corpus_changes, judgments_changes
from ..evaluation.judging import judge_problem
from ..evaluation.results import Evaluation, RunResults
from .scores import Scores
from ..data.labeled import LabeledSet


@dataclass(frozen=True)
class Mover:
    query_id: str
    question: str
    before: float
    after: float


@dataclass(frozen=True)
class MeasureDiff:
    engine: str
    labeled: str
    measure: str
    before: float
    after: float
    #: now against the baseline over the queries both hold (``ir.paired``); its p is corrected
    #: over every diff of the comparison (the noise-aware gate reads that one)
    paired: Paired
    movers: tuple[Mover, ...]
    #: a freshness measure judged on two as-of days: (the baseline's day, this run's day)
    days: tuple[str, str] | None = None
    #: the baseline's own rankings judged on this run's day (with ``days``): what the engine
    #: would score had only the calendar moved
    before_on_run_day: float = math.nan
    #: questions left out of the pairing: (only in the baseline, only in this run)
    left_out: tuple[int, int] = (0, 0)

    @property
    def delta(self) -> float:
        return self.after - self.before

    @property
    def moved(self) -> bool:
        """Did anything move: the mean, or questions (some up, some down, the mean held)?"""
        return self.before != self.after or bool(self.paired.wins or self.paired.losses)

    wins = property(lambda self: self.paired.wins)
    losses = property(lambda self: self.paired.losses)
    ties = property(lambda self: self.paired.ties)
    p = property(lambda self: self.paired.p)
    #: 95% bootstrap interval of the paired per-query difference now - baseline (the effect size)
    ci = property(lambda self: self.paired.ci)
    p_adjusted = property(lambda self: self.paired.p_adjusted)

    def day_note(self) -> str:
        """How much of a freshness drop across as-of days the calendar explains, or ''."""
        if self.days is None:
            return ""
        base_day, run_day = self.days
        drop, by_day = self.before - self.after, self.before - self.before_on_run_day
        share = ("all of the drop" if by_day >= drop - 1e-12 else "none of the drop" if by_day <= 1e-12
                 else f"{by_day:.4f} of the drop, the engine for {drop - by_day:.4f}")
        return (f"freshness judged on different days (baseline as of {base_day}, this run as of {run_day}): the "
                f"baseline's rankings score {self.before_on_run_day:.4f} as of {run_day}: the day accounts for {share}")

    def describe(self) -> str:
        return (f"{self.engine}: {self.measure} {self.before:.4f} -> {self.after:.4f} ({self.delta:+.4f}; "
                f"{self.wins} up, {self.losses} down, {self.ties} same; p={self.p:.3g}, corrected {self.p_adjusted:.3g}; "
                f"95% CI [{self.ci[0]:+.3f}, {self.ci[1]:+.3f}])")


@dataclass
class BaselineComparison:
    diffs: list[MeasureDiff] = field(default_factory=list)
    refusals: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    correction: str = "holm"
    #: freshness measures compared across as-of days, one line per pair of days
    warnings: list[str] = field(default_factory=list)
    #: each tag's segment on each compared measure (``SegmentDiff``), p corrected over all of them
    segments: list["SegmentDiff"] = field(default_factory=list)
    #: (engine, labeled set, measure, where) of the measures not compared for having no value on a
    #: side (``Evaluation.mean`` is None; ``no_value``): no diff, none of the p's family
    unvalued: list[tuple[str, str, str, str]] = field(default_factory=list)

    @property
    def refused(self) -> bool:
        """Nothing was compared (the runs did not measure the same thing): every surface says
        refused, never that nothing moved."""
        return bool(self.refusals)

    def regressed_segments(self, alpha: float) -> list["SegmentDiff"]:
        """Segments whose measure fell beyond noise (corrected p < alpha), and any that fell while
        the total held (a regression the total hides, however few its questions), largest fall first."""
        return sorted((d for d in self.segments if d.delta < 0 and (d.paired.p_adjusted < alpha or d.total_delta >= 0)),
                      key=lambda d: (d.delta, d.engine, d.tag))


@dataclass(frozen=True)
class SegmentDiff:
    """One engine's measure on the questions carrying one tag, now against the baseline."""

    engine: str
    tag: str
    measure: str
    before: float
    after: float
    paired: Paired
    #: the measure over every question, for the line that says the total held
    total_delta: float
    #: the questions of the segment that fell, by name
    fell: tuple[str, ...]

    @property
    def n(self) -> int:
        return self.paired.wins + self.paired.losses + self.paired.ties

    @property
    def delta(self) -> float:
        return self.after - self.before

    def describe(self, alpha: float = 0.05) -> str:
        total = "held" if self.total_delta >= 0 else "fell"
        noise = "beyond noise" if self.paired.p_adjusted < alpha else "within noise"
        shown = ", ".join(self.fell[:5]) + (f" and {len(self.fell) - 5} more" if len(self.fell) > 5 else "")
        return (f"{self.engine}[{self.tag}]: {self.measure} {self.before:.4f} -> {self.after:.4f} ({self.delta:+.4f}; "
                f"n={self.n}, {self.paired.losses} down, {self.paired.wins} up; p={self.paired.p:.3g}, corrected "
                f"{self.paired.p_adjusted:.3g}: {noise}) while the total {total} ({self.total_delta:+.4f}); fell: {shown}")


def _stale(labeled: LabeledSet) -> Mapping[str, Any]:
    """Query id -> what changed under it, for the questions a run left out as stale
    (``plugin/inputs.py``; ``labeled.stale_left_out`` of results.json)."""
    return dict(getattr(labeled, "provenance", {}).get("stale_left_out") or {})


def same_questions(base: LabeledSet, now: LabeledSet) -> bool:
    """The two sets hold the same questions in the same order, none changed (``question_changes``),
    and each fingerprint is that of its own questions, though the two differ: they differ only
    where no measure looks (a quote recased or given a full stop; the fingerprint hashes the
    file's text), so they are one labeled set. A recorded fingerprint its questions do not give
    is unexplained, and stays a difference."""
    return [q.query_id for q in base.queries] == [q.query_id for q in now.queries] and all(
        getattr(s, "computed_fingerprint", s.fingerprint) == s.fingerprint for s in (base, now)) and not any(
        question_changes(a, b) for a, b in zip(base.queries, now.queries))


def stale_only(base: LabeledSet, now: LabeledSet) -> bool:
    """The two sets differ only by questions one side left out as stale (their document changed,
    the labels did not): the same labeled set, compared over the questions both hold."""
    before, after = base.by_id(), now.by_id()
    gone, back = _stale(now), _stale(base)
    if set(before) == set(after):  # nothing left out (an unexplained fingerprint is no stale question)
        return False
    return (all(q in gone for q in before if q not in after) and all(q in back for q in after if q not in before)
            and all(not question_changes(before[q], after[q]) for q in after if q in before))


def labeled_changes(base: LabeledSet, now: LabeledSet) -> str:
    """What differs between the baseline's labeled set and this run's, question by question:
    added, removed and changed (``question_changes``: reworded, the conversation before a turn, its
    labels or its evidence edited), the first few of each
    by name, then counts; questions missing from one side because that run left them out as stale
    (their document changed, not the labels) are said so, not removed or added; or that no
    question differs (only the recorded fingerprint does)."""
    before, after = base.by_id(), now.by_id()

    def named(ids: list[str], queries: Mapping[str, Any], why: Mapping[str, str] | None = None) -> str:
        shown = [queries[q].name + (f" ({why[q]})" if why else "") for q in ids[:CHANGES_NAMED]]
        return ", ".join(shown) + (f" and {len(ids) - CHANGES_NAMED} more" if len(ids) > CHANGES_NAMED else "")

    gone, back = _stale(now), _stale(base)
    stale_now = [q for q in before if q not in after and q in gone]
    stale_base = [q for q in after if q not in before and q in back]
    added = [q for q in after if q not in before and q not in back]
    # a subset run (--retrieval-subset) leaves the other questions out by design: none is removed
    removed = [] if now.provenance.get("subset") else [q for q in before if q not in after and q not in gone]
    why = {q: " and ".join(question_changes(before[q], after[q])) for q in after if q in before}
    changed = [q for q, said in why.items() if said]

    def stale(ids: list[str], queries: Mapping[str, Any], what: Mapping[str, Any], side: str) -> list[str]:
        said = {q: ", ".join(what[q]) if isinstance(what[q], (list, tuple)) else str(what[q]) for q in ids}
        return [f"{len(ids)} left out as stale in {side} (their document changed: {named(ids, queries, said)})"] \
            if ids else []

    parts = ([f"{len(added)} added ({named(added, after)})"] if added else []) + \
            ([f"{len(removed)} removed ({named(removed, before)})"] if removed else []) + \
            ([f"{len(changed)} changed ({named(changed, after, why)})"] if changed else []) + \
            stale(stale_now, before, gone, "this run") + stale(stale_base, after, back, "the baseline")
    return "; ".join(parts) if parts else "no question differs: only the recorded fingerprint does"


def subset_of(now: LabeledSet, base: LabeledSet) -> bool:
    """A subset run (``--retrieval-subset``) whose every question the baseline holds unchanged: it
    is compared over those, not refused (the baseline of a full nightly run serves a pull request,
    and so does its history record: ``archive/history.py``)."""
    if not now.provenance.get("subset"):
        return False
    before = base.by_id()
    return all(q.query_id in before and not question_changes(before[q.query_id], q) for q in now.queries)


def _fingerprint_problems(now: Evaluation, base: Evaluation, recorded: tuple[Mapping, Mapping]) -> list[str]:
    """Why ``now`` and ``base`` did not measure the same thing, each saying what changed;
    ``recorded``: the baseline's and this run's fingerprints (``RunResults.fingerprints``)."""
    out = []
    if now.labeled.fingerprint != base.labeled.fingerprint and not subset_of(now.labeled, base.labeled) \
            and not stale_only(base.labeled, now.labeled) and not same_questions(base.labeled, now.labeled):
        out.append(f"labeled set {now.labeled.name} fingerprint {base.labeled.fingerprint[:12]} -> "
                   f"{now.labeled.fingerprint[:12]} ({labeled_changes(base.labeled, now.labeled)})")
    if now.corpus_fingerprint != base.corpus_fingerprint:
        said = (f" ({corpus_changes(*recorded, base.corpus_fingerprint, now.corpus_fingerprint)})"
                if base.corpus_fingerprint and now.corpus_fingerprint else "")
        out.append(f"corpus fingerprint {str(base.corpus_fingerprint)[:12]} -> {str(now.corpus_fingerprint)[:12]}{said}")
    problem = judge_problem(now.judge, base.judge)
    if problem:
        out.append(problem)
    return out


def _days(now: Evaluation, base: Evaluation, measure: str) -> tuple[str, str] | None:
    """(baseline day, run day) when ``measure`` is a freshness measure judged on two days."""
    if now.freshness is None or base.freshness is None or not Measure.parse(measure).freshness:
        return None
    return None if now.freshness.as_of == base.freshness.as_of else (base.freshness.as_of, now.freshness.as_of)


def days_warnings(diffs: Sequence[MeasureDiff]) -> list[str]:
    """One line per pair of as-of days freshness measures were compared across."""
    by_days: dict[tuple[str, str], list[str]] = {}
    for d in diffs:
        if d.days is not None and d.measure not in by_days.setdefault(d.days, []):
            by_days[d.days].append(d.measure)
    return [f"{', '.join(names)} compared across days (baseline as of {b}, this run as of {n}): documents go stale "
            f"with time alone; pytest --retrieval-as-of={b} compares on the baseline's day"
            for (b, n), names in by_days.items()]


def shared_questions(now: Evaluation, base: Evaluation) -> tuple[list[str], tuple[int, int]]:
    """The query ids both hold (in this run's order), and how many each side holds alone
    (only in the baseline, only in this run): what a comparison pairs, and what it leaves out."""
    known = base.labeled.by_id()
    ids = [q.query_id for q in now.labeled.queries]
    shared = [q for q in ids if q in known]
    return shared, (len(known) - len(shared), len(ids) - len(shared))


def no_value(now: Evaluation, base: Evaluation, measure: str) -> str:
    """Where ``measure`` has no value (``Evaluation.has_value``): "in this run", "in the
    baseline", both, or "" where both sides have one and it can be compared."""
    sides = [side for side, e in (("in this run", now), ("in the baseline", base)) if not Scores.of(e).has_value(measure)]
    return " and ".join(sides)


def _mean_over(e: Evaluation, measure: str, ids: Sequence[str]) -> float:
    """``e``'s mean of ``measure`` over the questions ``ids`` (compared measures have a value:
    ``no_value``): its own mean, to the bit, where ``ids`` are all of its questions."""
    if len(ids) == e.n:
        return Scores.of(e).mean(measure)
    values = dict(zip((q.query_id for q in e.labeled.queries), Scores.of(e).values(measure)))
    return float(np.mean([values[q] for q in ids])) if ids else math.nan


def diff_engine(now: Evaluation, base: Evaluation, measure: str, *, interval: bool = True) -> MeasureDiff:
    questions = {q.query_id: q.question for q in now.labeled.queries}
    shared, left_out = shared_questions(now, base)
    before, after = Scores.of(base).per_query(measure), Scores.of(now).per_query(measure)
    a = [after.get(q, 0.0) for q in shared]
    b = [before.get(q, 0.0) for q in shared]
    pair = paired(a, b, shared, clusters=now.clusters(shared), interval=interval)  # turns: conversations resampled
    return MeasureDiff(
        engine=now.engine, labeled=now.labeled.name, measure=measure,
        before=_mean_over(base, measure, shared), after=_mean_over(now, measure, shared), paired=pair,
        movers=tuple(Mover(shared[i], questions[shared[i]], b[i], a[i]) for i in pair.movers),
        left_out=left_out, **_on_run_day(now, base, measure, shared),
    )


def _on_run_day(now: Evaluation, base: Evaluation, measure: str, shared: Sequence[str]) -> dict:
    """For a freshness measure judged on two days: the days, and the baseline's rankings judged
    with this run's freshness (same corpus: the fingerprints were compared), over ``shared``."""
    days = _days(now, base, measure)
    if days is None:
        return {}
    rejudged = Evaluation(base.engine, base.labeled, base.results, freshness=now.freshness)
    return {"days": days, "before_on_run_day": _mean_over(rejudged, measure, shared)}


def canary_note(now: Evaluation, base: Evaluation) -> str | None:
    """Said beside a comparison whose engine's embedder answered its drift canaries otherwise than
    the baseline's (``hybrid/canaries.py``): its numbers may move with the embedding model, not the
    team's change; never a refusal (each machine's cache stamps its own)."""
    a, b = base.engine_info.get("embedder_canary"), now.engine_info.get("embedder_canary")
    if not a or not b or a == b:
        return None
    return (f"{now.engine}: its embedder answered the drift canaries otherwise than the baseline's (canary "
            f"{str(a)[:12]} -> {str(b)[:12]}): the embedding model behind {now.engine_info.get('embedder', 'it')} "
            "changed, or the baseline was made on another machine; a move may be the model's")


def compare(now: RunResults, base: RunResults, measures: Sequence[str], *, force: bool = False,
            correction: str = "holm", gated: bool = False) -> BaselineComparison:
    """Every engine of ``now`` against its baseline on ``measures``; the p-values are corrected
    over all of those diffs (every engine and measure is one more chance of a false alarm).
    ``gated``: only what the gate's rules on whole sets read (no effect-size interval, no
    segment), as a calibration's reruns need (``analysis/calibration.py``)."""
    out = BaselineComparison()
    paired_over: list[str] = []  # said once the comparison is made (not when refused)
    judged_on: set[str] = set()
    if now.metrics_fingerprint != base.metrics_fingerprint:
        out.refusals.append(f"metric definitions differ (fingerprint {base.metrics_fingerprint[:12]} -> "
                            f"{now.metrics_fingerprint[:12]})")
    for e in now.evaluations:
        b = base.get(*e.key)
        if b is None:
            out.notes.append(no_baseline(e, base))
            continue
        problems = _fingerprint_problems(e, b, (base.fingerprints, now.fingerprints))
        if problems:
            out.refusals.append(f"{e.engine}: " + "; ".join(problems))
        judged = judgments_changes(base.fingerprints, now.fingerprints, b.judged, e.judged) \
            if e.judge is not None and b.judge is not None and e.labeled.name not in judged_on else ""
        if judged:  # the grades are the labeled set's, whichever engine: said once per set
            judged_on.add(e.labeled.name)
            out.notes.append(f"judgments on {e.labeled.name} differ from the baseline's: {judged}")
        judged_alone = [m for m in measures if Measure.parse(m).judged and (e.judge is None) != (b.judge is None)]
        if judged_alone:
            out.notes.append(f"{e.engine}: {', '.join(judged_alone)} not compared: "
                             f"{'the baseline has' if b.judge is None else 'this run has'} no judgments")
        missing = {m: where for m in measures if m not in judged_alone and (where := no_value(e, b, m))}
        out.unvalued += [(e.engine, e.labeled.name, m, where) for m, where in missing.items()]
        for where, has in (("in this run", "the baseline has one"), ("in the baseline", "this run has one")):
            alone = [m for m, w in missing.items() if w == where]  # one side only: a change worth saying
            if alone:
                out.notes.append(f"{e.engine}: {', '.join(alone)} not compared: no value {where} ({has})")
        out.diffs += [diff_engine(e, b, m, interval=not gated) for m in measures
                      if m not in judged_alone and m not in missing]
        shared, (only_base, only_now) = shared_questions(e, b)
        if only_base or only_now:
            stale = f" ({labeled_changes(b.labeled, e.labeled)})" if stale_only(b.labeled, e.labeled) else ""
            paired_over.append(f"{e.engine} on {e.labeled.name}: compared over the {len(shared)} questions both hold; "
                               f"{only_base} only in the baseline and {only_now} only in this run left out{stale}")
        said = latency_note(e, b) or None
        for note in (said, canary_note(e, b)):
            if note:
                out.notes.append(note)
    for b in base.evaluations:
        if now.get(*b.key) is None:
            out.notes.append(f"{b.engine} on {b.labeled.name} is in the baseline but was not evaluated now")
    if out.refusals and force:
        out.notes += [f"compared although {r} (--retrieval-baseline-force)" for r in out.refusals]
        out.refusals = []
    elif out.refusals:
        out.diffs, out.unvalued = [], []
    out.notes += paired_over if out.diffs else []
    out.diffs = [replace(d, paired=c) for d, c in zip(out.diffs, corrected([d.paired for d in out.diffs], correction))]
    out.correction = correction
    out.warnings = days_warnings(out.diffs)
    found = []
    for d in out.diffs if not gated else ():  # each tag's share of every diff (freshness across days aside)
        if d.days is not None or Measure.parse(d.measure).freshness:
            continue
        e, b = now.get(d.engine, d.labeled), base.get(d.engine, d.labeled)
        found += [f for tag in distinct(all_tags(e.labeled)) if (f := segment_diff(e, b, tag, d)) is not None]
    out.segments = [replace(f, paired=c) for f, c in zip(found, corrected([f.paired for f in found], correction))]
    return out


def no_baseline(now: Evaluation, base: RunResults) -> str:
    """Why ``now`` has no baseline: what the baseline holds of its engine or labeled set, if anything."""
    near = [f"{b.engine} on {b.labeled.name}" for b in base.evaluations
            if b.engine == now.engine or b.labeled.name == now.labeled.name]
    held = (f"the baseline holds {', '.join(near)}" if near else
            f"the baseline holds neither: {', '.join(f'{b.engine} on {b.labeled.name}' for b in base.evaluations) or 'nothing'}")
    return f"{now.engine} on {now.labeled.name} has no baseline (new engine or labeled set; {held})"


def latency_note(now: Evaluation, base: Evaluation) -> str | None:
    """The p95 latency against the baseline's, where both were timed; said not comparable when
    they were measured at a different concurrency or on another machine."""
    from .cost import latency_of

    a, b = latency_of(now), latency_of(base)
    if a is None or b is None:
        return None
    text = f"{now.engine}: latency p95 {b.ms('p95'):.1f} ms -> {a.ms('p95'):.1f} ms"
    if a.measured_at != b.measured_at:
        return f"{text}, not comparable: measured at {a.measured_at}, the baseline at {b.measured_at}"
    return f"{text} (measured alike: {a.measured_at})"


def segment_diff(now: Evaluation, base: Evaluation, tag: str, total: MeasureDiff) -> SegmentDiff | None:
    """``total``'s measure on the questions of ``now`` tagged ``tag`` that the baseline also holds."""
    known = base.labeled.by_id()
    ids = [q.query_id for q in now.labeled.queries if tag in q.tags and q.query_id in known]
    if not ids:
        return None
    after, before = Scores.of(now).per_query(total.measure), Scores.of(base).per_query(total.measure)
    a, b = [after.get(q, 0.0) for q in ids], [before.get(q, 0.0) for q in ids]
    names = {q.query_id: q.name for q in now.labeled.queries}
    return SegmentDiff(now.engine, tag, total.measure, sum(b) / len(b), sum(a) / len(a), paired(a, b, ids, clusters=now.clusters(ids)),
                       total.delta, tuple(names[q] for q, x, y in zip(ids, a, b) if x < y))

