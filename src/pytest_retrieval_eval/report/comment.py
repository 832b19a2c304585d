"""One pull-request comment (``python -m pytest_retrieval_eval report comment results.json``):
the verdict first, the table with intervals and marks, the deltas against the base with their
intervals and corrected p, the queries that moved most, why the engines missed, the segments
and the gate's failures. Its first line is a hidden marker, so a workflow finds the comment it
posted before and updates it in place instead of adding another."""

from __future__ import annotations

from typing import Any

from . import cost, table
from .files import baseline_section
from .misses import miss_lines, segment_lines

MARKER = "<!-- pytest-retrieval-eval -->"
#: per-query movers the comment lists (results.md has them all)
MOVERS = 5


def comment(verdict: Any) -> str:
    failures = verdict.failures
    head = (f"**FAIL**: the retrieval gate failed ({len(failures)} failure{'s' * (len(failures) != 1)})" if failures
            else "**PASS**: the retrieval gate passed" if verdict.settings.thresholds or verdict.baseline is not None
            else "No gate rule is set; the numbers:")
    out = [MARKER, "## Retrieval evaluation", "", head, "", *table.markdown(verdict)]
    out += baseline_section(verdict, movers=MOVERS)
    why = miss_lines(verdict, markdown=True)
    out += ["", "### Why it missed", "", *why] if why else []
    segments = segment_lines(verdict, markdown=True)
    out += ["", "### Segments", "", *segments] if segments else []
    costs = cost.markdown(verdict)
    out += ["", "### Cost", "", *costs] if costs else []
    if failures:
        out += ["", "### Gate", "", *(f"- FAIL {f}" for f in failures)]
    return "\n".join(out) + "\n"
