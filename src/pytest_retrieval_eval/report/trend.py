"""A measure across the history's records (``archive/history.py``) as a dependency-free SVG: one
point per record and engine with its 95% interval, joined within a series. A series is one
engine on one labeled set, corpus, description and judge (their fingerprints): where one of them
changes a new series starts, drawn apart and marked, since the numbers no longer measure the
same thing. The points are found by ``analysis/trend.trend_points``; here they are only laid out."""

from __future__ import annotations

from html import escape
from typing import Any, Sequence

from .plot import COLOURS, ROW, frame, legend_entry, legend_size

W, H, LEFT, RIGHT, TOP, BOTTOM = 720, 400, 56, 200, 24, 70


def trend_svg(found: Sequence[Any], measure: str, engine: str | None = None) -> str:
    """The points of ``analysis/trend.trend_points`` (of ``engine`` alone, where named), drawn.
    Deterministic text: the same points, the same bytes."""
    times = sorted({p.order for p in found})
    x_of = {t: i for i, t in enumerate(times)}
    pw, ph = W - LEFT - RIGHT, H - TOP - BOTTOM

    def x(i: int) -> float:
        return LEFT + (i + 0.5) * pw / max(len(times), 1)

    def y(v: float) -> float:
        return TOP + (1 - v) * ph

    title = f"{measure} across commits" + (f" ({engine})" if engine else "")
    engines = sorted({p.label for p in found})
    series: dict[tuple, list[Any]] = {}
    for p in found:
        series.setdefault(p.series, []).append(p)
    ordered = []  # (key, its points, the first series of its engine?)
    for key in sorted(series, key=lambda k: (k[0], series[k][0].order)):
        run = series[key]
        ordered.append((key, run, all(s[0] != key[0] or s == key or series[s][0].order > run[0].order for s in series)))
    width, height = legend_size([run[0].label + ("" if first else " (new series)") for _, run, first in ordered],
                                W - RIGHT + 12, TOP + 8, W, H)
    out = frame(title, width, height, LEFT, TOP, pw, ph)
    commits = {}
    for p in found:
        commits.setdefault(p.order, p.commit + ("*" if p.dirty else ""))
    for t, label in commits.items():
        out.append(f'<text x="{x(x_of[t]):.1f}" y="{TOP + ph + 14}" text-anchor="end" '
                   f'transform="rotate(-40 {x(x_of[t]):.1f} {TOP + ph + 14})">{escape(label)}</text>')
    out.append(f'<text x="14" y="{TOP + ph / 2:.1f}" transform="rotate(-90 14 {TOP + ph / 2:.1f})" '
               f'text-anchor="middle">{escape(measure)}</text>')
    legend_y = TOP + 8
    for key, run, first_of_engine in ordered:
        colour = COLOURS[engines.index(run[0].label) % len(COLOURS)]
        dash = "" if first_of_engine else ' stroke-dasharray="5,4"'
        if not first_of_engine:  # a fingerprint changed: a new series starts here
            xs = x(x_of[run[0].order]) - pw / max(len(times), 1) / 2
            out.append(f'<line class="new-series" x1="{xs:.1f}" y1="{TOP}" x2="{xs:.1f}" y2="{TOP + ph}" '
                       f'stroke="{colour}" stroke-dasharray="2,3"/>')
        pts = " ".join(f"{x(x_of[p.order]):.1f},{y(p.mean):.1f}" for p in run)
        out.append(f'<polyline fill="none" stroke="{colour}" stroke-width="2"{dash} points="{pts}"/>')
        for p in run:
            px = x(x_of[p.order])
            lo, hi = p.ci
            if lo == lo and hi == hi:
                out.append(f'<line x1="{px:.1f}" y1="{y(hi):.1f}" x2="{px:.1f}" y2="{y(lo):.1f}" stroke="{colour}"/>')
            out.append(f'<circle class="point" cx="{px:.1f}" cy="{y(p.mean):.1f}" r="3.5" fill="{colour}">'
                       f'<title>{escape(p.label)} at {escape(p.commit)}: {escape(measure)} {p.mean:.3f} '
                       f'[{lo:.3f}, {hi:.3f}]</title></circle>')
        label = run[0].label + ("" if first_of_engine else " (new series)")
        out += legend_entry(W - RIGHT + 12, legend_y, colour, dash, label)
        legend_y += ROW
    out.append("</svg>")
    return "\n".join(out) + "\n"
