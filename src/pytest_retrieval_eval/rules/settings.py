"""How a run is judged, as one frozen value: the rules, the statistics' settings, the shadows.

The plugin and ``python -m pytest_retrieval_eval report`` build it from the option table
(``plugin/options.py``: ``from_options``); the report command changes what its flags name with
``dataclasses.replace``, so whatever it does not name (shadows, gain weights ...) stays as the run
recorded it. It travels beside the result model (never on it) and is written to results.json's
``settings`` in the same keys as ever (``to_dict``; ``archive/saved.py``), so a saved run is judged
again exactly as the live one was.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any, Callable, Mapping, Sequence

from ..errors import RetrievalEvalError
from ..ir.measures import DEFAULT_GAIN_WEIGHTS, DEFAULT_TABLE_MEASURES, Measure
from .drops import MaxDrop, parse_max_drops
from .prices import parse_prices
from .quantities import LatencyQuantity
from .shadows import parse_pair, parse_weights
from .thresholds import Threshold, measures_needed, parse_thresholds

if TYPE_CHECKING:  # the model imports numpy: a run that only reads options stays light (plugin/config.py)
    from ..evaluation.results import RunResults

#: the cutoff of the freshness columns a versioned corpus adds to the table
FRESHNESS_K = 5
#: what an inconclusive rule may do to the run (``GateSettings.inconclusive``)
INCONCLUSIVE_MODES = ("fail", "warn", "pass")
DEFAULT_WEIGHTS = tuple(parse_weights(DEFAULT_GAIN_WEIGHTS).items())


#: one grid over engine settings: (base engine, measure, ((engine, ((setting, value), ...)), ...))
Sweep = tuple[str, str, tuple[tuple[str, tuple[tuple[str, str], ...]], ...]]


@dataclass(frozen=True)
class GateSettings:
    """Everything the verdict on a run depends on besides the run itself."""

    #: the table's columns (the run's, see ``for_run``); empty: the default columns for the run
    table_measures: tuple[str, ...] = ()
    thresholds: tuple[Threshold, ...] = ()
    max_drops: tuple[MaxDrop, ...] = ()
    alpha: float = 0.05
    noise_aware: bool = False
    #: the baseline's path as shown (relative where it can be), or None
    baseline: str | None = None
    baseline_force: bool = False
    correction: str = "holm"
    confidence: str = "point"
    shadows: tuple[tuple[str, str], ...] = ()
    #: (canonical measure name, positive weight), sorted by name
    gain_weights: tuple[tuple[str, float], ...] = DEFAULT_WEIGHTS
    #: the tags with a row per segment (``--retrieval-by``; ``tags``: every tag)
    by: tuple[str, ...] = ()
    #: the cutoff misses are counted at (``miss_cutoff``), set with the run's columns (``for_run``)
    miss_k: int | None = None
    #: each call's wall time kept in results.json and shown (``--retrieval-latency``, or a latency rule)
    latency: bool = False
    #: (model, dollars per million input tokens, per million output tokens), sorted (``--retrieval-prices``)
    prices: tuple[tuple[str, float, float], ...] = ()
    #: grids over engine settings (``--retrieval-sweep``), the base's own point included
    sweeps: tuple[Sweep, ...] = ()
    #: rules on a judge's grades (``+judged``, ``~ppi``) gate even when the judge failed
    #: ``judge --validate`` (``--retrieval-allow-failed-judge``); else such a judge fails the run
    allow_failed_judge: bool = False
    #: what a rule whose interval straddles its line does to the run (``--retrieval-inconclusive``):
    #: ``fail`` it (the default: no gate is weaker for the third verdict), ``warn`` or ``pass``
    inconclusive: str = "fail"

    def __post_init__(self) -> None:  # lists given by callers become tuples: the value is frozen all the way
        for name in ("table_measures", "thresholds", "max_drops", "by"):
            object.__setattr__(self, name, tuple(getattr(self, name)))
        object.__setattr__(self, "prices", tuple(sorted((str(m), float(i), float(o)) for m, i, o in self.prices)))
        object.__setattr__(self, "sweeps", tuple((b, m, tuple((n, tuple(tuple(kv) for kv in values))
                                                           for n, values in points)) for b, m, points in self.sweeps))
        if any(isinstance(t.quantity, LatencyQuantity) for t in self.thresholds) or self.sweeps:
            object.__setattr__(self, "latency", True)  # a latency rule, a sweep's front: the figures they read
        object.__setattr__(self, "shadows", tuple(tuple(p) for p in self.shadows))
        weights = self.gain_weights.items() if isinstance(self.gain_weights, Mapping) else self.gain_weights
        object.__setattr__(self, "gain_weights", tuple(sorted((str(m), float(w)) for m, w in weights)))

    # --- derived -------------------------------------------------------------------------------
    @property
    def recorded_measures(self) -> tuple[str, ...]:
        """Every measure results.json keeps per query: the columns and what the rules judge."""
        return tuple(dict.fromkeys([*self.table_measures, *measures_needed(self.thresholds),
                                    *(d.measure for d in self.max_drops)]))

    def miss_cutoff(self, columns: Sequence[str]) -> int:
        """The k misses are counted at: that of the first hit@k a rule judges, else hit@5 where
        the table shows it, else its first hit@k column, else 10."""
        hits = [m for m in (Measure.parse(n) for n in [*measures_needed(self.thresholds),
                                                        *(d.measure for d in self.max_drops)])
                if m.family == "hit"]  # hit@3+judged too: its misses are counted at 3
        shown = [m for m in (Measure.parse(n) for n in columns) if m.family == "hit" and not m.judge_dependent]
        if hits:
            return hits[0].k or 10
        if any(m.k == 5 for m in shown):
            return 5
        return (shown[0].k if shown else None) or 10

    @property
    def weights(self) -> dict[str, float]:
        return dict(self.gain_weights)

    def columns(self, run: RunResults) -> list[str]:
        """The table's columns: as recorded, or the default ones for ``run``."""
        return list(self.table_measures) or table_measures(run, DEFAULT_TABLE_MEASURES)

    def for_run(self, run: RunResults, configured: Sequence[Measure]) -> "GateSettings":
        """These settings with the table's columns of ``run`` (``table_measures``)."""
        columns = tuple(table_measures(run, configured))
        return replace(self, table_measures=columns, miss_k=self.miss_cutoff(columns))

    # --- built from the option table -------------------------------------------------------------
    @classmethod
    def from_options(cls, get: Callable[[str], Any], *, baseline: str | None = None) -> "GateSettings":
        """From the option table's values (``get(key)``, as ``plugin.options.read`` gives them)."""
        return cls(baseline=baseline).with_options({key: get(key) for key in FROM_OPTIONS})

    def with_options(self, given: Mapping[str, Any]) -> "GateSettings":
        """These settings with the options ``given`` (option key -> value as the option table reads
        it; rules and lines as (text, source) pairs) in place of theirs: the plugin gives them all,
        ``report`` the flags it was given, whatever they do not name staying as recorded."""
        return replace(self, **{FROM_OPTIONS[k][0]: FROM_OPTIONS[k][1](v) for k, v in given.items()})

    # --- results.json's "settings" ---------------------------------------------------------------
    def to_dict(self, failures: Sequence[str] = ()) -> dict[str, Any]:
        """results.json's ``settings``, which also keep the ``failures`` the run carried beside its
        rules (a lost xdist worker, a share that never arrived: ``gate.verdict.conclude``)."""
        d: dict[str, Any] = {
            "table_measures": list(self.table_measures), "recorded_measures": list(self.recorded_measures),
            "thresholds": [[str(t), t.source] for t in self.thresholds],
            "max_drops": [[str(r), r.source] for r in self.max_drops],
            "alpha": self.alpha, "noise_aware": self.noise_aware, "baseline": self.baseline,
            "baseline_force": self.baseline_force, "failures": list(failures), "correction": self.correction,
            "confidence": self.confidence,
        }
        if self.by:
            d["by"] = list(self.by)
        if self.miss_k is not None:
            d["miss_k"] = self.miss_k
        if self.shadows:
            d["shadows"] = [list(p) for p in self.shadows]
            d["gain_weights"] = self.weights
        if self.latency:
            d["latency"] = True
        if self.prices:
            d["prices"] = [list(p) for p in self.prices]
        if self.allow_failed_judge:
            d["allow_failed_judge"] = True
        if self.inconclusive != "fail":  # the default is left out: results.json reads as it always has
            d["inconclusive"] = self.inconclusive
        if self.sweeps:
            d["sweeps"] = [{"base": b, "measure": m, "points": [[n, [list(kv) for kv in values]] for n, values in points]}
                           for b, m, points in self.sweeps]
        return d

    @classmethod
    def from_dict(cls, d: Any) -> "GateSettings":
        """The recorded settings; what is wrong with them raises in one line (the field named)."""
        problem = settings_problem(d)
        if problem:
            raise RetrievalEvalError(problem, field="settings")
        return cls(table_measures=tuple(d.get("table_measures", ())),
                   thresholds=tuple(parse_thresholds((t, src) for t, src in d.get("thresholds", []))),
                   max_drops=tuple(parse_max_drops((t, src) for t, src in d.get("max_drops", []))),
                   alpha=d.get("alpha", 0.05), noise_aware=bool(d.get("noise_aware")), baseline=d.get("baseline"),
                   baseline_force=bool(d.get("baseline_force")),
                   correction=d.get("correction", "holm"), confidence=d.get("confidence", "point"),
                   shadows=tuple(tuple(p) for p in d.get("shadows", [])),
                   gain_weights=tuple((d.get("gain_weights") or dict(DEFAULT_WEIGHTS)).items()),
                   by=tuple(d.get("by", ())), miss_k=d.get("miss_k"), latency=bool(d.get("latency")),
                   prices=tuple(tuple(p) for p in d.get("prices", ())),
                   allow_failed_judge=bool(d.get("allow_failed_judge")), inconclusive=d.get("inconclusive", "fail"),
                   sweeps=tuple((s["base"], s["measure"], tuple((n, tuple(tuple(kv) for kv in v)) for n, v in s["points"]))
                                for s in d.get("sweeps", ())))


def _lines(items: Any) -> tuple[str, ...]:
    """Comma- or line-separated names, in order, without repeats."""
    return tuple(dict.fromkeys(t.strip() for text, _ in items for t in text.split(",") if t.strip()))


#: option key (``plugin/options.py``) -> (the field it sets, how its value becomes the field's)
FROM_OPTIONS: dict[str, tuple[str, Callable[[Any], Any]]] = {
    "threshold": ("thresholds", lambda v: tuple(parse_thresholds(v))),
    "max_drop": ("max_drops", lambda v: tuple(parse_max_drops(v))),
    "alpha": ("alpha", float), "noise_aware": ("noise_aware", bool), "baseline_force": ("baseline_force", bool),
    "correction": ("correction", str), "confidence": ("confidence", str),
    "shadow": ("shadows", lambda v: tuple(dict.fromkeys(parse_pair(t, src) for t, src in v
                                                        if t.strip() and not t.strip().startswith("#")))),
    "gain_weights": ("gain_weights", lambda v: tuple(parse_weights(v).items())),
    "by": ("by", _lines), "latency": ("latency", bool), "prices": ("prices", lambda v: prices_of(v)),
    "allow_failed_judge": ("allow_failed_judge", bool), "inconclusive": ("inconclusive", str),
}


def prices_of(items: Any) -> tuple[tuple[str, float, float], ...]:
    """``--retrieval-prices`` / the ``retrieval_prices`` lines, as (text, source) pairs."""
    out: dict[str, tuple[str, float, float]] = {}
    for text, source in items or ():
        out.update((p[0], p) for p in parse_prices(text, source=source))
    return tuple(out.values())


def table_measures(run: RunResults, configured: Sequence[Measure]) -> list[str]:
    """The configured columns; by default, nDCG@10 joins them for qrels-style judgements, and the
    freshness measures at 5 for a corpus with versioned documents (unless some are configured)."""
    names = [m.name for m in configured]
    if tuple(configured) == DEFAULT_TABLE_MEASURES and any(e.labeled.multi_judged for e in run.evaluations):
        names.append("ndcg@10")
    if any(e.freshness is not None for e in run.evaluations) and not any(m.freshness for m in configured):
        names += [f"freshness.stale_free@{FRESHNESS_K}", f"freshness.conflict_free@{FRESHNESS_K}"]
    if evidence_twins(run) and not any(m.evidence for m in configured):
        # where the labels carry evidence and an engine returns passages, each measure beside its
        # evidence-level twin (hit@5, hit@5+evidence); a table of ids-only engines keeps its columns.
        # What takes no +evidence (a count, judged@k, freshness, +judged, ~ppi) stands alone
        parsed = [Measure.parse(n) for n in names]
        names = [x for m in parsed for x in ([m.name] if m.freshness or m.count or m.family == "judged"
                                             or m.judge_dependent else [m.name, m.with_evidence().name])]
    if any(e.judge is not None for e in run.evaluations) and not any(m.judge_dependent for m in configured):
        # with judgments, each measure on relevance labels beside its judged counterpart: the
        # prediction-powered one where people judged questions completely to its cutoff
        deepest = max((d for e in run.evaluations if e.judge is not None for d in e.human_depth.values()), default=0)
        parsed = [Measure.parse(n) for n in names]
        names = [x for m in parsed for x in ([m.name] if m.freshness or m.count or m.evidence else [
            m.name, (m.with_ppi() if m.k is not None and m.k <= deepest and m.family != "judged"
                     else m.with_judgments()).name])]
    return names


def evidence_twins(run: RunResults) -> bool:
    """Whether the table shows the evidence-level twins: some labeled question carries evidence
    and some engine answered with passages (for every question, or for some: its twins have no
    value, said)."""
    return any(e.labeled.has_evidence for e in run.evaluations) and any(
        e.returns_passages or e.ids_answered for e in run.evaluations)


def settings_problem(settings: Any) -> str | None:
    """What is wrong with a results file's recorded settings, or None."""
    if not isinstance(settings, dict):
        return "must be an object"
    for key in ("thresholds", "max_drops"):
        rules = settings.get(key, [])
        if not isinstance(rules, list) or not all(isinstance(r, list) and len(r) == 2 and all(isinstance(x, str) for x in r)
                                                  for r in rules):
            return f"{key} must be a list of [rule, source] pairs"
    for key in ("table_measures", "recorded_measures", "failures", "by"):
        if not isinstance(settings.get(key, []), list) or not all(isinstance(x, str) for x in settings.get(key, [])):
            return f"{key} must be a list of strings"
    alpha = settings.get("alpha", 0.05)
    if isinstance(alpha, bool) or not isinstance(alpha, (int, float)) or not 0 < alpha < 1:
        return f"alpha must be a number between 0 and 1, got {alpha!r}"
    if settings.get("correction", "holm") not in ("holm", "bh", "none"):
        return f"correction must be holm, bh or none, got {settings.get('correction')!r}"
    shadows = settings.get("shadows", [])
    if not isinstance(shadows, list) or not all(isinstance(p, list) and len(p) == 2 and all(isinstance(x, str) for x in p)
                                                for p in shadows):
        return "shadows must be a list of [candidate, baseline] pairs"
    weights = settings.get("gain_weights", {})
    if not isinstance(weights, dict) or not all(isinstance(w, (int, float)) and not isinstance(w, bool) and w > 0
                                                and not math.isinf(w) for w in weights.values()):
        return "gain_weights must map measure names to positive numbers"
    k = settings.get("miss_k")
    if k is not None and (isinstance(k, bool) or not isinstance(k, int) or k < 1):
        return f"miss_k must be a whole number >= 1, got {k!r}"
    prices = settings.get("prices", [])
    if not isinstance(prices, list) or not all(
            isinstance(p, list) and len(p) == 3 and isinstance(p[0], str)
            and all(isinstance(x, (int, float)) and not isinstance(x, bool) and x >= 0 for x in p[1:]) for p in prices):
        return "prices must be a list of [model, dollars per million input tokens, per million output tokens]"
    sweeps = settings.get("sweeps", [])
    if not isinstance(sweeps, list) or not all(
            isinstance(s, dict) and isinstance(s.get("base"), str) and isinstance(s.get("measure"), str)
            and isinstance(s.get("points"), list) and all(
                isinstance(p, list) and len(p) == 2 and isinstance(p[0], str) and isinstance(p[1], list)
                and all(isinstance(kv, list) and len(kv) == 2 and all(isinstance(x, str) for x in kv) for kv in p[1])
                for p in s["points"])
            for s in sweeps):
        return "sweeps must be a list of {base, measure, points: [[engine, [[setting, value], ...]], ...]}"
    if settings.get("confidence", "point") not in ("point", "lower"):
        return f"confidence must be point or lower, got {settings.get('confidence')!r}"
    if settings.get("inconclusive", "fail") not in INCONCLUSIVE_MODES:
        return f"inconclusive must be fail, warn or pass, got {settings.get('inconclusive')!r}"
    return None
