"""One pull-request comment (``python -m pytest_retrieval_eval report comment results.json``):
the verdict first, the table with intervals and marks, the deltas against the base with their
intervals and corrected p, the queries that moved most, why the engines missed, the segments
and the gate's failures. Its first line is a hidden marker, so a workflow finds the comment it
posted before and updates it in place instead of adding another.

GitHub refuses a comment body over 65,536 characters (500 tags made one of 83,084), so a longer
one is cut to ``LIMIT``: the verdict and the gate's failures are kept, the detail between them is
cut at a line, and a paragraph says so and where the full report is. The step summary (results.md,
which GitHub drops past 1024k) is cut the same way (``step_summary``)."""

from __future__ import annotations

from typing import Any, Sequence

from . import cost, table
from .files import baseline_section
from .misses import miss_lines, segment_lines

MARKER = "<!-- pytest-retrieval-eval -->"
#: per-query movers the comment lists (results.md has them all)
MOVERS = 5
#: GitHub's limit on a comment's body
GITHUB_LIMIT = 65_536
#: the most a comment holds, in UTF-8 bytes (so in characters too, however GitHub counts them),
#: with room to spare under GitHub's limit
LIMIT = 65_000
#: where the full report is, when the caller cannot name the file
FULL_REPORT = "results.md in the report folder (--retrieval-report-dir=DIR), or the workflow's artefact"


def comment(verdict: Any, *, full_report: str | None = None, limit: int = LIMIT) -> str:
    """The comment, at most ``limit`` UTF-8 bytes; ``full_report``: where the whole report is
    (the path of results.md, or a command that prints it), named where the comment is cut."""
    failures = verdict.failures
    head = (f"**FAIL**: the retrieval gate failed ({len(failures)} failure{'s' * (len(failures) != 1)})" if failures
            else "**PASS**: the retrieval gate passed" if verdict.settings.thresholds or verdict.baseline is not None
            else "No gate rule is set; the numbers:")
    top = [MARKER, "## Retrieval evaluation", "", head]
    body = ["", *table.markdown(verdict)]
    body += baseline_section(verdict, movers=MOVERS)
    why = miss_lines(verdict, markdown=True)
    body += ["", "### Why it missed", "", *why] if why else []
    segments = segment_lines(verdict, markdown=True)
    body += ["", "### Segments", "", *segments] if segments else []
    costs = cost.markdown(verdict)
    body += ["", "### Cost", "", *costs] if costs else []
    gate = ["", "### Gate", "", *(f"- FAIL {f}" for f in failures)] if failures else []
    return _fit(top, body, gate, full_report or FULL_REPORT, limit, f"GitHub's limit of {GITHUB_LIMIT:,} characters")


#: GitHub's limit on a step's summary (``$GITHUB_STEP_SUMMARY``), in bytes: past it the summary is dropped
STEP_SUMMARY_LIMIT = 1024 * 1024


def step_summary(text: str, *, already: int = 0, full_report: str | None = None) -> str:
    """``text`` (results.md) for the step summary, cut to fit GitHub's limit with what the file
    holds ``already`` (other steps' summaries), with the same pointer as a cut comment."""
    room = max(STEP_SUMMARY_LIMIT - 1024 - already, 1024)  # a little room to spare
    if len(text.encode("utf-8")) <= room:
        return text
    lines = text.rstrip("\n").split("\n")
    return _fit([], lines, [], full_report or FULL_REPORT, room,
                f"GitHub's limit of {STEP_SUMMARY_LIMIT // 1024:,}k for a step summary")


def _size(lines: Sequence[str]) -> int:
    return sum(len(line.encode("utf-8")) + 1 for line in lines)


def _lead(lines: Sequence[str], room: int) -> list[str]:
    """The first lines of ``lines`` that fit in ``room`` bytes."""
    out, used = [], 0
    for line in lines:
        used += len(line.encode("utf-8")) + 1
        if used > room:
            break
        out.append(line)
    return out


def _fit(top: list[str], body: list[str], gate: list[str], full_report: str, limit: int, limit_said: str) -> str:
    """``top``, ``body`` and ``gate`` as one text of at most ``limit`` bytes: whole if they fit;
    else the body (and, past half of what is left, the gate's failures) cut at a line, each cut
    said in a paragraph of its own (never read as a row of the table above it)."""
    if _size(top + body + gate) <= limit:
        return "\n".join(top + body + gate) + "\n"
    cut = ["", f"*Cut here to stay under {limit_said}; the full report: {full_report}.*", ""]
    room = limit - _size(top) - _size(cut)
    kept_gate = gate
    if _size(gate) > room // 2:  # so many failures: the first of them, and how many more

        def more(n: int) -> str:
            return f"- ... and {n} more failures, cut here (the full report: {full_report})"

        kept_gate = _lead(gate, room // 2 - _size([more(len(gate))]))
        kept_gate.append(more(len(gate) - len(kept_gate)))
    kept = _lead(body, room - _size(kept_gate))
    return "\n".join(top + kept + cut + kept_gate).rstrip("\n") + "\n"
