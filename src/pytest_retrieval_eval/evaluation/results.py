"""The one result model: what each engine returned for each labeled query, plus the labeled set.

Everything else is derived from it in this module: per-query values of every measure, means,
intervals, the rank of the first relevant document, Hit@k curves, engine comparisons. Tests
assert on it (``results.hit_at(5)``), xdist workers ship it, reports render it, baselines are
saved copies of it, and ``results.json`` holds all of it, so a saved run rebuilds every artefact
(``python -m pytest_retrieval_eval report results.json --out DIR``). Its JSON form and the checks
a file must pass live in ``evaluation/results_json.py``; what a failed assertion says, in
``evaluation/explain.py``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Iterable, Mapping, Sequence

import numpy as np

from ..data.freshness import Freshness
from ..data.labeled import LabeledSet
from ..data.lint import LintReport
from ..engines.base import DEFAULT_DEPTH
from ..ir.measures import METRICS_DEFINITION, Measure, parse_measures
from ..ir.metrics import evaluate
from ..ir.runs import Run
from ..ir.paired import Paired, corrected, paired
from ..ir.qrels import Qrels
from ..ir.stats import BINARY_FAMILIES, mean_ci
from ..types import LabeledQuery, QueryResult, sha256_text

FORMAT = "pytest-retrieval-eval/results"
VERSION = 1
METRICS_FINGERPRINT = sha256_text(METRICS_DEFINITION)
#: Kept per query in every results file, so a saved run can be read on any of them.
STANDARD_MEASURES = ("hit@1", "hit@3", "hit@5", "hit@10", "hit@20", "mrr", "ndcg@10", "recall@10",
                     "recall@100", "precision@10", "map")
CURVE_DEPTH = 20


def measure_names(extra: Iterable[str] = ()) -> list[str]:
    """The standard measures plus ``extra``, canonical and without repeats."""
    return [m.name for m in parse_measures([*STANDARD_MEASURES, *extra])]


class MeasureValue(float):
    """A float that remembers what it measured, so a failed assertion can explain itself."""

    measure: str
    result: "EvaluationResult"

    def __new__(cls, value: float, measure: str, result: "EvaluationResult") -> "MeasureValue":
        self = super().__new__(cls, value)
        self.measure = measure
        self.result = result
        return self

    def __repr__(self) -> str:
        if math.isnan(self):  # no value (``EvaluationResult.mean`` is None): no number to show
            return f"{self.result.engine} {self.measure} (no value)"
        return f"{self.result.engine} {self.measure}={float(self):.4f}"

    def explain(self, op: str, other: object, limit: int = 5) -> list[str]:
        from .explain import explain

        return explain(self.result, self.measure, float(self), op, other, limit)


@dataclass(eq=False)
class EvaluationResult:
    """One engine's rankings over one labeled set; every measure is computed from them on demand."""

    engine: str
    labeled: LabeledSet
    results: tuple[QueryResult, ...]
    engine_info: Mapping[str, Any] = field(default_factory=dict)
    depth: int = DEFAULT_DEPTH
    #: the corpus's name and fingerprint (what was searched), when known
    context: Mapping[str, Any] = field(default_factory=dict)
    #: results of repeated trials after the first (``--retrieval-trials``), same query order
    trial_results: tuple[tuple[QueryResult, ...], ...] = ()
    #: run lint: kind (``RUN_LINT_KINDS``) -> query ids, in labeled-set order
    run_lint: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    #: the corpus's versioned documents on the run's as-of day; None when it has none
    freshness: Freshness | None = None
    #: the judge's grades (0-3) of documents the human labels left unjudged: query id -> doc id ->
    #: grade (``data/judgments.py``); the ``+judged`` measures read them as labels (``filled_qrels``)
    judged: Mapping[str, Mapping[str, int]] = field(default_factory=dict)
    #: the judge those labels come from (``Judge.to_dict()``); None: no judgments attached
    judge: Mapping[str, Any] | None = None
    #: what the run knew of the relevant documents (``evaluation/causes.py``): not in the corpus, not
    #: ingested, past the embedder window, duplicated; None when the engine was run without a corpus
    evidence: Any = None
    #: how the calls were timed: ``concurrency`` (questions in flight), ``machine``
    #: (``evaluation.evaluate.machine``) and ``prepare_seconds`` (the engine's ``prepare``, apart from
    #: the per-query figures); empty when unknown (a file saved without latency)
    measured: Mapping[str, Any] = field(default_factory=dict)
    #: the HTTP calls and tokens of the engine's ``prepare`` (model -> (calls, input, output));
    #: each query's own are on its ``QueryResult.usage``
    prepare_usage: Mapping[str, tuple[int, int, int]] = field(default_factory=dict)
    #: the HTTP calls and tokens of the trials after the first (``--retrieval-trials``), together:
    #: the run's total counts them; the per-query figures are the first trial's
    trial_usage: Mapping[str, tuple[int, int, int]] = field(default_factory=dict)
    #: a worksheet's grades (0-3) of the documents the labels leave unjudged, for the questions
    #: people judged completely to ``human_depth`` in this engine's rankings (``evaluation/judging.attach``):
    #: query id -> doc id -> grade; the ``~ppi`` estimates correct the judge with them
    human: Mapping[str, Mapping[str, int]] = field(default_factory=dict)
    #: query id -> the depth its human grades are complete to (every document of the top that deep)
    human_depth: Mapping[str, int] = field(default_factory=dict)
    #: what is computed on demand, once (not init fields: ``dataclasses.replace`` starts afresh)
    _values: dict[str, dict[str, float]] = field(default_factory=dict, repr=False, init=False)
    _ppi: dict[str, Any] = field(default_factory=dict, repr=False, init=False)
    _causes: dict[int, Any] = field(default_factory=dict, repr=False, init=False)
    _cis: dict[str, tuple[float, float]] = field(default_factory=dict, repr=False, init=False)
    _run: Run | None = field(default=None, repr=False, init=False)
    _filled: Qrels | None = field(default=None, repr=False, init=False)
    _passage_run: Run | None = field(default=None, repr=False, init=False)

    # --- identity and counts -----------------------------------------------------------------
    @property
    def key(self) -> tuple[str, str]:
        """Within a report: one row per engine and labeled set (by name)."""
        return (self.engine, self.labeled.name)

    @property
    def identity(self) -> tuple[str, str]:
        """Within a session: the same engine on the same labeled set (by fingerprint) is one evaluation."""
        return (self.engine, self.labeled.fingerprint)

    @property
    def corpus(self) -> str | None:
        return self.context.get("corpus")

    @property
    def corpus_fingerprint(self) -> str | None:
        return self.context.get("corpus_fingerprint")

    @property
    def n(self) -> int:
        return len(self.labeled)

    @property
    def n_errored(self) -> int:
        return sum(1 for r in self.results if r.errored)

    @property
    def errors(self) -> dict[str, str]:
        return {r.query_id: r.error for r in self.results if r.error is not None}

    @property
    def seconds(self) -> float:
        return sum(r.seconds for r in self.results)

    def clusters(self, ids: Sequence[str] | None = None) -> list[str] | None:
        """Each question's resampling unit (its conversation, ``LabeledSet.clusters``), for
        ``ids`` (default: every question, in labeled-set order); None for a set of single
        questions, whose statistics then resample questions as they always have."""
        if not self.labeled.has_conversations:
            return None
        of = self.labeled.clusters
        return [of[q] for q in (ids if ids is not None else [q.query_id for q in self.labeled.queries])]

    # --- measures ------------------------------------------------------------------------------
    @property
    def run(self) -> Run:
        if self._run is None:  # results are set once; per-measure scoring asks many times
            self._run = Run.from_ranked({r.query_id: r.doc_ids for r in self.results}, name=self.engine)
        return self._run

    @property
    def returns_passages(self) -> bool:
        """The engine answered with passages (``types.Passage``) every question it answered, so the
        evidence level applies. One that answered some questions with document ids alone
        (``ids_answered``) has no evidence-level value at all: scoring those questions 0 would
        count passages it never returned as misses, and a mean over the others would rest on the
        questions the engine chose to answer with passages, neither comparable with its document
        level (a twin is at most its document-level measure over the same questions) nor with
        another engine's or a baseline's twin over the set. An errored or empty answer is no
        answer with ids: it scores 0 at both levels, as on every measure."""
        return any(r.passages for r in self.results) and not self.ids_answered

    @property
    def ids_answered(self) -> tuple[str, ...]:
        """The questions answered with document ids and no passage, in result order (empty for
        an engine answering with passages throughout, or one returning ids only)."""
        if not any(r.passages for r in self.results):
            return ()
        return tuple(r.query_id for r in self.results if not r.errored and r.doc_ids and not r.passages)

    def evidence_unavailable(self) -> str | None:
        """Why the engine has no evidence-level value, its predicate (``returns document ids, not
        passages``); None where it has one."""
        if self.returns_passages:
            return None
        ids = self.ids_answered
        if not ids:
            return "returns document ids, not passages"
        names = {q.query_id: q.name for q in self.labeled.queries}
        shown = ", ".join(names.get(q, q) for q in ids[:3]) + (f" and {len(ids) - 3} more" if len(ids) > 3 else "")
        return f"answered {len(ids)} of {self.n} questions with document ids, not passages ({shown})"

    def no_value_why(self, measure: "str | Measure") -> str | None:
        """Why ``measure`` has no value for this engine, in words (what a rule on it says it
        checked nothing for); None where it has one, or for a ``~ppi`` estimate (the gate says
        what that rests on)."""
        m = Measure.parse(measure)
        if m.ppi or self.has_value(m):
            return None
        if m.evidence and not self.returns_passages:
            return (f"no evidence-level value: the engine {self.evidence_unavailable()} (return "
                    "pytest_retrieval_eval.Passage(doc_id, text) to score passages)")
        if m.judged and self.judge is None:
            return "the run reads no judgments (--retrieval-judgments=FILE)"
        if m.freshness and self.freshness is None:
            return "the corpus has no versioned documents"
        return "no question" if not self.n else None

    @property
    def passage_run(self) -> Run:
        """The ranking of passages the evidence-level measures read: at the rank of the first
        passage carrying a relevant document's evidence, that document; elsewhere a passage that
        counts for none (a placeholder id no document can have: ids hold no whitespace)."""
        if self._passage_run is None:
            rankings = {}
            for r in self.results:
                ranked = [f" passage {i}" for i in range(1, r.passages + 1)]
                for doc, rank in r.passage_ranks.items():
                    ranked[rank - 1] = doc
                rankings[r.query_id] = ranked
            self._passage_run = Run.from_ranked(rankings, name=self.engine)
        return self._passage_run

    def with_judged(self, judged: Mapping[str, Mapping[str, int]], judge: Mapping[str, Any] | None,
                    human: Mapping[str, Mapping[str, int]] | None = None,
                    human_depth: Mapping[str, int] | None = None) -> "EvaluationResult":
        """The same rankings with the judge's labels of the holes and a worksheet's complete human
        grades (``evaluation/judging.attach``): a new evaluation, so nothing computed on the labels
        before is read with the new ones."""
        return replace(self, judged=judged, judge=judge, human=dict(human or {}), human_depth=dict(human_depth or {}))

    def human_questions(self, k: int) -> list[str]:
        """The questions people judged completely to depth ``k`` or deeper, in labeled-set order."""
        return [q.query_id for q in self.labeled.queries if self.human_depth.get(q.query_id, 0) >= k]

    def ppi(self, measure: "str | Measure") -> Any:
        """The prediction-powered estimate of ``measure`` (``ndcg@10~ppi``: ``ir.ppi.PPIEstimate``):
        the measure on the judge-filled labels of every question, corrected by the questions
        people judged completely to its cutoff; None without judgments or human-judged questions."""
        m = Measure.parse(measure)
        if not m.ppi:
            raise ValueError(f"{m.name} is no prediction-powered measure (name it {m.with_ppi().name})")
        if m.name not in self._ppi:
            self._ppi[m.name] = self._ppi_estimate(m)
        return self._ppi[m.name]

    def _ppi_estimate(self, m: Measure) -> Any:
        from ..data.grades import judged_qrels
        from ..ir.ppi import ppi_mean

        ids = self.human_questions(m.k or 0)
        if self.judge is None or not ids:
            return None
        base = m.on_human_labels.name
        judge_filled = self.values(m.with_judgments())
        where = {q.query_id: i for i, q in enumerate(self.labeled.queries)}
        labels = self.labeled.qrels.judgements
        people = judged_qrels(Qrels({q: labels[q] for q in ids if q in labels}), self.human)
        human = evaluate(people, self.run, [base], per_query=True)[base]
        return ppi_mean(judge_filled, [human.get(q, 0.0) for q in ids], judge_filled[[where[q] for q in ids]],
                        binary=m.family in BINARY_FAMILIES, bounds=m.bounds)

    @property
    def filled_qrels(self) -> Qrels:
        """The human labels with the judged holes filled (``data.grades.judged_qrels``)."""
        if self._filled is None:  # made once: every +judged measure reads them
            from ..data.grades import judged_qrels

            self._filled = judged_qrels(self.labeled.qrels, self.judged)
        return self._filled

    def per_query(self, measure: "str | Measure") -> dict[str, float]:
        parsed = Measure.parse(measure)
        name = parsed.name
        if name not in self._values:
            if parsed.ppi:  # an estimate over the questions, not a value per question: NaN per question
                self._values[name] = {}
            elif parsed.judged:  # no judgments attached: no value (NaN), as freshness without versions
                self._values[name] = {} if self.judge is None else evaluate(
                    self.filled_qrels, self.run, [parsed.on_human_labels.name], per_query=True
                )[parsed.on_human_labels.name]
            elif parsed.evidence:  # ids only: no passage to score, no value (NaN), said once by the report
                base = parsed.on_documents.name
                self._values[name] = {} if not self.returns_passages else evaluate(
                    self.labeled.qrels, self.passage_run, [base], per_query=True)[base]
            elif parsed.freshness:  # an errored query scores 0, as it does on every measure: never a pass
                kind = parsed.family.split(".", 1)[1]
                self._values[name] = {} if self.freshness is None else {
                    r.query_id: 0.0 if r.errored else self.freshness.value(kind, r.doc_ids, parsed.k)
                    for r in self.results}
            else:
                self._values[name] = evaluate(self.labeled.qrels, self.run, [name], per_query=True)[name]
        return self._values[name]

    def prefetch(self, measures: Iterable["str | Measure"]) -> None:
        """Score every measure of ``measures`` on the human labels not scored yet in one pass
        (the run and the qrels are laid out once for all of them, not once per measure)."""
        todo = [m for m in (Measure.parse(x) for x in measures) if not (m.judge_dependent or m.freshness or m.evidence)
                and m.name not in self._values]
        if todo:
            self._values.update(evaluate(self.labeled.qrels, self.run, list(dict.fromkeys(m.name for m in todo)),
                                         per_query=True))

    def values(self, measure: "str | Measure") -> np.ndarray:
        """Per-query values in labeled-set order (a query the run left out scores 0). A freshness
        measure on a corpus without versioned documents has no value: NaN for every query."""
        per = self.per_query(measure)
        parsed = Measure.parse(measure)
        if not per and (parsed.freshness or parsed.judge_dependent or parsed.evidence):
            return np.full(self.n, math.nan)
        return np.array([per.get(q.query_id, 0.0) for q in self.labeled.queries], dtype=np.float64)

    def stale_documents(self, k: int) -> dict[str, list[str]]:
        """Query id -> the stale documents in its top k, in labeled-set order."""
        if self.freshness is None:
            return {}
        return {r.query_id: hits for r in self.results if (hits := self.freshness.stale_hits(r.doc_ids, k))}

    def stale_queries(self, k: int) -> dict[str, list[str]]:
        """``stale_documents`` with why each is stale."""
        return {q: [f"{d} ({self.freshness.stale[d]})" for d in docs] for q, docs in self.stale_documents(k).items()}

    def conflicting_queries(self, k: int) -> dict[str, list[tuple[str, ...]]]:
        if self.freshness is None:
            return {}
        return {r.query_id: c for r in self.results if (c := self.freshness.conflicts(r.doc_ids, k))}

    def mean(self, measure: "str | Measure") -> float | None:
        """The value of ``measure`` for this engine: the mean over the labeled set, the estimate
        for ``~ppi``; None where it has no value (an empty set, an ids-only
        engine's ``+evidence`` twin, ``+judged`` without judgments, ``~ppi`` without human-judged
        questions, freshness without versioned documents): no number, so never compared or passed."""
        if Measure.parse(measure).ppi:
            found = self.ppi(measure)
            return float(found.estimate) if found is not None else None
        if not self.has_value(measure):
            return None
        return float(self.values(measure).mean())

    def has_value(self, measure: "str | Measure") -> bool:
        """Whether ``measure`` has a value for this engine (``mean`` is not None)."""
        parsed = Measure.parse(measure)
        if parsed.ppi:
            return self.ppi(parsed) is not None
        no_input = not self.per_query(parsed) and (parsed.freshness or parsed.judge_dependent or parsed.evidence)
        return self.n > 0 and not no_input

    def score(self, measure: "str | Measure") -> MeasureValue:
        """The value for an assertion (``assert results.hit_at(5) >= 0.8``): a float that explains
        itself; where the measure has no value (``mean`` is None) a NaN, so the assertion fails
        and its explanation says why, rather than a TypeError comparing None."""
        name = Measure.parse(measure).name
        value = self.mean(name)
        return MeasureValue(math.nan if value is None else value, name, self)

    __getitem__ = score

    def hit_at(self, k: int) -> MeasureValue:
        return self.score(Measure("hit", k))

    def mrr(self, k: int | None = None) -> MeasureValue:
        return self.score(Measure("mrr", k))

    def recall_at(self, k: int) -> MeasureValue:
        return self.score(Measure("recall", k))

    def precision_at(self, k: int) -> MeasureValue:
        return self.score(Measure("precision", k))

    def ndcg_at(self, k: int | None = None) -> MeasureValue:
        return self.score(Measure("ndcg", k))

    def map(self, k: int | None = None) -> MeasureValue:
        return self.score(Measure("map", k))

    def ci(self, measure: str) -> tuple[float, float]:
        """95% interval of the mean over queries: Wilson for a measure that is 0 or 1 per query
        (hit@k, the freshness rates), so 1.000 still has a lower end below 1; else the bootstrap
        (``ir.stats.mean_ci``). Over turns of conversations, the bootstrap over conversations."""
        m = Measure.parse(measure)
        name = m.name
        if m.ppi:  # the estimate's own: PPI's, or the human-only one where the judge does not help
            found = self.ppi(m)
            return tuple(found.interval) if found is not None else (math.nan, math.nan)
        if name not in self._cis:  # (nan, nan) for a measure without a value: no interval of nothing
            self._cis[name] = mean_ci(self.values(name), binary=m.family in BINARY_FAMILIES,
                                     clusters=self.clusters())
        return self._cis[name]

    def trial_means(self, measures: Sequence[str]) -> dict[str, list[float]]:
        """Per measure with a value in every trial, the mean of each (the first included); empty
        with one trial."""
        if not self.trial_results:
            return {}
        out: dict[str, list[float | None]] = {m: [] for m in measures}
        for results in (self.results, *self.trial_results):
            trial = EvaluationResult(self.engine, self.labeled, tuple(results), freshness=self.freshness,
                                     judged=self.judged, judge=self.judge)
            for m in measures:
                out[m].append(trial.mean(m))
        return {m: v for m, v in out.items() if None not in v}  # a measure without a value has no spread

    # --- per query -----------------------------------------------------------------------------
    @staticmethod
    def gold_rank(query: LabeledQuery, result: QueryResult) -> int | None:
        """1-based rank of the first relevant document, None when none was retrieved."""
        for rank, doc in enumerate(result.doc_ids, start=1):
            if query.relevant.get(doc, 0) >= 1:
                return rank
        return None

    @property
    def first_relevant_rank(self) -> dict[str, int | None]:
        by_id = self.labeled.by_id()
        return {r.query_id: self.gold_rank(by_id[r.query_id], r) for r in self.results}

    def hit_curve(self, depth: int = CURVE_DEPTH) -> list[float]:
        """Hit@k for k = 1..depth, from the rank of the first relevant document."""
        ranks = [r for r in self.first_relevant_rank.values() if r is not None]
        n = max(self.n, 1)
        return [sum(1 for r in ranks if r <= k) / n for k in range(1, depth + 1)]

    def segment(self, tag: str) -> "EvaluationResult":
        """The same evaluation on the questions carrying ``tag`` only (``data/segments.py``), e.g.
        ``assert results.segment("body-only").hit_at(5) >= 0.8``; an empty one scores NaN."""
        keep = {q.query_id for q in self.labeled.queries if tag in q.tags}
        labeled = LabeledSet(tuple(q for q in self.labeled.queries if q.query_id in keep),
                             name=f"{self.labeled.name}[{tag}]", provenance=self.labeled.provenance)
        return EvaluationResult(self.engine, labeled, tuple(r for r in self.results if r.query_id in keep),
                                self.engine_info, self.depth, self.context,
                                tuple(tuple(r for r in t if r.query_id in keep) for t in self.trial_results),
                                {k: tuple(q for q in v if q in keep) for k, v in self.run_lint.items()},
                                self.freshness, {q: j for q, j in self.judged.items() if q in keep}, self.judge,
                                self.evidence, self.measured)

    def causes(self, k: int) -> dict[str, Any]:
        """Query id -> why it missed at ``k`` (``evaluation.causes.Cause``), for the missed questions."""
        if k not in self._causes:
            from .causes import causes

            self._causes[k] = causes(self, k)
        return self._causes[k]

    def misses(self, k: int) -> Any:
        """The misses at ``k`` counted by cause (``evaluation.causes.Misses``): the line under the table."""
        from .causes import Misses

        return Misses(self.engine, self.labeled.name, k, self.n, tuple(self.causes(k).values()))

    def tokens_at(self, k: int) -> float:
        """What the engine hands a generator: the word tokens of its top ``k`` passages, the mean
        over questions (an errored question hands nothing); NaN for an engine without an
        evidence level (``returns_passages``): ids alone hand no known number of tokens."""
        if not self.returns_passages:
            return math.nan
        return float(np.mean([sum(r.passage_tokens[:k]) for r in self.results])) if self.results else math.nan

    def evidence_misses(self, k: int) -> Any:
        """The misses at ``k`` at the evidence level (``hit@k+evidence``), counted by cause: "right
        document, wrong passage" among them (``evaluation.causes.evidence_cause_of``)."""
        from .causes import Misses, causes

        found = causes(self, k, evidence_level=True)
        return Misses(self.engine, self.labeled.name, k, self.n, tuple(found.values()), evidence=True)

    def worst(self, measure: str, limit: int = 5) -> list[str]:
        """One line per worst-scoring query (below the best possible value), worst first."""
        from .explain import worst

        return worst(self, measure, limit)

    def freshness_lines(self, measure: Measure, limit: int = 5) -> list[str]:
        """Why a freshness measure is below 1 (``evaluation/explain.py``)."""
        from .explain import freshness_lines

        return freshness_lines(self, measure, limit)

    # --- serialisation: one form for xdist, baselines and results.json --------------------------
    def to_dict(self, measures: Sequence[str] | None = None, *, timing: bool = False,
                prices: Sequence[Sequence[Any]] = ()) -> dict[str, Any]:
        """The source of truth; with ``measures``, also the values derived from it (what
        results.json shows people); with ``timing``, each call's seconds (what xdist ships)."""
        from .results_json import evaluation_to_dict

        return evaluation_to_dict(self, measures, timing=timing, prices=prices)

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> "EvaluationResult":
        from .results_json import evaluation_from_dict

        return evaluation_from_dict(d)


@dataclass(frozen=True)
class Comparison:
    """Engine ``a`` against engine ``b`` on one measure over the same queries."""

    labeled: str
    measure: str
    a: str
    b: str
    #: the paired comparison (``ir.paired``), its p corrected over the run's grid of comparisons
    paired: Paired
    significant: bool = False  # its corrected p is below the run's alpha (``analysis/analyse.significant``)

    delta = property(lambda self: self.paired.delta)  # mean(a) - mean(b)
    p = property(lambda self: self.paired.p)
    #: 95% bootstrap interval of the paired per-query difference a - b (the effect size)
    ci = property(lambda self: self.paired.ci)
    #: p corrected for the family of comparisons made in the run (``correction``)
    p_adjusted = property(lambda self: self.paired.p_adjusted)

    def to_dict(self) -> dict[str, Any]:
        return {"labeled": self.labeled, "measure": self.measure, "a": self.a, "b": self.b, "delta": self.delta,
                "ci95": list(self.ci), "p": self.p, "p_adjusted": self.p_adjusted}


@dataclass
class RunResults:
    """Every evaluation of a run, with what the run's reports need besides: the settings that
    judged it, corpus lint, and snippets of the documents the drill-down page shows."""

    evaluations: list[EvaluationResult]
    metrics_fingerprint: str = METRICS_FINGERPRINT
    lint: list[LintReport] = field(default_factory=list)
    #: doc id -> the text the drill-down page shows for it (top 3 of each query)
    snippets: dict[str, str] = field(default_factory=dict)
    #: the settings a saved run recorded, as its file holds them (``report merge`` checks slices
    #: were run alike); the gate reads them into its typed settings (``gate/saved.py``)
    settings: Mapping[str, Any] = field(default_factory=dict)
    #: what the judged labels rest on (``evaluation/judging.py``: ``JudgmentsUsed.to_dict()``): the file,
    #: the judge, how many were used and stale, its agreement with the humans; empty without judgments
    judgments: dict[str, Any] = field(default_factory=dict)
    #: documents a change would add, with their novelty (``evaluation/judging.candidates_record``): path,
    #: weight, items; empty without ``--retrieval-candidates``
    candidates: dict[str, Any] = field(default_factory=dict)
    #: how much of the corpus the labeled questions judge (``analysis/coverage.py``); empty without a corpus
    coverage: dict[str, Any] = field(default_factory=dict)
    #: what was measured, by content (``evaluation/fingerprints.py``): the corpus and a digest per
    #: document, labeled sets, the judgments file, embedder canaries; empty in files saved before
    fingerprints: dict[str, Any] = field(default_factory=dict)
    _comparisons: dict = field(default_factory=dict, repr=False, init=False)

    def __post_init__(self) -> None:
        self.evaluations = sorted(self.evaluations, key=lambda e: e.key)

    def replace_evaluations(self, evaluations: Sequence[EvaluationResult]) -> None:
        """New evaluations of the same engines (the judge's labels attached): what was compared
        on the old ones is forgotten."""
        self.evaluations = sorted(evaluations, key=lambda e: e.key)
        self._comparisons.clear()

    def get(self, engine: str, labeled: str) -> EvaluationResult | None:
        return next((e for e in self.evaluations if e.key == (engine, labeled)), None)

    def comparisons(self, measures: Sequence[str], correction: str = "holm") -> list[Comparison]:
        """Every pair of engines on the same labeled set, per measure: a paired test over queries
        and the bootstrap interval of the difference; ``p_adjusted`` corrects every p for the whole
        grid (all pairs and measures asked for), since each is one more chance of a false mark.
        A measure an engine has no value of (``mean`` is None: an ids-only engine's ``+evidence``
        twin) is no comparison, neither printed nor counted in the correction.
        The gate asks once, when it judges the run; reports read the verdict's."""
        raw = self._raw_comparisons(measures)
        return [replace(c, paired=q) for c, q in zip(raw, corrected([c.paired for c in raw], correction))]

    def _raw_comparisons(self, measures: Sequence[str]) -> list[Comparison]:
        out = []
        for i, a in enumerate(self.evaluations):
            for b in self.evaluations[i + 1:]:
                if a.labeled.name != b.labeled.name or a.labeled.fingerprint != b.labeled.fingerprint:
                    continue
                for m in measures:
                    if not (a.has_value(m) and b.has_value(m)):
                        continue  # no value on one side (an ids-only engine's +evidence): nothing to compare
                    key = (a.key, b.key, m)
                    if key not in self._comparisons:
                        ids = [q.query_id for q in a.labeled.queries]
                        self._comparisons[key] = Comparison(a.labeled.name, m, a.engine, b.engine,
                                                            paired(a.values(m), b.values(m), ids,
                                                                   clusters=a.clusters()))
                    out.append(self._comparisons[key])
        return out

    @classmethod
    def load(cls, path: str | Path, *, check_fingerprints: bool = True) -> "RunResults":
        """A saved run, refused in one line (file and field) when it does not hold together
        (``evaluation/results_json.py``)."""
        from .results_json import load

        return load(path, check_fingerprints=check_fingerprints)
