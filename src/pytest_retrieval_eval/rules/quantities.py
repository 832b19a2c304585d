"""What a rule can name (``hit@5``, ``errors``, ``lint.KIND``, ``shadow.gain``, ``latency.p95`` ...),
parsed once into a typed quantity that knows its range."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Union

from .._defaults import CORPUS_LINT_KINDS as LINT_KINDS, LATENCY_STATISTICS, RUN_LINT_KINDS, USAGE_FIGURES
from ..errors import RetrievalEvalError
from ..ir.measures import Measure

#: a measure name, with a parenthesised parameter list where it has one (``P(rel=2)@5``, ``rbp(p=0.9)``)
MEASURE_PATTERN = r"[A-Za-z_][\w@.+~-]*(?:\([\w.=,+\- ]*\)[\w@.+~-]*)?"


#: Quantities a rule may name besides measures: the count of queries whose engine call failed,
#: and corpus lint counts (``lint.truncated`` ...), which belong to no engine.
COUNTS = ("errors", "stale")


def parse_measure(raw: str, rule: str) -> Measure:
    """The measure ``raw`` names; a bad one is reported with the rule it came in."""
    try:
        return Measure.parse(raw)
    except RetrievalEvalError as exc:
        raise RetrievalEvalError(f"{rule}: {exc}") from None


# --- what a rule can name, parsed once --------------------------------------------------------

@dataclass(frozen=True)
class MeasureQuantity:
    """A retrieval measure of one engine (``hit@5``, ``P(rel=2)@5``)."""

    measure: Measure

    @property
    def name(self) -> str:
        return self.measure.name

    @property
    def bounds(self) -> tuple[float, float]:
        return self.measure.bounds


@dataclass(frozen=True)
class ErrorCount:
    """The queries whose engine call failed (``errors``)."""

    name: str = "errors"
    bounds: tuple[float, float] = (0.0, math.inf)


@dataclass(frozen=True)
class StaleCount:
    """The questions left out of the numbers because what they judge changed (``stale``)."""

    name: str = "stale"
    bounds: tuple[float, float] = (0.0, math.inf)


@dataclass(frozen=True)
class LintCount:
    """A corpus lint count of each ingestion (``lint.truncated``); it belongs to no engine."""

    kind: str
    bounds: tuple[float, float] = (0.0, math.inf)

    @property
    def name(self) -> str:
        return f"lint.{self.kind}"


@dataclass(frozen=True)
class RunLintCount:
    """A run lint count of one engine (``run.empty``)."""

    kind: str
    bounds: tuple[float, float] = (0.0, math.inf)

    @property
    def name(self) -> str:
        return f"run.{self.kind}"


@dataclass(frozen=True)
class ShadowQuantity:
    """What a shadow's candidate gained: the knowledge gain (``shadow.gain``, no measure) or one
    measure's delta (``shadow.recall@5``)."""

    measure: Measure | None = None

    @property
    def name(self) -> str:
        return "shadow.gain" if self.measure is None else f"shadow.{self.measure.name}"

    @property
    def bounds(self) -> tuple[float, float]:
        """A difference of two values in the measure's range (the gain: of values in [0, 1])."""
        low, high = (0.0, 1.0) if self.measure is None else self.measure.bounds
        return (low - high, high - low)


@dataclass(frozen=True)
class TurnsQuantity:
    """How much worse one engine does on follow-up turns than on first turns of the labeled set's
    conversations: ``turns.drop.hit@5`` (the mean over first turns minus the mean over turns
    after the first, ``analysis/turns.py``)."""

    measure: Measure

    @property
    def name(self) -> str:
        return f"turns.drop.{self.measure.name}"

    @property
    def bounds(self) -> tuple[float, float]:
        """A difference of two means in the measure's range."""
        low, high = self.measure.bounds
        return (low - high, high - low)


@dataclass(frozen=True)
class CoverageQuantity:
    """The share of the corpus's documents (``coverage.documents``) or chunks
    (``coverage.chunks``) that some question judges; it belongs to no engine."""

    of: str  # "documents" | "chunks"
    bounds: tuple[float, float] = (0.0, 1.0)

    @property
    def name(self) -> str:
        return f"coverage.{self.of}"


@dataclass(frozen=True)
class LatencyQuantity:
    """A statistic of one engine's call times (``latency.p95``), in milliseconds; a rule states
    its unit (``150ms``, ``0.15s``), and turns latency on (``--retrieval-latency``)."""

    statistic: str  # analysis/cost.STATISTICS
    bounds: tuple[float, float] = (0.0, math.inf)
    unit: str = "ms"

    @property
    def name(self) -> str:
        return f"latency.{self.statistic}"


@dataclass(frozen=True)
class UsageQuantity:
    """One engine's HTTP calls, tokens (input + output) or cost in dollars (``--retrieval-prices``),
    per query (``calls.per_query``) or in total (``cost.total``), its ``prepare`` included."""

    figure: str  # _defaults.USAGE_FIGURES
    per: str  # "per_query" | "total"
    bounds: tuple[float, float] = (0.0, math.inf)

    @property
    def name(self) -> str:
        return f"{self.figure}.{self.per}"


Quantity = Union[MeasureQuantity, ErrorCount, StaleCount, LintCount, RunLintCount, ShadowQuantity, CoverageQuantity,
                 LatencyQuantity, UsageQuantity, TurnsQuantity]
#: quantities counted in whole numbers rather than measured
COUNT_TYPES = (ErrorCount, StaleCount, LintCount, RunLintCount)


def parse_quantity(raw: str, rule: str = "") -> Quantity:
    """``hit@5``, ``errors``, ``lint.KIND``, ``run.KIND``, ``shadow.gain``, ``shadow.MEASURE`` or
    ``turns.drop.MEASURE``; ``rule`` (how the rule is named in a message) precedes what is wrong."""
    rule = rule or repr(raw)
    name = raw.lower()
    if name.startswith("lint."):
        if name[5:] not in LINT_KINDS:
            raise RetrievalEvalError(f"{rule}: unknown lint count {name!r}; known: "
                                     + ", ".join(f"lint.{k}" for k in LINT_KINDS))
        return LintCount(name[5:])
    if name.startswith("run."):
        if name[4:] not in RUN_LINT_KINDS:
            raise RetrievalEvalError(f"{rule}: unknown run lint count {name!r}; known: "
                                     + ", ".join(f"run.{k}" for k in RUN_LINT_KINDS))
        return RunLintCount(name[4:])
    if name.startswith("coverage."):
        if name[9:] not in ("documents", "chunks"):
            raise RetrievalEvalError(f"{rule}: unknown coverage {name!r}; known: coverage.documents, coverage.chunks")
        return CoverageQuantity(name[9:])
    if name.startswith("shadow."):
        return ShadowQuantity(None if name == "shadow.gain" else parse_measure(raw[7:], rule))
    if name == "turns" or name.startswith("turns."):
        if not name.startswith("turns.drop.") or len(name) == len("turns.drop."):
            raise RetrievalEvalError(f"{rule}: unknown turn quantity {name!r}; known: turns.drop.MEASURE (the drop "
                                     "from first turns to follow-ups, e.g. 'turns.drop.hit@5<=0.2')")
        measure = parse_measure(raw[len("turns.drop."):], rule)
        if measure.ppi:
            raise RetrievalEvalError(f"{rule}: a drop compares turns question by question, and {measure.name} has no "
                                     f"per-question value; write turns.drop.{measure.with_judgments().name}")
        return TurnsQuantity(measure)
    if name in ("latency", *USAGE_FIGURES):
        example = "latency.p95<=150ms" if name == "latency" else f"{name}.per_query<=3"
        raise RetrievalEvalError(f"{rule}: {name} needs a figure, e.g. '{example}' (" + (
            ", ".join(f"latency.{s}" for s in LATENCY_STATISTICS) if name == "latency" else
            f"{name}.per_query, {name}.total") + ")")
    if name.startswith("latency."):
        if name[8:] not in LATENCY_STATISTICS:
            raise RetrievalEvalError(f"{rule}: unknown latency statistic {name!r}; known: "
                                     + ", ".join(f"latency.{s}" for s in LATENCY_STATISTICS))
        return LatencyQuantity(name[8:])
    figure, _, per = name.partition(".")
    if figure in USAGE_FIGURES:
        if per not in ("per_query", "total"):
            raise RetrievalEvalError(f"{rule}: unknown {figure} figure {name!r}; known: {figure}.per_query, "
                                     f"{figure}.total")
        return UsageQuantity(figure, per)
    if name == "stale":
        return StaleCount()
    if name in COUNTS:
        return ErrorCount()
    return MeasureQuantity(parse_measure(raw, rule))

