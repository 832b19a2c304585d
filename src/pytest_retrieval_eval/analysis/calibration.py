"""A gate calibrated on itself: how often each rule fails an engine that did not change (its
false-fail rate), and how often it catches a drop injected into the engine's rankings (its
power), both measured by rerunning a saved run against itself as its own baseline.

- **Reruns.** An engine that recorded repeated trials (``--retrieval-trials=N``) is rerun by
  drawing, question by question, one of its trials after the first (the first is the baseline's
  rankings): what it answers from run to run. An engine that answered once (deterministic) is
  rerun on a resample of the questions with replacement (of the conversations, for a set of
  them), its baseline the same resample: how its rules fare on another labeled set of that size.
  Where some engine recorded trials, those that did not are rerun unchanged.
- **Drops.** On each rerun, a drop of a stated size in a rule's measure is injected into its
  engine's rankings: questions in a seeded order have their relevant documents moved down by a
  seeded amount (between k and 2k places for a measure at cutoff k, 10 to 20 without one; one
  moved past the end leaves the ranking), until the measure has fallen by at least the size.
  The share of questions moved is said. The sizes are the drop the run states it can detect
  (``Analysis.detectable``) and those asked for.
- **The decision.** Each rerun is judged by the gate's own decision, handed in as ``judge`` (the
  gate sits above the analysis: ``gate/calibrate.py``), one rule at a time, on the run's
  analysis with what the rerun changes made anew by the analysis's own functions: the rules'
  rows (their intervals too) and the comparison with the baseline (``baseline.compare`` over
  every measure the noise-aware gate corrects over). What did not change is not scored again:
  every trial is scored once, and a rerun's questions take their trial's values.

The outcome is counted by name (``OUTCOMES``), so a third verdict beside pass and fail is a
name more, not another count.
"""

from __future__ import annotations

import math
import time
import zlib
from collections import Counter
from dataclasses import dataclass, replace
from typing import Any, Callable, Mapping, Sequence

import numpy as np

from .._plain import from_plain, to_plain
from ..data.labeled import LabeledSet
from ..evaluation.results import Evaluation, RunResults
from ..ir.measures import Measure
from ..rules.drops import MaxDrop
from ..rules.quantities import MeasureQuantity
from ..rules.settings import GateSettings
from ..rules.thresholds import Threshold
from ..types import QueryResult, turn_id
from .analyse import Analysis, analyse, baseline_measures, unsettled_of
from .rows import row_of
from .scores import Scores

#: reruns of each kind unless asked otherwise
DEFAULT_RERUNS = 200
SEED = 20260060
#: the verdicts a rerun's rule can end in, in the order a table shows them
OUTCOMES = ("fail", "inconclusive", "pass")
#: bump when the calibration's form changes: a recorded one of another form is not read
CALIBRATION_VERSION = 1
#: how far a relevant document moves for a measure without a cutoff (mrr, map)
UNCUT_K = 10

#: the gate's decision on a rerun: (the rerun, settings holding the one rule judged, the rerun's
#: analysis) -> one of ``OUTCOMES``
Judge = Callable[[RunResults, GateSettings, Analysis], str]


@dataclass(frozen=True)
class Power:
    """How often a rule caught a drop of one size injected into its engine's rankings."""

    size: float
    #: the drop the run states it can detect (``Analysis.detectable``), not one asked for
    stated: bool
    #: reruns the drop could be injected into (a measure that moving documents does not lower: 0)
    reruns: int
    outcomes: Mapping[str, int]
    #: the mean share of the questions whose documents were moved
    share: float

    @property
    def caught(self) -> float | None:
        return self.outcomes.get("fail", 0) / self.reruns if self.reruns else None


@dataclass(frozen=True)
class RuleCalibration:
    """One rule on one evaluation: how it judged the run against itself, its unchanged reruns and
    the drops injected."""

    #: the rule as it reads (``hit@5>=0.8``, ``max-drop hit@5=0``), and where it was given
    rule: str
    source: str
    kind: str  # "threshold" or "max-drop"
    engine: str
    labeled: str
    measure: str
    #: how it was rerun: "9 trials", "questions resampled", "conversations resampled", "unchanged"
    rerun: str
    #: the rule's verdict on the run as recorded, against itself
    recorded: str
    reruns: int
    outcomes: Mapping[str, int]
    #: the drop of ``measure`` the run states it can detect (NaN: none stated)
    detectable: float
    power: tuple[Power, ...] = ()
    #: the bound (threshold) or delta (max-drop) at which the reruns fail in at most alpha of
    #: them, read from what the rule judged in each; None where nothing judged varied
    wider: float | None = None

    @property
    def false_fail(self) -> float:
        return self.outcomes.get("fail", 0) / self.reruns if self.reruns else math.nan

    @property
    def at_detectable(self) -> Power | None:
        return next((p for p in self.power if p.stated), None)


@dataclass(frozen=True)
class Calibration:
    """Every calibrated rule of a run (``calibrate``), and what was left out and why."""

    #: the analysis basis of the run, settings and baseline calibrated (``analyse.basis``)
    basis: str
    reruns: int
    seed: int
    alpha: float
    rules: tuple[RuleCalibration, ...]
    #: rules not calibrated, each with why
    left_out: tuple[str, ...] = ()
    #: the drop sizes asked for besides the stated ones
    sizes: tuple[float, ...] = ()
    seconds: float = 0.0
    #: how the rules were judged (``GateSettings``)
    noise_aware: bool = False
    correction: str = "holm"
    confidence: str = "point"
    version: int = CALIBRATION_VERSION

    def over_alpha(self) -> list[RuleCalibration]:
        """The rules that pass the run as recorded yet fail its unchanged reruns more often than
        the run's alpha."""
        return [r for r in self.rules if r.recorded == "pass" and r.false_fail > self.alpha]

    def to_dict(self) -> dict[str, Any]:
        return to_plain(self)

    @classmethod
    def from_dict(cls, d: Any) -> "Calibration | None":
        """The recorded calibration; None for one of another form."""
        if not isinstance(d, dict) or d.get("version") != CALIBRATION_VERSION:
            return None
        return from_plain(cls, d)


@dataclass(frozen=True)
class _Target:
    """One rule pinned to one evaluation."""

    rule: Threshold | MaxDrop
    key: tuple[str, str]
    #: the rule as given (``rule`` is pinned to the evaluation's engine)
    shown: str = ""

    @property
    def threshold(self) -> bool:
        return isinstance(self.rule, Threshold)

    @property
    def measure(self) -> str:
        return self.rule.measure


def targets(run: RunResults, settings: GateSettings) -> tuple[list[_Target], list[str]]:
    """The rules calibrated, each pinned to every evaluation it judges, and those left out (with why)."""
    found, left = [], []
    for t in settings.thresholds:
        q = t.quantity
        why = ("it judges no retrieval measure" if not isinstance(q, MeasureQuantity) else
               "a segment rule" if t.segment else "an estimate over the human-judged questions" if q.measure.ppi
               else "")
        if why:
            left.append(f"{t} (from {t.source}): {why}")
            continue
        found += [_Target(replace(t, engine=e.engine), e.key, str(t)) for e in run.evaluations
                  if t.engine in (None, e.engine)]
    for d in settings.max_drops:
        if d.segment:
            left.append(f"max-drop {d} (from {d.source}): a segment rule")
            continue
        found += [_Target(replace(d, engine=e.engine), e.key, f"max-drop {d}") for e in run.evaluations
                  if d.engine in (None, e.engine)]
    return found, left


class _Source:
    """One evaluation's rankings and values, per trial, scored once; and, per cutoff, the same
    with every question's relevant documents moved down (what a drop is made of)."""

    def __init__(self, e: Evaluation, measures: Sequence[str], seed: int) -> None:
        self.e = e
        scores = Scores.of(e).trials() or [Scores.of(e)]
        self.results = [list(e.results), *(list(r) for r in e.trial_results)]
        self.measures = [m for m in measures if Scores.of(e).has_value(m)]
        #: those it has no value of (an ids-only engine's +evidence twin): none in a rerun either
        self.unvalued = [m for m in measures if m not in self.measures]
        self.values = {m: np.array([s.values(m) for s in scores]) for m in self.measures}  # trials x questions
        self.ids = [q.query_id for q in e.labeled.queries]
        self.seed = seed
        self._moved: dict[int, tuple[list[list[QueryResult]], dict[str, np.ndarray]]] = {}

    @property
    def trials(self) -> int:
        return len(self.results)

    def moved(self, k: int) -> tuple[list[list[QueryResult]], dict[str, np.ndarray]]:
        """Every trial's rankings with each question's relevant documents moved down by a seeded
        amount between k and 2k places, and their values."""
        if k not in self._moved:
            e = self.e
            amounts = np.random.default_rng([self.seed, k]).integers(k, 2 * k + 1, size=len(self.ids))
            by_id = e.labeled.by_id()
            results = [[_moved_down(r, by_id[r.query_id].relevant, int(a)) for r, a in zip(trial, amounts)]
                       for trial in self.results]
            scored = [Scores(Evaluation(e.engine, e.labeled, tuple(r), freshness=e.freshness, judged=e.judged,
                                        judge=e.judge)) for r in results]
            self._moved[k] = (results, {m: np.array([s.values(m) for s in scored]) for m in self.measures})
        return self._moved[k]


def _moved_down(r: QueryResult, relevant: Mapping[str, int], amount: int) -> QueryResult:
    """``r`` with each relevant document ``amount`` places further down (their order kept); one
    moved past the end of the ranking is no longer in it. The passages stay as they were, so a
    measure at the evidence level (``+evidence``) takes no drop: the command says none could be
    injected."""
    ranked = list(r.doc_ids)
    if r.error is not None or not any(relevant.get(d, 0) >= 1 for d in ranked):
        return r
    keyed = [(i + amount + 0.5 if relevant.get(d, 0) >= 1 else i, d) for i, d in enumerate(ranked)]
    kept = [d for key, d in sorted(keyed) if key < len(ranked)]
    return replace(r, doc_ids=tuple(kept), stages=())  # its passages as they were: a drop of documents


@dataclass
class _Rerun:
    """One rerun of one evaluation: which question each position holds and from which trial."""

    positions: np.ndarray
    trials: np.ndarray
    labeled: LabeledSet
    ids: list[str]


def _resampled(labeled: LabeledSet, rng: np.random.Generator) -> tuple[np.ndarray, LabeledSet, list[str]]:
    """A resample of ``labeled`` with replacement, of whole conversations where it has them: the
    positions drawn, the set (a question drawn again renamed ``q~2``, a conversation ``c~2``),
    its ids."""
    queries = labeled.queries
    units: dict[str, list[int]] = {}
    for i, q in enumerate(queries):
        units.setdefault(q.cluster, []).append(i)
    groups = list(units.values())
    drawn = rng.integers(0, len(groups), size=len(groups))
    copies: Counter[int] = Counter()
    positions, made = [], []
    for g in drawn:
        copies[g] += 1
        c = copies[g]
        for i in groups[g]:
            q = queries[i]
            if c > 1:
                if q.conversation is not None:
                    conversation = f"{q.conversation}~{c}"
                    q = replace(q, query_id=turn_id(conversation, q.turn), conversation=conversation)
                else:
                    q = replace(q, query_id=f"{q.query_id}~{c}")
            positions.append(i)
            made.append(q)
    return (np.array(positions, dtype=np.int64),
            LabeledSet(tuple(made), name=labeled.name, provenance=labeled.provenance), [q.query_id for q in made])


def _evaluation(src: _Source, rerun: _Rerun, moved: tuple[np.ndarray, int] | None = None) -> Evaluation:
    """The rerun as an evaluation whose measures are its trials' values (nothing scored again);
    ``moved``: (the rerun's positions whose documents were moved down, the cutoff moved at)."""
    pos, trials = rerun.positions, rerun.trials
    values = {m: v[trials, pos] for m, v in src.values.items()}
    results = [src.results[t][i] for t, i in zip(trials.tolist(), pos.tolist())]
    if moved is not None:
        chosen, k = moved
        down, down_values = src.moved(k)
        for j in chosen.tolist():
            results[j] = down[trials[j]][pos[j]]
        for m in values:
            values[m] = values[m].copy()
            values[m][chosen] = down_values[m][trials[chosen], pos[chosen]]
    if rerun.labeled is not src.e.labeled:
        results = [replace(r, query_id=q) if r.query_id != q else r for r, q in zip(results, rerun.ids)]
    recorded = {m: dict(zip(rerun.ids, v.tolist())) for m, v in values.items()}
    recorded.update({m: {} for m in src.unvalued})
    return replace(src.e, labeled=rerun.labeled, results=tuple(results), trial_results=(), recorded_values=recorded)


def _drop(src: _Source, rerun: _Rerun, measure: str, size: float,
          rng: np.random.Generator) -> tuple[np.ndarray, int] | None:
    """The positions whose relevant documents move down so ``measure`` falls by at least ``size``
    on this rerun (questions in a seeded order until it has), and the cutoff; None when moving
    them all cannot."""
    m = Measure.parse(measure)
    k = m.k or UNCUT_K
    if measure not in src.values:
        return None
    _, down = src.moved(k)
    before = src.values[measure][rerun.trials, rerun.positions]
    after = down[measure][rerun.trials, rerun.positions]
    order = rng.permutation(len(before))
    fallen = np.cumsum((before - after)[order]) / len(before)
    enough = np.flatnonzero(fallen >= size - 1e-12)
    return None if not len(enough) else (order[: enough[0] + 1], k)


def calibrate(run: RunResults, settings: GateSettings, judge: Judge, *, reruns: int = DEFAULT_RERUNS,
              sizes: Sequence[float] = (), seed: int = SEED) -> Calibration:
    """Each rule of ``settings`` on ``run`` (see the module's docstring), ``reruns`` times
    unchanged and as many with each drop injected."""
    start = time.perf_counter()
    run = run.record()
    s = settings
    base = analyse(run, s, run)
    aims, left = targets(run, s)
    compared = baseline_measures(s.columns(run), s.max_drops)
    needed = list(dict.fromkeys([*compared, *(a.measure for a in aims)]))
    sources = {e.key: _Source(e, needed, seed) for e in run.evaluations}
    by_trials = any(src.trials > 1 for src in sources.values())
    lower = s.confidence == "lower"
    moved = {(x.engine, x.labeled): x for x in base.stability}
    stated = {(d.engine, d.labeled, d.measure): d.drop for d in base.detectable}
    drops = {}  # (key, measure) -> sizes, the stated one first
    for a in aims:
        found = stated.get((*a.key, a.measure), math.nan)
        asked = [x for x in [found, *sizes] if not math.isnan(x)]
        drops[(a.key, a.measure)] = list(dict.fromkeys(asked))

    def judged(rerun: RunResults, baseline: RunResults, only: Sequence[_Target]) -> dict[_Target, tuple[str, float]]:
        """Each target's verdict on ``rerun`` against ``baseline``, and what it judged (the value
        or bound of a threshold, the drop of a max-drop rule)."""
        comparison = None
        if any(not a.threshold for a in only):
            from .baseline import compare

            comparison = compare(rerun, baseline, compared, force=s.baseline_force, correction=s.correction,
                                 gated=True)
        out = {}
        for a in only:
            e = rerun.get(*a.key)
            if a.threshold:
                row = row_of(e, [a.measure], [a.measure] if lower else [], [a.rule], moved.get(a.key))
                analysis = replace(base, rows=(row,), baseline=None)
                value = _judged_value(a.rule, row, s.confidence)
            else:
                assert comparison is not None
                diffs = [d for d in comparison.diffs if (d.engine, d.labeled) == a.key]
                analysis = replace(base, rows=(), baseline=replace(comparison, diffs=diffs))
                value = next((d.before - d.after for d in diffs if d.measure == a.measure), math.nan)
            ruled = replace(s, thresholds=(a.rule,) if a.threshold else (), max_drops=() if a.threshold else (a.rule,))
            analysis = replace(analysis, unsettled=tuple(unsettled_of(rerun, ruled, analysis)))  # this rerun's
            out[a] = (judge(rerun, ruled, analysis), value)
        return out

    recorded = judged(run, run, aims)
    unchanged: dict[_Target, Counter[str]] = {a: Counter() for a in aims}
    values: dict[_Target, list[float]] = {a: [] for a in aims}
    caught: dict[tuple[_Target, float], Counter[str]] = {(a, x): Counter() for a in aims
                                                         for x in drops[(a.key, a.measure)]}
    shares: dict[tuple[tuple[str, str], str, float], list[float]] = {}
    for j in range(reruns):
        rng = np.random.default_rng([seed, j])
        plan = _draw(run, sources, by_trials, rng)
        now = {key: _evaluation(sources[key], r) for key, r in plan.items()}
        rerun = RunResults(list(now.values()))
        baseline = run if by_trials else rerun
        for a, (said, value) in judged(rerun, baseline, aims).items():
            unchanged[a][said] += 1
            values[a].append(value)
        for (key, measure), wanted in drops.items():
            for size in wanted:
                chosen = _drop(sources[key], plan[key], measure, size, np.random.default_rng(
                    [seed, j, zlib.crc32(f"{key}|{measure}|{size!r}".encode())]))  # each drop its own draws
                if chosen is None:
                    continue
                shares.setdefault((key, measure, size), []).append(len(chosen[0]) / len(plan[key].ids))
                dropped = RunResults([_evaluation(sources[key], plan[key], chosen) if k == key else e
                                      for k, e in now.items()])
                hit = [a for a in aims if (a.key, a.measure) == (key, measure)]
                for a, (said, _) in judged(dropped, baseline, hit).items():
                    caught[(a, size)][said] += 1
    rules = []
    for a in aims:
        src = sources[a.key]
        how = (f"{src.trials} trials" if src.trials > 1 else "unchanged") if by_trials else (
            "conversations resampled" if src.e.labeled.has_conversations else "questions resampled")
        power = tuple(Power(x, i == 0 and not math.isnan(stated.get((*a.key, a.measure), math.nan)),
                            sum(caught[(a, x)].values()), dict(caught[(a, x)]),
                            float(np.mean(shares[(a.key, a.measure, x)])) if shares.get((a.key, a.measure, x)) else 0.0)
                      for i, x in enumerate(drops[(a.key, a.measure)]))
        rules.append(RuleCalibration(
            a.shown, a.rule.source,
            "threshold" if a.threshold else "max-drop", a.key[0], a.key[1], a.measure, how, recorded[a][0], reruns,
            dict(unchanged[a]), stated.get((*a.key, a.measure), math.nan), power,
            _wider(a.rule, values[a], s.alpha)))
    return Calibration(base.basis, reruns, seed, s.alpha, tuple(rules), tuple(left), tuple(sizes),
                       round(time.perf_counter() - start, 3), s.noise_aware, s.correction, s.confidence)


def _draw(run: RunResults, sources: Mapping[tuple[str, str], _Source], by_trials: bool,
          rng: np.random.Generator) -> dict[tuple[str, str], _Rerun]:
    """One rerun of every evaluation: each question's trial after the first, drawn (an engine
    with one trial keeps it); or, without trials, one resample of each labeled set's questions
    shared by every engine on it."""
    out = {}
    if by_trials:
        for e in run.evaluations:
            src = sources[e.key]
            n = len(src.ids)
            trials = rng.integers(1, src.trials, size=n) if src.trials > 1 else np.zeros(n, dtype=np.int64)
            out[e.key] = _Rerun(np.arange(n), trials, e.labeled, src.ids)
        return out
    sets: dict[str, tuple[np.ndarray, LabeledSet, list[str]]] = {}
    for e in run.evaluations:
        if e.labeled.name not in sets:
            sets[e.labeled.name] = _resampled(e.labeled, rng)
        pos, labeled, ids = sets[e.labeled.name]
        out[e.key] = _Rerun(pos, np.zeros(len(pos), dtype=np.int64), labeled, ids)
    return out


def _judged_value(t: Threshold, row: Any, confidence: str) -> float:
    """What a threshold rule judged on a row: the value, or the cautious bound of its interval."""
    value = row.values.get(t.measure)
    if value is None:
        return math.nan
    if confidence == "lower" and t.measure in row.intervals:
        lo, hi = row.intervals[t.measure]
        return lo if t.op in (">=", ">") else hi
    return float(value)


def _wider(rule: Threshold | MaxDrop, judged: Sequence[float], alpha: float) -> float | None:
    """The bound a threshold, or the delta a max-drop rule, would need for the reruns to fail it
    in at most ``alpha`` of them (rounded outward to three decimals), from what each rerun
    judged; None where nothing was judged."""
    x = np.sort(np.asarray([v for v in judged if not math.isnan(v)], dtype=np.float64))
    if not len(x):
        return None
    allowed = int(math.floor(alpha * len(x)))  # reruns that may fail
    if isinstance(rule, MaxDrop):  # fails when the drop exceeds delta: the (allowed+1)-th largest drop
        delta = math.ceil(float(x[::-1][allowed]) * 1000 - 1e-9) / 1000
        return max(0.0, delta)
    if rule.op in (">=", ">"):  # fails below the bound: the (allowed+1)-th lowest value
        v = x[allowed]
        bound = math.floor(float(v) * 1000 + 1e-9) / 1000
        return bound - 0.001 if rule.op == ">" and bound >= v else bound
    v = x[::-1][allowed]
    bound = math.ceil(float(v) * 1000 - 1e-9) / 1000
    return bound + 0.001 if rule.op == "<" and bound <= v else bound
