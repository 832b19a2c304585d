"""The end-of-run section of the terminal: table, engine configurations, baseline, gate verdict."""

from __future__ import annotations

from typing import Any, Mapping

from . import table


def write_summary(tr: Any, outcome: Any, *, report: bool, thresholds: int, unavailable: Mapping[str, str],
                  verbosity: int = 0) -> None:
    verdict = outcome.verdict
    if report or outcome.failed or verdict.baseline is not None:
        tr.write_sep("-", "retrieval evaluation")
    if report:
        if verdict.rows:
            for line in table.render(verdict, ci=verbosity >= 0):
                tr.write_line(line)
            if verbosity >= 0:
                for line in table.describe_engines(verdict.run.evaluations):
                    tr.write_line(line)
        else:
            tr.write_line("no retrieval evaluations were recorded in this run")
        for name, why in unavailable.items():
            tr.write_line(f"engine {name} not available: {why}", yellow=True)
    if verdict.baseline is not None:
        for line in baseline_lines(verdict):
            tr.write_line(line)
    for note in outcome.notes:
        tr.write_line(f"note: {note}", yellow=True)
    if thresholds and not verdict.rows and not outcome.failed:
        tr.write_line(f"retrieval gate: no evaluations recorded; {thresholds} threshold(s) not checked", yellow=True)
    for failure in outcome.failures:
        tr.write_line(f"FAIL retrieval gate: {failure}", red=True, bold=True)
    if (thresholds or verdict.baseline is not None) and verdict.rows and not outcome.failed:
        tr.write_line("retrieval gate: passed", green=True)


def baseline_lines(verdict: Any) -> list[str]:
    """What moved against the baseline, measure by measure (only what changed)."""
    comparison = verdict.baseline
    lines = ["against the baseline:"]
    moved = [d for d in comparison.diffs if d.before != d.after]
    lines += [f"  {d.describe()}" for d in moved] or ["  no measure moved"]
    lines += [f"  note: {n}" for n in comparison.notes]
    return lines
