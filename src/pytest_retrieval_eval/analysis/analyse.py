"""Every quantity a run's reports and gate read, computed once: ``analyse(run, settings, baseline)``.

Between "the engines answered" (``evaluation/``) and "the gate said" (``gate/verdict.py``) sits one
frozen value, as ranx computes a ``Report`` once and renders it: the table's rows and
intervals, the paired comparisons, the misses and their causes, segments, stability, sweeps,
shadows, latency, usage, what the labeled set can detect, quality turn by turn over conversations,
and the comparison with a baseline.
The gate's rules read it, results.json stores it (``to_dict``), and every renderer only reads it,
so a saved run (``report results.json``) renders the same bytes without running a single paired
test, bootstrap or miss attribution again: ``Analysis.basis`` says which run, settings and
baseline it was made from, and a recorded analysis is used only where they are the same.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, replace
from typing import Any, Mapping, Sequence

from .._plain import from_plain, to_plain
from ..ir.measures import Measure
from ..ir.ppi import PPIEstimate
from ..data.set_checks import SetFinding
from .approximate import IndexGap, UnderReturn
from .causes import Cause, Misses
from .ceiling import StageCurve
from .cost import Latency, Usage
from .curves import Curve
from .freshness import FreshnessFinding
from .judged import Judged
from .recorded import Recorded
from ..evaluation.results import RunResults
from .comparisons import Comparison, comparisons
from .segments import SegmentRow, SegmentRule
from .shadow import Shadow
from .stability import Stability, TrialPass
from .subset import SubsetDrop
from .sweep import SweepTable
from .turns import ByTurn
from .rewrites import Fidelity, OracleGap
from .unsettled import Unsettled
from .unanswerable import Unanswered
from ..types import sha256_text
from .baseline import BaselineComparison
from ..rules.quantities import MeasureQuantity, TurnsQuantity
from ..rules.thresholds import Threshold, judges_shadows, measures_needed, shadow_measures, turn_measures
from ..rules.drops import MaxDrop
from ..rules.settings import GateSettings
from .power import Detectable, Powerless, detectable_drops, gated_measures, powerless_sets, underpowered
from .rows import Row, row_of, with_costs
from .scores import Scores

#: bump when the analysis's form changes: a recorded one of another form is made again, not read
ANALYSIS_VERSION = 19


@dataclass(frozen=True)
class Intervals:
    """One evaluation's 95% intervals, per measure (Wilson for hit@k and the rates, else the
    bootstrap over queries: ``Scores.ci``)."""

    engine: str
    labeled: str
    by_measure: Mapping[str, tuple[float, float]]


@dataclass(frozen=True)
class Estimate:
    """One evaluation's prediction-powered estimate of one measure (``ndcg@10~ppi``): what it rests
    on (``n`` human-judged questions of ``N``), what it is worth, and whether it fell back."""

    engine: str
    labeled: str
    measure: str
    ppi: PPIEstimate
    #: the judge it corrects (``Judge.describe()``)
    judge: str


@dataclass(frozen=True)
class Handed:
    """What an engine returning passages hands a generator: the word tokens of its top ``k``
    passages, the mean per question (beside its quality, so whole documents show their cost)."""

    engine: str
    labeled: str
    k: int
    tokens: float


@dataclass(frozen=True)
class Analysis:
    """What a run means under its settings (see the module's docstring); renderers read it."""

    #: which run, settings and baseline it was made from (``basis``)
    basis: str
    #: the table's columns
    measures: tuple[str, ...]
    #: the cutoff misses are counted at
    miss_k: int
    rows: tuple[Row, ...]
    intervals: tuple[Intervals, ...]
    comparisons: tuple[Comparison, ...]
    #: each evaluation's misses at ``miss_k`` with their causes, in run order
    misses: tuple[Misses, ...]
    #: misses at the cutoff of each rule on a retrieval measure, where it is another: the causes a
    #: failed rule is shown with
    rule_misses: tuple[Misses, ...]
    detectable: tuple[Detectable, ...]
    warnings: tuple[str, ...]
    segments: tuple[SegmentRow, ...]
    stability: tuple[Stability, ...]
    sweeps: tuple[SweepTable, ...]
    shadows: tuple[Shadow, ...]
    #: shadow pairs that could not be compared (an engine not run, ...): gate failures
    shadow_problems: tuple[str, ...]
    latency: tuple[Latency, ...]
    usage: tuple[Usage, ...]
    baseline: BaselineComparison | None = None
    #: the prediction-powered estimates (``~ppi``) of the measures shown and gated, in run order
    estimates: tuple[Estimate, ...] = ()
    #: per evaluation whose engine reports its stages: recall@k at each and where its misses at
    #: ``miss_k`` were lost (``analysis/ceiling.py``), in run order
    ceilings: tuple[StageCurve, ...] = ()
    #: what the labeled set says of itself, each finding naming its questions: near duplicates and
    #: leakage (recorded with the coverage, ``data/set_checks.py``), no signal and the metadata-only
    #: baseline (``analysis/set_signal.py``)
    labeled_set: tuple[SetFinding, ...] = ()
    #: a subset run (``--retrieval-subset``): the smallest drop it detects against the full set's
    subset: tuple[SubsetDrop, ...] = ()
    #: the misses at ``miss_k`` at the evidence level ("right document, wrong passage" among their
    #: causes), for the engines that return passages, where the table shows evidence-level twins
    evidence_misses: tuple[Misses, ...] = ()
    #: the evidence-level misses at the cutoff of each rule on a ``+evidence`` measure: the causes
    #: a failed one is shown with (as ``rule_misses`` for the documents')
    evidence_rule_misses: tuple[Misses, ...] = ()
    #: per evaluation whose engine returns passages: the tokens of its top ``miss_k`` passages
    handed: tuple[Handed, ...] = ()
    #: where the labeled set has conversations: each evaluation's measures (the table's, hit at
    #: ``miss_k``, those of ``turns.drop`` rules) by turn position and dependence, and the drop
    #: from first turns to follow-ups with its interval over conversations, in run order
    turns: tuple[ByTurn, ...] = ()
    #: where the run holds the oracle (``oracle_rewrite``): each other engine's gap to it on follow-ups
    #: at ``miss_k``, split into the candidate pool and the ranking (``analysis/rewrites.py``), in run order
    oracle_gaps: tuple[OracleGap, ...] = ()
    #: where the labels carry a person's rewrite of a turn: each engine that recorded its own rewrites
    #: (``rewritten``), scored against them per turn and overall (ROUGE-1 recall, top ``miss_k`` overlap)
    rewrites: tuple[Fidelity, ...] = ()
    #: per evaluation, in run order: each recorded measure's value, its questions' values and its
    #: trials' means (what results.json shows people, ``analysis/recorded.py``)
    recorded: tuple[Recorded, ...] = ()
    #: per evaluation whose labels judge few documents or which reads judgments: judged@k at the
    #: table's cutoffs (``analysis/judged.py``), in run order
    judged: tuple[Judged, ...] = ()
    #: hit@1..20 per evaluation, the run's and the baseline's (the Hit@k chart), in run order
    curves: tuple[Curve, ...] = ()
    baseline_curves: tuple[Curve, ...] = ()
    #: behind each freshness column: the questions with a stale document, or two versions of one,
    #: in their top k (``analysis/freshness.py``)
    freshness: tuple[FreshnessFinding, ...] = ()
    #: each rule over each evaluation's repeated trials: pass@k and pass^k
    trial_passes: tuple[TrialPass, ...] = ()
    #: each segment rule's measure over the questions carrying its tag, per evaluation it judges
    segment_rules: tuple[SegmentRule, ...] = ()
    #: what the judge's labels rest on, as the reports say it (``JudgmentsUsed.lines``), and the
    #: judge described; empty without judgments
    judgment_lines: tuple[str, ...] = ()
    judge: str = ""
    #: each rule judged with its interval (``--retrieval-confidence=lower``, ``--retrieval-noise-aware``)
    #: whose 95% interval straddles its line on an evaluation: by how much, and how many questions
    #: would settle it (``analysis/unsettled.py``); the gate calls these inconclusive
    unsettled: tuple[Unsettled, ...] = ()
    #: per evaluation whose labeled set has unanswerable turns: what came back for them at
    #: ``miss_k`` (``analysis/unanswerable.py``), in run order
    unanswered: tuple[Unanswered, ...] = ()
    #: the labeled sets too small for any paired test to reach alpha (``Powerless``), in run order,
    #: where the run compares engines, gates or has a baseline: their comparisons are never
    #: significant and their detectable drops are left out
    powerless: tuple[Powerless, ...] = ()
    #: with ``--retrieval-exact-check``: each evaluation's approximate-versus-exact recall at ``miss_k``
    #: and the misses its index caused (``analysis/approximate.py``), in run order
    index_gaps: tuple[IndexGap, ...] = ()
    #: the evaluations with questions answered with fewer than ``miss_k`` documents while the corpus
    #: holds more, in run order
    under_returns: tuple[UnderReturn, ...] = ()
    version: int = ANALYSIS_VERSION

    def by_turn(self, key: tuple[str, str], measure: str) -> ByTurn | None:
        """The evaluation ``key``'s ``measure`` turn by turn, where it was analysed."""
        name = Measure.parse(measure).name
        return next((x for x in self.turns if (x.engine, x.labeled, x.measure) == (*key, name)), None)

    def interval(self, key: tuple[str, str], measure: str) -> tuple[float, float]:
        """The 95% interval of ``measure`` for the evaluation ``key`` (engine, labeled set)."""
        for x in self.intervals:
            if (x.engine, x.labeled) == key:
                return x.by_measure.get(Measure.parse(measure).name, (math.nan, math.nan))
        return (math.nan, math.nan)

    def misses_of(self, key: tuple[str, str], k: int | None = None) -> Misses | None:
        k = self.miss_k if k is None else k
        return next((m for m in (*self.misses, *self.rule_misses) if (m.engine, m.labeled) == key and m.k == k), None)

    def causes(self, key: tuple[str, str]) -> dict[str, Cause]:
        """Query id -> why it missed at ``miss_k``, for the missed questions of one evaluation."""
        found = self.misses_of(key)
        return {c.query_id: c for c in found.causes} if found is not None else {}

    def to_dict(self) -> dict[str, Any]:
        """Its exact form, less each evaluation's per-question values: results.json holds those
        once, under each question, and ``archive/saved.load_saved`` restores them from there."""
        d = to_plain(self)
        for x in d["recorded"]:
            del x["values"]
        return d

    @classmethod
    def from_dict(cls, d: Any) -> "Analysis | None":
        """The recorded analysis; None for one of another form (it is then made again)."""
        if not isinstance(d, dict) or d.get("version") != ANALYSIS_VERSION:
            return None
        return from_plain(cls, d)


def basis(run: RunResults, settings: GateSettings, baseline: RunResults | None) -> str:
    """A digest of everything an analysis depends on: the run's source of truth (what
    results.json records of it), the settings, and the baseline's rankings."""
    def of(r: RunResults, timing: bool) -> list:
        return [[e.to_dict(timing=timing) for e in r.evaluations], r.judgments, r.coverage, r.metrics_fingerprint,
                [x.to_dict() for x in r.lint]]

    judged = {k: v for k, v in settings.to_dict().items() if k != "inconclusive"}  # what the gate makes of it only
    text = json.dumps([of(run, settings.latency), judged,
                       of(baseline, False) if baseline is not None else None], sort_keys=True, default=str)
    return sha256_text(text)


def analyse(run: RunResults, settings: GateSettings, baseline: RunResults | None = None) -> Analysis:
    """Every derived quantity of ``run`` under ``settings`` (columns as recorded, else the default
    ones for the run), against ``baseline`` where there is one."""
    from .approximate import corpus_size, index_gap, under_return
    from .ceiling import ceiling_of
    from .cost import latency_of, usage_of
    from .curves import curves_of
    from ..evaluation.judging import used
    from .freshness import freshness_findings
    from .judged import judged_of
    from .recorded import recorded_of
    from .segments import segment_rows, segment_rules, unknown_tags
    from .stability import stability_of, trial_passes
    from .set_signal import warnings as set_warnings
    from .subset import subset_drops
    from .rewrites import fidelity_of, oracle_gaps
    from .unanswerable import unanswered_of

    s = settings
    measures = s.columns(run)
    thresholds, max_drops, alpha = s.thresholds, s.max_drops, s.alpha
    needed = list(dict.fromkeys([*measures, *measures_needed(thresholds), *turn_measures(thresholds)]))
    gated = measures_needed(thresholds) if s.confidence == "lower" else []
    miss_k = s.miss_k or s.miss_cutoff(measures)
    for e in run.evaluations:  # every measure read below, scored in one pass per evaluation
        Scores.of(e).prefetch([*needed, *(d.measure for d in max_drops), f"hit@{miss_k}"])
    latency = {e.key: latency_of(e) for e in run.evaluations} if s.latency else {}
    usage = {e.key: usage_of(e, s.prices) for e in run.evaluations}
    spread_of = per_question(dict.fromkeys([*measures, *measures_needed(thresholds), *(d.measure for d in max_drops)]))
    stability = tuple(x for e in run.evaluations if (x := stability_of(e, miss_k, spread_of)) is not None)
    moved = {(x.engine, x.labeled): x for x in stability}
    rows = tuple(with_costs(row_of(e, needed, gated, thresholds, moved.get(e.key)), thresholds, latency.get(e.key),
                            usage.get(e.key), s.latency) for e in run.evaluations)
    shown = [*measures, *_recorded(s), f"hit@{miss_k}", *gated]
    intervals = tuple(Intervals(e.engine, e.labeled.name, {m: Scores.of(e).ci(m) for m in dict.fromkeys(
        Measure.parse(x).name for x in shown) if Scores.of(e).has_value(m)}) for e in run.evaluations)
    # the comparisons with the baseline the noise-aware gate corrects a drop's p over
    compared_family = len(run.evaluations) * len(baseline_measures(measures, max_drops)) \
        if max_drops or baseline is not None else 1
    warnings = [*underpowered(run, max_drops, alpha, comparisons=compared_family, correction=s.correction),
                *unknown_tags(run, s.by)]
    judgments = used(run)
    if judgments is not None:  # a judge that agrees too little with the humans, stale judgments
        warnings += judgments.warnings()
    sweeps: tuple = ()
    if s.sweeps:
        from .sweep import sweep_tables

        sweeps = tuple(sweep_tables(run, s.sweeps, latency, s.correction))
    shadows, shadow_problems = [], []
    if s.shadows or judges_shadows(thresholds):
        from .shadow import shadows as compare_shadows

        shadows, shadow_problems = compare_shadows(run, s.shadows, s.weights,
                                                   per_question(dict.fromkeys([*measures, *shadow_measures(thresholds)])))
    found = set_findings(run, f"hit@{miss_k}")
    warnings += set_warnings(found)  # the metadata-only baseline as good as the best engine
    compared = None
    if baseline is not None:
        from .baseline import compare

        compared = compare(run, baseline, baseline_measures(measures, max_drops), force=s.baseline_force,
                           correction=s.correction)
        warnings += compared.warnings
    gated_per_question = per_question(gated_measures(thresholds, max_drops))
    powerless = tuple(powerless_sets(run, alpha, bool(gated_per_question) or baseline is not None))
    cannot = {x.labeled for x in powerless}
    analysis = Analysis(
        basis=basis(run, s, baseline), measures=tuple(measures), miss_k=miss_k, rows=rows, intervals=intervals,
        comparisons=tuple(replace(c, significant=c.labeled not in cannot and significant(c, alpha))
                          for c in comparisons(run, per_question(measures), s.correction)),
        misses=tuple(Scores.of(e).misses(miss_k) for e in run.evaluations),
        rule_misses=tuple(Scores.of(e).misses(k) for k in _rule_cutoffs(thresholds, miss_k) for e in run.evaluations
                          if e.n and any(t.engine in (None, e.engine) for t in thresholds)),
        detectable=tuple(d for d in detectable_drops(run, gated_per_question, alpha, comparisons=compared_family,
                                                     correction=s.correction) if d.labeled not in cannot),
        warnings=tuple(warnings),
        segments=tuple(segment_rows(run, s.by, f"hit@{miss_k}", alpha=alpha, correction=s.correction)),
        stability=stability,
        sweeps=sweeps, shadows=tuple(shadows), shadow_problems=tuple(shadow_problems),
        latency=tuple(x for x in latency.values() if x is not None),
        usage=tuple(x for x in usage.values() if x is not None), baseline=compared,
        estimates=tuple(estimates_of(run, [*shown, *measures_needed(thresholds)])),
        ceilings=tuple(c for e in run.evaluations if (c := ceiling_of(e, miss_k)) is not None),
        labeled_set=tuple(found),
        subset=tuple(subset_drops(run, alpha)),
        evidence_misses=tuple(Scores.of(e).evidence_misses(miss_k) for e in run.evaluations if e.returns_passages
                              and any(Measure.parse(m).evidence for m in needed)),
        evidence_rule_misses=tuple(Scores.of(e).evidence_misses(k) for k in _evidence_cutoffs(thresholds, miss_k)
                                   for e in run.evaluations if e.returns_passages
                                   and any(t.engine in (None, e.engine) for t in thresholds)),
        handed=tuple(Handed(e.engine, e.labeled.name, miss_k, Scores.of(e).tokens_at(miss_k)) for e in run.evaluations
                     if e.returns_passages),
        turns=tuple(turns_of(run, per_question([*measures, f"hit@{miss_k}", *turn_measures(thresholds)]))),
        oracle_gaps=tuple(oracle_gaps(run, f"hit@{miss_k}")), rewrites=tuple(fidelity_of(run, miss_k)),
        recorded=tuple(recorded_of(e, _recorded(s)) for e in run.evaluations),
        judged=tuple(judged_of(run, s, measures)), curves=curves_of(run), baseline_curves=curves_of(baseline),
        freshness=tuple(freshness_findings(run, measures)), trial_passes=tuple(trial_passes(stability, thresholds)),
        segment_rules=tuple(segment_rules(run, thresholds, alpha)),
        judgment_lines=tuple(judgments.lines()) if judgments is not None else (),
        judge=judgments.judge.describe() if judgments is not None else "",
        unanswered=tuple(unanswered_of(run, miss_k)), powerless=powerless,
        index_gaps=tuple(g for e in run.evaluations
                         if (g := index_gap(e, miss_k, Scores.of(e).misses(miss_k).causes, timed=s.latency))),
        under_returns=tuple(u for e in run.evaluations if (u := under_return(e, miss_k, corpus_size(run)))))
    return replace(analysis, unsettled=tuple(unsettled_of(run, s, analysis)))


def unsettled_of(run: RunResults, s: GateSettings, a: Analysis) -> list[Unsettled]:
    """The rules judged with their interval whose interval straddles their line (``Analysis.unsettled``):
    thresholds and ``turns.drop`` rules with ``--retrieval-confidence=lower``, max-drop rules with
    ``--retrieval-noise-aware``."""
    from .unsettled import unsettled_drops, unsettled_thresholds, unsettled_turns

    out = []
    if s.confidence == "lower":
        out += unsettled_thresholds(run, a.rows, s.thresholds, a.estimates) + unsettled_turns(a.turns, s.thresholds)
    if s.noise_aware and a.baseline is not None and not a.baseline.refused:
        spreads = {(x.engine, m): x.width(m) for x in a.stability for m in x.spread}  # as the gate reads them
        out += unsettled_drops(run, s.max_drops, a.baseline.diffs, a.baseline.segments, alpha=s.alpha, spreads=spreads)
    return out


def significant(c: Comparison, alpha: float) -> bool:
    """Whether a comparison of two engines is significant at ``alpha``: its p corrected over the
    run's grid of comparisons (the raw p where none was corrected) below it."""
    p = c.p if math.isnan(c.p_adjusted) else c.p_adjusted
    return bool(p < alpha)


def turns_of(run: RunResults, measures: Sequence[str]) -> list[ByTurn]:
    """Each evaluation of a set with conversations, turn by turn, per measure (``analysis/turns.py``)."""
    from .turns import by_turn

    names = list(dict.fromkeys(Measure.parse(m).name for m in measures))
    return [x for e in run.evaluations if e.labeled.has_conversations for m in names
            if (x := by_turn(e, m)) is not None]


def set_findings(run: RunResults, measure: str) -> list[SetFinding]:
    """The labeled set's findings: those recorded with the run's coverage, then the rankings' own."""
    from .set_signal import set_signal

    recorded = [SetFinding(kind, tuple(ids), detail) for kind, ids, detail in (run.coverage or {}).get("checks", ())]
    return [*recorded, *set_signal(run, measure)]


def baseline_measures(measures: Sequence[str], max_drops: Sequence[MaxDrop]) -> list[str]:
    """What a run is compared with its baseline on: the table's columns and the max-drop rules'
    measures, each with a value per question; the noise-aware gate corrects over all of them."""
    return per_question(dict.fromkeys([*measures, *(d.measure for d in max_drops)]))


def per_question(measures: Any) -> list[str]:
    """The measures with a value per question (what paired tests, spreads and drops read): all
    but the prediction-powered estimates (``~ppi``), which exist only over the questions."""
    return [m for m in measures if not Measure.parse(m).ppi]


def estimates_of(run: RunResults, measures: Sequence[str]) -> list[Estimate]:
    """Every evaluation's prediction-powered estimate of each ``~ppi`` measure among ``measures``."""
    from ..evaluation.judging import used

    wanted = list(dict.fromkeys(m.name for m in map(Measure.parse, measures) if m.ppi))
    judgments = used(run) if wanted else None
    judge = f"{judgments.judge.model} ({judgments.judge.fingerprint})" if judgments is not None else ""
    return [Estimate(e.engine, e.labeled.name, m, found, judge) for e in run.evaluations for m in wanted
            if (found := Scores.of(e).ppi(m)) is not None]


def _recorded(s: GateSettings) -> list[str]:
    from ..evaluation.results import measure_names

    return measure_names(s.recorded_measures)


def _evidence_cutoffs(thresholds: Sequence[Threshold], miss_k: int) -> list[int]:
    """The cutoffs of the rules on an evidence-level measure (``hit@1+evidence``)."""
    return list(dict.fromkeys(q.measure.k or miss_k for t in thresholds
                              if isinstance(q := t.quantity, MeasureQuantity) and q.measure.evidence
                              and not t.segment))


def _rule_cutoffs(thresholds: Sequence[Threshold], miss_k: int) -> list[int]:
    """The cutoffs of the rules on a retrieval measure other than ``miss_k``: a failure of one of
    them is shown with its engine's misses at its own cutoff."""
    out = []
    for t in thresholds:
        q = t.quantity
        if isinstance(q, TurnsQuantity) and q.measure.family == "hit" and q.measure.unit is None and q.measure.labels is None:
            q = MeasureQuantity(q.measure)  # a drop on hit@k names its follow-ups' misses at k
        if isinstance(q, MeasureQuantity) and not (q.measure.freshness or q.measure.count or t.segment):
            k = q.measure.k or miss_k
            if k != miss_k:
                out.append(k)
    return list(dict.fromkeys(out))
