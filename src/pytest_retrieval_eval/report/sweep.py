"""A sweep's table and its scatter, as the verdict computed them (``analysis/sweep.py``)."""

from __future__ import annotations

import math
import textwrap
from html import escape
from typing import TYPE_CHECKING, Any

from .plot import COLOURS, frame

if TYPE_CHECKING:  # the gate's verdict, read here; imported only by type checkers
    from ..analysis.sweep import SweepTable
    from ..gate.verdict import Verdict

W, H, LEFT, RIGHT, TOP, BOTTOM = 640, 360, 56, 24, 24, 44


def cells(t: SweepTable, *, compact: bool = False) -> tuple[list[str], list[list[str]]]:
    """The header and a row per configuration; ``compact`` (the terminal): the interval as ± its larger side."""
    handed = t.handed  # a column of what each configuration hands a generator, when one returns passages
    header = [*t.keys, t.measure, "±" if compact else "95% CI", "vs base", "p corr", "p95 ms", "chunks",
              *([f"tokens@{t.tokens_k}"] if handed else []), "front"]
    body = []
    for p in t.points:
        settings = dict(p.settings)
        vs = "base" if p.base else f"{p.delta + 0.0:+.3f}".replace("-0.000", "+0.000") + (
            "*" if p.p_adjusted < 0.05 else "")
        marks = "".join(m for m, on in (("L", p.front_latency), ("S", p.front_size), ("T", p.front_tokens)) if on)
        half = max(p.value - p.ci[0], p.ci[1] - p.value)
        interval = ("" if math.isnan(half) else f"{half:.3f}".lstrip("0")) if compact else \
            f"[{p.ci[0]:.3f}, {p.ci[1]:.3f}]"
        body.append([*(settings.get(k, "") for k in t.keys), f"{p.value:.3f}", interval, vs,
                     "" if p.base else f"{p.p_adjusted:.3g}", "-" if math.isnan(p.p95_ms) else f"{p.p95_ms:.1f}",
                     "-" if p.chunks is None else str(p.chunks),
                     *(["-" if math.isnan(p.tokens) else f"{p.tokens:.0f}"] if handed else []), marks or "-"])
    return header, body


def title(t: SweepTable) -> str:
    return (f"sweep of {t.base} on {t.labeled}, best {t.measure} first; vs base: the paired difference from {t.base} "
            f"(* significant, p corrected over the {len(t.points) - 1} other configurations); front: on the Pareto "
            "front of quality against p95 latency (L)"
            + (f", against chunk count (S) and against the word tokens of the top {t.tokens_k} passages handed "
               "to a generator (T)" if t.handed else " and against chunk count (S)"))


def lines(verdict: Verdict) -> list[str]:
    out = []
    for t in verdict.sweeps:
        header, body = cells(t, compact=True)
        out += textwrap.wrap(title(t), width=80, subsequent_indent="    ", break_on_hyphens=False)
        grid = [header, *body]
        widths = [max(len(r[i]) for r in grid) for i in range(len(header))]
        out += ["  " + "  ".join(c.rjust(w) for c, w in zip(r, widths)).rstrip() for r in grid]
        out += [f"  not evaluated: {', '.join(t.missing)}"] if t.missing else []
        out += [f"  no value of {t.measure}: {', '.join(t.no_value)}"] if t.no_value else []
    return out


def markdown(verdict: Verdict) -> list[str]:
    out = []
    for t in verdict.sweeps:
        header, body = cells(t)
        out += ["", title(t) + ":", "", "| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
        out += ["| " + " | ".join(r) + " |" for r in body]
        out += ["", f"No value of {t.measure}: {', '.join(t.no_value)}."] if t.no_value else []
    return out[1:]


def scatter_svg(t: SweepTable, cost: str = "latency") -> str:
    """Quality against p95 latency (``cost="latency"``), chunk count (``"size"``) or the tokens
    of the top k passages (``"tokens"``), the front joined. Deterministic text: the same table,
    the same bytes."""
    def cost_of(p: Any) -> float:
        if cost == "tokens":
            return p.tokens
        return p.p95_ms if cost == "latency" else (math.nan if p.chunks is None else float(p.chunks))

    shown = [p for p in t.points if not math.isnan(cost_of(p)) and not math.isnan(p.value)]
    axis = {"latency": "p95 latency (ms)", "size": "chunks"}.get(cost, f"tokens of the top {t.tokens_k} passages")
    pw, ph = W - LEFT - RIGHT, H - TOP - BOTTOM
    out = frame(f"{t.measure} against {axis}: sweep of {t.base}", W, H, LEFT, TOP, pw, ph)
    if not shown:
        return "\n".join(out + ["</svg>"]) + "\n"
    lo, hi = min(cost_of(p) for p in shown), max(cost_of(p) for p in shown)
    pad = (hi - lo) * 0.08 or max(hi * 0.1, 1.0)
    lo, hi = max(0.0, lo - pad), hi + pad

    def x(v: float) -> float:
        return LEFT + (v - lo) / (hi - lo) * pw

    def y(v: float) -> float:
        return TOP + (1 - min(max(v, 0.0), 1.0)) * ph

    for i in range(5):
        v = lo + (hi - lo) * i / 4
        out.append(f'<text x="{x(v):.1f}" y="{TOP + ph + 16}" text-anchor="middle">{v:.3g}</text>')
    out.append(f'<text x="{LEFT + pw / 2:.1f}" y="{H - 8}" text-anchor="middle">{escape(axis)}</text>')
    out.append(f'<text x="14" y="{TOP + ph / 2:.1f}" transform="rotate(-90 14 {TOP + ph / 2:.1f})" '
               f'text-anchor="middle">{escape(t.measure)}</text>')
    on = [p for p in shown if {"latency": p.front_latency, "size": p.front_size}.get(cost, p.front_tokens)]
    if len(on) > 1:
        path = " ".join(f"{x(cost_of(p)):.1f},{y(p.value):.1f}" for p in sorted(on, key=cost_of))
        out.append(f'<polyline fill="none" stroke="{COLOURS[1]}" stroke-width="1.5" stroke-dasharray="4,3" '
                   f'points="{path}"/>')
    for p in shown:
        colour = COLOURS[1] if p in on else COLOURS[0]
        label = " ".join(f"{k}={v}" for k, v in p.settings) + (" (base)" if p.base else "")
        out.append(f'<circle cx="{x(cost_of(p)):.1f}" cy="{y(p.value):.1f}" r="{5 if p in on else 4}" '
                   f'fill="{colour}"><title>{escape(p.engine)}: {p.value:.3f}</title></circle>')
        out.append(f'<text x="{x(cost_of(p)) + 7:.1f}" y="{y(p.value) - 6:.1f}" font-size="10">{escape(label)}</text>')
    out.append("</svg>")
    return "\n".join(out) + "\n"
