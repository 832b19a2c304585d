"""The end-of-run section of the terminal: table, engine configurations, baseline, gate verdict."""

from __future__ import annotations

import textwrap
from typing import Any, Mapping

from . import cost, shadow, sweep, table
from .errors import error_lines
from .judged import candidate_lines, judged_lines, stale_lines
from .misses import coverage_lines, miss_lines, segment_lines

#: segments that fell against the baseline, shown in the terminal (results.md has them all)
SEGMENTS_SHOWN = 10


def write_summary(tr: Any, outcome: Any, *, report: bool, thresholds: int, unavailable: Mapping[str, str],
                  verbosity: int = 0) -> None:
    verdict = outcome.verdict
    for line in outcome.workers_said:  # under xdist: the workers' store lines, which only they printed
        tr.write_line(f"retrieval: {line}")
    if report or outcome.failed or verdict.baseline is not None or verdict.shadows:
        tr.write_sep("-", "retrieval evaluation")
    if report:
        if verdict.rows:
            for line in table.render(verdict, ci=verbosity >= 0):
                tr.write_line(line)
            if verbosity >= 0:
                for line in table.describe_engines(verdict.run.evaluations):
                    tr.write_line(line)
            for line in (stale_lines(verdict) + judged_lines(verdict) + candidate_lines(verdict.run)
                         + miss_lines(verdict) + segment_lines(verdict) + coverage_lines(verdict)
                         + cost.lines(verdict) + sweep.lines(verdict)):
                tr.write_line(line)
        else:
            tr.write_line("no retrieval evaluations were recorded in this run")
        for name, why in unavailable.items():
            tr.write_line(f"engine {name} not available: {why}", yellow=True)
    if report:
        for line in cost.run_lines(getattr(outcome, "run_usage", None)):
            tr.write_line(line)
        for line in trial_lines(verdict, thresholds_of(outcome)):
            tr.write_line(line)
        for line in lint_lines(verdict, limit=3 if verbosity >= 0 else 0):
            tr.write_line(line)
        for line in run_lint_lines(verdict, limit=3 if verbosity >= 0 else 0):
            tr.write_line(line)
    if not report:
        for warning in verdict.warnings:
            tr.write_line(f"warning: {warning}", yellow=True)
    if verdict.baseline is not None:
        for line in baseline_lines(verdict):
            tr.write_line(line)
    for line in shadow.terminal_lines(verdict):
        tr.write_line(line)
    for note in outcome.notes:
        tr.write_line(f"note: {note}", yellow=True)
    for warning in outcome.warnings:
        tr.write_line(f"warning: {warning}", yellow=True)
    if thresholds and not verdict.rows and not outcome.failed:
        tr.write_line(f"retrieval gate: no evaluations recorded; {thresholds} threshold(s) not checked", yellow=True)
    errors = error_lines(verdict)
    if errors and not (report or outcome.failed or verdict.baseline is not None or verdict.shadows):
        tr.write_sep("-", "retrieval evaluation")
    for line in errors:
        tr.write_line(line, red=True)
    for failure in outcome.failures:
        tr.write_line(f"FAIL retrieval gate: {failure}", red=True, bold=True)
    if (thresholds or verdict.baseline is not None) and verdict.rows and not outcome.failed:
        tr.write_line("retrieval gate: passed", green=True)


def baseline_lines(verdict: Any) -> list[str]:
    """What moved against the baseline, measure by measure (only what changed)."""
    comparison = verdict.baseline
    lines = [f"against the baseline (p corrected: {table.CORRECTION_NAMES[comparison.correction]} over "
             f"{len(comparison.diffs)} comparisons):"]
    moved = [d for d in comparison.diffs if d.moved]
    lines += [f"  {d.describe()}" for d in moved] or ["  no measure moved"]
    fell = comparison.regressed_segments(verdict.alpha)
    if fell:
        lines.append(f"  segments that fell (p corrected over {len(comparison.segments)} segment comparisons; the total "
                     "held, or beyond noise):")
        lines += [f"    {d.describe(verdict.alpha)}" for d in fell[:SEGMENTS_SHOWN]]
        lines += [f"    ... and {len(fell) - SEGMENTS_SHOWN} more"] if len(fell) > SEGMENTS_SHOWN else []
    lines += [f"  note: {n}" for n in comparison.notes]
    return lines


def run_lint_lines(verdict: Any, *, limit: int = 3) -> list[str]:
    """Per engine with findings: the counts of run lint, then the first queries of each kind."""
    lines = []
    for e in verdict.run.evaluations:
        found = {k: v for k, v in e.run_lint.items() if v}
        if not found:
            continue
        lines.append(f"run lint, {e.engine}: " + ", ".join(f"{k} {len(v)}" for k, v in found.items()) + " (queries)")
        lines += [f"  {k}: {', '.join(v[:limit])}{' ...' if len(v) > limit else ''}" for k, v in found.items() if limit]
    return lines


def lint_lines(verdict: Any, *, limit: int = 3) -> list[str]:
    """Per ingestion: the counts, then the first findings of each kind."""
    lines = []
    for report in verdict.lint:
        lines.append(report.summary())
        shown: dict[str, int] = {}
        for f in report.findings:
            shown[f.kind] = shown.get(f.kind, 0) + 1
            if shown[f.kind] <= limit:
                lines.append(f"  {f}")
        lines += [f"  ... and {n - limit} more {kind}" for kind, n in shown.items() if n > limit and limit]
    return lines


def thresholds_of(outcome: Any) -> list:
    return list(getattr(outcome, "thresholds", []) or [])


def pass_at_k(n: int, c: int, k: int) -> float:
    """Unbiased estimate, from n trials with c passes, that at least one of k trials passes."""
    from math import comb

    return 1.0 - comb(n - c, k) / comb(n, k)


def pass_hat_k(n: int, c: int, k: int) -> float:
    """Unbiased estimate, from n trials with c passes, that all of k trials pass."""
    from math import comb

    return comb(c, k) / comb(n, k)


def trial_lines(verdict: Any, thresholds: list) -> list[str]:
    """With repeated trials: each measure's spread, and pass@k / pass^k of each threshold."""
    lines = []
    evaluations = {(e.engine, e.labeled.name): e for e in verdict.run.evaluations}
    for st in verdict.stability:
        e = evaluations[(st.engine, st.labeled)]
        n = st.trials
        spread = ", ".join(f"{m} {lo:.3f}-{hi:.3f} (sd {sd:.3f})" for m, (lo, hi, sd) in st.spread.items()
                           if m in verdict.measures)
        lines += textwrap.wrap(f"{e.engine}: {n} trials: {spread}", width=80, subsequent_indent="    ")
        shown = ", ".join(st.changed[:5]) + (f" and {len(st.changed) - 5} more" if len(st.changed) > 5 else "")
        lines += textwrap.wrap(f"top {st.k} changed between trials for {len(st.changed)} of {st.n} questions "
                               f"({st.share:.1%})" + (f": {shown}" if shown else ": the engine answers the same "
                                                                                  "every time"),
                               width=80, initial_indent="  ", subsequent_indent="    ", break_on_hyphens=False)
        trials = st.means
        if not thresholds:
            lines.append("  (pass@k / pass^k need a rule: --retrieval-threshold [ENGINE:]MEASURE>=VALUE)")
        for t in thresholds:
            if t.engine not in (None, e.engine) or t.measure not in trials:
                continue
            c = sum(1 for v in trials[t.measure] if t.holds(v))
            at = ", ".join(f"pass@{k} {pass_at_k(n, c, k):.2f}" for k in range(1, n + 1))
            hat = ", ".join(f"pass^{k} {pass_hat_k(n, c, k):.2f}" for k in range(1, n + 1))
            lines += textwrap.wrap(f"{t}: passed {c}/{n} trials; {at}; {hat}", width=80,
                                   initial_indent="  ", subsequent_indent="    ")
    return lines



