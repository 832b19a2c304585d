"""The Hit@k curve (k = 1..20) per engine as a dependency-free SVG, baseline dashed (the curves are
the analysis's: ``analysis/curves.py``)."""

from __future__ import annotations

import math
from html import escape
from typing import TYPE_CHECKING, Any, Mapping, Sequence

if TYPE_CHECKING:
    from ..analysis.analyse import Analysis

COLOURS = ("#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b", "#e377c2", "#7f7f7f")
W, H, LEFT, RIGHT, TOP, BOTTOM = 640, 400, 56, 170, 24, 44
#: a legend row: where its label starts (after the stroke), and its height
STROKE, ROW = 30, 18
#: widths in em of DejaVu Sans (what a Linux browser draws sans-serif with; common others are
#: narrower): an upper bound per class of character, so a label is never wider than measured
NARROW, WIDE = frozenset("'ijlIJ .,:;/|\\f-()[]t!r"), frozenset("mwMW@%")


def text_width(text: str, size: float = 12) -> float:
    """How wide ``text`` is drawn at ``size`` px, at most (no font is at hand to measure it)."""
    return size * sum(0.42 if c in NARROW else 1.0 if c in WIDE or not c.isascii() else 0.84 if c.isupper()
                      or c in "+=#~<>^&" else 0.64 for c in text)


def legend_size(labels: Sequence[str], x: float, top: float, width: float, height: float) -> tuple[float, float]:
    """The SVG's width and height with the legend at ``x`` (rows from ``top``) inside it: the
    default ``width`` x ``height``, grown where a label is long or the rows many."""
    right = x + STROKE + max([text_width(label) for label in labels] or [0]) + 8
    return max(width, math.ceil(right)), max(height, math.ceil(top + ROW * len(labels)))


def frame(title: str, width: int, height: int, left: float, top: float, pw: float, ph: float) -> list[str]:
    """An SVG's opening, its title, the plot's box and the grid of values 0.0 to 1.0, labelled."""
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" viewBox="0 0 {width} {height}" '
           'font-family="sans-serif" font-size="12">',
           f'<title>{escape(title)}</title>',
           f'<rect x="{left}" y="{top}" width="{pw}" height="{ph}" fill="none" stroke="#999"/>']
    for i in range(0, 11, 2):
        y = top + (1 - i / 10) * ph
        out.append(f'<line x1="{left}" y1="{y:.1f}" x2="{left + pw}" y2="{y:.1f}" stroke="#eee"/>')
        out.append(f'<text x="{left - 6}" y="{y + 4:.1f}" text-anchor="end">{i / 10:.1f}</text>')
    return out


def legend_entry(x: float, y: float, colour: str, dash: str, label: str) -> list[str]:
    """A stroke of the line's style and its label (``legend_size`` makes room for it)."""
    return [f'<g class="legend"><line x1="{x}" y1="{y}" x2="{x + 24}" y2="{y}" stroke="{colour}" stroke-width="2"{dash}/>',
            f'<text x="{x + STROKE}" y="{y + 4}">{escape(label)}</text></g>']


def hit_curve_svg(curves: Mapping[str, Sequence[float]], baseline: Mapping[str, Sequence[float]] | None = None,
                  *, title: str = "Hit@k") -> str:
    """``curves``: label -> [hit@1, ..., hit@K]. Deterministic text: same input, same bytes."""
    baseline = baseline or {}
    depth = max([len(v) for v in [*curves.values(), *baseline.values()]] or [1])
    pw, ph = W - LEFT - RIGHT, H - TOP - BOTTOM

    def x(k: int) -> float:
        return LEFT + (k - 1) * pw / max(depth - 1, 1)

    def y(v: float) -> float:
        return TOP + (1 - v) * ph

    labels = [label + suffix for label in sorted(set(curves) | set(baseline))
              for values, suffix in ((curves.get(label), ""), (baseline.get(label), " (baseline)")) if values]
    width, height = legend_size(labels, W - RIGHT + 12, TOP + 8, W, H)
    out = frame(title, width, height, LEFT, TOP, pw, ph)
    for k in [1, 5, 10, 15, 20]:
        if k <= depth:
            out.append(f'<text x="{x(k):.1f}" y="{TOP + ph + 16}" text-anchor="middle">{k}</text>')
    out.append(f'<text x="{LEFT + pw / 2:.1f}" y="{TOP + ph + BOTTOM - 8}" text-anchor="middle">k</text>')
    out.append(f'<text x="14" y="{TOP + ph / 2:.1f}" transform="rotate(-90 14 {TOP + ph / 2:.1f})" '
               f'text-anchor="middle">{escape(title)}</text>')
    legend_y = TOP + 8
    for i, label in enumerate(sorted(set(curves) | set(baseline))):
        colour = COLOURS[i % len(COLOURS)]
        for values, dash, suffix in ((curves.get(label), "", ""), (baseline.get(label), ' stroke-dasharray="5,4"', " (baseline)")):
            if not values:
                continue
            points = " ".join(f"{x(k):.1f},{y(v):.1f}" for k, v in enumerate(values, start=1))
            out.append(f'<polyline fill="none" stroke="{colour}" stroke-width="2"{dash} points="{points}"/>')
            out += legend_entry(W - RIGHT + 12, legend_y, colour, dash, label + suffix)
            legend_y += ROW
    out.append("</svg>")
    return "\n".join(out) + "\n"


def run_svg(analysis: Analysis, baseline: bool = False) -> str:
    """The Hit@k plot of a run's evaluations as its analysis holds their curves (labelled by
    engine, and by labeled set when the run has several); with ``baseline``, the baseline's
    curves dashed."""
    several = len({c.labeled for c in analysis.curves}) > 1

    def curves(found: Any) -> dict[str, list[float]]:
        return {(f"{c.engine} ({c.labeled})" if several else c.engine): list(c.values) for c in found}

    return hit_curve_svg(curves(analysis.curves), curves(analysis.baseline_curves) if baseline else None)
