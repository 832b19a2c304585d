"""The one result model: what each engine returned for each labeled query, plus the labeled set.

Everything else is derived from it in this module: per-query values of every measure, means,
intervals, the rank of the first relevant document, Hit@k curves, engine comparisons. Tests
assert on it (``results.hit_at(5)``), xdist workers ship it, reports render it, baselines are
saved copies of it, and ``results.json`` holds all of it, so a saved run rebuilds every artefact
(``python -m pytest_retrieval_eval report results.json --out DIR``).

``results.json`` (format version 1) is written with sorted keys and without timings, so
identical inputs give byte-identical files (timings go to ``timing.json``). Per evaluation it
holds the source of truth (each query's id, question, judgements, ranked ids and error, and the
rankings of repeated trials) and, for people and other tools, the values derived from it.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Iterable, Mapping, Sequence

import numpy as np

from .._textfiles import read_text
from ..data.freshness import Freshness
from ..data.labeled import LabeledSet
from ..data.lint import LintReport
from ..engines.base import DEFAULT_DEPTH
from ..errors import RetrievalEvalError
from ..ir.measures import Measure, parse_measures
from ..ir.metrics import evaluate
from ..ir.runs import Run
from ..ir.stats import adjust, bootstrap_ci, paired_difference_ci, paired_randomization
from ..types import LabeledQuery, QueryResult, sha256_text
from .lint import KINDS as RUN_LINT_KINDS

FORMAT = "pytest-retrieval-eval/results"
VERSION = 1
#: Bump when a measure's definition changes: baselines from another definition are refused.
METRICS_DEFINITION = "trec_eval -c semantics; ties by doc id descending; linear-gain ndcg; v1"
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
        return f"{self.result.engine} {self.measure}={float(self):.4f}"

    def explain(self, op: str, other: object, limit: int = 5) -> list[str]:
        r = self.result
        lines = [
            f"{r.engine}: {self.measure} = {float(self):.4f}, expected {op} {other} "
            f"(n={r.n} queries, {r.n_errored} errored, labeled set {r.labeled.name})"
        ]
        parsed = Measure.parse(self.measure)
        if parsed.freshness:
            lines.extend(r.freshness_lines(parsed, limit))
            return lines
        misses = r.worst(self.measure, limit)
        if misses:
            lines.append(f"worst-scoring queries on {self.measure}:")
            lines.extend("  " + m for m in misses)
        return lines


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
    _values: dict[str, dict[str, float]] = field(default_factory=dict, repr=False)
    _cis: dict[str, tuple[float, float]] = field(default_factory=dict, repr=False)
    _run: Run | None = field(default=None, repr=False)

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

    # --- measures ------------------------------------------------------------------------------
    @property
    def run(self) -> Run:
        if self._run is None:  # results are set once; per-measure scoring asks many times
            self._run = Run.from_ranked({r.query_id: r.doc_ids for r in self.results}, name=self.engine)
        return self._run

    def per_query(self, measure: "str | Measure") -> dict[str, float]:
        parsed = Measure.parse(measure)
        name = parsed.name
        if name not in self._values:
            if parsed.freshness:  # an errored query scores 0, as it does on every measure: never a pass
                kind = parsed.family.split(".", 1)[1]
                self._values[name] = {} if self.freshness is None else {
                    r.query_id: 0.0 if r.errored else self.freshness.value(kind, r.doc_ids, parsed.k)
                    for r in self.results}
            else:
                self._values[name] = evaluate(self.labeled.qrels, self.run, [name], per_query=True)[name]
        return self._values[name]

    def values(self, measure: "str | Measure") -> np.ndarray:
        """Per-query values in labeled-set order (a query the run left out scores 0). A freshness
        measure on a corpus without versioned documents has no value: NaN for every query."""
        per = self.per_query(measure)
        if not per and Measure.parse(measure).freshness:
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

    def mean(self, measure: "str | Measure") -> float:
        v = self.values(measure)
        return float(v.mean()) if len(v) else math.nan

    def score(self, measure: "str | Measure") -> MeasureValue:
        """Mean over the labeled set; NaN when it is empty (0 of 0 passes no threshold)."""
        name = Measure.parse(measure).name
        return MeasureValue(self.mean(name), name, self)

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
        """95% bootstrap interval of the mean over queries."""
        name = Measure.parse(measure).name
        if name not in self._cis:
            self._cis[name] = bootstrap_ci(self.values(name))
        return self._cis[name]

    def trial_means(self, measures: Sequence[str]) -> dict[str, list[float]]:
        """Per measure, the mean of every trial (the first included); empty with one trial."""
        if not self.trial_results:
            return {}
        out: dict[str, list[float]] = {m: [] for m in measures}
        for results in (self.results, *self.trial_results):
            trial = EvaluationResult(self.engine, self.labeled, tuple(results), freshness=self.freshness)
            for m in measures:
                out[m].append(trial.mean(m))
        return out

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

    def worst(self, measure: str, limit: int = 5) -> list[str]:
        """One line per worst-scoring query (below the best possible value), worst first."""
        values = self.per_query(measure)
        by_id = self.labeled.by_id()
        rows = []
        for r in self.results:
            v = values.get(r.query_id, 0.0)
            if v >= 1.0:
                continue
            rank = self.gold_rank(by_id[r.query_id], r)
            rows.append((v, -(rank or math.inf), r.query_id, r, rank))
        rows.sort(key=lambda row: row[:3])
        lines = []
        for v, _, qid, r, rank in rows[:limit]:
            q = by_id[qid]
            question = q.question if len(q.question) <= 70 else q.question[:67] + "..."
            where = f"rank {rank}" if rank else "not retrieved"
            got = r.error if r.error else (", ".join(r.doc_ids[:3]) or "nothing")
            lines.append(
                f"{qid} ({measure}={v:.3f}) {question!r} gold: {', '.join(q.gold)} ({where}); "
                f"{'error' if r.error else 'top 3'}: {got}"
            )
        return lines

    def freshness_lines(self, measure: Measure, limit: int = 5) -> list[str]:
        """Why a freshness measure is below 1: the queries and the documents, or that the corpus
        has no versioned documents to judge."""
        if self.freshness is None:
            return [f"the corpus {self.corpus or ''} has no versioned documents (version_key, valid_from, "
                    "valid_until, superseded_by): nothing to judge".replace("corpus  has", "corpus has")]
        if measure.family == "freshness.stale_free":
            found = {q: ", ".join(docs) for q, docs in self.stale_queries(measure.k).items()}
            head = f"queries with a stale document in the top {measure.k} (as of {self.freshness.as_of})"
        else:
            found = {q: "; ".join(" and ".join(c) for c in cs) for q, cs in self.conflicting_queries(measure.k).items()}
            head = f"queries with two versions of one document in the top {measure.k}"
        if not found:
            return []
        shown = list(found.items())[:limit]
        more = f" ... and {len(found) - limit} more" if len(found) > limit else ""
        return [f"{head}: {len(found)}"] + [f"  {q}: {what}" for q, what in shown] + ([more] if more else [])

    # --- serialisation: one form for xdist, baselines and results.json --------------------------
    def to_dict(self, measures: Sequence[str] | None = None, *, timing: bool = False) -> dict[str, Any]:
        """The source of truth; with ``measures``, also the values derived from it (what
        results.json shows people); with ``timing``, each call's seconds (what xdist ships)."""
        by_id = self.labeled.by_id()
        queries = []
        for r in self.results:
            q = by_id[r.query_id]
            entry: dict[str, Any] = {"id": q.query_id, "question": q.question, "relevant": dict(q.relevant),
                                     "ranked": list(r.doc_ids), "error": r.error}
            if timing:
                entry["seconds"] = r.seconds
            queries.append(entry)
        d: dict[str, Any] = {
            "engine": self.engine, "engine_info": dict(self.engine_info), "depth": self.depth,
            "labeled": {"name": self.labeled.name, "fingerprint": self.labeled.fingerprint, "n": self.n,
                        "multi_judged": self.labeled.multi_judged},
            "corpus": {"name": self.corpus, "fingerprint": self.corpus_fingerprint},
            "queries": queries,
            "trial_rankings": [[[list(r.doc_ids), r.error] for r in t] for t in self.trial_results],
            "run_lint": {k: list(self.run_lint.get(k, ())) for k in RUN_LINT_KINDS},
        }
        if self.freshness is not None:
            d["freshness"] = self.freshness.to_dict()
        if measures is not None:
            d["errors"] = self.errors
            d["trials"] = self.trial_means(measures)
            d["summary"] = {m: {"mean": self.mean(m), "ci95": list(self.ci(m))} for m in sorted(measures)}
            ranks = self.first_relevant_rank
            for entry in queries:
                entry["first_relevant_rank"] = ranks[entry["id"]]
                entry["values"] = {m: self.per_query(m).get(entry["id"], 0.0) for m in sorted(measures)}
        return d

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> "EvaluationResult":
        lab, queries = d["labeled"], d["queries"]
        for q in queries:  # what a hand-edited file could get wrong, said before anything is scored
            if not isinstance(q["id"], str) or not isinstance(q["question"], str):
                raise ValueError(f"'queries' entry {q.get('id')!r}: id and question must be strings")
            if not all(isinstance(g, int) and not isinstance(g, bool) for g in q["relevant"].values()):
                raise ValueError(f"'queries' entry {q['id']!r}: relevance grades must be whole numbers")
            if not isinstance(q["ranked"], list) or not all(isinstance(r, str) for r in q["ranked"]):
                raise ValueError(f"'queries' entry {q['id']!r}: ranked must be a list of doc ids")
        labeled = LabeledSet(tuple(LabeledQuery(q["id"], q["question"], q["relevant"]) for q in queries),
                             name=lab["name"])
        labeled.__dict__["fingerprint"] = lab["fingerprint"]  # the recorded identity: what was measured
        results = tuple(QueryResult(q["id"], tuple(q["ranked"]), q["error"], q.get("seconds", 0.0)) for q in queries)
        trials = tuple(tuple(QueryResult(q["id"], tuple(ranked), error) for q, (ranked, error) in zip(queries, t))
                       for t in d.get("trial_rankings", []))
        corpus = d.get("corpus") or {}
        context = {"corpus": corpus.get("name"), "corpus_fingerprint": corpus.get("fingerprint")}
        run_lint = {k: tuple(v) for k, v in (d.get("run_lint") or {}).items() if k in RUN_LINT_KINDS}
        return cls(d["engine"], labeled, results, d.get("engine_info", {}), d.get("depth", DEFAULT_DEPTH),
                   {k: v for k, v in context.items() if v is not None}, trials, run_lint,
                   Freshness.from_dict(d.get("freshness")))


@dataclass(frozen=True)
class Comparison:
    """Engine ``a`` against engine ``b`` on one measure over the same queries."""

    labeled: str
    measure: str
    a: str
    b: str
    delta: float  # mean(a) - mean(b)
    p: float
    #: 95% bootstrap interval of the paired per-query difference a - b (the effect size)
    ci: tuple[float, float] = (math.nan, math.nan)
    #: p corrected for the family of comparisons made in the run (``correction``)
    p_adjusted: float = math.nan

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
    #: how the run is judged and rendered: a ``gate.settings.GateSettings`` (this layer only
    #: writes it, by its ``to_dict``); as read from a file, its recorded form until the gate reads it
    settings: Any = field(default_factory=dict)
    _comparisons: dict = field(default_factory=dict, repr=False)

    def __post_init__(self) -> None:
        self.evaluations = sorted(self.evaluations, key=lambda e: e.key)

    @property
    def measures(self) -> list[str]:
        """Every measure recorded per query: the standard ones plus those the settings use."""
        return measure_names(self.recorded_settings().get("recorded_measures", ()))

    def recorded_settings(self) -> dict[str, Any]:
        """The settings in results.json's form."""
        s = self.settings
        return s.to_dict() if hasattr(s, "to_dict") else dict(s or {})

    def get(self, engine: str, labeled: str) -> EvaluationResult | None:
        return next((e for e in self.evaluations if e.key == (engine, labeled)), None)

    def comparisons(self, measures: Sequence[str], correction: str = "holm") -> list[Comparison]:
        """Every pair of engines on the same labeled set, per measure: a paired test over queries
        and the bootstrap interval of the difference; ``p_adjusted`` corrects every p for the whole
        grid (all pairs and measures asked for), since each is one more chance of a false mark."""
        raw = self._raw_comparisons(measures)
        adjusted = adjust([c.p for c in raw], correction)
        return [replace(c, p_adjusted=q) for c, q in zip(raw, adjusted)]

    def _raw_comparisons(self, measures: Sequence[str]) -> list[Comparison]:
        out = []
        for i, a in enumerate(self.evaluations):
            for b in self.evaluations[i + 1:]:
                if a.labeled.name != b.labeled.name or a.labeled.fingerprint != b.labeled.fingerprint:
                    continue
                for m in measures:
                    key = (a.key, b.key, m)
                    if key not in self._comparisons:
                        va, vb = a.values(m), b.values(m)
                        self._comparisons[key] = Comparison(a.labeled.name, m, a.engine, b.engine,
                                                            float(va.mean() - vb.mean()) if len(va) else math.nan,
                                                            paired_randomization(va, vb),
                                                            paired_difference_ci(va, vb))
                    out.append(self._comparisons[key])
        return out

    def to_json(self) -> str:
        measures, settings = self.measures, self.recorded_settings()
        doc = {
            "format": FORMAT, "version": VERSION,
            "metrics": {"definition": METRICS_DEFINITION, "fingerprint": self.metrics_fingerprint},
            "settings": settings,
            "lint": [r.to_dict() for r in self.lint],
            "snippets": self.snippets,
            "evaluations": [e.to_dict(measures) for e in self.evaluations],
        }
        if settings.get("table_measures"):  # derived: the effect sizes the reports show
            doc["comparisons"] = [c.to_dict() for c in self.comparisons(
                settings["table_measures"], settings.get("correction", "holm"))]
        if settings.get("shadows"):  # derived: what each candidate gained over its baseline
            from .shadow import shadows

            found, _ = shadows(self, [tuple(p) for p in settings["shadows"]], settings["gain_weights"],
                               settings.get("table_measures", ()))
            doc["shadows"] = [sh.to_dict() for sh in found]
        return json.dumps(doc, indent=1, sort_keys=True, ensure_ascii=False, allow_nan=True) + "\n"

    @classmethod
    def load(cls, path: str | Path, *, check_fingerprints: bool = True) -> "RunResults":
        """A saved run, refused in one line (file and field) when it does not hold together.
        ``check_fingerprints=False`` (baselines) leaves a labeled-set fingerprint that does not
        match the questions to the baseline comparison, which refuses it unless forced."""
        text = read_text(path)
        try:
            doc = json.loads(text)
        except json.JSONDecodeError as exc:
            raise RetrievalEvalError(f"not valid JSON: {exc.msg}", path=path, line=exc.lineno) from None
        if not isinstance(doc, dict) or doc.get("format") != FORMAT:
            raise RetrievalEvalError(f"not a results file (expected \"format\": \"{FORMAT}\")", path=path, field="format")
        if doc.get("version") != VERSION:
            raise RetrievalEvalError(f"unsupported results version {doc.get('version')!r}; this plugin reads {VERSION}",
                                     path=path, field="version")
        evaluations = []
        for i, e in enumerate(doc.get("evaluations") or []):
            try:
                evaluations.append(EvaluationResult.from_dict(e))
            except RetrievalEvalError as exc:
                raise RetrievalEvalError(exc.detail, path=path, field=f"evaluations[{i}].{exc.field or ''}".rstrip(".")) from None
            except (KeyError, TypeError, ValueError) as exc:
                raise RetrievalEvalError(
                    f"evaluation {i} is missing or has a malformed {exc}; results files from before the rankings "
                    "were recorded cannot be read: re-save it with this version", path=path,
                    field=f"evaluations[{i}]") from None
        same: dict[tuple[str, str], EvaluationResult] = {}
        for e in evaluations:  # engines on one labeled set were asked the same questions
            first = same.setdefault((e.labeled.name, e.labeled.fingerprint), e)
            if [q.query_id for q in first.labeled.queries] != [q.query_id for q in e.labeled.queries]:
                raise RetrievalEvalError(
                    f"engines {first.engine} and {e.engine} hold different queries ({first.n} and {e.n}) for the "
                    f"same labeled set {e.labeled.name} (fingerprint {e.labeled.fingerprint[:12]}): "
                    f"{_id_difference(first, e)}; the file was edited or put together from two runs",
                    path=path, field="evaluations")
        problem = _fit_problem(doc.get("evaluations") or [], evaluations, check_fingerprints)
        if problem:
            raise RetrievalEvalError(problem[1], path=path, field=problem[0])
        settings = doc.get("settings", {})  # checked when the gate reads it (gate.settings.load_run)
        try:
            lint = [LintReport.from_dict(r) for r in doc.get("lint", [])]
            return cls(evaluations, doc["metrics"]["fingerprint"], lint, dict(doc.get("snippets", {})),
                       dict(settings) if isinstance(settings, dict) else settings)
        except (KeyError, TypeError, ValueError) as exc:
            raise RetrievalEvalError(f"results file is missing or has a malformed {exc}", path=path) from None


def _id_difference(first: EvaluationResult, other: EvaluationResult) -> str:
    """Which query ids ``other`` lacks and which it holds that ``first`` does not (or: the order)."""
    def listed(ids: list[str]) -> str:
        return ", ".join(repr(q) for q in ids[:3]) + (f" and {len(ids) - 3} more" if len(ids) > 3 else "")

    mine, theirs = [q.query_id for q in first.labeled.queries], [q.query_id for q in other.labeled.queries]
    mine_set, theirs_set = set(mine), set(theirs)
    lacks, extra = [q for q in mine if q not in theirs_set], [q for q in theirs if q not in mine_set]
    said = ([f"lacks {listed(lacks)}"] if lacks else []) + ([f"holds {listed(extra)}, which {first.engine} does not"]
                                                            if extra else [])
    return f"{other.engine} {' and '.join(said)}" if said else f"{other.engine} holds them in another order"


def _fit_problem(docs: Sequence[Mapping[str, Any]], evaluations: Sequence[EvaluationResult],
                 check_fingerprints: bool = True) -> tuple[str, str] | None:
    """(field, what is wrong) for the first evaluation whose questions are not the labeled set it
    names, or whose per-trial rankings and run lint do not fit those questions; every trial figure
    is rebuilt from them, so a short or long trial would be scored wrong, not refused."""
    for i, (d, e) in enumerate(zip(docs, evaluations)):
        problem = _labeled_problem(d, e, check_fingerprints) or _trials_problem(d, e) or _lint_problem(e)
        if problem:
            return f"evaluations[{i}].{problem[0]}", problem[1]
    counts = {1 + len(e.trial_results) for e in evaluations}
    if len(counts) > 1:  # one run asks every engine the same number of times: the short one was cut
        i, short = min(enumerate(evaluations), key=lambda p: len(p[1].trial_results))
        most = max(evaluations, key=lambda e: len(e.trial_results))
        return (f"evaluations[{i}].trial_rankings", f"{short.engine}: {1 + len(short.trial_results)} trials, but "
                f"{most.engine} in the same file has {1 + len(most.trial_results)}")
    return None


def _labeled_problem(d: Mapping[str, Any], e: EvaluationResult, check_fingerprint: bool) -> tuple[str, str] | None:
    recorded = d["labeled"].get("n", e.n)
    if recorded != e.n:
        return "queries", f"{e.engine}: {e.n} questions, but labeled set {e.labeled.name} has {recorded}"
    actual = LabeledSet(e.labeled.queries, name=e.labeled.name).fingerprint if check_fingerprint else None
    if actual is not None and actual != e.labeled.fingerprint:
        return "queries", (f"{e.engine}: the questions do not make up labeled set {e.labeled.name} (fingerprint "
                           f"{e.labeled.fingerprint[:12]}, theirs {actual[:12]}): an id, question or judgement was edited")
    return None


def _trials_problem(d: Mapping[str, Any], e: EvaluationResult) -> tuple[str, str] | None:
    raw, ids = d.get("trial_rankings", []), [q.query_id for q in e.labeled.queries]
    if not isinstance(raw, list):
        return "trial_rankings", f"{e.engine}: must be a list of trials, each a list of [ranked doc ids, error] per question"
    for t, trial in enumerate(raw):
        field_, name = f"trial_rankings[{t}]", f"{e.engine}, trial {t + 2}"  # trial 1 is the queries' own ranking
        if not isinstance(trial, list):
            return field_, f"{name}: must be a list of [ranked doc ids, error] per question"
        if len(trial) != len(ids):
            why = (f"none for {', '.join(repr(q) for q in ids[len(trial):][:3])}" if len(trial) < len(ids) else
                   "one more than there are questions" if len(trial) == len(ids) + 1 else
                   f"{len(trial) - len(ids)} more than there are questions")
            return field_, f"{name}: {len(trial)} rankings for {len(ids)} questions ({why})"
        for qid, entry in zip(ids, trial):
            if not (isinstance(entry, list) and len(entry) == 2 and isinstance(entry[0], list)
                    and all(isinstance(x, str) for x in entry[0]) and (entry[1] is None or isinstance(entry[1], str))):
                return field_, f"{name}, question {qid!r}: expected [ranked doc ids, error or null], got {entry!r:.60}"
    derived = d.get("trials")
    if isinstance(derived, dict):  # the per-trial means written beside them, one per trial
        counts = {len(v) for v in derived.values() if isinstance(v, list)}
        if counts and counts != {1 + len(raw)} or not derived and raw:
            held = f"{sorted(counts)[0]} per measure" if counts else "none"
            return "trial_rankings", f"{e.engine}: {1 + len(raw)} trials recorded, but 'trials' holds {held}"
    return None


def _lint_problem(e: EvaluationResult) -> tuple[str, str] | None:
    known = e.labeled.by_id()
    for kind, ids in e.run_lint.items():
        unknown = next((q for q in ids if q not in known), None)
        if unknown is not None:
            return f"run_lint.{kind}", f"{e.engine}: unknown query id {unknown!r} (not in labeled set {e.labeled.name})"
    return None
