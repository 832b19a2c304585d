"""Recall by stage (the candidate pool's ceiling): a table per engine with stages (results.md and
the page), a curve over k on the page, one line per engine in the terminal with -v. Read from
the verdict (``analysis/ceiling.py`` computed it); nothing is computed here."""

from __future__ import annotations

import math
import textwrap
from typing import TYPE_CHECKING, Any

from .plot import BOTTOM, COLOURS, H, LEFT, RIGHT, ROW, TOP, W, frame, legend_entry, legend_size

if TYPE_CHECKING:  # the gate's verdict, read here; imported only by type checkers
    from ..analysis.ceiling import StageCurve
    from ..gate.verdict import Verdict

ABOUT = ("recall@k of each stage: per question the share of its relevant documents the stage holds in its top k, "
         "averaged over every question; all: of everything the stage held (the most it held in brackets), the "
         "ceiling no later step can rise above")


def _several(verdict: Verdict) -> bool:
    return len({c.labeled for c in verdict.ceilings}) > 1


def title(verdict: Verdict, c: StageCurve) -> str:
    return c.engine + (f" on {c.labeled}" if _several(verdict) else "")


def cells(c: StageCurve) -> tuple[list[str], list[list[str]]]:
    """The header and a row per stage: stage, recall at each k of the grid some stage reaches, all."""
    from ..analysis.ceiling import GRID

    ks = [k for k in GRID if any(x == k for s in c.stages for x, _ in s.points)]
    head = ["stage", *(f"@{k}" for k in ks), "all"]
    rows = [[s.label, *("" if (v := s.at(k)) is None else f"{v:.3f}" for k in ks),
             f"{s.ceiling:.3f} ({s.size})"] for s in c.stages]
    return head, rows


def loss_line(c: StageCurve) -> str:
    """``of 7 misses at hit@5: 3 (43%) never a candidate, 0 cut by fusion, 4 (57%) ranked below 5``"""
    if not c.missed:
        return f"no miss at hit@{c.miss_k}"
    said = ", ".join(f"{n} ({c.share(w):.0%}) {w}" if n else f"0 {w}" for w, n in c.losses)
    return (f"where the {c.missed} miss{'es' if c.missed != 1 else ''} at hit@{c.miss_k} "
            f"{'were' if c.missed != 1 else 'was'} lost: {said}")


def markdown(verdict: Verdict) -> list[str]:
    """results.md's "Recall by stage" section: a table and the losses per engine with stages."""
    if not verdict.ceilings:
        return []
    out = ["", "## Recall by stage", "", ABOUT + "."]
    for c in verdict.ceilings:
        head, rows = cells(c)
        out += ["", f"### {title(verdict, c)}", "", "| " + " | ".join(head) + " |", "|---" * len(head) + "|"]
        out += ["| " + " | ".join(r) + " |" for r in rows]
        out += ["", loss_line(c) + "."]
    return out


def lines(verdict: Verdict) -> list[str]:
    """The terminal's line per engine with stages (shown with -v)."""
    several = _several(verdict)
    return [wrapped for c in verdict.ceilings
            for wrapped in textwrap.wrap(c.line() + (f" (on {c.labeled})" if several else ""), width=88,
                                         subsequent_indent="    ", break_on_hyphens=False)]


def page(verdict: Verdict) -> list[dict[str, Any]]:
    """The page's section: per engine its title, table, losses and curve."""
    out = []
    for c in verdict.ceilings:
        head, rows = cells(c)
        out.append({"title": title(verdict, c), "head": head, "rows": rows, "losses": loss_line(c),
                    "svg": curve_svg(c, title=f"recall@k by stage: {title(verdict, c)}")})
    return out


def curve_svg(c: StageCurve, *, title: str) -> str:
    """Each stage's recall@k over k on a log scale, ending at all it held. Deterministic text."""
    shown = list(c.stages)  # a stage that held nothing: in the legend, with no line
    top_k = max([k for s in shown for k, _ in s.points] or [1])
    pw, ph = W - LEFT - RIGHT, H - TOP - BOTTOM
    span = math.log(top_k) or 1.0

    def x(k: int) -> float:
        return LEFT + math.log(k) / span * pw

    def y(v: float) -> float:
        return TOP + (1 - v) * ph

    labels = [f"{s.label} (all {s.size}: {s.ceiling:.2f})" for s in shown]
    width, height = legend_size(labels, W - RIGHT + 12, TOP + 8, W, H)
    out = frame(title, width, height, LEFT, TOP, pw, ph)
    ticks = sorted({k for s in shown for k, _ in s.points if k >= 1})
    placed: list[float] = []
    for k in ticks:  # a label where it does not crowd the one before
        if not placed or x(k) - placed[-1] >= 22:
            out.append(f'<text x="{x(k):.1f}" y="{TOP + ph + 16}" text-anchor="middle">{k}</text>')
            placed.append(x(k))
    out.append(f'<text x="{LEFT + pw / 2:.1f}" y="{TOP + ph + BOTTOM - 8}" text-anchor="middle">k (log scale)</text>')
    out.append(f'<text x="14" y="{TOP + ph / 2:.1f}" transform="rotate(-90 14 {TOP + ph / 2:.1f})" '
               'text-anchor="middle">recall@k</text>')
    legend_y = TOP + 8
    for i, (s, label) in enumerate(zip(shown, labels)):
        colour = COLOURS[i % len(COLOURS)]
        dash = ' stroke-dasharray="5,4"' if s.kind == "leg" else ""
        drawn = [(k, v) for k, v in s.points if k >= 1]
        points = " ".join(f"{x(k):.1f},{y(v):.1f}" for k, v in drawn)
        if len(drawn) == 1:  # one point: a dot, as a line of one point draws nothing
            k, v = drawn[0]
            out.append(f'<circle cx="{x(k):.1f}" cy="{y(v):.1f}" r="3" fill="{colour}"/>')
        elif drawn:
            out.append(f'<polyline fill="none" stroke="{colour}" stroke-width="2"{dash} points="{points}"/>')
        out += legend_entry(W - RIGHT + 12, legend_y, colour, dash, label)
        legend_y += ROW
    out.append("</svg>")
    return "\n".join(out) + "\n"

