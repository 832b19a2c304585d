"""Threshold rules (``[ENGINE:]MEASURE>=VALUE``) and the check that turns a breach into a failure."""

from __future__ import annotations

import math
import operator
import re
from dataclasses import dataclass, field
from typing import Iterable, Mapping, Sequence

from ..errors import RetrievalEvalError
from ..data.lint import KINDS as LINT_KINDS
from ..run.lint import KINDS as RUN_LINT_KINDS
from ..ir.measures import Measure

_OPS = {">=": operator.ge, ">": operator.gt, "<=": operator.le, "<": operator.lt}
_RULE = re.compile(
    r"^\s*(?:(?P<engine>[^\s:<>=]+)\s*:\s*)?(?P<measure>[A-Za-z_][\w@.+-]*)\s*"
    r"(?P<op>>=|<=|>|<)\s*(?P<value>[-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?)\s*$"
)

#: Quantities a rule may name besides measures: the count of queries whose engine call failed,
#: and corpus lint counts (``lint.truncated`` ...), which belong to no engine.
COUNTS = ("errors",)


def _measure_name(raw: str, rule: str) -> str:
    """The canonical measure name; a bad one is reported with the rule it came in."""
    try:
        return Measure.parse(raw).name
    except RetrievalEvalError as exc:
        raise RetrievalEvalError(f"{rule}: {exc}") from None


@dataclass(frozen=True)
class Threshold:
    measure: str  # canonical measure name, or one of COUNTS
    op: str
    value: float
    engine: str | None = None
    source: str = ""

    @classmethod
    def parse(cls, text: str, *, source: str = "") -> "Threshold":
        m = _RULE.match(text or "")
        where = f" (from {source})" if source else ""
        if not m:
            raise RetrievalEvalError(
                f"threshold {text!r}{where} does not parse; expected [ENGINE:]MEASURE>=VALUE, "
                "e.g. 'hit@5>=0.8', 'keyword:mrr>=0.5' or 'errors<=0'"
            )
        name = m["measure"].lower()
        if name.startswith("lint."):
            if name[5:] not in LINT_KINDS:
                raise RetrievalEvalError(f"threshold {text!r}{where}: unknown lint count {name!r}; known: "
                                         + ", ".join(f"lint.{k}" for k in LINT_KINDS))
        elif name.startswith("run."):
            if name[4:] not in RUN_LINT_KINDS:
                raise RetrievalEvalError(f"threshold {text!r}{where}: unknown run lint count {name!r}; known: "
                                         + ", ".join(f"run.{k}" for k in RUN_LINT_KINDS))
        elif name.startswith("shadow."):
            if name != "shadow.gain":
                name = "shadow." + _measure_name(m["measure"][7:], f"threshold {text!r}{where}")
        elif name not in COUNTS:
            name = _measure_name(m["measure"], f"threshold {text!r}{where}")
        rule = cls(name, m["op"], float(m["value"]), m["engine"], source)
        problem = rule.vacuous()
        if problem:
            raise RetrievalEvalError(f"threshold {text!r}{where} {problem}")
        return rule

    def vacuous(self) -> str | None:
        """Why the rule decides nothing (its value is outside what the quantity can take, or at
        its edge the wrong way), or None. Measures lie in [0, 1]; counts are whole numbers >= 0."""
        low, high = (0.0, 1.0) if not is_count(self.measure) else (0.0, math.inf)
        if self.measure.startswith("shadow."):
            low, high = -1.0, 1.0  # a difference of two values in [0, 1]
        v, op = self.value, self.op
        never_fails = (op == ">=" and v <= low) or (op == ">" and v < low) or (op == "<=" and v >= high) or (
            op == "<" and v > high)
        never_passes = (op == ">=" and v > high) or (op == ">" and v >= high) or (op == "<=" and v < low) or (
            op == "<" and v <= low)
        span = f"[{low:g}, {high:g}]" if high != math.inf else f"whole numbers >= {low:g}"
        if never_fails:
            return f"can never fail: {self.measure} takes values in {span}"
        if never_passes:
            return f"can never pass: {self.measure} takes values in {span}"
        return None

    def __str__(self) -> str:
        value = f"{self.value:g}"
        return f"{self.engine + ':' if self.engine else ''}{self.measure}{self.op}{value}"

    def holds(self, value: float) -> bool:
        return not math.isnan(value) and _OPS[self.op](value, self.value)


def parse_thresholds(items: Iterable[tuple[str, str]]) -> list[Threshold]:
    """``(text, source)`` pairs; blank lines and ``#`` comments (ini files) are skipped."""
    out = []
    for text, source in items:
        text = text.strip()
        if text and not text.startswith("#"):
            out.append(Threshold.parse(text, source=source))
    return out


@dataclass(frozen=True)
class Row:
    """What the gate reads of one evaluation: the engine, its values, and the query counts."""

    engine: str
    labeled: str
    values: Mapping[str, float]
    n: int
    errors: int
    #: measure -> 95% bootstrap interval, for rules judged with ``confidence="lower"``
    intervals: Mapping[str, tuple[float, float]] = field(default_factory=dict)
    #: measure -> why it is below its best (freshness: the stale queries), said with a breach
    details: Mapping[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class Breach:
    threshold: Threshold
    engine: str
    value: float | None
    detail: str = ""

    def __str__(self) -> str:
        t = self.threshold
        if self.value is None:
            return f"{t} ({t.source}): {self.detail}"
        shown = "nan" if math.isnan(self.value) else f"{self.value:.4f}"
        return f"{self.engine}: {t.measure} = {shown}, required {t.op} {t.value:g} (from {t.source}; {self.detail})"


def check(thresholds: Sequence[Threshold], rows: Sequence[Row], *, confidence: str = "point") -> list[Breach]:
    """Every rule against every evaluation of the engines it names; a rule naming an engine that
    was never evaluated is a breach, never silently skipped.

    ``confidence="lower"`` judges a measure on the cautious end of its 95% bootstrap interval (the
    lower bound for ``>=``/``>``, the upper for ``<=``/``<``), so a pass means the rule holds with
    95% confidence over queries, not just on this sample of them."""
    breaches = []
    engines = {r.engine for r in rows}
    for t in thresholds:
        if t.measure.startswith(("lint.", "shadow.")):
            continue  # see check_lint, check_shadows
        if t.engine is not None and t.engine not in engines:
            breaches.append(Breach(t, t.engine, None, f"no evaluation of engine '{t.engine}' was recorded "
                                   f"(evaluated: {', '.join(sorted(engines)) or 'none'})"))
            continue
        for row in rows:
            if t.engine is not None and row.engine != t.engine:
                continue
            if t.measure == "errors":
                value, how = float(row.errors), ""
            elif confidence == "lower" and t.measure in row.intervals:
                point = row.values[t.measure]
                lo, hi = row.intervals[t.measure]
                side = "lower" if t.op in (">=", ">") else "upper"
                value = lo if side == "lower" else hi
                how = (f"; judged on the 95% bootstrap {side} bound (--retrieval-confidence lower), "
                       f"point estimate {point:.4f}")
            else:
                value, how = row.values[t.measure], ""
            if not t.holds(value):
                why = row.details.get(t.measure)
                breaches.append(Breach(t, row.engine, value, f"n={row.n}{how}" + (f"; {why}" if why else "")))
    return breaches


def is_count(name: str) -> bool:
    """Errored queries, corpus lint (``lint.*``) and run lint (``run.*``) are counts, not measures."""
    return name in COUNTS or name.startswith(("lint.", "run."))


def measures_needed(thresholds: Iterable[Threshold]) -> list[str]:
    return [t.measure for t in thresholds if not is_count(t.measure) and not t.measure.startswith("shadow.")]


def shadow_measures(thresholds: Iterable[Threshold]) -> list[str]:
    """The measures whose shadow deltas rules judge (``shadow.recall@5>=0``)."""
    return [t.measure[7:] for t in thresholds if t.measure.startswith("shadow.") and t.measure != "shadow.gain"]


def check_shadows(thresholds: Sequence[Threshold], shadows: Sequence) -> list[str]:
    """``[CANDIDATE:]shadow.gain>=X`` and ``[CANDIDATE:]shadow.MEASURE>=X`` against each shadow
    comparison (``run/shadow.py``); a rule with no comparison to judge is a failure."""
    failures = []
    for t in (t for t in thresholds if t.measure.startswith("shadow.")):
        judged = [sh for sh in shadows if t.engine is None or sh.candidate == t.engine]
        if not judged:
            failures.append(f"{t} ({t.source}): no shadow comparison{f' with candidate {t.engine}' if t.engine else ''} "
                            "ran; name one with --retrieval-shadow CANDIDATE:BASELINE")
        for sh in judged:
            value = sh.gain if t.measure == "shadow.gain" else sh.delta(t.measure[7:])
            if not t.holds(value):
                what = "knowledge gain" if t.measure == "shadow.gain" else f"{t.measure[7:]} delta"
                worst = "; ".join(f"{m.query_id} {m.contribution:+.4f}" for m in sh.movers if m.contribution < 0)
                failures.append(f"shadow {sh.candidate}:{sh.baseline}: {what} = {value:+.4f}, required {t.op} "
                                f"{t.value:g} (from {t.source}; n={sh.n}, {sh.better} better, {sh.worse} worse; "
                                f"p={sh.gain_p:.3g}){f'; most lost: {worst}' if worst else ''}")
    return failures


def check_lint(thresholds: Sequence[Threshold], reports: Sequence) -> list[str]:
    """Lint rules against each ingestion's counts; with no ingestion in the run, a rule is a
    failure (it was asked for and nothing could be checked)."""
    failures = []
    for t in (t for t in thresholds if t.measure.startswith("lint.")):
        if not reports:
            failures.append(f"{t} ({t.source}): no ingestion ran, so no chunk was linted")
        for r in reports:
            value = r.counts()[t.measure[5:]]
            if not t.holds(value):
                failures.append(f"corpus {r.dataset}: {t.measure} = {value}, required {t.op} {t.value:g} (from {t.source})")
    return failures


_DROP = re.compile(r"^\s*(?:(?P<engine>[^\s:=]+)\s*:\s*)?(?P<measure>[A-Za-z_][\w@.]*)\s*=\s*"
                   r"(?P<value>(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?)\s*$")


@dataclass(frozen=True)
class MaxDrop:
    """``[ENGINE:]MEASURE=DELTA``: fail when the measure falls more than DELTA below the baseline."""

    measure: str
    delta: float
    engine: str | None = None
    source: str = ""

    @classmethod
    def parse(cls, text: str, *, source: str = "") -> "MaxDrop":
        m = _DROP.match(text or "")
        where = f" (from {source})" if source else ""
        if not m:
            raise RetrievalEvalError(f"max-drop rule {text!r}{where} does not parse; expected [ENGINE:]MEASURE=DELTA, "
                                     "e.g. 'hit@5=0.02' or 'hybrid:ndcg@10=0.01'")
        delta = float(m["value"])
        if not 0 <= delta < 1:
            raise RetrievalEvalError(f"max-drop rule {text!r}{where} can never fail: measures take values in [0, 1], "
                                     "so a drop is below 1; give a DELTA in [0, 1)")
        return cls(_measure_name(m["measure"], f"max-drop rule {text!r}{where}"), delta, m["engine"], source)

    def __str__(self) -> str:
        return f"{self.engine + ':' if self.engine else ''}{self.measure}={self.delta:g}"


def parse_max_drops(items: Iterable[tuple[str, str]]) -> list[MaxDrop]:
    return [MaxDrop.parse(t.strip(), source=s) for t, s in items if t.strip() and not t.strip().startswith("#")]


def check_drops(rules: Sequence[MaxDrop], diffs: Sequence, *, noise_aware: bool, alpha: float) -> list[str]:
    """A failure line per breached rule, with the queries that moved. ``noise_aware`` fails only
    when the drop is also significant (paired test, its p corrected over every diff < alpha)."""
    failures = []
    for rule in rules:
        if rule.engine and not any(d.engine == rule.engine and d.measure == rule.measure for d in diffs):
            compared = sorted({d.engine for d in diffs})
            failures.append(f"max-drop rule {rule} (from {rule.source}): engine '{rule.engine}' was not compared with "
                            f"the baseline (compared: {', '.join(compared) or 'none'}), so the rule checked nothing")
            continue
        for d in diffs:
            if d.measure != rule.measure or (rule.engine and d.engine != rule.engine):
                continue
            drop = d.before - d.after
            if drop <= rule.delta + 1e-12:
                continue
            p = d.p if math.isnan(d.p_adjusted) else d.p_adjusted
            if noise_aware and not p < alpha:
                continue
            movers = "; ".join(f"{m.query_id} {m.before:g}->{m.after:g}" for m in d.movers)
            failures.append(
                f"{d.engine}: {d.measure} dropped {drop:.4f} ({d.before:.4f} -> {d.after:.4f}), more than {rule.delta:g} "
                f"(from {rule.source}; {d.losses} down, {d.wins} up, p={d.p:.3g}"
                f"{f', corrected {p:.3g} < {alpha:g}' if noise_aware else ''}); moved: {movers or 'none'}"
                + (f"; {d.day_note()}" if d.day_note() else "")
            )
    return failures


# --- shadow comparisons (run/shadow.py computes them) ---------------------------------------

def parse_weights(text: str) -> dict[str, float]:
    """``recall@5=2,ndcg@5=1`` -> canonical measure name -> weight (positive numbers), by name."""
    weights: dict[str, float] = {}
    for item in (text or "").split(","):
        if not item.strip():
            continue
        name, sep, raw = item.partition("=")
        try:
            value = float(raw) if sep else math.nan
        except ValueError:
            value = math.nan
        if not value > 0 or math.isinf(value):
            raise RetrievalEvalError(f"gain weight {item.strip()!r} not understood; expected MEASURE=WEIGHT with a "
                                     "positive weight, e.g. 'recall@5=2,ndcg@5=1'")
        weights[Measure.parse(name).name] = value
    if not weights:
        raise RetrievalEvalError("gain weights are empty; expected e.g. 'recall@5=2,ndcg@5=1'")
    return dict(sorted(weights.items()))  # one order, as results.json keeps them


def parse_pair(text: str, source: str = "") -> tuple[str, str]:
    """``CANDIDATE:BASELINE`` -> the two engine names."""
    candidate, sep, baseline = (text or "").partition(":")
    candidate, baseline = candidate.strip(), baseline.strip()
    where = f" (from {source})" if source else ""
    if not sep or not candidate or not baseline or ":" in baseline:
        raise RetrievalEvalError(f"shadow {text!r}{where} not understood; expected CANDIDATE:BASELINE, e.g. "
                                 "'hybrid-rerank:hybrid'")
    if candidate == baseline:
        raise RetrievalEvalError(f"shadow {text!r}{where} compares an engine with itself")
    return candidate, baseline
