"""Shadow comparisons as people read them: the knowledge gain, each measure's delta, the queries
and the documents that moved (terminal lines and Markdown; the HTML page takes the same rows)."""

from __future__ import annotations

import math
import textwrap
from typing import TYPE_CHECKING

from .table import NO_VALUE, signed

if TYPE_CHECKING:  # the gate's verdict, read here; imported only by type checkers
    from ..analysis.shadow import Shadow
    from ..gate.verdict import Verdict


def interval_text(ci: tuple[float, float] | None) -> str:
    """An interval of differences as the reports print it (no interval: ``NO_VALUE``)."""
    return NO_VALUE if ci is None else f"[{signed(ci[0])}, {signed(ci[1])}]"


def _weights(sh: Shadow) -> str:
    return ", ".join(f"{m}={w:g}" for m, w in sh.weights.items())


def headline(sh: Shadow) -> str:
    p = NO_VALUE if sh.gain_p is None or math.isnan(sh.gain_p) else f"{sh.gain_p:.3g}"
    text = (f"shadow {sh.candidate} vs {sh.baseline} on {sh.labeled} ({sh.n} queries): knowledge gain "
            f"{signed(sh.gain)} {interval_text(sh.gain_ci)}, p={p} (weights {_weights(sh)})")
    if sh.blended_gain is not None:
        text += (f"; with the candidates' novelty {sh.novelty:.2f} at weight {sh.novelty_weight:g}: "
                 f"{signed(sh.blended_gain)}")
    return text


def movers(sh: Shadow) -> list[str]:
    out = []
    for m in sh.movers:
        changes = ", ".join(f"{name} {before:.3g}->{after:.3g}" for name, before, after in m.changes)
        question = m.question if len(m.question) <= 60 else m.question[:57] + "..."
        out.append(f"{m.query_id} {m.contribution:+.4f} ({changes}) {question!r}")
    return out


def queries_text(sh: Shadow) -> str:
    """``queries: 3 better, 1 worse, 5 same``; with no weight valued in both engines, none was compared."""
    if sh.gain is None or math.isnan(sh.gain):
        return "queries: not compared (no weight has a value in both engines)"
    return f"queries: {sh.better} better, {sh.worse} worse, {sh.same} same"


def skipped_text(sh: Shadow) -> str | None:
    """The weights left out of the gain, for want of a value in one engine or both, said once."""
    return (f"not weighted (no value in {sh.candidate} or in {sh.baseline}): {', '.join(sh.skipped)}"
            if sh.skipped else None)


def documents(sh: Shadow) -> list[str]:
    def listed(items) -> str:
        return ", ".join(f"{d} ({n} {'query' if n == 1 else 'queries'})" for d, n in items) or "none"

    return [f"relevant documents newly in the top {sh.cutoff}: {listed(sh.newly_hit)}",
            f"relevant documents newly out of the top {sh.cutoff}: {listed(sh.newly_missed)}"]


def terminal_lines(verdict: Verdict, *, full: bool = True) -> list[str]:
    """Per shadow comparison its headline (the knowledge gain); with ``full`` (``-v``) the deltas,
    movers, documents and segments too."""
    lines: list[str] = []
    for sh in verdict.shadows:
        lines += textwrap.wrap(headline(sh), width=80, subsequent_indent="  ", break_on_hyphens=False)
        if not full:
            continue
        deltas = ", ".join(f"{d.measure} {signed(d.delta)}{'*' if d.p < verdict.alpha else ''} {interval_text(d.ci)}"
                           for d in sh.deltas)
        lines += textwrap.wrap(f"deltas (* p < {verdict.alpha:g}, uncorrected): {deltas}", width=80,
                               initial_indent="  ", subsequent_indent="    ", break_on_hyphens=False)
        lines.append(f"  {queries_text(sh)}")
        lines += ["  top movers:"] + [f"    {m}" for m in movers(sh)] if sh.movers else []
        for text in documents(sh):
            lines += textwrap.wrap(text, width=80, initial_indent="  ", subsequent_indent="    ", break_on_hyphens=False)
        if sh.skipped:
            lines.append(f"  {skipped_text(sh)}")
        if sh.segments:
            lines += textwrap.wrap(f"gain by segment: {segment_text(sh)}", width=80, initial_indent="  ",
                                   subsequent_indent="    ", break_on_hyphens=False)
    return lines


def segment_text(sh: Shadow) -> str:
    """``body-only +0.120 (n=30, p=0.004), versioned -0.050 (n=5, p=0.62)``"""
    return ", ".join(f"{tag} {signed(gain)} (n={n}, p={p:.3g})" for tag, n, gain, p in sh.segments)


def markdown_lines(verdict: Verdict) -> list[str]:
    if not verdict.shadows:
        return []
    out = ["", "## Shadow comparisons", ""]
    for sh in verdict.shadows:
        out += [f"**{headline(sh)}**", "", f"{queries_text(sh).capitalize()}.", "",
                "| measure | candidate | baseline | delta | 95% CI | p |", "|---|---|---|---|---|---|"]
        out += [f"| {d.measure} | {d.candidate:.4f} | {d.baseline:.4f} | {signed(d.delta)} | {interval_text(d.ci)} | {d.p:.3g} |"
                for d in sh.deltas]
        if sh.movers:
            out += ["", "Top movers (each query's share of the gain):", ""] + [f"- {m}" for m in movers(sh)]
        out += [""] + [f"- {t}" for t in documents(sh)]
        if sh.skipped:
            out.append(f"- {skipped_text(sh)}")
        if sh.segments:
            out.append(f"- gain by segment: {segment_text(sh)}")
        out.append("")
    return out
