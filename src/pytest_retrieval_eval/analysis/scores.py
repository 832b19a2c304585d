"""``Scores``: what one recorded evaluation is worth, measure by measure, computed once.

The run records what each engine returned (``evaluation/results.py``: ``Evaluation``); every
number read of it comes from here: per-question values of every measure (``ir.metrics``), their
means, 95% intervals, prediction-powered estimates, misses by cause, Hit@k curves and what the
trials spread. As ir_measures' ``Evaluator.calc`` returns one per-query table and its aggregate,
a ``Scores`` holds one table per evaluation, filled on first ask and kept: ``analyse`` makes one
per evaluation of the run (``Scores.of``), the fixture API users assert on (``EvaluationResult``,
``analysis/result.py``) delegates to the same one, and renderers never see it.

A baseline read from results.json brings the per-question values it recorded
(``recorded``): where their definitions are this version's (``METRICS_FINGERPRINT``) a
comparison reads them instead of scoring the baseline's rankings again.
"""

from __future__ import annotations

import math
import weakref
from typing import Iterable, Mapping, Sequence

import numpy as np

from ..data.grades import judged_qrels
from ..evaluation.results import CURVE_DEPTH, Evaluation
from ..ir.measures import Measure
from ..ir.metrics import evaluate
from ..ir.ppi import PPIEstimate, ppi_mean
from ..ir.qrels import Qrels
from ..ir.stats import BINARY_FAMILIES, mean_ci
from .causes import Cause, Misses, causes

_MADE: "weakref.WeakKeyDictionary[Evaluation, Scores]" = weakref.WeakKeyDictionary()


class Scores:
    """Every measure of one evaluation, scored on first ask and kept (see the module's docstring)."""

    def __init__(self, e: Evaluation, recorded: Mapping[str, Mapping[str, float]] | None = None) -> None:
        self.e = e
        self._values: dict[str, dict[str, float]] = {k: dict(v) for k, v in (recorded or {}).items()}
        self._ppi: dict[str, PPIEstimate | None] = {}
        self._causes: dict[int, dict[str, Cause]] = {}
        self._cis: dict[str, tuple[float, float]] = {}
        self._filled: Qrels | None = None
        self._trials: list[Scores] | None = None

    @classmethod
    def of(cls, e: Evaluation) -> "Scores":
        """The one ``Scores`` of ``e``, made on first use (a new evaluation, e.g. with judgments
        attached, is another object and gets its own)."""
        found = _MADE.get(e)
        if found is None:
            found = _MADE[e] = cls(e, getattr(e, "recorded_values", None))
        return found

    # --- per question ----------------------------------------------------------------------------
    @property
    def filled_qrels(self) -> Qrels:
        """The human labels with the judged holes filled (``data.grades.judged_qrels``)."""
        if self._filled is None:  # made once: every +judged measure reads them
            self._filled = judged_qrels(self.e.labeled.qrels, self.e.judged)
        return self._filled

    def per_query(self, measure: "str | Measure") -> dict[str, float]:
        """Query id -> the value of ``measure`` (a query the run left out is absent: it scores 0)."""
        e, parsed = self.e, Measure.parse(measure)
        name = parsed.name
        if name not in self._values:
            if parsed.ppi:  # an estimate over the questions, not a value per question: none per question
                self._values[name] = {}
            elif parsed.judged:  # no judgments attached: no value, as freshness without versions
                self._values[name] = {} if e.judge is None else evaluate(
                    self.filled_qrels, e.run, [parsed.on_human_labels.name], per_query=True
                )[parsed.on_human_labels.name]
            elif parsed.evidence:  # ids only: no passage to score, no value, said once by the report
                base = parsed.on_documents.name
                self._values[name] = {} if not e.returns_passages else evaluate(
                    e.labeled.qrels, e.passage_run, [base], per_query=True)[base]
            elif parsed.freshness:  # an errored query scores 0, as it does on every measure: never a pass
                kind = parsed.family.split(".", 1)[1]
                self._values[name] = {} if e.freshness is None else {
                    r.query_id: 0.0 if r.errored else e.freshness.value(kind, r.doc_ids, parsed.k)
                    for r in e.results}
            else:
                self._values[name] = evaluate(e.labeled.qrels, e.run, [name], per_query=True)[name]
        return self._values[name]

    def prefetch(self, measures: Iterable["str | Measure"]) -> None:
        """Score every measure of ``measures`` on the human labels not scored yet in one pass
        (the run and the qrels are laid out once for all of them, not once per measure)."""
        todo = [m for m in (Measure.parse(x) for x in measures) if not (m.judge_dependent or m.freshness or m.evidence)
                and m.name not in self._values]
        if todo:
            self._values.update(evaluate(self.e.labeled.qrels, self.e.run,
                                         list(dict.fromkeys(m.name for m in todo)), per_query=True))

    def values(self, measure: "str | Measure") -> np.ndarray:
        """Per-query values in labeled-set order (a query the run left out scores 0). A measure
        without a value (freshness on a corpus without versioned documents, ...) is NaN for every
        query: read ``has_value`` before using them."""
        per = self.per_query(measure)
        parsed = Measure.parse(measure)
        if not per and (parsed.freshness or parsed.judge_dependent or parsed.evidence):
            return np.full(self.e.n, math.nan)
        return np.array([per.get(q.query_id, 0.0) for q in self.e.labeled.queries], dtype=np.float64)

    def subset(self, measure: str, ids: Sequence[str]) -> list[float]:
        """``measure``'s per-question values on ``ids`` (a segment's questions), in that order."""
        per = self.per_query(measure)
        return [per.get(q, 0.0) for q in ids]

    # --- over the set --------------------------------------------------------------------------
    def has_value(self, measure: "str | Measure") -> bool:
        """Whether ``measure`` has a value for this engine (``mean`` is not None)."""
        parsed = Measure.parse(measure)
        if parsed.ppi:
            return self.ppi(parsed) is not None
        no_input = not self.per_query(parsed) and (parsed.freshness or parsed.judge_dependent or parsed.evidence)
        return self.e.n > 0 and not no_input

    def mean(self, measure: "str | Measure") -> float | None:
        """The value of ``measure``: the mean over the labeled set, the estimate for ``~ppi``;
        None where it has no value (an empty set, an ids-only engine's ``+evidence`` twin,
        ``+judged`` without judgments, ``~ppi`` without human-judged questions, freshness without
        versioned documents): no number, so never compared or passed."""
        if Measure.parse(measure).ppi:
            found = self.ppi(measure)
            return float(found.estimate) if found is not None else None
        if not self.has_value(measure):
            return None
        return float(self.values(measure).mean())

    def no_value_why(self, measure: "str | Measure") -> str | None:
        """Why ``measure`` has no value for this engine, in words (what a rule on it says it
        checked nothing for); None where it has one, or for a ``~ppi`` estimate (the gate says
        what that rests on)."""
        e, m = self.e, Measure.parse(measure)
        if m.ppi or self.has_value(m):
            return None
        if m.evidence and not e.returns_passages:
            return (f"no evidence-level value: the engine {e.evidence_unavailable()} (return "
                    "pytest_retrieval_eval.Passage(doc_id, text) to score passages)")
        if m.judged and e.judge is None:
            return "the run reads no judgments (--retrieval-judgments=FILE)"
        if m.freshness and e.freshness is None:
            return "the corpus has no versioned documents"
        return "no question" if not e.n else None

    def ci(self, measure: "str | Measure") -> tuple[float, float]:
        """95% interval of the mean over queries: Wilson for a measure that is 0 or 1 per query
        (hit@k, the freshness rates), so 1.000 still has a lower end below 1; else the bootstrap
        (``ir.stats.mean_ci``). Over turns of conversations, Wilson over what the turns are worth
        (their design effect) for a 0/1 measure, the bootstrap over conversations for a graded one."""
        m = Measure.parse(measure)
        if m.ppi:  # the estimate's own: PPI's, or the human-only one where the judge does not help
            found = self.ppi(m)
            return (found.interval[0], found.interval[1]) if found is not None else (math.nan, math.nan)
        if m.name not in self._cis:  # (nan, nan) for a measure without a value: no interval of nothing
            self._cis[m.name] = mean_ci(self.values(m.name), binary=m.family in BINARY_FAMILIES,
                                        clusters=self.e.clusters())
        return self._cis[m.name]

    def ppi(self, measure: "str | Measure") -> PPIEstimate | None:
        """The prediction-powered estimate of ``measure`` (``ndcg@10~ppi``): the measure on the
        judge-filled labels of every question, corrected by the questions people judged
        completely to its cutoff; None without judgments or human-judged questions."""
        m = Measure.parse(measure)
        if not m.ppi:
            raise ValueError(f"{m.name} is no prediction-powered measure (name it {m.with_ppi().name})")
        if m.name not in self._ppi:
            self._ppi[m.name] = self._ppi_estimate(m)
        return self._ppi[m.name]

    def _ppi_estimate(self, m: Measure) -> PPIEstimate | None:
        e = self.e
        ids = e.human_questions(m.k or 0)
        if e.judge is None or not ids:
            return None
        base = m.on_human_labels.name
        judge_filled = self.values(m.with_judgments())
        where = {q.query_id: i for i, q in enumerate(e.labeled.queries)}
        labels = e.labeled.qrels.judgements
        people = judged_qrels(Qrels({q: labels[q] for q in ids if q in labels}), e.human)
        human = evaluate(people, e.run, [base], per_query=True)[base]
        return ppi_mean(judge_filled, [human.get(q, 0.0) for q in ids], judge_filled[[where[q] for q in ids]],
                        binary=m.family in BINARY_FAMILIES, bounds=m.bounds)

    def trials(self) -> list["Scores"]:
        """One ``Scores`` per trial (``--retrieval-trials``), the first's own rankings first; made
        once and kept (the trials' means, their flips and a calibration's reruns read them)."""
        if self._trials is None:
            e = self.e
            self._trials = [Scores(Evaluation(e.engine, e.labeled, tuple(results), freshness=e.freshness,
                                              judged=e.judged, judge=e.judge))
                            for results in (e.results, *e.trial_results)] if e.trial_results else []
        return self._trials

    def trial_means(self, measures: Sequence[str]) -> dict[str, list[float]]:
        """Per measure with a value in every trial, the mean of each (the first included); empty
        with one trial."""
        trials = self.trials()
        if not trials:
            return {}
        out: dict[str, list[float | None]] = {m: [trial.mean(m) for trial in trials] for m in measures}
        return {m: [float(x) for x in v if x is not None] for m, v in out.items() if None not in v}

    def hit_curve(self, depth: int = CURVE_DEPTH) -> list[float]:
        """Hit@k for k = 1..depth, from the rank of the first relevant document."""
        ranks = [r for r in self.e.first_relevant_rank.values() if r is not None]
        n = max(self.e.n, 1)
        return [sum(1 for r in ranks if r <= k) / n for k in range(1, depth + 1)]

    # --- misses ----------------------------------------------------------------------------------
    def causes(self, k: int) -> dict[str, Cause]:
        """Query id -> why it missed at ``k`` (``analysis.causes.Cause``), for the missed questions."""
        if k not in self._causes:
            self._causes[k] = causes(self.e, k)
        return self._causes[k]

    def misses(self, k: int) -> Misses:
        """The misses at ``k`` counted by cause (``analysis.causes.Misses``): the line under the table."""
        return Misses(self.e.engine, self.e.labeled.name, k, self.e.n, tuple(self.causes(k).values()))

    def evidence_misses(self, k: int) -> Misses:
        """The misses at ``k`` at the evidence level (``hit@k+evidence``), counted by cause: "right
        document, wrong passage" among them (``analysis.causes.evidence_cause_of``)."""
        found = causes(self.e, k, evidence_level=True)
        return Misses(self.e.engine, self.e.labeled.name, k, self.e.n, tuple(found.values()), evidence=True)

    def tokens_at(self, k: int) -> float:
        """What the engine hands a generator: the word tokens of its top ``k`` passages, the mean
        over questions (an errored question hands nothing); NaN for an engine without an
        evidence level (``returns_passages``): ids alone hand no known number of tokens."""
        e = self.e
        if not e.returns_passages:
            return math.nan
        return float(np.mean([sum(r.passage_tokens[:k]) for r in e.results])) if e.results else math.nan

    # --- freshness ---------------------------------------------------------------------------
    def stale_documents(self, k: int) -> dict[str, list[str]]:
        """Query id -> the stale documents in its top k, in labeled-set order."""
        f = self.e.freshness
        if f is None:
            return {}
        return {r.query_id: hits for r in self.e.results if (hits := f.stale_hits(r.doc_ids, k))}

    def stale_queries(self, k: int) -> dict[str, list[str]]:
        """``stale_documents`` with why each is stale."""
        f = self.e.freshness
        return {q: [f"{d} ({f.stale[d]})" for d in docs] for q, docs in self.stale_documents(k).items()} if f else {}

    def conflicting_queries(self, k: int) -> dict[str, list[tuple[str, ...]]]:
        """Query id -> the groups of two versions of one document in its top k."""
        f = self.e.freshness
        if f is None:
            return {}
        return {r.query_id: c for r in self.e.results if (c := f.conflicts(r.doc_ids, k))}

    def worst(self, measure: str, limit: int = 5) -> list[str]:
        """One line per worst-scoring query (below the best possible value), worst first."""
        from .explain import worst

        return worst(self, measure, limit)

    def freshness_lines(self, measure: Measure, limit: int = 5) -> list[str]:
        """Why a freshness measure is below 1 (``analysis/explain.py``)."""
        from .explain import freshness_lines

        return freshness_lines(self, measure, limit)

