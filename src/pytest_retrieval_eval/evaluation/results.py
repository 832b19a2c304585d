"""The one result model: what each engine returned for each labeled query, plus the labeled set.

Everything else is derived from it in this module: per-query values of every measure, means,
intervals, the rank of the first relevant document, Hit@k curves, engine comparisons. Tests
assert on it (``results.hit_at(5)``), xdist workers ship it, reports render it, baselines are
saved copies of it, and ``results.json`` holds all of it, so a saved run rebuilds every artefact
(``python -m pytest_retrieval_eval report results.json --out DIR``). Its JSON form and the checks
a file must pass live in ``archive/results_json.py``; what a failed assertion says, in
``analysis/explain.py``.
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields, replace
from functools import cached_property
from typing import Any, Iterable, Mapping, Sequence

from ..data.freshness import Freshness
from ..data.labeled import LabeledSet
from ..data.lint import LintReport
from ..engines.base import DEFAULT_DEPTH
from ..ir.measures import METRICS_DEFINITION, parse_measures
from ..ir.runs import Run
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


@dataclass(eq=False)
class Evaluation:
    """One engine's rankings over one labeled set, as recorded (its measures: ``analysis/scores.py``)."""

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
    #: what the run knew of the relevant documents (``analysis/causes.py``): not in the corpus, not
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
    #: people judged completely to ``human_depth`` in this engine's rankings (``evaluation/judging.with_judgments``):
    #: query id -> doc id -> grade; the ``~ppi`` estimates correct the judge with them
    human: Mapping[str, Mapping[str, int]] = field(default_factory=dict)
    #: query id -> the depth its human grades are complete to (every document of the top that deep)
    human_depth: Mapping[str, int] = field(default_factory=dict)
    #: measure -> query id -> value, as a saved file recorded them where its measures are defined
    #: as this version defines them (``METRICS_FINGERPRINT``); a run made now has none: its
    #: ``Scores`` (``analysis/scores.py``) score the rankings, a saved one's read these first
    recorded_values: Mapping[str, Mapping[str, float]] = field(default_factory=dict, repr=False)
    #: what the engine returned for the labeled set's unanswerable turns (``LabeledSet.unanswerable``:
    #: no relevant document exists), in their order: listed by the analysis, never scored
    unanswerable: tuple[QueryResult, ...] = ()
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

    # --- the rankings -------------------------------------------------------------------------
    @cached_property
    def run(self) -> Run:
        """The rankings as a TREC run (results are set once; scoring reads them many times)."""
        return Run.from_ranked({r.query_id: r.doc_ids for r in self.results}, name=self.engine)

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

    @cached_property
    def passage_run(self) -> Run:
        """The ranking of passages the evidence-level measures read: at the rank of the first
        passage carrying a relevant document's evidence, that document; elsewhere a passage that
        counts for none (a placeholder id no document can have: ids hold no whitespace)."""
        rankings = {}
        for r in self.results:
            ranked = [f" passage {i}" for i in range(1, r.passages + 1)]
            for doc, rank in r.passage_ranks.items():
                ranked[rank - 1] = doc
            rankings[r.query_id] = ranked
        return Run.from_ranked(rankings, name=self.engine)

    def with_judged(self, judged: Mapping[str, Mapping[str, int]], judge: Mapping[str, Any] | None,
                    human: Mapping[str, Mapping[str, int]] | None = None,
                    human_depth: Mapping[str, int] | None = None) -> "Evaluation":
        """The same rankings with the judge's labels of the holes and a worksheet's complete human
        grades (``evaluation/judging.with_judgments``): a new evaluation, so nothing computed on the labels
        before is read with the new ones."""
        return replace(self, judged=judged, judge=judge, human=dict(human or {}), human_depth=dict(human_depth or {}),
                       recorded_values={})

    def human_questions(self, k: int) -> list[str]:
        """The questions people judged completely to depth ``k`` or deeper, in labeled-set order."""
        return [q.query_id for q in self.labeled.queries if self.human_depth.get(q.query_id, 0) >= k]

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

    # --- serialisation: one form for xdist, baselines and results.json --------------------------
    def to_dict(self, *, timing: bool = False) -> dict[str, Any]:
        """The source of truth; with ``timing``, each call's seconds (what xdist ships)."""
        from .record_json import evaluation_to_dict

        return evaluation_to_dict(self, timing=timing)

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> "Evaluation":
        from .record_json import evaluation_from_dict

        return evaluation_from_dict(d, cls)


@dataclass(frozen=True)
class RunResults:
    """Every evaluation of a run, with what the run's reports need besides: the settings that
    judged it, corpus lint, and snippets of the documents the drill-down page shows. Frozen once
    recorded: what is added later (judgments, coverage, fingerprints, candidates) makes a new run
    (``dataclasses.replace``, ``evaluation/judging.with_judgments``, ``plugin/enrich.py``)."""

    evaluations: list[Evaluation]
    metrics_fingerprint: str = METRICS_FINGERPRINT
    lint: list[LintReport] = field(default_factory=list)
    #: doc id -> the text the drill-down page shows for it (top 3 of each query)
    snippets: dict[str, str] = field(default_factory=dict)
    #: the settings a saved run recorded, as its file holds them (``report merge`` checks slices
    #: were run alike); the gate reads them into its typed settings (``archive/saved.py``)
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

    def __post_init__(self) -> None:  # the one write: the record's order, as it is made
        object.__setattr__(self, "evaluations", sorted(self.evaluations, key=lambda e: e.key))

    def record(self) -> "RunResults":
        """The run as recorded, each evaluation a plain ``Evaluation`` (what a test asserted on
        carries its measures besides): what the verdict hands renderers, who read the analysis
        for every number and the record for questions, rankings, passages and engine info."""
        plain = [e if type(e) is Evaluation else Evaluation(**{f.name: getattr(e, f.name) for f in fields(Evaluation)
                                                                 if f.init})
                 for e in self.evaluations]
        return replace(self, evaluations=plain)

    def get(self, engine: str, labeled: str) -> Evaluation | None:
        return next((e for e in self.evaluations if e.key == (engine, labeled)), None)
