"""Quality turn by turn, for a labeled set of conversations: each measure's mean by turn position
(first, second, ...), by whether a turn depends on the earlier ones, and the drop from first
turns to follow-ups with its interval over conversations. The analysis gathers one ``ByTurn``
per evaluation and measure (``analysis/analyse.py``); the gate's ``turns.drop.MEASURE`` rule and
every renderer read it.

Only turns of conversations count here: a single question in a mixed set is no first turn of
anything. A conversation's turns are resampled together (``ir.stats.split_difference_ci``), so
the drop's interval keeps each conversation's first turn paired with its own follow-ups.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from ..ir.stats import split_difference_ci
from .scores import Scores
from ..evaluation.results import Evaluation
from ..types import LabeledQuery

#: the dependence groups, in the order tables show them
DEPENDENCE = ("depends", "standalone")


@dataclass(frozen=True)
class TurnGroup:
    """The turns of one position (``"1"``, ``"2"``, ...) or one dependence group, their count and mean."""

    label: str
    n: int
    mean: float


@dataclass(frozen=True)
class ByTurn:
    """One engine's ``measure`` over the turns of one labeled set's conversations."""

    engine: str
    labeled: str
    measure: str
    conversations: int
    #: by turn position, 1 up to the last position present (a position with no turn left out)
    positions: tuple[TurnGroup, ...]
    #: by dependence (``dependence``), the groups present in ``DEPENDENCE`` order
    dependence: tuple[TurnGroup, ...]
    first: float  # mean over first turns
    n_first: int
    follow: float  # mean over follow-ups (turn > 1)
    n_follow: int
    #: first - follow (positive: the follow-ups are worse), and its 95% interval over conversations
    drop: float
    ci: tuple[float, float]
    #: the follow-ups that scored 0 (nothing relevant found at the cutoff), in labeled-set order
    follow_missed: tuple[str, ...] = ()


def dependence(q: LabeledQuery) -> str:
    """Which dependence group a turn is in (``data.segments.depends_of``: the label's flag, a
    first turn standalone, the human rewrite, else the guess), as its segment tags say."""
    from ..data.segments import depends_of

    return "depends" if depends_of(q) else "standalone"


def by_turn(e: Evaluation, measure: str) -> ByTurn | None:
    """``e``'s ``measure`` by turn; None when its set has no conversation or the measure no value."""
    queries = e.labeled.queries
    at = [i for i, q in enumerate(queries) if q.conversation is not None]
    if not at:
        return None
    values = Scores.of(e).values(measure)[at]
    if np.isnan(values).all():
        return None
    turns = [queries[i] for i in at]
    position = np.array([q.turn for q in turns])

    def mean(mask: np.ndarray) -> float:
        return float(values[mask].mean()) if mask.any() else math.nan

    positions = tuple(TurnGroup(str(p), int((position == p).sum()), mean(position == p))
                      for p in range(1, int(position.max()) + 1) if (position == p).any())
    groups = np.array([dependence(q) for q in turns])
    dependent = tuple(TurnGroup(g, int((groups == g).sum()), mean(groups == g)) for g in DEPENDENCE
                      if (groups == g).any())
    first = position == 1
    from ..ir.measures import Measure
    from ..ir.stats import BINARY_FAMILIES

    ci = split_difference_ci(values, first, [q.conversation for q in turns],
                             binary=Measure.parse(measure).family in BINARY_FAMILIES)
    missed = tuple(q.query_id for q, v, f in zip(turns, values, first) if not f and v <= 0.0)
    f, g = mean(first), mean(~first)
    return ByTurn(e.engine, e.labeled.name, measure, len({q.conversation for q in turns}), positions, dependent,
                  f, int(first.sum()), g, int((~first).sum()), f - g, ci, missed)


def ordinal(label: str) -> str:
    """``1`` -> ``1st``, ``2`` -> ``2nd``, ``11`` -> ``11th``; a group's name unchanged."""
    if not label.isdigit():
        return label
    n = int(label)
    suffix = "th" if 10 <= n % 100 <= 20 else {1: "st", 2: "nd", 3: "rd"}.get(n % 10, "th")
    return f"{n}{suffix}"
