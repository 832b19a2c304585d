"""What each engine's quality cost, as the verdict computed it (``analysis/cost.py``): latency
percentiles per engine and stage, HTTP calls, tokens and dollars per query. Only read here."""

from __future__ import annotations

import math
import textwrap
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # the gate's verdict, read here; imported only by type checkers
    from ..gate.verdict import Verdict


def _ms(seconds: float) -> str:
    ms = seconds * 1000.0
    return "nan" if math.isnan(ms) else f"{ms:.1f}" if ms < 1000 else f"{ms:,.0f}"


def _money(value: float) -> str:
    """Dollars as a decimal with three significant digits (0.0000355, not 3.55e-05)."""
    if value is None or math.isnan(value):
        return "-"
    if value == 0:
        return "0"
    digits = max(2, 2 - math.floor(math.log10(abs(value))))
    return f"{value:.{digits}f}"


def rows(verdict: Verdict) -> tuple[list[str], list[list[str]], list[str]]:
    """(header, a row per evaluation, notes): the cells both renderers lay out."""
    latency = {(x.engine, x.labeled): x for x in verdict.latency}
    usage = {(x.engine, x.labeled): x for x in verdict.usage}
    if not latency and not usage:
        return [], [], []
    several_sets = len({e.labeled.name for e in verdict.run.evaluations}) > 1
    header = ["engine"] + (["labeled set"] if several_sets else [])
    header += ["p50 ms", "p95 ms", "p99 ms", "max ms"] if latency else []
    header += ["calls/q", "tokens/q", "$/q"] if usage else []
    out, notes = [], []
    for e in verdict.run.evaluations:
        cells = [e.engine] + ([e.labeled.name] if several_sets else [])
        lat, use = latency.get(e.key), usage.get(e.key)
        if latency:
            cells += [_ms(lat.figures[s]) for s in ("p50", "p95", "p99", "max")] if lat else ["-"] * 4
        if usage:
            cells += ([f"{use.per_query('calls'):.2f}", f"{use.per_query('tokens'):.1f}", _money(use.per_query("cost"))]
                      if use else ["0", "0", "0"])
        out.append(cells)
        said = []
        if lat and lat.stages:
            said.append("stages " + ", ".join(f"{name} {_ms(f['p50'])}/{_ms(f['p95'])}"
                                              for name, f in lat.stages.items()) + " ms (p50/p95)")
        if lat and lat.prepare_seconds >= 0.0005:
            said.append(f"prepare() {_ms(lat.prepare_seconds)} ms once, before the timed calls")
        if said:
            notes.append(f"{e.engine}: " + "; ".join(said))
        if use and use.priced_as:
            notes.append(f"{e.engine}: {priced_as_text(use.priced_as)}")
        if use and use.unpriced:
            notes.append(f"{e.engine}: no price for {', '.join(use.unpriced)}: price it with --retrieval-prices, "
                         "MODEL=INPUT[/OUTPUT] in dollars per million tokens")
    if latency:
        notes.insert(0, measured_text(list(latency.values())))
    return header, out, notes


def measured_text(found: list) -> str:
    """What the rows were measured at, said once; where the concurrency or the machine differs
    between rows, which rows share which, and that those rows do not compare."""
    machines = list(dict.fromkeys(x.machine for x in found))
    widths = list(dict.fromkeys(x.concurrency for x in found))
    if len(machines) == 1 and len(widths) == 1:
        return f"latency measured at {found[0].measured_at}"
    if len(machines) == 1:
        groups = "; ".join(f"{w} ({', '.join(x.engine for x in found if x.concurrency == w)})" for w in widths)
        return (f"latency measured on {machines[0]} at concurrency {groups}: rows at a different concurrency do "
                "not compare")
    return ("latency measured at different settings, rows do not compare across them: "
            + "; ".join(f"{x.engine} at {x.measured_at}" for x in found))


def lines(verdict: Verdict) -> list[str]:
    """The terminal's cost table and its notes."""
    header, body, notes = rows(verdict)
    if not header:
        return []
    n_text = 2 if "labeled set" in header else 1
    grid = [header, *body]
    widths = [max(len(r[i]) for r in grid) for i in range(len(header))]
    out = ["what each engine's calls cost (latency; HTTP calls, tokens, dollars a query):"]
    out += ["  ".join(c.ljust(w) if i < n_text else c.rjust(w) for i, (c, w) in enumerate(zip(r, widths))).rstrip()
           for r in grid]
    for note in notes:
        out += textwrap.wrap(note, width=80, subsequent_indent="    ", break_on_hyphens=False)
    return out


def markdown(verdict: Verdict) -> list[str]:
    header, body, notes = rows(verdict)
    if not header:
        return []
    out = ["What each engine's calls cost (latency; HTTP calls, tokens, dollars a query):", "",
           "| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    out += ["| " + " | ".join(r) + " |" for r in body]
    return out + [""] + [f"- {n}" for n in notes] if notes else out


def priced_as_text(priced_as: dict) -> str:
    """Which price each model was charged at, where it was found under another name."""
    return ", ".join(f"{m} priced at the default price (*)" if name == "*" else f"{m} priced as {name}"
                     for m, name in sorted(priced_as.items()))


def run_lines(total: Any) -> list[str]:
    """The run's HTTP calls in all (``analysis.cost.RunUsage``), priced where the run has prices."""
    if total is None:
        return []
    besides = ", ".join(f"{m} {r[0]} calls ({r[1] + r[2]:,} tokens)" for m, r in total.outside.items())
    text = (f"the run's HTTP calls: {total.calls:,}, {total.tokens:,} tokens"
            + (f", ${_money(total.cost)}" if not total.unpriced else f" (no price for {', '.join(total.unpriced)})")
            + (f"; {priced_as_text(total.priced_as)}" if total.priced_as else "")
            + (f"; besides the engines' first trial (later trials, ingestion, generation, judging): {besides}"
               if besides else ""))
    return textwrap.wrap(text, width=80, subsequent_indent="    ", break_on_hyphens=False)
