"""A measure across the history's records (``gate/history.py``) as a dependency-free SVG: one
point per record and engine with its 95% interval, joined within a series. A series is one
engine on one labeled set, corpus, description and judge (their fingerprints): where one of them
changes a new series starts, drawn apart and marked, since the numbers no longer measure the
same thing."""

from __future__ import annotations

import math

from html import escape
from typing import Any, Sequence

from .plot import COLOURS, ROW, frame, legend_entry, legend_size
from ..analysis.scores import Scores

W, H, LEFT, RIGHT, TOP, BOTTOM = 720, 400, 56, 200, 24, 70


def points(records: Sequence[Any], measure: str, engine: str | None = None,
           skipped: list[str] | None = None) -> list[dict[str, Any]]:
    """One point per record and evaluation: engine, series key, commit, order (the record's name),
    mean, interval. A record that cannot be read is left out, said in ``skipped`` (once)."""
    from ..errors import RetrievalEvalError
    from ..analysis.analyse import Analysis

    out = []
    for r in records:
        try:
            run = r.run()
            analysis = Analysis.from_dict(r.results.get("analysis"))  # the record's own intervals
        except RetrievalEvalError as exc:
            said = f"{exc}; left out of the trend"
            if skipped is not None and said not in skipped:
                skipped.append(said)
            continue
        for e in run.evaluations:
            if engine is not None and e.engine != engine:
                continue
            key = f"{e.engine} on {e.labeled.name}"
            fp = r.fingerprints.get("engines", {}).get(key, {})
            if Scores.of(e).mean(measure) is None:  # no value (an ids-only engine's +evidence twin): no point
                continue
            lo, hi = analysis.interval(e.key, measure) if analysis is not None else (math.nan, math.nan)
            if math.isnan(lo):  # a record from before analyses were kept
                lo, hi = Scores.of(e).ci(measure)
            out.append({"engine": e.engine, "label": key, "series": (key, *sorted(fp.items())),
                        "commit": (r.commit or "")[:10] or "no commit", "dirty": bool(r.git.get("dirty")),
                        "order": r.path.name, "mean": Scores.of(e).mean(measure), "ci": (lo, hi)})  # a record's name: its time to the µs
    return out


def trend_svg(records: Sequence[Any], measure: str, engine: str | None = None,
              skipped: list[str] | None = None) -> str:
    """Deterministic text: the same records, the same bytes (``skipped``: as ``points``)."""
    found = points(records, measure, engine, skipped)
    times = sorted({p["order"] for p in found})
    x_of = {t: i for i, t in enumerate(times)}
    pw, ph = W - LEFT - RIGHT, H - TOP - BOTTOM

    def x(i: int) -> float:
        return LEFT + (i + 0.5) * pw / max(len(times), 1)

    def y(v: float) -> float:
        return TOP + (1 - v) * ph

    title = f"{measure} across commits" + (f" ({engine})" if engine else "")
    engines = sorted({p["label"] for p in found})
    series: dict[tuple, list[dict[str, Any]]] = {}
    for p in found:
        series.setdefault(p["series"], []).append(p)
    ordered = []  # (key, its points, the first series of its engine?)
    for key in sorted(series, key=lambda k: (k[0], series[k][0]["order"])):
        run = series[key]
        ordered.append((key, run, all(s[0] != key[0] or s == key or series[s][0]["order"] > run[0]["order"] for s in series)))
    width, height = legend_size([run[0]["label"] + ("" if first else " (new series)") for _, run, first in ordered],
                                W - RIGHT + 12, TOP + 8, W, H)
    out = frame(title, width, height, LEFT, TOP, pw, ph)
    commits = {}
    for p in found:
        commits.setdefault(p["order"], p["commit"] + ("*" if p["dirty"] else ""))
    for t, label in commits.items():
        out.append(f'<text x="{x(x_of[t]):.1f}" y="{TOP + ph + 14}" text-anchor="end" '
                   f'transform="rotate(-40 {x(x_of[t]):.1f} {TOP + ph + 14})">{escape(label)}</text>')
    out.append(f'<text x="14" y="{TOP + ph / 2:.1f}" transform="rotate(-90 14 {TOP + ph / 2:.1f})" '
               f'text-anchor="middle">{escape(measure)}</text>')
    legend_y = TOP + 8
    for key, run, first_of_engine in ordered:
        colour = COLOURS[engines.index(run[0]["label"]) % len(COLOURS)]
        dash = "" if first_of_engine else ' stroke-dasharray="5,4"'
        if not first_of_engine:  # a fingerprint changed: a new series starts here
            xs = x(x_of[run[0]["order"]]) - pw / max(len(times), 1) / 2
            out.append(f'<line class="new-series" x1="{xs:.1f}" y1="{TOP}" x2="{xs:.1f}" y2="{TOP + ph}" '
                       f'stroke="{colour}" stroke-dasharray="2,3"/>')
        pts = " ".join(f"{x(x_of[p['order']]):.1f},{y(p['mean']):.1f}" for p in run)
        out.append(f'<polyline fill="none" stroke="{colour}" stroke-width="2"{dash} points="{pts}"/>')
        for p in run:
            px = x(x_of[p["order"]])
            lo, hi = p["ci"]
            if lo == lo and hi == hi:
                out.append(f'<line x1="{px:.1f}" y1="{y(hi):.1f}" x2="{px:.1f}" y2="{y(lo):.1f}" stroke="{colour}"/>')
            out.append(f'<circle class="point" cx="{px:.1f}" cy="{y(p["mean"]):.1f}" r="3.5" fill="{colour}">'
                       f'<title>{escape(p["label"])} at {escape(p["commit"])}: {escape(measure)} {p["mean"]:.3f} '
                       f'[{lo:.3f}, {hi:.3f}]</title></circle>')
        label = run[0]["label"] + ("" if first_of_engine else " (new series)")
        out += legend_entry(W - RIGHT + 12, legend_y, colour, dash, label)
        legend_y += ROW
    out.append("</svg>")
    return "\n".join(out) + "\n"
