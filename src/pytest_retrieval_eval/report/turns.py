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
    out: list[str] = []
    for measure in gated(verdict):
        out += _block(verdict, measure)
    return out + oracle_lines(verdict) + fidelity_lines(verdict)


def oracle_lines(verdict: Verdict) -> list[str]:
    """Under the by-turn lines, each engine's gap to the oracle on follow-ups split into pool and
    ranking (``analysis/rewrites.py``): ``hit@5 on follow-ups: gap to the human rewrite
    (hybrid-rewrite) = pool + ranking:`` then ``  hybrid  0.12 [0.05, 0.20] = pool 0.08 [...] +
    ranking 0.04 [...]``. Where a row would be wider than ``WIDTH``, every row puts ``+ ranking``
    on a line of its own under its ``=``: each part keeps its interval, and the rows read alike
    (dropping the wide rows' intervals left some parts with one and others without)."""
    gaps = verdict.analysis.oracle_gaps
    if not gaps:
        return []
    oracles = list(dict.fromkeys(x.oracle for x in gaps))
    several = len({x.labeled for x in gaps}) > 1
    names = {id(x): x.engine + (f" ({x.labeled})" if several else "") + (f" to {x.oracle}" if len(oracles) > 1 else "")
             for x in gaps}
    width = max(len(n) for n in names.values())
    out = [f"{gaps[0].measure} on follow-ups: gap to the human rewrite"
           + (f" ({oracles[0]})" if len(oracles) == 1 else "") + " = pool + ranking:"]
    rows = [(f"  {names[id(x)]:<{width}}  {_num(x.gap)} {_ci(x.gap_ci)} ", f"= pool {_num(x.pool)} {_ci(x.pool_ci)}",
             f"+ ranking {_num(x.ranking)} {_ci(x.ranking_ci)}") for x in gaps]
    if all(len(f"{head}{pool} {ranking}") <= WIDTH for head, pool, ranking in rows):
        return out + [f"{head}{pool} {ranking}" for head, pool, ranking in rows]
    at = max(len(head) for head, _, _ in rows)  # the column of every row's "="
    for head, pool, ranking in rows:
        out += [f"{head:<{at}}{pool}", f"{'':<{at}}{ranking}"]
    return out


def fidelity_lines(verdict: Verdict) -> list[str]:
    """Each recorded rewriter against the person's rewrites: ``  mine  0.94 over 10 turns; overlap
    0.20`` (ROUGE-1 recall; the overlap of its top k with the oracle's, where one ran)."""
    found = verdict.analysis.rewrites
    if not found:
        return []
    several = len({x.labeled for x in found}) > 1
    names = {id(x): x.engine + (f" ({x.labeled})" if several else "") for x in found}
    width = max(len(n) for n in names.values())
    k = found[0].k
    out = [f"rewrites against the person's (ROUGE-1 recall; top-{k} overlap with the oracle's):"]
    for x in found:
        overlap = f"; overlap {_num(x.overlap)}" if x.overlap is not None else "; no oracle ran"
        out.append(f"  {names[id(x)]:<{width}}  {_num(x.rouge)} over {len(x.turns)} turns{overlap}")
    return out


def gated(verdict: Verdict) -> list[str]:
    """The measures the by-turn lines and the page show: those ``turns.drop`` rules judge, else the
    miss cutoff's hit@k."""
    from ..rules.thresholds import turn_measures

    return list(dict.fromkeys(turn_measures(verdict.settings.thresholds) or [verdict.miss_measure]))


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
    return out + _against_the_oracle(verdict)


def _against_the_oracle(verdict: Verdict) -> list[str]:
    """results.md's tables of the gap to the oracle (pool and ranking) and of the rewrites' fidelity."""
    gaps, found = verdict.analysis.oracle_gaps, verdict.analysis.rewrites
    if not gaps and not found:
        return []
    out = ["", "### Against the human rewrite", ""]
    if gaps:
        out += [f"Each engine's gap to the oracle (the person's rewrite searched) on follow-ups, {gaps[0].measure}: "
                "pool is the gap an ideal ranking of each one's candidates would leave (its stages' legs, else its "
                "answer at the run's depth), ranking the rest; 95% intervals resample conversations, turns paired.",
                "", "| engine | oracle | follow-ups | gap | 95% CI | pool | 95% CI | ranking | 95% CI | candidates | "
                    "pool recall | oracle's pool recall |", "|---|" + "---|" * 11]
        out += [f"| {x.engine} | {x.oracle} | {x.n} | {_num(x.gap, 3)} | {_ci(x.gap_ci, 3)} | {_num(x.pool, 3)} | "
                f"{_ci(x.pool_ci, 3)} | {_num(x.ranking, 3)} | {_ci(x.ranking_ci, 3)} | {x.pool_from} | "
                f"{_num(x.recall, 3)} | {_num(x.oracle_recall, 3)} |" for x in gaps]
    if found:
        out += ["", f"Each recorded rewrite against the person's: ROUGE-1 recall (the person's words found in it) and "
                    f"the overlap of its top {found[0].k} with the oracle's, means over the turns both rewrote.", "",
                "| engine | oracle | turns | ROUGE-1 recall | overlap |", "|---|---|---|---|---|"]
        out += [f"| {x.engine} | {x.oracle or NO_VALUE} | {len(x.turns)} | {_num(x.rouge, 3)} | "
                f"{_num(x.overlap, 3)} |" for x in found]
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
    """The page's "By turn" table: an engine per row (and per measure, where rules judge the drop
    of several), the drop first, where a table 1,400 px wide still shows it beside the engine
    however many turn positions follow as columns."""
    measures = gated(verdict)
    rows = [x for m in measures for x in rows_at(verdict, m)]
    if not rows:
        return None
    labels = list(dict.fromkeys(g.label for x in rows for g in x.positions))
    return {"measure": ", ".join(dict.fromkeys(x.measure for x in rows)), "several": len(measures) > 1,
            "positions": [ordinal(label) for label in labels],
            "rows": [{"engine": x.engine, "labeled": x.labeled, "measure": x.measure,
                      "cells": [next((f"{g.mean:.3f} (n={g.n})" for g in x.positions if g.label == label), "")
                                for label in labels],
                      "drop": _num(x.drop, 3), "ci": _ci(x.ci, 3)} for x in rows]}
