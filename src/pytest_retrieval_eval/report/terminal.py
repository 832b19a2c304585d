"""The end-of-run section of the terminal, verdict first and detail with ``-v``.

By default (pytest's verbosity 0) a reader gets what a red or green run turns on: the table with
its intervals, one misses line per engine, the sections the run asked for (segments with
``--retrieval-by``, cost and latency with ``--retrieval-latency`` or prices, trials, judged@k and
what ``~ppi`` rests on with a judgments file), the first warnings, engine errors, and the verdict
with each failure and its cause, within ``WIDTH`` columns. ``-v`` adds what was not asked for: the
differences, the engine configurations, judged@k, segments, coverage, cost, sweeps and lint
findings (all of them also in results.md); ``-q`` leaves out the intervals as well.
"""

from __future__ import annotations

import textwrap
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Mapping

from . import ceiling, cost, shadow, sweep, table, turns, turns_given, unanswerable
from .errors import error_lines
from .judged import asked_judged_lines, candidate_lines, judged_lines, stale_lines
from . import labeled_set
from .labeled_set import subset_lines
from .misses import coverage_lines, miss_lines, segment_lines

if TYPE_CHECKING:  # the gate's verdict, read here; imported only by type checkers
    from ..gate.verdict import Verdict

#: segments that fell against the baseline, shown in the terminal (results.md has them all)
SEGMENTS_SHOWN = 10
#: the widest line the default summary writes (a failure line is never cut: it is the verdict)
WIDTH = 88
#: the longest heading pytest's 80 columns still set between rules of three dashes or more
HEADING = 72
#: warnings and notes shown by default (wrapped within ``WIDTH``); beyond, a count and the way to see them
NOTICES_SHOWN = 3


@dataclass
class Outcome:
    """The reporting process's end of run: the verdict (which holds what the run's ending noted,
    its warnings and its HTTP calls, as results.json keeps them), plus what only the plugin's session
    prints: the workers' store lines and the history folder's files that are not records."""

    verdict: Verdict
    #: what only the workers printed (their store lines), for the controller to print
    workers_said: list[str] = field(default_factory=list)
    session_warnings: list[str] = field(default_factory=list)

    notes = property(lambda self: list(self.verdict.notes))
    warnings = property(lambda self: [*self.verdict.run_warnings, *self.session_warnings])
    #: the run's HTTP calls in all (``analysis.cost.RunUsage``), the engines' and those no question claims
    run_usage = property(lambda self: self.verdict.run_usage)
    thresholds = property(lambda self: list(self.verdict.settings.thresholds))

    @property
    def failures(self) -> list[str]:
        return self.verdict.failures

    @property
    def failed(self) -> bool:
        return self.verdict.failed


class LineWriter:
    """The two calls ``write_summary`` makes of pytest's terminal reporter, on a plain stream: the
    ``report`` command prints a saved run's summary as the run printed it (pytest's ``sep``
    layout at its default 80 columns; no colour)."""

    def __init__(self, stream: Any, width: int = 80) -> None:
        self.stream, self.width = stream, width

    def write_line(self, line: str, **markup: bool) -> None:
        self.stream.write(line + "\n")

    def write_sep(self, sep: str, title: str, **markup: bool) -> None:
        fill = sep * max((self.width - len(title) - 2) // (2 * len(sep)), 1)
        line = f"{fill} {title} {fill}"
        self.write_line(line + sep.rstrip() if len(line) + len(sep.rstrip()) <= self.width else line)


def write_summary(tr: Any, outcome: Any, *, report: bool, thresholds: int, unavailable: Mapping[str, str],
                  verbosity: int = 0) -> None:
    verdict = outcome.verdict
    verbose = verbosity >= 1
    for line in outcome.workers_said:  # under xdist: the workers' store lines, which only they printed
        tr.write_line(f"retrieval: {line}")
    cautioned = not outcome.failed and verdict.state == "inconclusive" and verdict.settings.inconclusive == "warn"
    headed = bool(report or outcome.failed or cautioned or verdict.baseline is not None or verdict.shadows)
    if headed and (outcome.failed or cautioned):  # the verdict first, in the heading; each failure, cause last
        heading = f"retrieval evaluation: gate {_short(verdict)}"  # what the mode does: the last line says
        heading += " (causes at the end)" if len(heading) <= HEADING - len(" (causes at the end)") else ""
        tr.write_sep("-", heading, **({"red": True} if outcome.failed else {"yellow": True}), bold=True)
    elif headed:
        tr.write_sep("-", "retrieval evaluation")
    hidden: list[str] = []  # what -v would add, named in one line

    def detail(name: str, lines: list[str], asked: bool = False) -> list[str]:
        """``lines`` with ``-v``, or where the run asked for them (``asked``); else named in "more with -v"."""
        if lines and not (verbose or asked):
            hidden.append(name)
        return lines if verbose or asked else []

    s = verdict.settings
    judged = any(e.judge is not None for e in verdict.run.evaluations)  # a judgments file: judged@k was asked for

    if report:
        if verdict.rows:
            for line in table.render(verdict, ci=verbosity >= 0, detail=verbose):
                tr.write_line(line)
            if turns_given.line(verdict.run):  # conversations: which engines never saw the earlier turns
                tr.write_line(turns_given.line(verdict.run, WIDTH if not verbose else None))
            if not verbose:
                hidden += [name for name, left in (("differences", verbosity >= 0 and verdict.comparisons),
                                                    ("freshness queries", table.freshness_lines(verdict)),
                                                    ("detectable drops", verdict.detectable)) if left]
            for line in detail("engine configurations", table.describe_engines(verdict.run.evaluations)):
                tr.write_line(line)
            for line in (detail("stale questions", stale_lines(verdict))
                         + (judged_lines(verdict) if verbose else asked_judged_lines(verdict) if judged
                            else detail("judged@k", judged_lines(verdict)))
                         + detail("candidates", candidate_lines(verdict.run))):
                tr.write_line(line)
            for line in subset_lines(verdict):
                tr.write_line(line)
            for line in miss_lines(verdict):
                tr.write_line(line)
            for line in turns.terminal_lines(verdict):  # conversations: quality by turn, the drop
                tr.write_line(line)
            for line in unanswerable.terminal_lines(verdict):  # what came back where nothing is relevant
                tr.write_line(line)
            for line in (detail("recall by stage", ceiling.lines(verdict))
                         + detail("segments", segment_lines(verdict), asked=bool(s.by))
                         + detail("coverage", coverage_lines(verdict))
                         + detail("labeled set findings", labeled_set.lines(verdict))
                         + detail("cost", cost.lines(verdict), asked=s.latency or bool(s.prices))
                         + detail("sweeps", sweep.lines(verdict))):
                tr.write_line(line)
        else:
            tr.write_line("no retrieval evaluations were recorded in this run")
        for name, why in unavailable.items():
            for line in _fitted(f"engine {name} not available: {why}", verbose):
                tr.write_line(line, yellow=True)
        for line in detail("the run's HTTP calls", cost.run_lines(getattr(outcome, "run_usage", None))):
            tr.write_line(line)
        for line in detail("trials", trial_lines(verdict, thresholds_of(outcome)), asked=True):  # --retrieval-trials
            tr.write_line(line)
        shown = 3 if verbosity >= 0 else 0
        for line in lint_lines(verdict, limit=shown if verbose else 0):
            tr.write_line(line)
        for line in run_lint_lines(verdict, limit=shown if verbose else 0):
            tr.write_line(line)
        if not verbose and (any(r.findings for r in verdict.lint)
                            or any(v for e in verdict.run.evaluations for v in e.run_lint.values())):
            hidden.append("lint findings")
    if verdict.baseline is not None:
        for line in baseline_lines(verdict, fallen=verbose):
            tr.write_line(line)
        if not verbose and verdict.baseline.regressed_segments(verdict.alpha):
            hidden.append("segments that fell")
    for line in shadow.terminal_lines(verdict, full=verbose):
        tr.write_line(line)
    if verdict.shadows and not verbose:
        hidden.append("shadow details")
    # warnings: in full with -v (in the report, beside the detectable drops they qualify)
    warned = list(verdict.warnings) if not (report and verbose and verdict.rows and verdict.detectable) else []
    # the notes say how this run was set up (rules the command line replaced, workers merged): each is
    # shown; the warnings past NOTICES_SHOWN wait for -v
    notes = [f"note: {n}" for n in outcome.notes]
    notices = [f"warning: {w}" for w in warned] + [f"warning: {w}" for w in outcome.warnings]
    limit = len(notices) if verbose or len(notices) <= NOTICES_SHOWN + 1 else NOTICES_SHOWN
    for text in notes + notices[:limit]:
        for line in _fitted(text, verbose):
            tr.write_line(line, yellow=True)
    if len(notices) > limit:
        tr.write_line(f"... and {len(notices) - limit} more warnings (-v shows them)", yellow=True)
    if thresholds and not verdict.rows and not outcome.failed:
        tr.write_line(f"retrieval gate: no evaluations recorded; {thresholds} threshold(s) not checked", yellow=True)
    if hidden and verbosity == 0:
        for line in textwrap.wrap("more with -v: " + ", ".join(dict.fromkeys(hidden)), width=WIDTH,
                                  subsequent_indent="    "):
            tr.write_line(line)
    errors = error_lines(verdict)
    if errors and not headed:
        tr.write_sep("-", "retrieval evaluation")
    for line in errors:
        tr.write_line(line, red=True)
    for failure in outcome.failures:  # an inconclusive rule in red where it fails the run, else as a warning
        colour = {"red": True} if failure.state == "fail" or outcome.failed else {"yellow": True}
        tr.write_line(f"{failure.label} retrieval gate: {failure}", **colour, bold=True)
        for line in failure.causes:
            tr.write_line(line, **colour)
    if verdict.inconclusive:  # what --retrieval-inconclusive made of them, last
        tr.write_line(f"retrieval gate: {verdict.headline()}", **({"red": True} if outcome.failed else {"yellow": True}
                                                                  if cautioned else {"green": True}))
    elif (thresholds or verdict.baseline is not None) and verdict.rows and not outcome.failed:
        tr.write_line(f"retrieval gate: {verdict.headline()}", green=True)


def _short(verdict: Verdict) -> str:
    """The verdict counted, for the heading: ``FAILED, 2 failures``, ``FAILED, 1 failure, 1
    inconclusive``, ``FAILED, 1 inconclusive``, ``INCONCLUSIVE, 1 rule``."""
    n, m = len(verdict.failing), len(verdict.inconclusive)
    if n:
        return f"FAILED, {n} failure{'s' * (n != 1)}" + (f", {m} inconclusive" if m else "")
    return f"FAILED, {m} inconclusive" if verdict.failed else f"INCONCLUSIVE, {m} rule{'s' * (m != 1)}"


def _fitted(text: str, verbose: bool) -> list[str]:
    """A warning or note within ``WIDTH`` by default, wrapped, never cut (a cut one could print
    half a command); as one line with ``-v``, as before."""
    if verbose or len(text) <= WIDTH:
        return [text]
    return textwrap.wrap(text, width=WIDTH, subsequent_indent="    ", break_on_hyphens=False,
                         break_long_words=False) or [text]


def baseline_lines(verdict: Verdict, *, fallen: bool = True) -> list[str]:
    """What moved against the baseline, measure by measure (only what changed); with ``fallen``,
    the segments that fell too."""
    comparison = verdict.baseline
    if comparison.refused:  # nothing was compared: never "no measure moved"
        return (["against the baseline: refused, nothing compared (re-save the baseline, or compare anyway with "
                 "--retrieval-baseline-force)"] + [f"  refused: {r}" for r in comparison.refusals]
                + [f"  note: {n}" for n in comparison.notes])
    lines = [f"against the baseline (p corrected: {table.CORRECTION_NAMES[comparison.correction]} over "
             f"{len(comparison.diffs)} comparisons):"]
    moved = [d for d in comparison.diffs if d.moved]
    lines += [f"  {d.describe()}" for d in moved] or ["  no measure moved"]
    fell = comparison.regressed_segments(verdict.alpha) if fallen else []
    if fell:
        lines.append(f"  segments that fell (p corrected over {len(comparison.segments)} segment comparisons; the total "
                     "held, or beyond noise):")
        lines += [f"    {d.describe(verdict.alpha)}" for d in fell[:SEGMENTS_SHOWN]]
        lines += [f"    ... and {len(fell) - SEGMENTS_SHOWN} more"] if len(fell) > SEGMENTS_SHOWN else []
    lines += [f"  note: {n}" for n in comparison.notes]
    return lines


def run_lint_lines(verdict: Verdict, *, limit: int = 3) -> list[str]:
    """Per engine with findings: the counts of run lint, then the first queries of each kind."""
    lines = []
    for e in verdict.run.evaluations:
        found = {k: v for k, v in e.run_lint.items() if v}
        if not found:
            continue
        lines.append(f"run lint, {e.engine}: " + ", ".join(f"{k} {len(v)}" for k, v in found.items()) + " (queries)")
        lines += [f"  {k}: {', '.join(v[:limit])}{' ...' if len(v) > limit else ''}" for k, v in found.items() if limit]
    return lines


def lint_lines(verdict: Verdict, *, limit: int = 3) -> list[str]:
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


def trial_lines(verdict: Verdict, thresholds: list) -> list[str]:
    """With repeated trials: each measure's spread, and pass@k / pass^k of each threshold (the
    analysis's ``TrialPass``)."""
    lines = []
    for st in verdict.stability:
        n = st.trials
        # in the table's order (a saved analysis's mapping comes back in sorted order)
        spread = ", ".join(f"{m} {lo:.3f}-{hi:.3f} (sd {sd:.3f})" for m in verdict.measures if m in st.spread
                           for lo, hi, sd in [st.spread[m]])
        lines += textwrap.wrap(f"{st.engine}: {n} trials: {spread}", width=80, subsequent_indent="    ")
        shown = ", ".join(st.changed[:5]) + (f" and {len(st.changed) - 5} more" if len(st.changed) > 5 else "")
        lines += textwrap.wrap(f"top {st.k} changed between trials for {len(st.changed)} of {st.n} questions "
                               f"({st.share:.1%})" + (f": {shown}" if shown else ": the engine answers the same "
                                                                                  "every time"),
                               width=80, initial_indent="  ", subsequent_indent="    ", break_on_hyphens=False)
        if st.flaky:  # found in some trials, missed in others: flaky, not misses of the engine
            named = ", ".join(f"{q} (found in {n} of {st.trials})" for q, n in list(st.flaky.items())[:5])
            more = f" and {len(st.flaky) - 5} more" if len(st.flaky) > 5 else ""
            lines += textwrap.wrap(f"flaky at hit@{st.k}: {len(st.flaky)} of {st.n} questions flip between trials: "
                                   f"{named}{more}", width=80, initial_indent="  ", subsequent_indent="    ",
                                   break_on_hyphens=False)
        if not thresholds:
            lines.append("  (pass@k / pass^k need a rule: --retrieval-threshold [ENGINE:]MEASURE>=VALUE)")
        for p in (p for p in verdict.analysis.trial_passes if (p.engine, p.labeled) == (st.engine, st.labeled)):
            at = ", ".join(f"pass@{k} {v:.2f}" for k, v in enumerate(p.at, start=1))
            hat = ", ".join(f"pass^{k} {v:.2f}" for k, v in enumerate(p.hat, start=1))
            lines += textwrap.wrap(f"{p.rule}: passed {p.passed}/{p.trials} trials; {at}; {hat}", width=80,
                                   initial_indent="  ", subsequent_indent="    ")
    return lines
