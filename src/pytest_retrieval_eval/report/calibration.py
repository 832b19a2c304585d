"""A calibration (``analysis/calibration.Calibration``) as the ``calibrate`` command prints it: a
table per rule of its false-fail rate and its power at the drop the run states it can detect (and
at each drop asked for), then each rule that fails an unchanged engine more often than alpha,
named, with what would fix it as a command that runs as printed. It only reads the record."""

from __future__ import annotations

import math
import shlex
from ..analysis.calibration import Calibration, RuleCalibration

#: the head of ``python -m pytest_retrieval_eval calibrate``, as a suggestion prints it
COMMAND = "python -m pytest_retrieval_eval calibrate"


def _percent(x: float | None) -> str:
    return "-" if x is None or math.isnan(x) else f"{x:.1%}"


def _share(counts: dict, n: int, state: str = "fail") -> str:
    return f"{_percent(counts.get(state, 0) / n if n else None)} ({counts.get(state, 0)}/{n})"


def calibration_lines(c: Calibration, results: str) -> list[str]:
    """The table and what exceeds alpha; ``results``: the file calibrated, as a command names it."""
    how = sorted({r.rerun for r in c.rules})
    lines = [f"calibration of {results}: {c.reruns} reruns of the run against itself ({', '.join(how)}), and "
             f"as many per drop injected; alpha {c.alpha:g}, seed {c.seed}; {c.seconds:.1f} s",
             "false-fail: the unchanged reruns the rule failed; power: the reruns it failed with a drop of the run's "
             "detectable size injected (relevant documents moved down on the share of questions said)"]
    asked = list(c.sizes)
    unsure = any(r.outcomes.get("inconclusive") for r in c.rules)  # a third verdict: its own column
    head = ["rule", "engine", "rerun", "as recorded", "false-fail", *(["inconclusive"] if unsure else []),
            "detectable", "power", "moved", *(f"power at {x:g}" for x in asked)]
    rows = [head]
    several = len({x.labeled for x in c.rules}) > 1
    for r in c.rules:
        at = r.at_detectable
        more = []
        for x in asked:
            p = next((p for p in r.power if p.size == x), None)
            more.append(_share(p.outcomes, p.reruns) if p is not None and p.reruns else "-")
        rows.append([r.rule, f"{r.engine} on {r.labeled}" if several else r.engine, r.rerun, r.recorded,
                     _share(r.outcomes, r.reruns),
                     *([_share(r.outcomes, r.reruns, "inconclusive")] if unsure else []),
                     "-" if math.isnan(r.detectable) else f"{r.detectable:.3f}",
                     _share(at.outcomes, at.reruns) if at is not None and at.reruns else "-",
                     f"{at.share:.1%}" if at is not None and at.reruns else "-", *more])
    widths = [max(len(row[i]) for row in rows) for i in range(len(head))]
    lines += ["  ".join(cell.ljust(w) for cell, w in zip(row, widths)).rstrip() for row in rows]
    drawn = sorted({int(r.rerun.split()[0]) for r in c.rules if r.rerun.endswith(" trials")})
    if drawn:
        lines.append(f"note: each question's rerun is drawn from its {' or '.join(str(n - 1) for n in drawn)} trials "
                     "after the first: near a rule's edge (its power at the detectable drop) a figure moves by several "
                     "points with those trials' luck; more trials (--retrieval-trials=N) make it surer")
    if any(r.kind == "max-drop" and r.rerun.endswith("resampled") for r in c.rules):
        lines.append("note: an engine that answers the same every time is rerun on resampled questions, against the "
                     "same resample: no max-drop rule can fail it unchanged; record trials (--retrieval-trials=N) "
                     "of an engine that varies")
    for r in c.rules:
        if r.recorded != "pass":
            lines.append(f"note: {r.rule} fails {r.engine} as recorded: its reruns' failures are no false alarm")
        for p in r.power:
            if not p.reruns:
                lines.append(f"note: {r.rule}: no drop of {p.size:.3f} could be injected into {r.engine}'s rankings "
                             f"(moving every question's relevant documents down lowers {r.measure} less)")
    for r in c.over_alpha():
        lines.append(f"over alpha: {r.rule} (from {r.source}) fails {r.engine} unchanged in "
                     f"{r.false_fail:.1%} of reruns, more than alpha {c.alpha:g}; {fix(r, c, results)}")
    for why in c.left_out:
        lines.append(f"not calibrated: {why}")
    return lines


def fix(r: RuleCalibration, c: Calibration, results: str) -> str:
    """What would bring ``r`` under alpha, each a command that runs as printed."""
    out = []
    if r.wider is not None:
        if r.kind == "max-drop":
            rule = f"{r.engine}:{r.measure}={r.wider:g}"
            option = f"--max-drop={rule}"
        else:
            op = next(op for op in (">=", "<=", ">", "<") if op in r.rule)
            rule = f"{r.engine}:{r.measure}{op}{r.wider:g}"
            option = f"--threshold={rule}"
        out.append(f"a wider rule, {rule}, fails in at most {c.alpha:.0%} of these reruns (check it: "
                   f"{COMMAND} {shlex.quote(results)} {shlex.quote(option)}; in the run: "
                   f"{shlex.quote('--retrieval-' + option[2:])})")
    if r.kind == "max-drop" and not c.noise_aware:
        out.append(f"or fail only a significant drop (check it: {COMMAND} {shlex.quote(results)} --noise-aware; in "
                   "the run: --retrieval-noise-aware)")
    if r.rerun.endswith("trials"):
        out.append("or more trials per run (--retrieval-trials=N), so the engine's own spread is known")
    out.append("or more questions (a mean's spread shrinks as one over the square root of their number)")
    return "; ".join(out)
