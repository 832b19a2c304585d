"""The run's retrieval state, owned by the plugin manager (registered as ``retrieval_session``):
the configuration, the engines built, the evaluations recorded, and at the end the verdict.

It is created only when the run asks for retrieval (see ``plugin/__init__``). Fixtures ask it
for what they yield, passing what they already hold; it never reaches back into fixtures.
"""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..errors import RetrievalEvalError
from . import enrich, selection
from .config import RetrievalConfig

if TYPE_CHECKING:
    from ..report.terminal import Outcome
    from .roles import Gathered, Shipped


class RetrievalSession:
    def __init__(self, config: RetrievalConfig, pytest_config: Any) -> None:
        self.config = config
        self.pytest_config = pytest_config
        self._engines: dict[str, Any] = {}
        self._results: dict[tuple[str, str], Any] = {}
        self._indexes: dict[Any, Any] = {}  # IngestConfig -> IngestedIndex
        self._snippets: dict[str, str] = {}
        self._shares: dict[tuple[str, str, int], dict] = {}
        self._reuse = None  # hybrid.reuse.StoreReuse, made on the first ingestion
        self._corpus = None
        self._labeled = None
        self._read = None  # the labels file as read before any test (``inputs_problem``)
        self._freshness: dict[str, Any] = {}  # corpus fingerprint -> data.freshness.Freshness | None
        self.outcome: Outcome | None = None
        self._build_errors: dict[str, str] = {}  # engine name -> why its factory failed (a gate failure)
        #: the tests this process selected and those deselected, each with the engine whose results
        #: it reads (``collected``); None where it collected nothing (an xdist controller)
        self._tests: tuple[list, list] | None = None
        from .._usage import OUTSIDE

        self._outside_before = OUTSIDE.to_dict()  # the process's unclaimed calls so far: not this session's

    # --- engines -----------------------------------------------------------------------------
    @property
    def registry(self):
        from .wake import registry

        return registry(self.pytest_config)

    def engine(self, name: str, request: Any):
        if name not in self._engines:
            try:
                self._engines[name] = self.registry.build(name, request)
            except Exception as exc:  # the test errors as before; the gate fails by name too
                from .._secrets import mask_and_cap

                self._build_errors.setdefault(name, mask_and_cap(f"{type(exc).__name__}: {exc}", 200))
                raise
        return self._engines[name]

    def collected(self, items: list, deselected: list) -> None:
        """What this process runs, and what -k / -m left out, for ``unread``."""
        self._tests = selection.tests_of(items, deselected)

    def unread(self, engines: set[str]) -> dict[str, str]:
        """Engine -> why no evaluation of it was recorded and what to add (``selection.unread``)."""
        return selection.unread(self._tests, engines, self.pytest_config)

    def engine_failures(self, evaluated: set[str]) -> list[str]:
        """Engines the gate must not pass over: a factory that raised, and (when anything was
        evaluated) an engine named by --retrieval-engine / retrieval_engines with no evaluation."""
        out = [f"engine '{n}' could not be built: {why}" for n, why in self._build_errors.items()]
        if evaluated:
            out += [f"engine '{n}' is named by --retrieval-engine / retrieval_engines but recorded no evaluation "
                    "(its tests errored or were deselected); run them, or leave it out of the selection"
                    for n in dict.fromkeys(self.config.run.engines)
                    if n not in evaluated and n not in self._build_errors]
        return out

    # --- the hybrid stack ----------------------------------------------------------------------
    @property
    def worker_id(self) -> str:
        return os.environ.get("PYTEST_XDIST_WORKER", "main")

    @property
    def stack(self):
        """The process's one stack (store, embedder, embedding cache), made on first ask."""
        if getattr(self, "_stack", None) is None:
            from ..hybrid.stack import from_settings

            self._stack = from_settings(self.config.hybrid, self.cache_dir(), self.worker_id)
        return self._stack

    def open_store(self):
        return self.stack.store()

    def cache_dir(self) -> Path:
        if self.config.hybrid.cache_dir is not None:
            return self.config.hybrid.cache_dir
        cache = getattr(self.pytest_config, "cache", None)
        if cache is not None:
            return Path(cache.mkdir("retrieval-eval"))
        return Path.home() / ".cache" / "pytest-retrieval-eval"

    def embedder(self):
        return self.stack.embedder()

    def index(self, corpus: Any, store: Any, embedder: Any, config: Any = None):
        """The corpus ingested with ``config`` (default: the session's), once per session; engine
        variants with the same ingestion settings share it. What an earlier session ingested with
        the same key is reused (``hybrid/reuse.py``)."""
        config = config or self.config.hybrid.ingest
        if config not in self._indexes:
            self._indexes[config] = self._store_reuse().index(corpus, store, embedder, config)
        return self._indexes[config]

    def _store_reuse(self):
        if self._reuse is None:
            from ..hybrid.reuse import StoreReuse

            h = self.config.hybrid
            self._reuse = StoreReuse(self.cache_dir(), h.store_cache_mb, h.dsn_keep, self.progress)
        return self._reuse

    def pipeline_index(self, corpus: Any, store: Any):
        """The corpus run through the team's ingestion YAML (``retrieval_ingest_pipeline``), once."""
        h = self.config.hybrid
        if h.ingest_pipeline is None:
            raise RetrievalEvalError("a query pipeline reads what an ingestion pipeline wrote: set "
                                     "retrieval_ingest_pipeline = PATH (or --retrieval-ingest-pipeline)")
        if "pipeline" not in self._indexes:
            from ..hybrid import user_pipelines

            file = user_pipelines.PipelineFile.read(h.ingest_pipeline)
            index, restored = self._store_reuse().index_by(
                store, user_pipelines.table_for(corpus, file),
                build=lambda: user_pipelines.ingest(corpus, store, file, self.embedding_cache(),
                                                    input_socket=h.ingest_input, id_field=h.id_field,
                                                    progress=self.progress, model_cache=h.model_cache),
                restore=lambda: user_pipelines.restored(corpus, store, file, id_field=h.id_field))
            self._indexes["pipeline"] = index
            st = index.stats
            if restored:
                self.progress(f"{index.table}: restored from snapshot ({len(index.chunks)} chunks of {file.path.name}; "
                              "the pipeline did not run)")
            else:
                self.progress(f"{index.table}: ingested with {file.path.name} ({len(index.chunks)} chunks; embedded "
                              f"{st['embedded']}, {st['from_cache']} from the cache; embedders cached: "
                              f"{st['embedders_cached']}, not cached: {st['embedders_not_cached']})")
        return self._indexes["pipeline"]

    def embedding_cache(self):
        return self.stack.embedding_cache()

    @property
    def store_events(self) -> list[str]:
        return self._reuse.events if self._reuse is not None else []

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
    def corpus(self):
        """The configured corpus, read once per process."""
        if self._corpus is None:
            from .inputs import load_corpus

            self._corpus = load_corpus(self.config.data)
        return self._corpus

    def inputs_problem(self, fixtures: set[str]) -> str | None:
        """Read the corpus and the labels file before any test, when the run's tests ask for them
        (``fixtures``): a missing folder or a broken file is then one usage error (this message),
        not a failure of every test after the store started. Their checks against each other
        (staleness) stay with the tests."""
        from .inputs import named, read_labels

        try:
            if not fixtures.isdisjoint({"retrieval_corpus", "labeled_queries"}):
                self.corpus()
        except RetrievalEvalError as exc:
            return named("corpus", exc)
        try:
            if "labeled_queries" in fixtures and self._labeled is None:
                self._read = read_labels(self.config.data)
                if self.config.data.subset is not None:  # a missing or broken subset file: said once, first
                    from ..analysis.subset import read_subset

                    read_subset(self.config.data.subset)
        except RetrievalEvalError as exc:
            return str(exc)
        return None

    def labeled(self, corpus: Any):
        """The configured labeled queries, checked against ``corpus``, read once per process."""
        if self._labeled is None:
            from ..data.segments import derive
            from .inputs import load_labeled

            labeled = load_labeled(self.config.data, corpus, self.config.hybrid.ingest, self.progress,
                                   self._read)
            self._read = None
            if self.config.data.subset is not None:  # a pull request's sharp subset (analysis/subset.py)
                from ..analysis.subset import read_subset, restrict

                path = self.config.data.subset
                labeled = restrict(labeled, read_subset(path), path)
            self._whole = derive(labeled, corpus.docs)  # body-only, versioned, multi-gold, length:*
            self._labeled = self._whole
            if self.config.run.slice is not None:  # one CI job's slice; report merge puts them together
                self._labeled = self._whole.slice(*self.config.run.slice)
        return self._labeled

    def freshness(self, corpus: Any):
        """The corpus's versioned documents on the configured day (default: today), once."""
        if corpus.fingerprint not in self._freshness:
            import datetime as dt

            from ..data.freshness import Freshness

            as_of = dt.date.fromisoformat(self.config.data.as_of) if self.config.data.as_of else dt.date.today()
            self._freshness[corpus.fingerprint] = Freshness.of(corpus.docs, as_of)
        return self._freshness[corpus.fingerprint]

    # --- evaluations -------------------------------------------------------------------------
    def evaluate(self, engine: Any, labeled: Any, *, name: str | None = None, corpus: Any = None,
                 record: bool = True):
        """Evaluate once per session per (engine name, labeled set); later calls reuse it
        (``record=False``: a share, kept apart from the evaluations)."""
        from dataclasses import replace

        from ..analysis.result import EvaluationResult
        from ..report.html import snippets
        from ..evaluation.evaluate import evaluate_engine

        key = (name or engine.name, labeled.fingerprint)
        if key not in self._results:
            run = self.config.run
            context = {"corpus": corpus.name, "corpus_fingerprint": corpus.fingerprint} if corpus is not None else {}

            def once(exact: bool = False):
                return evaluate_engine(engine, labeled, depth=run.depth, name=name, context=context,
                                       timeout=run.timeout, known_ids=corpus, concurrency=run.concurrency,
                                       exact=exact)

            made = once(run.exact_check)  # the exact search once: it does not vary between trials
            trials = [once() for _ in range(run.trials - 1)]
            extra: dict[str, Any] = {"trial_results": tuple(t.results for t in trials)}
            if trials:  # what the trials after the first cost: the run's HTTP total counts them too
                from .._usage import summed

                extra["trial_usage"] = {m: tuple(v) for m, v in summed(
                    *(t.prepare_usage for t in trials), *(r.usage for t in trials for r in t.results)).items()}
            if corpus is not None:
                from ..evaluation.known import gather

                extra["freshness"] = self.freshness(corpus)
                index = getattr(engine, "index", None)  # the plugin's store it reads: chunks and their lint
                extra["evidence"] = gather(labeled.queries, corpus, getattr(index, "chunks", None),
                                           getattr(index, "lint", None))
            first = EvaluationResult.of(replace(made, **extra))  # what a test asserts on
            if corpus is not None:  # what the drill-down page shows of the documents, taken now
                self._snippets.update(snippets([first], corpus))
            if not record:
                return first
            self._results[key] = first
        return self._results[key]

    def evaluate_share(self, engine: Any, labeled: Any, k: int, n: int, *, name: str, corpus: Any = None) -> None:
        """Share ``k`` of ``n`` of the labeled set (``--retrieval-shard``), recorded for the
        controller to merge with the other shares."""
        key = (name, labeled.fingerprint, k)
        if key in self._shares:
            return
        share = labeled.shard(k, n)
        result = self.evaluate(engine, share, name=name, corpus=corpus, record=False)
        position = {q.query_id: i for i, q in enumerate(labeled.queries)}
        self._shares[key] = {**result.to_dict(timing=True),
                             "share": {"of": labeled.fingerprint, "k": k, "n": n,
                                       "positions": [position[q.query_id] for q in share.queries]}}

    # --- end of run --------------------------------------------------------------------------
    def candidate_docs(self):
        """The documents a change would add (``--retrieval-candidates``), read once."""
        if getattr(self, "_candidates", None) is None:
            from ..data.corpus import open_corpus

            self._candidates = open_corpus(self.config.judging.candidates).load()
        return self._candidates

    @property
    def whole(self):
        """The labeled set before a CI job's slice (``labeled``), None until it is read."""
        return getattr(self, "_whole", None)

    def ingested(self, key: Any):
        """The index ingested under ``key`` (an ingestion config, or "pipeline"), None if none was."""
        return self._indexes.get(key)

    def close(self) -> None:
        """Once the outcome is made: the hybrid stack's connections closed (the embedding cache's,
        a served embedder's), not left for the process's exit or the garbage collector."""
        if getattr(self, "_stack", None) is not None:
            self._stack.close()

    def shipped(self) -> Shipped:
        """What this process recorded, as a results document (results.json's form: its
        evaluations and shares, lint and snippets), and what it said beside it for the run."""
        from .._usage import OUTSIDE, since
        from ..evaluation.results import RunResults
        from ..archive.results_json import run_document
        from .inputs import shown
        from .roles import Shipped

        ingestion = self.config.hybrid.ingest_pipeline
        read = self._indexes.get(self.config.hybrid.ingest) or self._indexes.get("pipeline")
        lint = [i.lint for i in self._indexes.values() if i.lint is not None]
        document = run_document(RunResults(list(self._results.values()), lint=lint, snippets=dict(self._snippets)),
                                timing=True)
        document["evaluations"].extend(self._shares.values())  # each with its "share"
        return Shipped(document, list(self.store_events),
                       shown(ingestion) if ingestion is not None and "pipeline" not in self._indexes else None,
                       [c.doc_id for c in read.chunks] if read is not None else [],
                       since(OUTSIDE.to_dict(), self._outside_before),
                       self._stack.canary_warnings() if getattr(self, "_stack", None) is not None else [])

    def finish(self, gathered: Gathered) -> Outcome:
        """The reporting process's end of the run: every process's results document put together
        by the one ``combine`` (as CI jobs' slices are), enriched (``enrich.enrich``: coverage, the
        judge and its judgments, candidates, fingerprints), judged (``conclude``) and written."""
        from .._usage import OUTSIDE, since, summed
        from ..archive.combine import combine
        from ..archive.saved import load_baseline
        from ..gate.verdict import conclude, for_run
        from ..report.outputs import step_summary_path, write_outputs
        from ..report.terminal import Outcome
        from .inputs import shown

        cfg = self.config
        before = since(OUTSIDE.to_dict(), self._outside_before)  # what this process shipped, or would have
        combined = combine(gathered.documents, names=gathered.names)
        evaluations = combined.run.evaluations
        enriched = enrich.enrich(combined.run, self, gathered.chunk_docs)
        run, judging = enriched.run, enriched.failures
        history = None
        if cfg.gate.history is not None:
            from ..archive.history import History

            history = History(cfg.gate.history, cfg.gate.history_keep)
        baseline, problems, against = None, [], shown(cfg.gate.baseline) or None
        from .options import replaced_rules

        notes = [*replaced_rules(self.pytest_config), *combined.notes]  # first: a loosened gate is said
        if cfg.gate.compare is not None and run.evaluations:  # the record at the ref's merge-base
            from ..archive.history import compare_ref

            try:
                record, said = compare_ref(history, cfg.gate.compare, Path(self.pytest_config.rootpath), run=run,
                                           force=cfg.gate.settings.baseline_force)
                baseline = (record.run(against={e.corpus_fingerprint for e in run.evaluations})  # as a baseline file
                            if record is not None else None)
            except RetrievalEvalError as exc:
                record, said = None, f"--retrieval-compare {cfg.gate.compare}: {exc}"
            if record is None:
                problems.append(said)
            else:
                against = shown(record.path)
                notes.append(said)
        settings = for_run(run, cfg.gate.settings, configured=cfg.report.table_measures, baseline=against)
        failures = [*gathered.lost, *combined.missing, *self.engine_failures({e.engine for e in evaluations}),
                    *judging]
        if cfg.gate.compare is None:
            baseline, problems = load_baseline(cfg.gate.baseline) if run.evaluations else (None, [])
        # and the judge's, made here since shipping
        outside = summed(gathered.usage, since(since(OUTSIDE.to_dict(), self._outside_before), before))
        from ..analysis.cost import run_usage

        evaluated = {e.engine for e in evaluations}
        verdict = conclude(run, settings, baseline, failures=failures, problems=problems, notes=notes,
                           run_warnings=gathered.warnings(bool(evaluations)),
                           run_usage=run_usage(evaluations, outside, settings.prices),
                           unread=self.unread({r.engine for r in (*settings.thresholds, *settings.max_drops) if r.engine}
                                                   - evaluated))
        self.outcome = Outcome(verdict, gathered.workers_said)
        if run.evaluations:
            trend = results_json = None
            if history is not None:  # this run, remembered by commit; the page charts the history
                from ..archive.history import commit_info

                from ..archive.saved import results_json as results_text

                results_json = results_text(verdict)  # the record's and the report folder's, made once
                path = history.append(results_json, commit_info(Path(self.pytest_config.rootpath)))
                self.progress(f"history: {shown(path)} ({history.count()} record(s) in {shown(history.folder)})")
                if cfg.report.html is not None:
                    from ..analysis.trend import trend_points
                    from ..report.trend import trend_svg

                    trend = trend_svg(trend_points(history.records(), verdict.miss_measure, skipped=history.warnings),
                                      verdict.miss_measure)
                self.outcome.session_warnings += history.warnings  # each file of the folder that is not a record
            timing = {"finished": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), "store": gathered.store,
                      "engines": {f"{r.engine} on {r.labeled.name}": {"queries": r.n, "seconds": round(r.seconds, 6)}
                                  for r in evaluations}, **({"usage_outside_engines": outside} if outside else {})}
            write_outputs(verdict, report_dir=cfg.report.report_dir, html=cfg.report.html,
                          save_baseline=cfg.report.save_baseline, baseline=baseline, timing=timing,
                          step_summary=step_summary_path(), trend=trend, results_json=results_json)
        return self.outcome
