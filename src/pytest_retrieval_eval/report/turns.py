"""Quality turn by turn, as the reports show it: a compact block under the terminal's table (the
miss cutoff's hit@k per engine by position, and the drop from first turns to follow-ups with
its interval over conversations), a table per engine in results.md, a folded section of the PR
comment and a small table on the page. Read from the analysis (``analysis/turns.py``
computed it); nothing is computed here, and nothing is shown for a set without conversations."""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

from ..analysis.turns import ordinal
from .table import NO_VALUE

if TYPE_CHECKING:  # the gate's verdict, read here; imported only by type checkers
    from ..gate.verdict import Verdict

#: the terminal's widest line (the default summary's)
WIDTH = 88


def _num(x: float | None, digits: int = 2) -> str:
    return NO_VALUE if x is None or math.isnan(x) else f"{x:.{digits}f}"


def _ci(ci: tuple[float, float], digits: int = 2) -> str:
    return f"[{_num(ci[0], digits)}, {_num(ci[1], digits)}]"


def rows_at(verdict: Verdict, measure: str) -> list[Any]:
    """The analysis's rows of ``measure``, in run order."""
    return [x for x in verdict.analysis.turns if x.measure == measure]


def terminal_lines(verdict: Verdict) -> list[str]:
    """``hit@5 by turn (drop: first turns minus follow-ups, 95% interval over conversations):``
    then per engine ``  keyword  1st 0.95  2nd 0.40  3rd 0.35 | drop 0.58 [0.41, 0.72]``: the
    positions that fit in ``WIDTH``, the rest said as a count (results.md has them all). The
    measure is the miss cutoff's hit@k, or those ``turns.drop`` rules judge, so the line shows
    the numbers a failure names."""
    from ..rules.thresholds import turn_measures

    out: list[str] = []
    for measure in dict.fromkeys(turn_measures(verdict.settings.thresholds) or [verdict.miss_measure]):
        out += _block(verdict, measure)
    return out


def _block(verdict: Verdict, measure: str) -> list[str]:
    rows = rows_at(verdict, measure)
    if not rows:
        return []
    several = len({x.labeled for x in rows}) > 1
    names = {id(x): x.engine + (f" ({x.labeled})" if several else "") for x in rows}
    width = max(len(n) for n in names.values())
    out = [f"{measure} by turn (drop: first turns minus follow-ups, 95% interval over conversations):"]
    for x in rows:
        tail = f" | drop {_num(x.drop)} {_ci(x.ci)}"
        head = f"  {names[id(x)]:<{width}}"
        cells = [f"{ordinal(g.label)} {_num(g.mean)}" for g in x.positions]
        shown = len(cells)
        while shown > 1 and len(head + _first(cells, shown) + tail) > WIDTH:
            shown -= 1
        out.append(head + _first(cells, shown) + tail)
    return out


def _first(cells: list[str], shown: int) -> str:
    """The first ``shown`` cells, and how many more there are."""
    return "".join(f"  {c}" for c in cells[:shown]) + (f"  +{len(cells) - shown} more" if shown < len(cells) else "")


def markdown(verdict: Verdict) -> list[str]:
    """results.md's "By turn" section: per evaluation, a row per measure with its mean by turn
    position and by dependence (n in each heading), and the drop with its interval."""
    turns = verdict.analysis.turns
    if not turns:
        return []
    out = ["", "## By turn", "",
           "Turns of conversations only. Drop: the mean over first turns minus the mean over follow-ups; its 95% "
           "interval and every interval of a conversation run resample conversations, not turns. Dependence: the "
           "label's flag; else a first turn stands alone; else what the turn's human rewrite says (it brings in "
           "words of the conversation); else a guess from the turn's text (a pronoun or ellipsis with little of its "
           "own, a correction, fewer than 2 content words)."]
    keys = list(dict.fromkeys((x.engine, x.labeled) for x in turns))
    for key in keys:
        rows = [x for x in turns if (x.engine, x.labeled) == key]
        first = rows[0]
        groups = [(g.label, g.n) for g in first.positions] + [(g.label, g.n) for g in first.dependence]
        out += ["", f"### {key[0]} on {key[1]} ({first.conversations} conversations, {first.n_first} first turns, "
                    f"{first.n_follow} follow-ups)", "",
                "| measure | " + " | ".join(f"{ordinal(label)} (n={n})" for label, n in groups)
                + " | first | follow-ups | drop | 95% CI |",
                "|---|" + "---|" * (len(groups) + 4)]
        for x in rows:
            by = {g.label: g.mean for g in (*x.positions, *x.dependence)}
            out.append(f"| {x.measure} | " + " | ".join(_num(by.get(label, math.nan), 3) for label, _ in groups)
                       + f" | {_num(x.first, 3)} | {_num(x.follow, 3)} | {_num(x.drop, 3)} | {_ci(x.ci, 3)} |")
    return out


def comment_lines(verdict: Verdict) -> list[str]:
    """The PR comment's folded section: one line per engine at the miss cutoff, then the tables."""
    rows = rows_at(verdict, verdict.miss_measure)
    if not rows:
        return []
    lines = [f"- {x.engine}{f' on {x.labeled}' if len({r.labeled for r in rows}) > 1 else ''}: "
             + ", ".join(f"{ordinal(g.label)} {_num(g.mean, 3)}" for g in x.positions)
             + f"; drop first → follow-ups {_num(x.drop, 3)} {_ci(x.ci, 3)}" for x in rows]
    return lines + markdown(verdict)[4:]  # the tables, without results.md's heading and note


def page_rows(verdict: Verdict) -> dict[str, Any] | None:
    """The page's "By turn" table at the miss cutoff: positions as columns, an engine per row."""
    rows = rows_at(verdict, verdict.miss_measure)
    if not rows:
        return None
    labels = list(dict.fromkeys(g.label for x in rows for g in x.positions))
    return {"measure": verdict.miss_measure, "positions": [ordinal(label) for label in labels],
            "rows": [{"engine": x.engine, "labeled": x.labeled,
                      "cells": [next((f"{g.mean:.3f} (n={g.n})" for g in x.positions if g.label == label), "")
                                for label in labels],
                      "drop": _num(x.drop, 3), "ci": _ci(x.ci, 3)} for x in rows]}
