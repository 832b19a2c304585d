"""Why and where: the misses by cause under the table, the segment rows, the labeled set's
coverage. Read from the verdict (``analysis/causes.py``, ``analysis/segments.py``, ``analysis/coverage.py``
computed them); nothing is computed here."""

from __future__ import annotations

import math
import textwrap
from typing import TYPE_CHECKING, Any, Container

from ..ir.stats import CORRECTION_NAMES, POWER
from . import table

if TYPE_CHECKING:  # the gate's verdict, read here; imported only by type checkers
    from ..gate.verdict import Verdict


def _wrap(line: str, markdown: bool, width: int = 80) -> list[str]:
    return [f"- {line}"] if markdown else textwrap.wrap(line, width=width, subsequent_indent="    ",
                                                                 break_on_hyphens=False)


def miss_lines(verdict: Verdict, *, markdown: bool = False) -> list[str]:
    """``hybrid missed 7 of 68 at hit@5: 3 ranked 6-20, 2 never a candidate (keyword leg empty) ...``"""
    several = len({m.labeled for m in verdict.misses}) > 1
    out = []
    for m in (*verdict.misses, *verdict.analysis.evidence_misses):  # the evidence level's under the documents'
        line = m.line() + (f" (on {m.labeled})" if several else "")
        out += _wrap(line, markdown, width=88)  # the default summary's width: one line per engine, mostly
    return out + index_lines(verdict, markdown=markdown)


def index_lines(verdict: Verdict, *, markdown: bool = False) -> list[str]:
    """The approximate index's gap against the exact search (``--retrieval-exact-check``) and the
    engines that under-returned (``analysis/approximate.py``), a line each."""
    if not (verdict.analysis.index_gaps or verdict.analysis.under_returns):
        return []
    names = {q.query_id: q.name for e in verdict.run.evaluations for q in e.labeled.queries}
    said = [x.line(names) for x in verdict.analysis.index_gaps] + [x.line() for x in verdict.analysis.under_returns]
    return [line for text in said for line in _wrap(text, markdown, width=88)]


def segment_lines(verdict: Verdict, *, markdown: bool = False) -> list[str]:
    """A row per segment: n, each engine's value with its interval and the engines it beats
    inside the segment, and the smallest drop the segment can show (flagged when it has few questions)."""
    rows = verdict.segments
    if not rows:
        return []
    names = table.letters(verdict)
    engines = list(dict.fromkeys(e for r in rows for e in r.values))
    corrected = CORRECTION_NAMES[verdict.correction]
    head = (f"segments at {rows[0].measure} (95% interval; a superscript: beats that engine inside the segment, "
            f"{corrected} over every segment; drop: the smallest the segment can show, {POWER:.0%} power):")
    out = _wrap(head, markdown)

    def cell(r: Any, engine: str) -> str:
        if engine not in r.values:
            return ""
        mean, lo, hi, _ = r.values[engine]
        beats = "".join(sorted(names.get((loser, r.labeled), "") for loser in r.wins.get(engine, ())))
        return f"{table.fmt(mean)}{table.superscript(beats)} [{lo:.2f}, {hi:.2f}]"

    def drop(r: Any) -> str:
        return ("n/a" if math.isnan(r.drop) else f"{r.drop:.3f}") + (" (few questions)" if r.few else "")

    several = len({r.labeled for r in rows}) > 1
    label = {e: e + (f" {table.superscript(names[(e, rows[0].labeled)])}" if (e, rows[0].labeled) in names else "")
             for e in engines}
    if markdown:
        out += ["", "| segment | n | " + " | ".join(label[e] for e in engines) + " | drop |",
                "|---|---|" + "---|" * len(engines) + "---|"]
        out += [f"| {r.tag}{f' ({r.labeled})' if several else ''} | {r.n} | "
                + " | ".join(cell(r, e) for e in engines) + f" | {drop(r)} |" for r in rows]
        return out
    width = max(len("segment"), *(len(r.tag) + (len(r.labeled) + 3 if several else 0) for r in rows))
    widths = {e: max(len(label[e]), *(len(cell(r, e)) for r in rows)) for e in engines}
    out.append(f"{'segment':<{width}}  {'n':>4}  " + "  ".join(f"{label[e]:<{widths[e]}}" for e in engines) + "  drop")
    for r in rows:
        tag = r.tag + (f" ({r.labeled})" if several else "")
        out.append(f"{tag:<{width}}  {r.n:>4}  " + "  ".join(f"{cell(r, e):<{widths[e]}}" for e in engines)
                   + f"  {drop(r)}")
    return out


def coverage_lines(verdict: Verdict, *, markdown: bool = False) -> list[str]:
    record = verdict.run.coverage
    line = coverage_line(record)
    if line is None:
        return []
    out = _wrap(line, markdown)
    shown = {r.tag for r in verdict.segments}  # per tag too, for the segments asked for
    out += [f"- {t.strip()}" if markdown else t for t in tag_lines(record, shown)]
    return out


def why_of(verdict: Verdict, e: Any) -> dict[str, str]:
    """Query id -> the cause of its miss at the verdict's cutoff, for ``e``'s missed questions."""
    return {q: c.text for q, c in verdict.causes(e.key).items()}


def coverage_line(record: dict[str, Any]) -> str | None:
    """The table's footer line, or None without a record."""
    if not record:
        return None
    d = record["documents"]
    line = f"coverage: the questions judge {d['judged']} of {d['total']} documents ({_share(d)})"
    if "chunks" in record:
        c = record["chunks"]
        line += f" and {c['judged']} of {c['total']} chunks ({_share(c)})"
    if record.get("unreached"):
        named = ", ".join(f"{doc} ({words:,} words)" for doc, words in record["unreached"][:3])
        more = record["unreached_count"] - min(3, len(record["unreached"]))
        line += f"; the largest no question reaches: {named}" + (f" and {more} more" if more > 0 else "")
    return line


def tag_lines(record: dict[str, Any], tags: Container[str]) -> list[str]:
    """For each of ``tags`` with questions, the share of the corpus they judge."""
    total = record.get("documents", {}).get("total") or 0
    return [f"  {tag}: {n} of {total} documents ({n / total:.1%})" for tag, n in record.get("by_tag", {}).items()
            if total and tag in tags]


def _share(part: dict[str, int]) -> str:
    return f"{part['judged'] / part['total']:.1%}" if part["total"] else "n/a"
