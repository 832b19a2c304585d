"""The end-of-run section of the terminal: table, engine configurations, gate verdict."""

from __future__ import annotations

from typing import Any, Mapping

from . import table


def write_summary(tr: Any, outcome: Any, *, report: bool, thresholds: int, unavailable: Mapping[str, str]) -> None:
    if report or outcome.failed:
        tr.write_sep("-", "retrieval evaluation")
    if report:
        if outcome.rows:
            for line in table.render(outcome.rows, outcome.table_measures):
                tr.write_line(line)
            for line in table.describe_engines(outcome.gathered.results):
                tr.write_line(line)
        else:
            tr.write_line("no retrieval evaluations were recorded in this run")
        for name, why in unavailable.items():
            tr.write_line(f"engine {name} not available: {why}", yellow=True)
    for note in outcome.gathered.notes:
        tr.write_line(f"note: {note}", yellow=True)
    if thresholds and not outcome.rows and not outcome.gathered.missing_workers:
        tr.write_line(f"retrieval gate: no evaluations recorded; {thresholds} threshold(s) not checked", yellow=True)
    for failure in outcome.failures:
        tr.write_line(f"FAIL retrieval gate: {failure}", red=True, bold=True)
    if thresholds and outcome.rows and not outcome.failed:
        tr.write_line(f"retrieval gate: {thresholds} threshold(s) met", green=True)
