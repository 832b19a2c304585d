"""The session's state: engines built, evaluations recorded, and how they reach the one process
that reports and gates.

Under pytest-xdist each process plays a role, and the role is a type (as in pytest-cov):
- ``Standalone``: no xdist; it evaluates, reports and gates;
- ``Worker``: evaluates and ships its per-query rows to the controller through ``workeroutput``;
- ``Controller``: runs no test; merges the rows every worker shipped, then reports and gates.
  A worker that goes down without shipping makes the gate fail, never pass.
Per-query rows, not means, cross the process boundary, so the controller's numbers are exactly
those of a run without xdist.
"""

from __future__ import annotations

import json
import os
import time
import warnings
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .engines.base import Engine, EngineRegistry
from .errors import RetrievalEvalError
from .evaluation import EvaluationResult, evaluate_engine
from .gate import measures_needed
from .labeled import LabeledSet
from .lint import LintReport
from .results import METRICS_DEFINITION, RunResults
from .verdict import Verdict, judge, table_measures
from .settings import RetrievalConfig

WORKEROUTPUT_KEY = "pytest_retrieval_eval"


@dataclass
class Gathered:
    """Everything the reporting process knows at the end of the run."""

    results: list[EvaluationResult]
    missing_workers: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    lint: list[LintReport] = field(default_factory=list)


def merge(records: list[tuple[str, dict[str, Any]]]) -> Gathered:
    """Records from several processes: one evaluation per (engine, labeled set). Two workers that
    both evaluated an engine asked it the same questions; the first (by worker id) is kept, and a
    disagreement between them is noted rather than averaged away."""
    kept: dict[tuple[str, str], EvaluationResult] = {}
    lint: dict[str, LintReport] = {}
    notes = []
    for origin, shipped in sorted(records, key=lambda r: r[0]):
        for d in shipped.get("lint", []):
            report = LintReport.from_dict(d)
            lint.setdefault(json.dumps(d, sort_keys=True), report)  # the same ingestion on two workers
        for rec in shipped.get("evaluations", []):
            result = EvaluationResult.from_record(rec)
            other = kept.get(result.key)
            if other is None:
                kept[result.key] = result
            elif [r.doc_ids for r in other.results] != [r.doc_ids for r in result.results]:
                notes.append(f"engine '{result.engine}' ranked differently on {origin}; kept the first worker's run")
    return Gathered(list(kept.values()), notes=notes, lint=list(lint.values()))


class StaleQuestionsWarning(UserWarning):
    """The questions cache no longer matches the corpus (with --retrieval-stale=warn)."""


class UnknownJudgedDocumentsWarning(UserWarning):
    """A qrels file judges documents that the corpus does not have."""


def _shown(path: Path | None) -> str:
    """A path as a user would type it: relative to the working directory when below it."""
    if path is None:
        return ""
    try:
        return str(Path(path).relative_to(Path.cwd()))
    except ValueError:
        return str(path)


class Standalone:
    """No xdist: this process evaluates, reports and gates."""

    reports = True

    def ship(self, config, records: dict[str, Any]) -> None:
        pass

    def gather(self, records: dict[str, Any]) -> Gathered:
        return merge([("local", records)])


class Worker(Standalone):
    """An xdist worker: hands its rows to the controller and reports nothing itself."""

    reports = False

    def ship(self, config, records: dict[str, Any]) -> None:
        config.workeroutput[WORKEROUTPUT_KEY] = json.dumps(records)


class Controller(Standalone):
    """The xdist controller: gathers every worker's rows; runs no evaluation of its own."""

    def __init__(self) -> None:
        self.shipped: dict[str, dict[str, Any]] = {}
        self.missing: dict[str, str] = {}

    def node_down(self, node: Any, error: Any) -> None:
        wid = getattr(getattr(node, "gateway", None), "id", None) or str(node)
        output = getattr(node, "workeroutput", None) or {}
        if error is None and WORKEROUTPUT_KEY in output:
            self.shipped[wid] = json.loads(output[WORKEROUTPUT_KEY])
        else:
            reason = f"crashed: {str(error).strip().splitlines()[-1]}" if error else "sent no retrieval results"
            self.missing[wid] = reason

    def gather(self, records: dict[str, Any]) -> Gathered:
        gathered = merge(list(self.shipped.items()))
        gathered.missing_workers = [f"{wid} ({why})" for wid, why in sorted(self.missing.items())]
        return gathered


def role_for(config) -> Standalone:
    if hasattr(config, "workerinput"):
        return Worker()
    if config.pluginmanager.hasplugin("dsession"):
        return Controller()
    return Standalone()


@dataclass
class Outcome:
    """The reporting process's end of run: the verdict, plus what xdist merging noted."""

    verdict: Verdict
    gathered: Gathered
    thresholds: list = field(default_factory=list)

    @property
    def notes(self) -> list[str]:
        return self.gathered.notes

    @property
    def failures(self) -> list[str]:
        return self.verdict.failures

    @property
    def failed(self) -> bool:
        return self.verdict.failed


class RetrievalSession:
    """Owned by the plugin manager for one pytest run (registered as ``retrieval_session``)."""

    def __init__(self, config: RetrievalConfig, pytest_config: Any) -> None:
        self.config = config
        self.pytest_config = pytest_config
        self.role: Standalone = Standalone()
        self._registry: EngineRegistry | None = None
        self._engines: dict[str, Engine] = {}
        self._results: dict[tuple[str, str], EvaluationResult] = {}
        self._indexes: dict[Any, Any] = {}  # IngestConfig -> IngestedIndex
        self._corpus = None
        self.outcome: Outcome | None = None

    # --- engines -----------------------------------------------------------------------------
    @property
    def registry(self) -> EngineRegistry:
        if self._registry is None:
            registry = EngineRegistry()
            self.pytest_config.hook.pytest_retrieval_engines(registry=registry, config=self.pytest_config)
            self._registry = registry
        return self._registry

    def selected_engines(self) -> list[str]:
        names = self.registry.names()
        if not self.config.engines:
            return names
        unavailable = self.registry.unavailable_engines()
        for name in self.config.engines:
            if name in unavailable:
                raise RetrievalEvalError(f"engine '{name}' is not available: {unavailable[name]}")
        unknown = [n for n in self.config.engines if n not in names]
        if unknown:
            raise RetrievalEvalError(
                f"--retrieval-engine / retrieval_engines names unknown engine(s) {', '.join(unknown)}; "
                f"registered: {', '.join(names) or 'none'}"
            )
        return list(self.config.engines)

    @property
    def worker_id(self) -> str:
        return os.environ.get("PYTEST_XDIST_WORKER", "main")

    def open_store(self):
        from .store import open_store

        return open_store(self.config.store, dsn=self.config.dsn, worker=self.worker_id,
                          schema_prefix=self.config.schema_prefix)

    def cache_dir(self) -> Path:
        if self.config.cache_dir is not None:
            return self.config.cache_dir
        cache = getattr(self.pytest_config, "cache", None)
        if cache is not None:
            return Path(cache.mkdir("retrieval-eval"))
        return Path.home() / ".cache" / "pytest-retrieval-eval"

    def embedder(self):
        from .embedders import Embedder, backend_for
        from .embedding_cache import EmbeddingCache

        return Embedder(backend_for(self.config.embedder), EmbeddingCache(self.cache_dir() / "embeddings.sqlite3"))

    def progress(self, message: str) -> None:
        """A progress line on the terminal, past output capture (long ingestions)."""
        tr = self.pytest_config.pluginmanager.get_plugin("terminalreporter")
        capman = self.pytest_config.pluginmanager.get_plugin("capturemanager")
        if tr is None:
            return
        if capman is None:
            tr.write_line(f"retrieval: {message}")
            return
        with capman.global_and_fixture_disabled():
            tr.write_line(f"retrieval: {message}")

    # --- data ----------------------------------------------------------------------------------
    def load_corpus(self):
        """The configured corpus, read once per process (fixtures and the HTML page share it)."""
        from .corpus import open_corpus

        if self.config.corpus is None:
            raise RetrievalEvalError("no corpus configured: set --retrieval-corpus PATH or the retrieval_corpus ini option")
        if self._corpus is None:
            self._corpus = open_corpus(self.config.corpus, split=self.config.split, max_doc_mb=self.config.max_doc_mb).load()
        return self._corpus

    def load_labeled(self, corpus) -> LabeledSet:
        """A BEIR folder brings its own judged queries (unless --retrieval-questions is given);
        otherwise the questions cache, regenerated first when asked, then checked for staleness."""
        from .corpus import BeirFolder, open_corpus
        from .labeled import load_questions_cache
        from .staleness import check, regenerate_command

        cfg = self.config
        if cfg.corpus is not None and not cfg.questions_explicit:
            provider = open_corpus(cfg.corpus, split=cfg.split)
            if isinstance(provider, BeirFolder):
                labeled = provider.labeled()
                unknown = sorted({d for q in labeled for d in q.relevant if d not in corpus})
                if unknown:
                    warnings.warn(UnknownJudgedDocumentsWarning(
                        f"qrels/{cfg.split}.tsv judges {len(unknown)} document(s) not in corpus.jsonl, e.g. "
                        f"{', '.join(unknown[:5])}: they stay judged (as in BEIR's own evaluation) and can never "
                        "be retrieved"), stacklevel=2)
                return labeled
        if cfg.questions is None:
            raise RetrievalEvalError("no labeled queries configured: set --retrieval-questions PATH or the retrieval_questions ini option")
        if cfg.regenerate:
            self.regenerate(corpus)
        labeled = load_questions_cache(cfg.questions)
        stale = check(labeled, corpus)
        if not stale:
            return labeled
        message = stale.describe(_shown(cfg.questions), _shown(cfg.corpus),
                                 regenerate_command(_shown(cfg.corpus), _shown(cfg.questions)))
        if cfg.stale == "error":
            raise RetrievalEvalError(message)
        warnings.warn(StaleQuestionsWarning(message), stacklevel=2)
        dead = stale.dead_queries
        return LabeledSet(tuple(q for q in labeled if q.query_id not in dead), name=labeled.name, provenance=labeled.provenance)

    def regenerate(self, corpus) -> None:
        from .generate import GeneratorConfig, generate_questions
        from .ingest import chunk_corpus

        report = generate_questions(corpus, chunk_corpus(corpus, self.config.ingest), self.config.questions,
                                    config=GeneratorConfig(model=self.config.generator_model), split=self.config.ingest, progress=self.progress)
        self.progress(f"{_shown(self.config.questions)}: {report.summary()}")
        if report.failed:
            raise RetrievalEvalError(f"question generation failed for {len(report.failed)} chunk(s): {report.summary()}")

    def index_for(self, request: Any, config=None):
        """The corpus ingested with ``config`` (default: the session's), once per session; engine
        variants with the same ingestion settings share it."""
        from .ingest import ingest

        config = config or self.config.ingest
        if config not in self._indexes:
            self._indexes[config] = ingest(request.getfixturevalue("retrieval_corpus"),
                                           request.getfixturevalue("pgvector_store"),
                                           request.getfixturevalue("retrieval_embedder"), config, self.progress)
        return self._indexes[config]

    def engine(self, name: str, request: Any) -> Engine:
        if name not in self._engines:
            self._engines[name] = self.registry.build(name, request)
        return self._engines[name]

    # --- evaluations -------------------------------------------------------------------------
    def evaluate(self, engine: Engine, labeled: LabeledSet, *, name: str | None = None, corpus=None) -> EvaluationResult:
        """Evaluate once per session per (engine name, labeled set); later calls reuse it."""
        key = (name or engine.name, labeled.fingerprint)
        if key not in self._results:
            context = {"corpus": corpus.name, "corpus_fingerprint": corpus.fingerprint} if corpus is not None else {}
            def once() -> EvaluationResult:
                return evaluate_engine(engine, labeled, depth=self.config.depth, name=name, context=context,
                                       timeout=self.config.timeout, known_ids=corpus)

            first = once()
            first.trial_results = tuple(once().results for _ in range(self.config.trials - 1))
            self._results[key] = first
        return self._results[key]

    @property
    def results(self) -> list[EvaluationResult]:
        return list(self._results.values())

    # --- end of run --------------------------------------------------------------------------
    def finish(self) -> Outcome | None:
        """Ship or gather; in the reporting process, score every evaluation, judge, write reports."""
        records = {"evaluations": [r.to_record() for r in self._results.values()],
                   "lint": [i.lint.to_dict() for i in self._indexes.values() if i.lint is not None]}
        self.role.ship(self.pytest_config, records)
        if not self.role.reports:
            return None
        cfg = self.config
        gathered = self.role.gather(records)
        run = RunResults.from_evaluations(gathered.results, [*(m.name for m in cfg.table_measures),
                                                              *measures_needed(cfg.thresholds),
                                                              *(d.measure for d in cfg.max_drops)])
        failures = [f"xdist worker {w}; its retrieval results are missing" for w in gathered.missing_workers]
        baseline = None
        if cfg.baseline is not None and run.evaluations:
            try:
                baseline = RunResults.load(cfg.baseline)
            except RetrievalEvalError as exc:
                failures.append(f"baseline unusable: {exc}")
        verdict = judge(run, measures=table_measures(run, cfg.table_measures), thresholds=cfg.thresholds,
                        max_drops=cfg.max_drops, baseline=baseline, force=cfg.baseline_force,
                        noise_aware=cfg.noise_aware, alpha=cfg.alpha, other_failures=failures, lint=gathered.lint)
        self.outcome = Outcome(verdict, gathered, list(cfg.thresholds))
        if run.evaluations:
            self._write_outputs(verdict, gathered.results, baseline)
        return self.outcome

    def _write_outputs(self, verdict: Verdict, evaluations: list[EvaluationResult], baseline) -> None:
        from ._atomic import write_text_atomic
        from .report.files import markdown, write_report

        cfg = self.config
        metadata = {"measures": ", ".join(verdict.measures), "metric definition": METRICS_DEFINITION,
                    "alpha": cfg.alpha, "baseline": _shown(cfg.baseline) or "none"}
        if cfg.save_baseline is not None:
            write_text_atomic(cfg.save_baseline, verdict.run.to_json())
        if cfg.report_dir is not None:
            timing = {"finished": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
                      "engines": {f"{r.engine} on {r.labeled.name}": {
                          "queries": r.n, "seconds": round(sum(q.seconds for q in r.results), 6)} for r in evaluations}}
            write_report(cfg.report_dir, verdict, evaluations, metadata=metadata, timing=timing, baseline=baseline)
        if cfg.html is not None:
            from .report.html import render

            try:
                corpus = self.load_corpus()  # for snippets of the retrieved documents
            except RetrievalEvalError:
                corpus = None
            write_text_atomic(cfg.html, render(verdict, evaluations, corpus=corpus, baseline=baseline,
                                               subtitle=", ".join(f"{k}: {v}" for k, v in metadata.items())))
        summary = os.environ.get("GITHUB_STEP_SUMMARY")
        if summary:
            with open(summary, "a", encoding="utf-8") as fh:
                fh.write(markdown(verdict, metadata))
