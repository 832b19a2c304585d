"""From a run's analysis to a verdict: the rules over ``analysis/analyse.Analysis``, each failure typed
and worded once. Shared by the pytest session and ``python -m pytest_retrieval_eval report``
(``conclude``), so both give the same answer and the same exit code."""

from __future__ import annotations

import textwrap
from dataclasses import dataclass, replace
from typing import Any, Mapping, Sequence

from ..analysis.analyse import Analysis, analyse
from .checks import (Failure, check, check_coverage, check_drops, check_lint, check_segments, check_shadows,
                     check_turns)
from ..rules.quantities import MeasureQuantity, ShadowQuantity
from ..rules.settings import GateSettings
from ..ir.measures import DEFAULT_TABLE_MEASURES, Measure, judge_dependent
from ..ir.stats import CORRECTION_NAMES
from ..analysis.cost import RunUsage
from ..evaluation.results import RunResults

#: what a failure is about, in the order the verdict lists them
FAILURE_KINDS = ("run", "empty", "judge", "rule", "baseline", "drop", "lint", "shadow", "segment", "coverage", "turns")
#: the widest line of a failure's causes
CAUSE_WIDTH = 88
#: what the gate says of a run (``Verdict.state``): no rule failed nor was inconclusive, some rule
#: failed, or none failed and some was inconclusive (its interval straddles its line)
VERDICT_STATES = ("pass", "fail", "inconclusive")
#: what an inconclusive rule does to the run (``--retrieval-inconclusive``), as the verdict says it
INCONCLUSIVE_SAID = {"fail": "--retrieval-inconclusive=fail",
                     "warn": "--retrieval-inconclusive=warn: a warning, the run passes",
                     "pass": "--retrieval-inconclusive=pass: noted"}


@dataclass(frozen=True)
class Verdict:
    """The run, the settings it was judged by, its analysis, and the rules' failures. Renderers
    read it; nothing here computes a statistic. ``run`` is the record (``RunResults.record``):
    questions, rankings, passages and engine info, never the evaluations' calculator."""

    run: RunResults
    settings: GateSettings
    analysis: Analysis
    failures: tuple[Failure, ...] = ()
    #: the analysis's warnings, and those of the rules (a drop within the engine's own spread)
    warnings: tuple[str, ...] = ()
    #: what the run's ending noted (workers that ranked differently, the record compared with)
    #: and warned of besides (an ingestion no engine read), and the run's HTTP calls in all: kept
    #: in results.json so ``report`` prints what the run printed
    notes: tuple[str, ...] = ()
    run_warnings: tuple[str, ...] = ()
    run_usage: RunUsage | None = None
    #: what the run's ending found wrong before any rule (a lost xdist worker, a share that never
    #: arrived, an engine not built, judgments not read): failures, kept in results.json's settings
    run_failures: tuple[str, ...] = ()

    # --- the analysis, read ----------------------------------------------------------------
    measures = property(lambda self: list(self.analysis.measures))
    rows = property(lambda self: self.analysis.rows)
    comparisons = property(lambda self: self.analysis.comparisons)
    detectable = property(lambda self: self.analysis.detectable)
    baseline = property(lambda self: self.analysis.baseline)
    lint = property(lambda self: self.run.lint)
    shadows = property(lambda self: self.analysis.shadows)
    miss_k = property(lambda self: self.analysis.miss_k)
    misses = property(lambda self: self.analysis.misses)
    segments = property(lambda self: self.analysis.segments)
    latency = property(lambda self: self.analysis.latency)
    usage = property(lambda self: self.analysis.usage)
    stability = property(lambda self: self.analysis.stability)
    sweeps = property(lambda self: self.analysis.sweeps)
    estimates = property(lambda self: self.analysis.estimates)
    ceilings = property(lambda self: self.analysis.ceilings)
    alpha = property(lambda self: self.settings.alpha)
    correction = property(lambda self: self.settings.correction)
    confidence = property(lambda self: self.settings.confidence)

    def interval(self, key: tuple[str, str], measure: str) -> tuple[float, float]:
        return self.analysis.interval(key, measure)

    def causes(self, key: tuple[str, str]) -> dict:
        return self.analysis.causes(key)

    @property
    def miss_measure(self) -> str:
        """``hit@K`` at the cutoff misses are counted at: what the trend and the segments chart."""
        return f"hit@{self.miss_k}"

    @property
    def failing(self) -> list[Failure]:
        """The failures that fail the run whatever ``--retrieval-inconclusive`` says."""
        return [f for f in self.failures if f.state == "fail"]

    @property
    def inconclusive(self) -> list[Failure]:
        """The rules whose interval straddles their line (``Failure.state`` inconclusive)."""
        return [f for f in self.failures if f.state == "inconclusive"]

    @property
    def state(self) -> str:
        """``fail`` (some failure), ``inconclusive`` (none, but some rule inconclusive) or ``pass``."""
        return "fail" if self.failing else "inconclusive" if self.inconclusive else "pass"

    @property
    def failed(self) -> bool:
        """Whether the run fails (exit 1): a failure, or an inconclusive rule under
        ``--retrieval-inconclusive=fail`` (the default)."""
        return bool(self.failing) or bool(self.inconclusive and self.settings.inconclusive == "fail")

    def headline(self) -> str:
        """The gate's verdict in a phrase, as every surface leads with it: ``passed``, ``FAILED, 2
        failures``, ``FAILED, 1 failure, 1 inconclusive``, ``FAILED, 1 rule inconclusive
        (--retrieval-inconclusive=fail)``, ``INCONCLUSIVE, 1 rule (--retrieval-inconclusive=warn: a
        warning, the run passes)``, ``passed, 1 rule inconclusive (--retrieval-inconclusive=pass: noted)``."""
        n, m = len(self.failing), len(self.inconclusive)
        rules = f"{m} rule{'s' * (m != 1)}"
        said = INCONCLUSIVE_SAID[self.settings.inconclusive]
        if n:
            return f"FAILED, {n} failure{'s' * (n != 1)}" + (f", {m} inconclusive" if m else "")
        if not m:
            return "passed"
        return {"fail": f"FAILED, {rules} inconclusive ({said})", "warn": f"INCONCLUSIVE, {rules} ({said})",
                "pass": f"passed, {rules} inconclusive ({said})"}[self.settings.inconclusive]

    def of_kind(self, kind: str) -> list[Failure]:
        """The failures of one kind (``FAILURE_KINDS``), in order."""
        return [f for f in self.failures if f.kind == kind]

    def correction_text(self) -> str:
        """How the table's marks were corrected, e.g. ``Holm-Bonferroni over 18 comparisons``."""
        return f"{CORRECTION_NAMES[self.correction]} over {len(self.comparisons)} comparisons"


def decide(run: RunResults, settings: GateSettings, analysis: Analysis, problems: Sequence[str] = (),
           unread: Mapping[str, str] | None = None, failures: Sequence[str] = ()) -> Verdict:
    """The rules of ``settings`` over ``analysis``; ``failures``: what the run carries (``Verdict.run_failures``)
    and ``problems``: what this judging found (a baseline that could not be read, a ref with no
    record), both failures before any rule; ``unread``: engine -> why no evaluation of it was
    recorded (the run knows its tests), said under a rule naming it."""
    s, a = settings, analysis
    out = [Failure("run", f) for f in [*failures, *problems]]
    out += [Failure("empty", f"{r.engine}: labeled set {r.labeled} is empty; nothing was measured") for r in a.rows if r.n == 0]
    held, noted = _failed_judge(run, s)
    if held is not None:
        out.append(held)  # the rules on the judge's grades are not gated on its numbers
        s = replace(s, thresholds=tuple(t for t in s.thresholds if not _reads_grades(t, s)),
                    max_drops=tuple(d for d in s.max_drops if not judge_dependent(d.measure)))
    thresholds = s.thresholds
    for b in check(thresholds, a.rows, confidence=s.confidence, unsettled=a.unsettled):
        why = (unread or {}).get(b.engine) if b.value is None and not b.no_value else None
        causes = _causes(run, a, b) if why is None else _why_unread(why)
        out.append(Failure("rule", str(b), causes, state=b.state, **({"engine": b.engine, "brief": b.brief()}
                                                                     if b.value is not None or b.no_value else {})))
    if a.baseline is not None:
        out += [Failure("baseline", f"baseline refused: {r}; re-save the baseline, or compare anyway with "
                                    "--retrieval-baseline-force") for r in a.baseline.refusals]
    # without a baseline (none loaded: nothing was evaluated, or it is unusable) nothing was
    # compared, so a rule naming an engine fails by name rather than passing unchecked
    spreads = {(x.engine, m): x.width(m) for x in a.stability for m in x.spread}
    drops, within = check_drops(s.max_drops, a.baseline.diffs if a.baseline else [],
                                segments=a.baseline.segments if a.baseline else [],
                                noise_aware=s.noise_aware, alpha=s.alpha, spreads=spreads,
                                unvalued=a.baseline.unvalued if a.baseline else (), unsettled=a.unsettled)
    out += [Failure(f.kind, f, _why_unread(unread[f.engine]), engine=f.engine)  # its engine recorded nothing
            if unread and f.engine in unread and f.brief is None and not f.causes else f for f in drops]
    out += [Failure("lint", f) for f in check_lint(thresholds, run.lint)]
    out += [Failure("shadow", f) for f in [*a.shadow_problems, *check_shadows(thresholds, a.shadows)]]
    out += [Failure("segment", f) for f in check_segments(thresholds, a.segment_rules)]
    out += [Failure("coverage", f) for f in check_coverage(thresholds, run.coverage)]
    out += [Failure("turns", f, _follow_up_causes(run, a, row))
            for f, row in check_turns(thresholds, a.turns, run, confidence=s.confidence, unsettled=a.unsettled)]
    out = [_on_subset(run, f) for f in out]
    return Verdict(run.record(), settings, a, tuple(out), (*a.warnings, *noted, *within))


def _why_unread(why: str) -> tuple[str, ...]:
    """The lines under a rule whose engine recorded no evaluation, saying why (``unread``)."""
    return tuple(textwrap.wrap(f"why: {why}", width=CAUSE_WIDTH, initial_indent="  ", subsequent_indent="    ",
                               break_on_hyphens=False, break_long_words=False))


def _on_subset(run: RunResults, failure: Failure) -> Failure:
    """A rule or drop failed by an engine of a subset run (``--retrieval-subset``) says so beside
    its figures: ``hit@5 = 0.6000, required >= 0.8, on subset 'pr' (40 of 300 questions)``. A
    floor set for the full set reads otherwise on its hardest questions."""
    if failure.kind not in ("rule", "drop") or not failure.engine or not failure.brief:
        return failure
    found = next(((e, r) for e in run.evaluations if e.engine == failure.engine
                  if (r := e.labeled.provenance.get("subset"))), None)
    if found is None:
        return failure
    e, record = found
    brief = f"{failure.brief}, on subset '{record['name']}' ({e.n} of {record['of_n']} questions)"
    return Failure(failure.kind, failure.replace(failure.brief, brief, 1), failure.causes, engine=failure.engine,
                   brief=brief, state=failure.state)


def _failed_judge(run: RunResults, s: GateSettings) -> tuple[Failure | None, list[str]]:
    """(the failure of a run whose rules on a judge's grades (``+judged``, ``~ppi``) rest on a
    judge that failed ``judge --validate``, or None; the warning when
    ``--retrieval-allow-failed-judge`` lets them gate all the same)."""
    from ..evaluation.judging import used

    judge = used(run)
    rules = [*(str(t) + _weighs_grades(t, s) for t in s.thresholds if _reads_grades(t, s)),
             *(str(d) for d in s.max_drops if judge_dependent(d.measure))]
    if judge is None or judge.validation_state != "failed" or not rules:
        return None, []
    who = f"judge {judge.judge.model} ({judge.judge.fingerprint})"
    shown = ", ".join(rules)
    if s.allow_failed_judge:
        return None, [f"{shown} gated on the grades of {who}, which failed judge --validate "
                      f"({judge.validation_text()}): allowed by --retrieval-allow-failed-judge"]
    return Failure("judge", f"{who} failed judge --validate ({judge.validation_text()}), so the rule(s) on its "
                            f"grades are not gated: {shown}; validate it again with {judge.validate_hint()}, "
                            "or gate on it anyway with --retrieval-allow-failed-judge"), []


def _judged_weights(t: Any, s: GateSettings) -> list[str]:
    """The gain weights on a judge's grades that a knowledge-gain rule (``shadow.gain``) reads."""
    if not isinstance(t.quantity, ShadowQuantity) or t.quantity.measure is not None:
        return []
    return [m for m in s.weights if judge_dependent(m)]


def _reads_grades(t: Any, s: GateSettings) -> bool:
    """Does the rule ``t`` read an LLM judge's grades: on a ``+judged`` or ``~ppi`` quantity, or
    on the knowledge gain when a gain weight is one (``--retrieval-gain-weights=ndcg@10+judged=1``)?"""
    return judge_dependent(t.measure) or bool(_judged_weights(t, s))


def _weighs_grades(t: Any, s: GateSettings) -> str:
    """Why a rule on the gain reads the judge's grades, as its failure says it; else nothing."""
    weights = _judged_weights(t, s)
    return f" (its gain weights read the judge's grades: {', '.join(weights)})" if weights else ""


def _causes(run: RunResults, a: Analysis, breach: Any) -> tuple[str, ...]:
    """Under a failed rule on a retrieval measure: why its engine's questions missed at the
    rule's cutoff (``analysis.causes``; among the passages for a ``+evidence`` rule), one line
    per labeled set, so the reason sits beside the failure and not only in the table above."""
    q = breach.threshold.quantity
    if breach.value is None or not isinstance(q, MeasureQuantity):
        return ()
    if q.measure.freshness or q.measure.count or breach.threshold.segment:
        return ()  # a segment rule's failure names its lowest questions itself
    if q.measure.ppi:
        return ()  # an estimate over the questions people judged: no miss of its own to name
    k = q.measure.k or a.miss_k
    out: list[str] = []
    for e in run.evaluations:
        if e.engine != breach.engine or not e.n:
            continue
        # a rule on an evidence twin: the misses among the passages ("right document, wrong passage")
        misses = next((m for m in (*a.evidence_misses, *a.evidence_rule_misses) if (m.engine, m.labeled) == e.key
                       and m.k == k), None) if q.measure.evidence else a.misses_of(e.key, k)
        if misses is not None and misses.causes:
            several = len({x.labeled.name for x in run.evaluations if x.engine == e.engine}) > 1
            out += textwrap.wrap("cause: " + misses.line() + (f" (on {e.labeled.name})" if several else ""),
                                 width=CAUSE_WIDTH, initial_indent="  ", subsequent_indent="    ",
                                 break_on_hyphens=False)
    return tuple(out)


#: follow-ups a failed drop rule names where no miss causes are recorded at its cutoff
FOLLOW_UPS_NAMED = 3


def _follow_up_causes(run: RunResults, a: Analysis, row: Any) -> tuple[str, ...]:
    """Under a failed ``turns.drop`` rule: why the follow-ups missed. On ``hit@k`` the run's
    misses at k restricted to the follow-up turns, counted by cause; else (or with none
    recorded) the follow-ups that scored 0, the first few by name, then a count."""
    if row is None:
        return ()
    e = next((x for x in run.evaluations if x.key == (row.engine, row.labeled)), None)
    m = Measure.parse(row.measure)
    misses = a.misses_of((row.engine, row.labeled), m.k) if e is not None and m.family == "hit" and (
        m.unit is None and m.labels is None) else None
    if misses is not None and e is not None:
        follow = {q.query_id for q in e.labeled.queries if q.conversation is not None and q.turn > 1}
        said = replace(misses, n=row.n_follow, causes=tuple(c for c in misses.causes if c.query_id in follow))
        text = "cause (follow-ups): " + said.line()
    elif row.follow_missed:
        names = {q.query_id: q.name for q in e.labeled.queries} if e is not None else {}
        shown = ", ".join(names.get(q, q) for q in row.follow_missed[:FOLLOW_UPS_NAMED])
        more = len(row.follow_missed) - FOLLOW_UPS_NAMED
        text = (f"cause: {len(row.follow_missed)} of {row.n_follow} follow-ups scored 0 at {row.measure}: {shown}"
                + (f" and {more} more" if more > 0 else ""))
    else:
        return ()
    return tuple(textwrap.wrap(text, width=CAUSE_WIDTH, initial_indent="  ", subsequent_indent="    ",
                               break_on_hyphens=False))


def verdict_of(run: RunResults, settings: GateSettings | None = None, *, measures: Sequence[str] | None = None,
          baseline: RunResults | None = None, other_failures: Sequence[str] = (), **changes) -> Verdict:
    """The verdict on ``run`` under ``settings`` (``changes``: fields of it replaced, e.g.
    ``correction="bh"``), with ``measures`` as the table's columns (default: the settings')."""
    s = replace(settings or GateSettings(), **changes)
    if measures is not None:
        s = replace(s, table_measures=tuple(measures))
    return decide(run, s, analyse(run, s, baseline), other_failures)


def conclude(run: RunResults, settings: GateSettings, baseline: RunResults | None = None, *,
             failures: Sequence[str] = (), problems: Sequence[str] = (), recorded: Analysis | None = None,
             notes: Sequence[str] = (), run_warnings: Sequence[str] = (), run_usage: RunUsage | None = None,
             unread: Mapping[str, str] | None = None) -> Verdict:
    """The one ending of a run and of ``report``: the analysis (the recorded one where it was
    made from this run, these settings and this baseline; else made now), then the rules, with
    what the run's ending found (``failures``: lost xdist workers, shares that never arrived, ...)
    and noted beside them."""
    from ..analysis.analyse import basis

    fits = recorded is not None and recorded.basis == basis(run, settings, baseline)
    verdict = decide(run, settings, recorded if fits else analyse(run, settings, baseline), problems, unread,
                     failures)
    return replace(verdict, notes=tuple(notes), run_warnings=tuple(run_warnings), run_usage=run_usage,
                   run_failures=tuple(failures))


def for_run(run: RunResults, settings: GateSettings | None = None, *,
            configured: Sequence[Measure] = DEFAULT_TABLE_MEASURES, **changes) -> GateSettings:
    """How ``run`` is to be judged and rendered: ``settings`` with ``changes`` and the table's
    columns for it, recorded in results.json so a saved run is judged again exactly so."""
    return replace(settings or GateSettings(), **changes).for_run(run, configured)
