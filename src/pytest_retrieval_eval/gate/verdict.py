"""From a run's results to a verdict: the table's rows, engine comparisons, the baseline diff,
and every reason the gate fails. Shared by the pytest session and ``python -m
pytest_retrieval_eval report``, so both give the same answer and the same exit code."""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace
from typing import Sequence

from .baseline import BaselineComparison, compare
from .rules import (Breach, LatencyQuantity, MaxDrop, Row, Threshold, UsageQuantity, check, check_coverage, check_drops, check_lint,
                    check_segments, check_shadows, judges_shadows, measures_needed, shadow_measures)
from .settings import FRESHNESS_K, GateSettings, table_measures  # noqa: F401  (FRESHNESS_K, table_measures: re-exported)
from ..ir.measures import DEFAULT_TABLE_MEASURES, Measure
from ..ir.stats import CORRECTION_NAMES, POWER, detectable_drop, queries_needed
from ..run.lint import KINDS as RUN_LINT_KINDS
from ..run.results import Comparison, RunResults


@dataclass(frozen=True)
class Detectable:
    """The smallest drop of ``measure`` the gate can tell from noise for one engine, at the run's
    alpha with 80% power (``ir.stats.detectable_drop``)."""

    engine: str
    labeled: str
    measure: str
    drop: float
    n: int

    def __str__(self) -> str:
        return f"{self.engine} {self.measure} {self.drop:.3f}"


def gated_measures(thresholds: Sequence[Threshold], max_drops: Sequence[MaxDrop]) -> list[str]:
    """The measures rules judge, max-drop rules first (none without rules: the table stays short)."""
    return list(dict.fromkeys([d.measure for d in max_drops] + measures_needed(thresholds)))


def detectable_drops(run: RunResults, measures: Sequence[str], alpha: float) -> list[Detectable]:
    return [Detectable(e.engine, e.labeled.name, m, detectable_drop(e.values(m), alpha=alpha), e.n)
            for e in run.evaluations for m in measures if e.n > 1]


def underpowered(run: RunResults, max_drops: Sequence[MaxDrop], alpha: float) -> list[str]:
    """A warning per max-drop rule whose delta is below what the labeled set can detect: the gate
    then either misses real drops of that size or (without --retrieval-noise-aware) fails on noise."""
    from ..run.segments import subset

    out = []
    for rule in max_drops:
        for e in run.evaluations:
            if rule.engine and e.engine != rule.engine:
                continue
            ids = [q.query_id for q in e.labeled.queries if rule.segment is None or rule.segment in q.tags]
            values = subset(e, rule.measure, ids)  # a segment rule: its segment's questions
            if len(values) < 2:
                continue
            mdd = detectable_drop(values, alpha=alpha)
            if rule.delta < mdd:
                need = (f"a drop of {rule.delta:g} needs about {queries_needed(values, rule.delta, alpha=alpha)} "
                        "queries") if rule.delta > 0 else "no number of queries tells any drop at all from noise"
                on = f"{e.labeled.name}[{rule.segment}]" if rule.segment else e.labeled.name
                out.append(f"max-drop rule {rule} (from {rule.source}): {e.engine} on {on} can only "
                           f"detect a drop of {mdd:.3f} in {rule.measure} with {len(values)} queries ({POWER:.0%} "
                           f"power, alpha {alpha:g}); {need}")
    return out


@dataclass
class Verdict:
    run: RunResults
    measures: list[str]
    rows: list[Row]
    comparisons: list[Comparison]
    #: what the run was judged by
    settings: GateSettings = field(default_factory=GateSettings)
    breaches: list[Breach] = field(default_factory=list)
    detectable: list[Detectable] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)  # underpowered max-drop rules; freshness across days
    baseline: BaselineComparison | None = None
    drop_failures: list[str] = field(default_factory=list)
    other_failures: list[str] = field(default_factory=list)  # lost xdist workers
    lint: list = field(default_factory=list)  # lint.LintReport per ingestion
    lint_failures: list[str] = field(default_factory=list)
    shadows: list = field(default_factory=list)  # run.shadow.Shadow per configured pair and labeled set
    shadow_failures: list[str] = field(default_factory=list)
    #: the cutoff misses are counted at, and each evaluation's misses by cause (``run.causes.Misses``)
    miss_k: int = 10
    misses: list = field(default_factory=list)
    #: a row per segment asked for (``--retrieval-by``) and engine (``run.segments.SegmentRow``)
    segments: list = field(default_factory=list)
    segment_failures: list[str] = field(default_factory=list)
    coverage_failures: list[str] = field(default_factory=list)
    #: per evaluation, its call times (``run.cost.Latency``; with ``--retrieval-latency``) and its
    #: HTTP calls, tokens and cost (``run.cost.Usage``; where the plugin counted calls), in run order
    latency: list = field(default_factory=list)
    usage: list = field(default_factory=list)
    #: with repeated trials, per evaluation how much it moved on its own (``run.stability.Stability``)
    stability: list = field(default_factory=list)
    #: a table per sweep and labeled set (``run.sweep.SweepTable``)
    sweeps: list = field(default_factory=list)

    @property
    def alpha(self) -> float:
        return self.settings.alpha

    @property
    def miss_measure(self) -> str:
        """``hit@K`` at the cutoff misses are counted at: what the trend and the segments chart."""
        return f"hit@{self.miss_k}"

    @property
    def correction(self) -> str:
        return self.settings.correction

    @property
    def confidence(self) -> str:
        return self.settings.confidence

    @property
    def failures(self) -> list[str]:
        out = list(self.other_failures)
        out += [f"{r.engine}: labeled set {r.labeled} is empty; nothing was measured" for r in self.rows if r.n == 0]
        out += [str(b) for b in self.breaches]
        if self.baseline is not None:
            out += [f"baseline refused: {r}; re-save the baseline, or compare anyway with --retrieval-baseline-force"
                    for r in self.baseline.refusals]
        return (out + self.drop_failures + self.lint_failures + self.shadow_failures + self.segment_failures
                + self.coverage_failures)

    @property
    def failed(self) -> bool:
        return bool(self.failures)

    def correction_text(self) -> str:
        """How the table's marks were corrected, e.g. ``Holm-Bonferroni over 18 comparisons``."""
        return f"{CORRECTION_NAMES[self.correction]} over {len(self.comparisons)} comparisons"


def _why(e, measure: str) -> str:
    lines = [line.strip() for line in e.freshness_lines(Measure.parse(measure), limit=10)]
    return lines[0] + (f" ({'; '.join(lines[1:])})" if len(lines) > 1 else "") if lines else ""


def _stale(e) -> dict:
    """The questions of ``e``'s labeled set left out as stale: id -> what changed."""
    return dict(e.labeled.provenance.get("stale_left_out") or {})


def _stale_names(e) -> dict[str, str]:
    """How messages name those of them whose ids were made from their text (``types.query_name``)."""
    return dict(e.labeled.provenance.get("stale_names") or {})


def _with_costs(row: Row, thresholds: Sequence[Threshold], latency, usage, timed: bool) -> Row:
    """``row`` with the latency (ms) and usage figures its rules judge, NaN (with why) where the
    run has none: such a rule fails rather than passing unchecked."""
    values, details = dict(row.values), dict(row.details)
    for t in thresholds:
        q = t.quantity
        if isinstance(q, LatencyQuantity):
            if latency is None:
                values[t.measure] = math.nan
                details[t.measure] = ("the run did not time its calls" if timed else
                                      "the run did not time its calls: run with --retrieval-latency")
            else:
                values[t.measure] = latency.ms(q.statistic)
                details[t.measure] = f"measured at {latency.measured_at}"
        elif isinstance(q, UsageQuantity):
            if usage is None:
                values[t.measure] = 0.0  # no HTTP call was counted for the engine: none was made
                details[t.measure] = "the plugin counted no HTTP call for this engine"
                continue
            values[t.measure] = usage.per_query(q.figure) if q.per == "per_query" else usage.total(q.figure)
            details[t.measure] = (f"{usage.calls} calls, {usage.tokens} tokens over {usage.n} queries"
                                  + (f"; no price for {', '.join(usage.unpriced)} (--retrieval-prices)"
                                     if q.figure == "cost" and usage.unpriced else ""))
    return replace(row, values=values, details=details)


def judge(run: RunResults, settings: GateSettings | None = None, *, measures: Sequence[str] | None = None,
          baseline: RunResults | None = None, other_failures: Sequence[str] = (), **changes) -> Verdict:
    """The verdict on ``run`` under ``settings`` (``changes``: fields of it replaced, e.g.
    ``correction="bh"``), with ``measures`` as the table's columns (default: the settings')."""
    s = replace(settings or GateSettings(), **changes)
    measures = list(measures) if measures is not None else s.columns(run)
    thresholds, max_drops, alpha = s.thresholds, s.max_drops, s.alpha
    needed = list(dict.fromkeys([*measures, *measures_needed(thresholds)]))
    gated = measures_needed(thresholds) if s.confidence == "lower" else []
    from ..run.cost import latency_of, usage_of

    miss_k = s.miss_k or s.miss_cutoff(measures)
    for e in run.evaluations:  # every measure the verdict reads, scored in one pass per evaluation
        e.prefetch([*needed, *(d.measure for d in max_drops), f"hit@{miss_k}"])
    latency = {e.key: latency_of(e) for e in run.evaluations} if s.latency else {}
    usage = {e.key: usage_of(e, s.prices) for e in run.evaluations}
    rows = [Row(e.engine, e.labeled.name, {**{m: e.mean(m) for m in needed},
                                           **{f"run.{k}": float(len(e.run_lint.get(k, ()))) for k in RUN_LINT_KINDS},
                                           "stale": float(len(_stale(e)))},
                e.n, e.n_errored, {m: e.ci(m) for m in gated},
                {**{m: _why(e, m) for m in measures_needed(thresholds) if Measure.parse(m).freshness},
                 **({"stale": "left out: " + "; ".join(f"{_stale_names(e).get(q, q)} ({', '.join(w)})"
                                                      for q, w in _stale(e).items())}
                    if _stale(e) else {})})
            for e in run.evaluations]
    rows = [_with_costs(row, thresholds, latency.get(e.key), usage.get(e.key), s.latency)
            for row, e in zip(rows, run.evaluations)]
    verdict = Verdict(run, measures, rows, run.comparisons(measures, s.correction), s,
                      breaches=check(thresholds, rows, confidence=s.confidence),
                      other_failures=[*s.failures, *other_failures], lint=list(run.lint),
                      lint_failures=check_lint(thresholds, run.lint),
                      detectable=detectable_drops(run, gated_measures(thresholds, max_drops), alpha),
                      warnings=underpowered(run, max_drops, alpha))
    from ..run.judging import used
    from ..run.segments import segment_rows, unknown_tags

    verdict.latency = [x for x in latency.values() if x is not None]
    if s.sweeps:
        from ..run.sweep import sweep_tables

        verdict.sweeps = sweep_tables(run, s.sweeps, latency, s.correction)
    verdict.usage = [x for x in usage.values() if x is not None]
    verdict.miss_k = miss_k
    verdict.misses = [e.misses(verdict.miss_k) for e in run.evaluations]
    from ..run.stability import stability_of

    spread_of = list(dict.fromkeys([*measures, *measures_needed(thresholds), *(d.measure for d in max_drops)]))
    verdict.stability = [x for e in run.evaluations if (x := stability_of(e, verdict.miss_k, spread_of)) is not None]
    verdict.segments = segment_rows(run, s.by, f"hit@{verdict.miss_k}", alpha=alpha, correction=s.correction)
    verdict.warnings += unknown_tags(run, s.by)
    verdict.segment_failures = check_segments(thresholds, run, alpha)
    verdict.coverage_failures = check_coverage(thresholds, run.coverage)
    judgments = used(run)
    if judgments is not None:  # a judge that agrees too little with the humans, stale judgments
        verdict.warnings += judgments.warnings()
    if s.shadows or judges_shadows(thresholds):
        from ..run.shadow import shadows as compare_shadows

        verdict.shadows, problems = compare_shadows(run, s.shadows, s.weights,
                                                    list(dict.fromkeys([*measures, *shadow_measures(thresholds)])))
        verdict.shadow_failures = problems + check_shadows(thresholds, verdict.shadows)
    if baseline is not None:
        compared = list(dict.fromkeys([*measures, *(d.measure for d in max_drops)]))
        verdict.baseline = compare(run, baseline, compared, force=s.baseline_force, correction=s.correction)
        verdict.warnings += verdict.baseline.warnings
    # without a baseline (none loaded: nothing was evaluated, or it is unusable) nothing was
    # compared, so a rule naming an engine fails by name rather than passing unchecked
    spreads = {(x.engine, m): x.width(m) for x in verdict.stability for m in x.spread}
    verdict.drop_failures, within = check_drops(max_drops, verdict.baseline.diffs if verdict.baseline else [],
                                                segments=verdict.baseline.segments if verdict.baseline else [],
                                                noise_aware=s.noise_aware, alpha=alpha, spreads=spreads)
    verdict.warnings += within
    return verdict


def record_settings(run: RunResults, settings: GateSettings | None = None, *,
                    configured: Sequence[Measure] = DEFAULT_TABLE_MEASURES, **changes) -> RunResults:
    """Store on ``run`` how it is to be judged and rendered (``settings`` with ``changes``, and
    the table's columns for it), so a saved results.json is judged again (``judge_recorded``)
    exactly as the live run was."""
    run.settings = replace(settings or GateSettings(), **changes).for_run(run, configured)
    return run


def judge_recorded(run: RunResults, *, baseline: RunResults | None = None,
                   extra_failures: Sequence[str] = ()) -> Verdict:
    """The verdict on a run under the settings stored on it (see ``record_settings``)."""
    return judge(run, GateSettings.of(run), baseline=baseline, other_failures=extra_failures)
