"""The checks: each rule against what the analysis computed, and the failures a breach becomes
(the rules themselves are parsed in ``rules/``)."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Mapping, Sequence

from ..analysis.rows import Row
from ..analysis.unsettled import Unsettled, straddles
from ..rules.drops import MaxDrop
from ..rules.quantities import (COUNT_TYPES, CoverageQuantity, ErrorCount, LatencyQuantity, LintCount, MeasureQuantity,
                                ShadowQuantity, StaleCount, TurnsQuantity, UsageQuantity)
from ..rules.thresholds import Threshold


#: what a rule judged with its interval ends in, besides passing (``Failure.state``): its interval
#: wholly on the failing side of its line, or straddling it
STATES = ("fail", "inconclusive")
#: how each state leads a failure's line on every surface (``FAIL retrieval gate: ...``)
LABELS = {"fail": "FAIL", "inconclusive": "INCONCLUSIVE"}


class Failure(str):
    """One reason the gate failed, as it reads (a ``str``), with its kind (``verdict.FAILURE_KINDS``),
    why the rule's engine missed where that is known (one line per labeled set, under it), and,
    for a failure about one engine, that engine and the failure said without it or its provenance
    (``brief``): what lets the pull-request comment name many failures of one engine on one line.
    ``state``: ``fail``, or ``inconclusive`` for a rule whose interval straddles its line (what
    that does to the run is ``--retrieval-inconclusive``'s)."""

    kind: str
    causes: tuple[str, ...]
    engine: str | None
    brief: str | None
    state: str

    def __new__(cls, kind: str, text: str, causes: Sequence[str] = (), *, engine: str | None = None,
                brief: str | None = None, state: str | None = None) -> "Failure":
        self = super().__new__(cls, text)
        self.kind, self.causes, self.engine, self.brief = kind, tuple(causes), engine, brief
        self.state = state or getattr(text, "state", "fail")  # a Failure re-made keeps its state
        return self

    @property
    def label(self) -> str:
        """``FAIL`` or ``INCONCLUSIVE``: how its line starts on every surface."""
        return LABELS[self.state]


def _unsettled(unsettled: Sequence[Unsettled], rule: Any, engine: str, labeled: str) -> Unsettled | None:
    """The analysis's record of ``rule`` straddling its line on one evaluation, if it does."""
    return next((u for u in unsettled if (u.rule, u.engine, u.labeled) == (str(rule), engine, labeled)), None)


def _plain(value: float) -> str:
    """A count or a dollar figure as a decimal (0.000015, not 1.5e-05)."""
    text = f"{value:.10f}".rstrip("0").rstrip(".")
    return text if text not in ("", "-0") else "0"


@dataclass(frozen=True)
class Breach:
    threshold: Threshold
    engine: str
    #: the value judged; None for a rule that checked nothing (no evaluation of its engine, or
    #: ``no_value``)
    value: float | None
    detail: str = ""
    #: the engine was evaluated but the quantity has no value for it (``Row.values``: None)
    no_value: bool = False
    #: ``fail``, or ``inconclusive`` where the rule's interval straddles its line (``STATES``)
    state: str = "fail"

    def __str__(self) -> str:
        t = self.threshold
        if self.value is None and not self.no_value:
            return f"{t} ({t.source}): {self.detail}"
        return f"{self.engine}: {self.brief()} (from {t.source}; {self.detail})"

    def brief(self) -> str:
        """The breach without its engine and provenance (``hit@5 = 0.6000, required >= 0.8``)."""
        t = self.threshold
        counted = isinstance(t.quantity, COUNT_TYPES) or (isinstance(t.quantity, MeasureQuantity)
                                                           and t.quantity.measure.count)
        unit = getattr(t.quantity, "unit", "")
        costs = isinstance(t.quantity, (LatencyQuantity, UsageQuantity))
        required = f"{t.value:g} {unit}" if unit else f"{t.value:g}"
        if self.value is None and not costs:  # no value: nothing was compared with the rule's bound
            return f"{t.measure} has no value, so the rule {t} checked nothing"
        shown = ("unknown" if self.value is None else
                 f"{int(self.value)}" if counted and float(self.value).is_integer() else
                 f"{self.value:.1f} {unit}" if unit else _plain(self.value) if isinstance(t.quantity, UsageQuantity)
                 else f"{self.value:.4f}")
        return f"{t.measure} = {shown}, required {t.op} {required}"


def check(thresholds: Sequence[Threshold], rows: Sequence[Row], *, confidence: str = "point",
          unsettled: Sequence[Unsettled] = ()) -> list[Breach]:
    """Every rule against every evaluation of the engines it names; a rule naming an engine that
    was never evaluated is a breach, never silently skipped.

    ``confidence="lower"`` judges a measure on the cautious end of its 95% interval (the
    lower bound for ``>=``/``>``, the upper for ``<=``/``<``), so a pass means the rule holds with
    95% confidence over queries, not just on this sample of them. A rule that holds at the other
    end is inconclusive (its interval straddles its line, whichever side its estimate is on), and
    says by how much and how many questions would settle it (``unsettled``: the analysis's)."""
    breaches = []
    engines = {r.engine for r in rows}
    for t in thresholds:
        if isinstance(t.quantity, (LintCount, ShadowQuantity, CoverageQuantity, TurnsQuantity)) or t.segment:
            continue  # see check_lint, check_shadows, check_coverage, check_segments, check_turns
        if t.engine is not None and t.engine not in engines:
            breaches.append(Breach(t, t.engine, None, f"no evaluation of engine '{t.engine}' was recorded "
                                   f"(evaluated: {', '.join(sorted(engines)) or 'none'})"))
            continue
        for row in rows:
            if t.engine is not None and row.engine != t.engine:
                continue
            if isinstance(t.quantity, ErrorCount):
                value, how = float(row.errors), ""
            elif isinstance(t.quantity, StaleCount):
                value, how = row.values.get("stale", 0.0), ""
            elif row.values[t.measure] is None:  # no value: the rule checked nothing, and fails saying so
                why = row.details.get(t.measure)
                breaches.append(Breach(t, row.engine, None, f"n={row.n}" + (f"; {why}" if why else ""), no_value=True))
                continue
            elif confidence == "lower" and t.measure in row.intervals:
                point = row.values[t.measure]
                lo, hi = row.intervals[t.measure]
                side = "lower" if t.op in (">=", ">") else "upper"
                value = lo if side == "lower" else hi
                how = (f"; judged on the 95% {side} bound (--retrieval-confidence=lower), "
                       f"point estimate {point:.4f}")
            else:
                value, how = row.values[t.measure], ""
            if not t.holds(value):
                why = row.details.get(t.measure)
                found = (_unsettled(unsettled, t, row.engine, row.labeled)
                         if how and straddles(t.holds, row.intervals[t.measure]) else None)
                breaches.append(Breach(t, row.engine, value, f"n={row.n}{how}" + (f"; {why}" if why else "")
                                       + (f"; {found.text()}" if found else ""),
                                       state="inconclusive" if found else "fail"))
    return breaches


def check_segments(thresholds: Sequence[Threshold], values: Sequence[Any]) -> list[str]:
    """Segment rules (``[ENGINE][TAG]:MEASURE>=V``) against the questions carrying the tag, per
    engine, as the analysis measured them (``analysis/segments.SegmentRule``); a failure names the
    segment, its n, the smallest drop it can show, and the questions that scored lowest. A tag no
    question carries is a failure: the rule would check nothing."""
    failures = []
    for t in (t for t in thresholds if t.segment):
        judged = [v for v in values if v.rule == str(t)]
        untagged: set[str] = set()  # said once per labeled set, not once per engine
        if not judged:
            failures.append(f"{t} ({t.source}): no evaluation of engine '{t.engine}' was recorded")
        for v in judged:
            if not v.n:
                if v.labeled in untagged:
                    continue
                untagged.add(v.labeled)
                failures.append(f"{t} ({t.source}): no question of {v.labeled} carries tag '{t.segment}' "
                                f"(tags: {', '.join(v.tags) or 'none'}), so the rule checked nothing")
                continue
            if v.value is None:  # no value: the rule checked nothing, as without a segment
                failures.append(f"{v.engine}[{t.segment}]: {t.measure} has no value, so the rule {t} checked nothing "
                                f"(from {t.source}; segment {t.segment}, n={v.n} of {v.of_n}"
                                f"{f'; {v.why}' if v.why else ''})")
                continue
            if t.holds(v.value):
                continue
            can = ("no detectable drop with one question" if math.isnan(v.drop)
                   else f"smallest detectable drop {v.drop:.3f}")
            failures.append(f"{v.engine}[{t.segment}]: {t.measure} = {v.value:.4f}, required {t.op} {t.value:g} (from "
                            f"{t.source}; segment {t.segment}, n={v.n} of {v.of_n}, {can}); lowest: "
                            f"{', '.join(v.lowest) or 'none'}{f' and {v.more} more' if v.more > 0 else ''}")
    return failures


def check_coverage(thresholds: Sequence[Threshold], coverage: Mapping[str, Any]) -> list[str]:
    """``coverage.documents`` / ``coverage.chunks`` rules against the share of the corpus some
    question judges; a failure names the documents no question reaches, largest first."""
    failures = []
    for t in (t for t in thresholds if isinstance(t.quantity, CoverageQuantity)):
        part = (coverage or {}).get(t.quantity.of)
        if not part or not part.get("total"):
            failures.append(f"{t} ({t.source}): no {t.quantity.of} to cover were recorded (no corpus; for chunks, no "
                            "ingestion of the plugin's or of a team's YAML ran), so the rule checked nothing")
            continue
        value = part["judged"] / part["total"]
        if not t.holds(value):
            unreached = coverage.get("unreached", [])
            shown = ", ".join(f"{d} ({w:,} words)" for d, w in unreached[:10])
            more = coverage.get("unreached_count", len(unreached)) - min(len(unreached), 10)
            failures.append(f"{t.measure} = {value:.4f} ({part['judged']} of {part['total']} {t.quantity.of} judged by "
                            f"some question), required {t.op} {t.value:g} (from {t.source}); no question reaches "
                            f"{shown or 'none'}{f' and {more} more' if more > 0 else ''}")
    return failures


def check_shadows(thresholds: Sequence[Threshold], shadows: Sequence) -> list[str]:
    """``[CANDIDATE:]shadow.gain>=X`` and ``[CANDIDATE:]shadow.MEASURE>=X`` against each shadow
    comparison (``analysis/shadow.py``); a rule with no comparison to judge is a failure."""
    failures = []
    for t in (t for t in thresholds if isinstance(t.quantity, ShadowQuantity)):
        gain = t.quantity.measure is None
        judged = [sh for sh in shadows if t.engine is None or sh.candidate == t.engine]
        if not judged:
            failures.append(f"{t} ({t.source}): no shadow comparison{f' with candidate {t.engine}' if t.engine else ''} "
                            "ran; name one with --retrieval-shadow CANDIDATE:BASELINE")
        what = "knowledge gain" if gain else f"{t.quantity.measure.name} delta"
        for sh in judged:
            value = sh.gain if gain else sh.delta(t.quantity.measure.name)
            if value is None or math.isnan(value):  # no value: nothing was compared with the rule's bound
                why = (f"not weighted, no value in this run: {', '.join(sh.skipped)}" if gain
                       else f"an engine has none of {t.quantity.measure.name}")
                failures.append(f"shadow {sh.candidate}:{sh.baseline}: {what} has no value ({why}), so the rule "
                                f"{t} (from {t.source}) checked nothing")
                continue
            if not t.holds(value):
                from ..types import query_name

                worst = "; ".join(f"{query_name(m.query_id, m.question)} {m.contribution:+.4f}"
                                  for m in sh.movers if m.contribution < 0)
                failures.append(f"shadow {sh.candidate}:{sh.baseline}: {what} = {value:+.4f}, required {t.op} "
                                f"{t.value:g} (from {t.source}; n={sh.n}, {sh.better} better, {sh.worse} worse; "
                                f"p={sh.gain_p:.3g}){f'; most lost: {worst}' if worst else ''}")
    return failures



def check_turns(thresholds: Sequence[Threshold], turns: Sequence, run: Any, *,
                confidence: str = "point", unsettled: Sequence[Unsettled] = ()) -> list[tuple[str, Any]]:
    """``[ENGINE:]turns.drop.MEASURE<=X`` against each evaluation's drop from first turns to
    follow-ups (``analysis/turns.ByTurn``, read from the analysis): (failure line, the
    ``ByTurn`` it breached or None). ``confidence="lower"`` judges the drop on the cautious end
    of its interval (the upper bound for ``<=``), as threshold rules on measures are, and a drop
    whose interval straddles the rule's line is inconclusive (the line a ``Failure`` of that
    state). A set without conversations has no drop: the rule fails, saying so, rather than
    passing unchecked."""
    failures: list[tuple[str, Any]] = []
    for t in (t for t in thresholds if isinstance(t.quantity, TurnsQuantity)):
        judged = [e for e in run.evaluations if t.engine in (None, e.engine)]
        if not judged:
            failures.append((f"{t} ({t.source}): no evaluation of engine '{t.engine}' was recorded", None))
        flat = sorted({e.labeled.name for e in judged if not e.labeled.has_conversations})
        if flat:
            failures.append((f"{t} ({t.source}): labeled set {', '.join(flat)} has no conversations (no question is "
                             "a turn of one), so there is no drop from first turns to follow-ups to judge; label "
                             "conversations (docs/labels.md) or remove the rule", None))
        for e in (e for e in judged if e.labeled.has_conversations):
            row = next((x for x in turns if (x.engine, x.labeled, x.measure) == (e.engine, e.labeled.name,
                                                                                 t.quantity.measure.name)), None)
            if row is None or math.isnan(row.drop):
                why = ("no value" if row is None else "no first turn" if not row.n_first else "no follow-up turn")
                failures.append((f"{e.engine}: {t.measure} has {why} on {e.labeled.name}, so the rule {t} (from "
                                 f"{t.source}) checked nothing", None))
                continue
            lo, hi = row.ci
            value, how = row.drop, ""
            if confidence == "lower" and not math.isnan(lo):
                side = "lower" if t.op in (">=", ">") else "upper"
                value = lo if side == "lower" else hi
                how = f"judged on the 95% {side} bound (--retrieval-confidence=lower), point estimate {row.drop:.4f}; "
            if t.holds(value):
                continue
            found = _unsettled(unsettled, t, e.engine, e.labeled.name) if how and straddles(t.holds, row.ci) else None
            failures.append((Failure("turns", f"{e.engine}: {t.measure} = {value:.4f}, required {t.op} {t.value:g} "
                                     f"(from {t.source}; {how}first turns {row.first:.4f} n={row.n_first}, follow-ups "
                                     f"{row.follow:.4f} n={row.n_follow}, 95% interval [{lo:.3f}, {hi:.3f}] over "
                                     f"{row.conversations} conversations{f'; {found.text()}' if found else ''})",
                                     state="inconclusive" if found else "fail"), row))
    return failures


def check_lint(thresholds: Sequence[Threshold], reports: Sequence) -> list[str]:
    """Lint rules against each ingestion's counts; with no ingestion in the run, a rule is a
    failure (it was asked for and nothing could be checked)."""
    failures = []
    for t in (t for t in thresholds if isinstance(t.quantity, LintCount)):
        if not reports:
            failures.append(f"{t} ({t.source}): no ingestion ran, so no chunk was linted")
        for r in reports:
            value = r.counts()[t.quantity.kind]
            if not t.holds(value):
                failures.append(f"corpus {r.dataset}: {t.measure} = {value}, required {t.op} {t.value:g} (from {t.source})")
    return failures



def check_drops(rules: Sequence[MaxDrop], diffs: Sequence, *, noise_aware: bool, alpha: float,
                segments: Sequence = (), spreads: Mapping[tuple[str, str], float | None] | None = None,
                unvalued: Sequence[tuple[str, str, str, str]] = (),
                unsettled: Sequence[Unsettled] = ()) -> tuple[list[Failure], list[str]]:
    """(a failure per breached rule, with the queries that moved; warnings). ``noise_aware``
    fails only when the drop is also significant (paired test, its p corrected over every diff <
    alpha) and, where the run repeated its trials (``spreads``: (engine, measure) -> highest minus
    lowest trial mean), larger than the engine's own spread across them: a significant drop
    inside it is a warning. A segment rule reads the baseline comparison's segment diffs.
    ``unvalued``: (engine, labeled set, measure, where) of the measures left out of the comparison
    for having no value (``BaselineComparison.unvalued``): a rule on one fails, checking nothing.
    A drop that ``noise_aware`` fails is inconclusive instead where the 95% interval of the drop
    reaches back within the delta (``unsettled``: the analysis's; a drop within its delta passes,
    as before, so inconclusive is only ever taken from what failed)."""
    failures, warnings = [], []
    for rule in (r for r in rules if r.segment):
        found = [d for d in segments if d.tag == rule.segment and d.measure == rule.measure
                 and rule.engine in (None, d.engine)]
        if not found:
            failures.append(Failure("drop", f"max-drop rule {rule} (from {rule.source}): no segment {rule.segment} of "
                            f"{rule.engine or 'any engine'} was compared with the baseline, so the rule checked nothing"))
        for d in found:
            drop = d.before - d.after
            p = d.paired.p if math.isnan(d.paired.p_adjusted) else d.paired.p_adjusted
            if rule.holds(drop) or (noise_aware and not p < alpha):
                continue
            found = _unsettled(unsettled, rule, f"{d.engine}[{d.tag}]", "") if noise_aware else None
            brief = f"{d.measure} dropped {drop:.4f} ({d.before:.4f} -> {d.after:.4f}), more than {rule.delta:g}"
            failures.append(Failure("drop", f"{d.engine}[{d.tag}]: {brief} (from {rule.source}; segment {d.tag}, "
                                            f"n={d.n}, {d.paired.losses} down, {d.paired.wins} up, p={d.paired.p:.3g}; "
                                            f"the total {d.total_delta:+.4f}{f'; {found.text()}' if found else ''}); "
                                            f"fell: {', '.join(d.fell[:5]) or 'none'}"
                                            + (f" and {len(d.fell) - 5} more" if len(d.fell) > 5 else ""),
                                    engine=f"{d.engine}[{d.tag}]", brief=brief,
                                    state="inconclusive" if found else "fail"))
    for rule in (r for r in rules if not r.segment):
        missing = list(dict.fromkeys((engine, where) for engine, _, measure, where in unvalued
                                     if measure == rule.measure and rule.engine in (None, engine)))
        failures += [Failure("drop", f"max-drop rule {rule} (from {rule.source}): {engine} has no value of "
                                     f"{rule.measure} ({where}), so the rule checked nothing") for engine, where in missing]
        if rule.engine and not missing and not any(d.engine == rule.engine and d.measure == rule.measure
                                                   for d in diffs):
            compared = sorted({d.engine for d in diffs})
            failures.append(Failure("drop", f"max-drop rule {rule} (from {rule.source}): engine '{rule.engine}' was not "
                                    f"compared with the baseline (compared: {', '.join(compared) or 'none'}), so the "
                                    "rule checked nothing", engine=rule.engine))
            continue
        for d in diffs:
            if d.measure != rule.measure or (rule.engine and d.engine != rule.engine):
                continue
            drop = d.before - d.after
            if rule.holds(drop):
                continue
            p = d.p if math.isnan(d.p_adjusted) else d.p_adjusted
            if noise_aware and not p < alpha:
                continue
            spread = (spreads or {}).get((d.engine, d.measure))
            if noise_aware and spread is not None and drop <= spread + 1e-12:
                warnings.append(f"{d.engine}: {d.measure} dropped {drop:.4f}, not failed: within the engine's own "
                                f"spread across this run's trials ({spread:.4f}); {d.before:.4f} -> {d.after:.4f}, "
                                f"significant (rule {rule}, from {rule.source})")
                continue
            from ..types import query_name

            movers = "; ".join(f"{query_name(m.query_id, m.question)} {m.before:g}->{m.after:g}" for m in d.movers)
            found = _unsettled(unsettled, rule, d.engine, d.labeled) if noise_aware and unsettled else None
            brief = f"{d.measure} dropped {drop:.4f} ({d.before:.4f} -> {d.after:.4f}), more than {rule.delta:g}"
            failures.append(Failure(
                "drop",
                f"{d.engine}: {brief} (from {rule.source}; {d.losses} down, {d.wins} up, p={d.p:.3g}"
                f"{f', corrected {p:.3g} < {alpha:g}' if noise_aware else ''}"
                f"{f', beyond the spread across trials {spread:.4f}' if noise_aware and spread is not None else ''}"
                f"{f'; {found.text()}' if found else ''}); moved: {movers or 'none'}"
                + (f"; {d.day_note()}" if d.day_note() else ""),
                engine=d.engine, brief=brief, state="inconclusive" if found else "fail"))
    return failures, warnings

