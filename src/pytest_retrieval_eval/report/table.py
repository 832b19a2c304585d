"""The terminal summary table: one row per evaluation, fitting 80 columns with default measures."""

from __future__ import annotations

import math
import textwrap
from typing import Any, Iterable, Sequence

from ..gate import Row


def _fmt(value: float) -> str:
    return "nan" if math.isnan(value) else f"{value:.3f}"


def render(rows: Sequence[Row], measures: Sequence[str]) -> list[str]:
    """Rows sorted by engine name; the labeled set is a column only when there are several."""
    several_sets = len({r.labeled for r in rows}) > 1
    header = ["engine"] + (["labeled set"] if several_sets else []) + list(measures) + ["n", "errored"]
    body = []
    for r in sorted(rows, key=lambda r: (r.engine, r.labeled)):
        cells = [r.engine] + ([r.labeled] if several_sets else [])
        cells += [_fmt(r.values[m]) for m in measures] + [str(r.n), str(r.errors)]
        body.append(cells)
    n_text = 2 if several_sets else 1
    widths = [max(len(row[i]) for row in [header] + body) for i in range(len(header))]

    def line(cells: Sequence[str]) -> str:
        parts = [c.ljust(w) if i < n_text else c.rjust(w) for i, (c, w) in enumerate(zip(cells, widths))]
        return "  ".join(parts).rstrip()

    return [line(header)] + [line(cells) for cells in body]


def describe_engines(results: Iterable[Any], width: int = 80) -> list[str]:
    """One wrapped paragraph per engine: the configuration that produced its row."""
    seen: dict[str, dict] = {}
    for r in results:
        seen.setdefault(r.engine, dict(r.engine_info))
    lines = []
    for name in sorted(seen):
        info = ", ".join(f"{k}={v}" for k, v in seen[name].items() if k != "engine")
        lines += textwrap.wrap(info, width=width, initial_indent=f"{name}: ", subsequent_indent="    ",
                               break_on_hyphens=False, break_long_words=False) or [f"{name}:"]
    return lines
