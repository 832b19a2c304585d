"""Engine errors in sight: per engine, each distinct error with its count and the first questions.

``errored 2`` in the table says how many; a team needs what went wrong and where to look, so
errors are grouped by their type and first line (the rest of a message often holds a query or an
address that differs per call) and shown with up to three question ids.
"""

from __future__ import annotations

import textwrap
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # the gate's verdict, read here; imported only by type checkers
    from ..gate.verdict import Verdict

SHOWN_IDS = 3
SHOWN_KINDS = 5


@dataclass(frozen=True)
class ErrorGroup:
    engine: str
    error: str  # type and first line, as recorded
    query_ids: tuple[str, ...]  # as messages name them (``types.query_name``)

    def describe(self) -> str:
        ids = ", ".join(self.query_ids[:SHOWN_IDS]) + (f" and {len(self.query_ids) - SHOWN_IDS} more"
                                                        if len(self.query_ids) > SHOWN_IDS else "")
        return f"{self.engine}: {len(self.query_ids)} x {self.error} ({ids})"


def first_line(error: str) -> str:
    line = error.strip().splitlines()[0] if error.strip() else "(empty error message)"
    return line if len(line) <= 200 else line[:199] + "…"


def groups(evaluations: Any) -> list[ErrorGroup]:
    """Per engine, most frequent first, in labeled-set order within a group."""
    out = []
    for e in evaluations:
        by: dict[str, list[str]] = {}
        names = {q.query_id: q.name for q in e.labeled.queries}
        for qid, error in e.errors.items():
            by.setdefault(first_line(error), []).append(names.get(qid, qid))
        ranked = sorted(by.items(), key=lambda kv: -len(kv[1]))
        out += [ErrorGroup(e.engine, error, tuple(ids)) for error, ids in ranked]
    return out


def error_lines(verdict: Verdict, *, markdown: bool = False, width: int = 80) -> list[str]:
    found = groups(verdict.run.evaluations)
    if not found:
        return []
    shown, lines = {}, []
    for g in found:
        shown[g.engine] = shown.get(g.engine, 0) + 1
        if shown[g.engine] > SHOWN_KINDS:
            continue
        lines.append(f"- {g.describe()}" if markdown else g.describe())
    hidden = {engine: n - SHOWN_KINDS for engine, n in shown.items() if n > SHOWN_KINDS}
    lines += [f"{'- ' if markdown else ''}{engine}: {n} more kinds of error (results.json lists each query's)"
              for engine, n in hidden.items()]
    if markdown:
        return ["Engine errors (counted as misses):", "", *lines]
    out = ["engine errors (counted as misses):"]
    for line in lines:
        out += textwrap.wrap(line, width=width, initial_indent="  ", subsequent_indent="    ",
                             break_on_hyphens=False, break_long_words=False)
    return out
