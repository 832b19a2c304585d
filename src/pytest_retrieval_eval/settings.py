"""The plugin's options, and the frozen configuration built from them once per session."""

from __future__ import annotations

import dataclasses
import os
from dataclasses import dataclass
from pathlib import Path

import pytest

from .errors import RetrievalEvalError
from .evaluation import DEFAULT_DEPTH
from .engines.hybrid import HybridConfig
from .gate import MaxDrop, Threshold, parse_max_drops, parse_thresholds
from .ingest import IngestConfig
from .store.base import check_identifier
from .measures import DEFAULT_TABLE_MEASURES, Measure, parse_measures


@dataclass(frozen=True)
class RetrievalConfig:
    corpus: Path | None
    questions: Path | None
    engines: tuple[str, ...]  # selected engine names; empty means every registered engine
    depth: int
    thresholds: tuple[Threshold, ...]
    report: bool
    table_measures: tuple[Measure, ...]
    store: str = "embedded"
    dsn: str | None = None
    embedder: str = "minilm"
    cache_dir: Path | None = None  # None: pytest's cache dir, else ~/.cache/pytest-retrieval-eval
    ingest: IngestConfig = IngestConfig()
    hybrid: HybridConfig = HybridConfig()
    questions_explicit: bool = False  # given on the command line (wins over a BEIR folder's qrels)
    split: str = "test"  # BEIR qrels split
    stale: str = "error"  # error | warn
    regenerate: bool = False
    generator_model: str = "openai/gpt-4o-mini"
    max_doc_mb: float = 10.0
    trials: int = 1
    variants: tuple = ()  # (name, HybridConfig, IngestConfig)
    timeout: float | None = None  # seconds per engine call
    schema_prefix: str = "retrieval_eval"
    report_dir: Path | None = None
    html: Path | None = None
    save_baseline: Path | None = None
    baseline: Path | None = None
    baseline_force: bool = False
    max_drops: tuple[MaxDrop, ...] = ()
    noise_aware: bool = False
    alpha: float = 0.05


def addoptions(parser: pytest.Parser) -> None:
    group = parser.getgroup("retrieval", "retrieval evaluation (pytest-retrieval-eval)")
    group.addoption("--retrieval-report", action="store_true", default=None,
                    help="print the retrieval summary table at the end of the run (ini: retrieval_report)")
    group.addoption("--retrieval-threshold", action="append", default=[], metavar="[ENGINE:]MEASURE>=VALUE",
                    help="fail the run when a measure is below VALUE, e.g. 'hit@5>=0.8', 'keyword:mrr>=0.5', "
                         "'errors<=0'; repeatable (ini: retrieval_thresholds, one per line)")
    group.addoption("--retrieval-corpus", default=None, metavar="PATH",
                    help="corpus folder: JSON documents, or a BEIR folder (ini: retrieval_corpus)")
    group.addoption("--retrieval-questions", default=None, metavar="PATH",
                    help="labeled questions cache, questions.cache.json (ini: retrieval_questions)")
    group.addoption("--retrieval-engine", action="append", default=[], metavar="NAME",
                    help="evaluate only this engine; repeatable (ini: retrieval_engines)")
    group.addoption("--retrieval-depth", type=int, default=None, metavar="K",
                    help=f"how many documents to ask each engine for (default {DEFAULT_DEPTH}; ini: retrieval_depth)")
    group.addoption("--retrieval-measures", default=None, metavar="LIST",
                    help="comma-separated table columns, default hit@1,hit@3,hit@5,hit@10,hit@20,mrr "
                         "(ini: retrieval_measures)")
    group.addoption("--retrieval-store", default=None, choices=("embedded", "dsn", "testcontainers"),
                    help="where pgvector runs: embedded (default; a throwaway local server), dsn (an existing "
                         "server) or testcontainers (env RETRIEVAL_EVAL_STORE; ini retrieval_store)")
    group.addoption("--retrieval-dsn", default=None, metavar="DSN",
                    help="connection string for --retrieval-store dsn; prefer the RETRIEVAL_EVAL_DSN environment "
                         "variable for passwords (ini: retrieval_dsn)")
    group.addoption("--retrieval-embedder", default=None, metavar="SPEC",
                    help="minilm (default, offline), sentence-transformers:PATH, openai:MODEL or hashing[:DIM] "
                         "(env RETRIEVAL_EVAL_EMBEDDER; ini retrieval_embedder)")
    group.addoption("--retrieval-cache-dir", default=None, metavar="DIR",
                    help="where embeddings are cached (default: pytest's cache dir; ini: retrieval_cache_dir)")
    group.addoption("--retrieval-split-length", type=int, default=None, metavar="WORDS",
                    help="chunk length in words (default 400; ini: retrieval_split_length)")
    group.addoption("--retrieval-split-overlap", type=int, default=None, metavar="WORDS",
                    help="chunk overlap in words (default 80; ini: retrieval_split_overlap)")
    group.addoption("--retrieval-top-k", type=int, default=None, metavar="K",
                    help="hybrid engine: top k of each retriever and of the fusion (default 50; ini: retrieval_top_k)")
    group.addoption("--retrieval-rerank", default=None, metavar="SPEC",
                    help="hybrid engine reranker: off (default), local:PATH (a cross-encoder folder) or http:MODEL "
                         "(a Cohere-style /rerank endpoint) (ini: retrieval_rerank)")
    group.addoption("--retrieval-split", default=None, metavar="NAME",
                    help="BEIR qrels split to evaluate, qrels/NAME.tsv (default test; ini: retrieval_split)")
    group.addoption("--retrieval-stale", default=None, choices=("error", "warn"),
                    help="when the questions cache no longer matches the corpus: error (default) or warn and "
                         "leave out questions about deleted documents (ini: retrieval_stale)")
    group.addoption("--retrieval-regenerate", action="store_true", default=False,
                    help="before evaluating, generate questions for chunks that lack a fresh one (calls the LLM; "
                         "needs RETRIEVAL_EVAL_API_KEY or OPENROUTER_API_KEY)")
    group.addoption("--retrieval-generator-model", default=None, metavar="MODEL",
                    help="chat model for --retrieval-regenerate (default openai/gpt-4o-mini; env "
                         "RETRIEVAL_EVAL_GENERATOR_MODEL; ini retrieval_generator_model)")
    group.addoption("--retrieval-report-dir", default=None, metavar="DIR",
                    help="write results.md, results.json, per_query.jsonl, TREC runs and a Hit@k plot to DIR "
                         "(ini: retrieval_report_dir)")
    group.addoption("--retrieval-html", default=None, metavar="PATH",
                    help="write a self-contained drill-down page: every query, what came back, where the gold "
                         "was (ini: retrieval_html)")
    group.addoption("--retrieval-save-baseline", default=None, metavar="PATH",
                    help="save this run's results (results.json format) as a baseline")
    group.addoption("--retrieval-baseline", default=None, metavar="PATH",
                    help="compare with a saved baseline: deltas, per-query movers, paired tests (ini: retrieval_baseline)")
    group.addoption("--retrieval-baseline-force", action="store_true", default=False,
                    help="compare with a baseline even when its corpus, labeled set or metric fingerprints differ")
    group.addoption("--retrieval-max-drop", action="append", default=[], metavar="[ENGINE:]MEASURE=DELTA",
                    help="fail when a measure drops more than DELTA below the baseline; repeatable "
                         "(ini: retrieval_max_drops, one per line)")
    group.addoption("--retrieval-noise-aware", action="store_true", default=None,
                    help="with --retrieval-max-drop, fail only when the drop is also significant "
                         "(paired randomization test, p < --retrieval-alpha) (ini: retrieval_noise_aware)")
    group.addoption("--retrieval-alpha", type=float, default=None, metavar="P",
                    help="significance level for engine comparisons and noise-aware gates (default 0.05; ini: retrieval_alpha)")
    group.addoption("--retrieval-hybrid", action="append", default=[], metavar="KEY=VALUE",
                    help="hybrid engine setting, e.g. use_vector=false, fusion_top_k=20; repeatable (ini: retrieval_hybrid)")
    group.addoption("--retrieval-max-doc-mb", type=float, default=None, metavar="MB",
                    help="refuse corpus documents larger than this (default 10; ini: retrieval_max_doc_mb)")
    group.addoption("--retrieval-timeout", type=float, default=None, metavar="SECONDS",
                    help="record an engine call that takes longer as an error (a miss) and go on "
                         "(default: no limit; ini: retrieval_timeout)")
    group.addoption("--retrieval-schema", default=None, metavar="NAME",
                    help="schema name prefix for the dsn and testcontainers stores, a plain identifier "
                         "(default retrieval_eval; ini: retrieval_schema)")
    group.addoption("--retrieval-trials", type=int, default=None, metavar="N",
                    help="evaluate each engine N times: spread across trials and pass@k / pass^k of each "
                         "threshold (ini: retrieval_trials)")
    group.addoption("--retrieval-variant", action="append", default=[], metavar="'NAME: KEY=VALUE ...'",
                    help="a hybrid engine variant as its own engine, e.g. 'hybrid-kw: use_vector=false' or "
                         "'hybrid-200: split_length=200 split_overlap=40'; repeatable (ini: retrieval_variants)")
    group.addoption("--retrieval-near-duplicates", type=float, default=None, metavar="J",
                    help="lint: flag chunks whose estimated Jaccard similarity is at least J (MinHash; off by "
                         "default; ini: retrieval_near_duplicates)")
    parser.addini("retrieval_trials", "evaluations per engine", default="1")
    parser.addini("retrieval_variants", "hybrid engine variants, one per line: NAME: KEY=VALUE ...", type="linelist", default=[])
    parser.addini("retrieval_near_duplicates", "lint: near-duplicate similarity threshold", default="")
    parser.addini("retrieval_max_doc_mb", "largest corpus document, in MB", default="10")
    parser.addini("retrieval_timeout", "seconds per engine call before it counts as an error", default="")
    parser.addini("retrieval_schema", "schema name prefix for the dsn store", default="retrieval_eval")
    parser.addini("retrieval_report_dir", "report folder (relative to the ini file)", default="")
    parser.addini("retrieval_html", "drill-down page path (relative to the ini file)", default="")
    parser.addini("retrieval_baseline", "baseline results file (relative to the ini file)", default="")
    parser.addini("retrieval_max_drops", "baseline drop rules, one per line: [ENGINE:]MEASURE=DELTA", type="linelist", default=[])
    parser.addini("retrieval_noise_aware", "fail max-drop rules only on significant drops", type="bool", default=False)
    parser.addini("retrieval_alpha", "significance level", default="0.05")
    parser.addini("retrieval_hybrid", "hybrid engine settings, KEY=VALUE per line", type="linelist", default=[])
    parser.addini("retrieval_generator_model", "chat model for question generation", default="")
    parser.addini("retrieval_split", "BEIR qrels split", default="test")
    parser.addini("retrieval_stale", "error | warn", default="error")
    parser.addini("retrieval_store", "embedded | dsn | testcontainers", default="")
    parser.addini("retrieval_dsn", "connection string for the dsn store", default="")
    parser.addini("retrieval_embedder", "minilm | sentence-transformers:PATH | openai:MODEL | hashing[:DIM]", default="")
    parser.addini("retrieval_cache_dir", "embedding cache folder (relative to the ini file)", default="")
    parser.addini("retrieval_split_length", "chunk length in words", default="400")
    parser.addini("retrieval_split_overlap", "chunk overlap in words", default="80")
    parser.addini("retrieval_top_k", "hybrid engine: top k per retriever and fusion", default="50")
    parser.addini("retrieval_rerank", "hybrid engine reranker: off | local:PATH | http:MODEL", default="off")
    parser.addini("retrieval_report", "print the retrieval summary table", type="bool", default=False)
    parser.addini("retrieval_thresholds", "threshold rules, one per line: [ENGINE:]MEASURE>=VALUE", type="linelist", default=[])
    parser.addini("retrieval_corpus", "corpus folder (relative to the ini file)", default="")
    parser.addini("retrieval_questions", "questions cache (relative to the ini file)", default="")
    parser.addini("retrieval_engines", "engines to evaluate (default: all registered)", type="args", default=[])
    parser.addini("retrieval_depth", "documents to ask each engine for", default=str(DEFAULT_DEPTH))
    parser.addini("retrieval_measures", "comma-separated table columns", default="")


def _path(config: pytest.Config, option: str | None, ini: str) -> Path | None:
    """A CLI path is relative to the working directory, an ini path to the ini file's folder."""
    if option:
        return Path(option).resolve()
    value = config.getini(ini)
    if not value:
        return None
    base = config.inipath.parent if config.inipath else config.rootpath
    return (base / value).resolve()


def _setting(config: pytest.Config, option: str | None, env: str | None, ini: str, default: str) -> str:
    """Command line, then environment variable, then ini file, then default (as pytest-django)."""
    if option not in (None, ""):
        return str(option)
    if env and os.environ.get(env):
        return os.environ[env]
    return str(config.getini(ini) or default)


def _int(text: str, what: str, minimum: int) -> int:
    try:
        value = int(text)
        if value < minimum:
            raise ValueError
    except ValueError:
        raise pytest.UsageError(f"{what} must be a whole number >= {minimum}, got {text!r}") from None
    return value


def build(config: pytest.Config) -> RetrievalConfig:
    """Read every option once; a bad value is a usage error that names the option."""
    opt = config.option
    try:
        thresholds = parse_thresholds(
            [(t, "--retrieval-threshold") for t in opt.retrieval_threshold]
            + [(t, "ini retrieval_thresholds") for t in config.getini("retrieval_thresholds")]
        )
        measures_text = opt.retrieval_measures or config.getini("retrieval_measures")
        table = tuple(parse_measures(m for m in measures_text.split(",") if m.strip())) if measures_text else DEFAULT_TABLE_MEASURES
    except RetrievalEvalError as exc:
        raise pytest.UsageError(str(exc)) from None
    depth = _int(_setting(config, opt.retrieval_depth, None, "retrieval_depth", "100"), "--retrieval-depth / retrieval_depth", 1)
    store = _setting(config, opt.retrieval_store, "RETRIEVAL_EVAL_STORE", "retrieval_store", "embedded")
    if store not in ("embedded", "dsn", "testcontainers"):
        raise pytest.UsageError(f"retrieval store {store!r} unknown; choose embedded, dsn or testcontainers")
    top_k = _int(_setting(config, opt.retrieval_top_k, None, "retrieval_top_k", "50"), "--retrieval-top-k / retrieval_top_k", 1)
    cache_dir = _path(config, opt.retrieval_cache_dir, "retrieval_cache_dir")
    try:
        ingest = IngestConfig(
            split_length=_int(_setting(config, opt.retrieval_split_length, None, "retrieval_split_length", "400"), "--retrieval-split-length", 1),
            split_overlap=_int(_setting(config, opt.retrieval_split_overlap, None, "retrieval_split_overlap", "80"), "--retrieval-split-overlap", 0),
        )
        hybrid = hybrid_config(
            [*config.getini("retrieval_hybrid"), *opt.retrieval_hybrid],
            keyword_top_k=top_k, vector_top_k=top_k, fusion_top_k=top_k,
            rerank=_setting(config, opt.retrieval_rerank, None, "retrieval_rerank", "off"),
        )
        max_drops = parse_max_drops([(t, "--retrieval-max-drop") for t in opt.retrieval_max_drop]
                                    + [(t, "ini retrieval_max_drops") for t in config.getini("retrieval_max_drops")])
    except RetrievalEvalError as exc:
        raise pytest.UsageError(str(exc)) from None
    alpha_text = _setting(config, opt.retrieval_alpha, None, "retrieval_alpha", "0.05")
    try:
        alpha = float(alpha_text)
        if not 0 < alpha < 1:
            raise ValueError
    except ValueError:
        raise pytest.UsageError(f"--retrieval-alpha / retrieval_alpha must be between 0 and 1, got {alpha_text!r}") from None
    baseline = _path(config, opt.retrieval_baseline, "retrieval_baseline")
    if max_drops and baseline is None:
        raise pytest.UsageError("--retrieval-max-drop / retrieval_max_drops compare with a baseline: "
                                "give --retrieval-baseline=PATH (save one with --retrieval-save-baseline=PATH)")
    def positive(text: str, what: str) -> float:
        try:
            value = float(text)
            if value <= 0:
                raise ValueError
        except ValueError:
            raise pytest.UsageError(f"{what} must be a positive number, got {text!r}") from None
        return value

    trials = _int(_setting(config, opt.retrieval_trials, None, "retrieval_trials", "1"), "--retrieval-trials / retrieval_trials", 1)
    near_text = _setting(config, opt.retrieval_near_duplicates, None, "retrieval_near_duplicates", "")
    near = positive(near_text, "--retrieval-near-duplicates / retrieval_near_duplicates") if near_text else None
    if near is not None and near > 1:
        raise pytest.UsageError(f"--retrieval-near-duplicates must be a similarity in (0, 1], got {near_text!r}")
    if near is not None:
        ingest = dataclasses.replace(ingest, near_duplicates=near)
    try:
        variants = tuple(parse_variant(v, hybrid, ingest) for v in [*config.getini("retrieval_variants"), *opt.retrieval_variant]
                         if v.strip() and not v.strip().startswith("#"))
    except RetrievalEvalError as exc:
        raise pytest.UsageError(str(exc)) from None
    max_doc_mb = positive(_setting(config, opt.retrieval_max_doc_mb, None, "retrieval_max_doc_mb", "10"),
                          "--retrieval-max-doc-mb / retrieval_max_doc_mb")
    timeout_text = _setting(config, opt.retrieval_timeout, None, "retrieval_timeout", "")
    timeout = positive(timeout_text, "--retrieval-timeout / retrieval_timeout") if timeout_text else None
    schema_prefix = _setting(config, opt.retrieval_schema, None, "retrieval_schema", "retrieval_eval")
    try:
        check_identifier(schema_prefix, "--retrieval-schema / retrieval_schema")
    except RetrievalEvalError as exc:
        raise pytest.UsageError(str(exc)) from None
    noise_aware = opt.retrieval_noise_aware if opt.retrieval_noise_aware is not None else config.getini("retrieval_noise_aware")
    report = opt.retrieval_report if opt.retrieval_report is not None else config.getini("retrieval_report")
    stale = _setting(config, opt.retrieval_stale, None, "retrieval_stale", "error")
    if stale not in ("error", "warn"):
        raise pytest.UsageError(f"retrieval_stale must be error or warn, got {stale!r}")
    return RetrievalConfig(
        corpus=_path(config, opt.retrieval_corpus, "retrieval_corpus"),
        questions=_path(config, opt.retrieval_questions, "retrieval_questions"),
        engines=tuple(opt.retrieval_engine or config.getini("retrieval_engines")),
        depth=depth,
        thresholds=tuple(thresholds),
        report=bool(report),
        table_measures=table,
        store=store,
        dsn=_setting(config, opt.retrieval_dsn, "RETRIEVAL_EVAL_DSN", "retrieval_dsn", "") or None,
        embedder=_setting(config, opt.retrieval_embedder, "RETRIEVAL_EVAL_EMBEDDER", "retrieval_embedder", "minilm"),
        cache_dir=cache_dir,
        ingest=ingest,
        hybrid=hybrid,
        questions_explicit=bool(opt.retrieval_questions),
        split=_setting(config, opt.retrieval_split, None, "retrieval_split", "test"),
        stale=stale,
        regenerate=bool(opt.retrieval_regenerate),
        report_dir=_path(config, opt.retrieval_report_dir, "retrieval_report_dir"),
        html=_path(config, opt.retrieval_html, "retrieval_html"),
        save_baseline=Path(opt.retrieval_save_baseline).resolve() if opt.retrieval_save_baseline else None,
        baseline=baseline,
        baseline_force=bool(opt.retrieval_baseline_force),
        max_drops=tuple(max_drops),
        noise_aware=bool(noise_aware),
        alpha=alpha,
        max_doc_mb=max_doc_mb,
        trials=trials,
        variants=variants,
        timeout=timeout,
        schema_prefix=schema_prefix,
        generator_model=_setting(config, opt.retrieval_generator_model, "RETRIEVAL_EVAL_GENERATOR_MODEL",
                                 "retrieval_generator_model", "openai/gpt-4o-mini"),
    )


def parse_variant(text: str, hybrid: HybridConfig, ingest: IngestConfig) -> tuple[str, HybridConfig, IngestConfig]:
    """``NAME: KEY=VALUE ...``: the session's hybrid and ingestion settings with some changed."""
    name, sep, rest = text.partition(":")
    name = name.strip()
    if not sep or not name or any(c.isspace() for c in name):
        raise RetrievalEvalError(f"engine variant {text!r} not understood; expected 'NAME: KEY=VALUE ...'")
    items = rest.split()
    split_keys = {"split_length", "split_overlap"}
    ingest_items = {k: v for k, _, v in (i.partition("=") for i in items) if k in split_keys}
    try:
        ingest_variant = dataclasses.replace(ingest, **{k: int(v) for k, v in ingest_items.items()})
    except ValueError:
        raise RetrievalEvalError(f"engine variant {name}: split settings must be whole numbers") from None
    hybrid_items = [i for i in items if i.partition("=")[0] not in split_keys]
    return name, hybrid_config(hybrid_items, **dataclasses.asdict(hybrid)), ingest_variant


def hybrid_config(items, **defaults) -> HybridConfig:
    """``KEY=VALUE`` overrides of the hybrid engine's settings (later items win)."""
    fields = {f.name: f for f in dataclasses.fields(HybridConfig)}
    values = dict(defaults)
    for item in items:
        key, sep, raw = item.partition("=")
        key, raw = key.strip(), raw.strip()
        if not sep or key not in fields:
            raise RetrievalEvalError(f"hybrid setting {item!r} not understood; expected KEY=VALUE with KEY one of "
                                     f"{', '.join(fields)}")
        kind = type(getattr(HybridConfig(), key))
        if kind is bool:
            if raw.lower() not in ("true", "false", "on", "off", "1", "0", "yes", "no"):
                raise RetrievalEvalError(f"hybrid setting {key} must be true or false, got {raw!r}")
            values[key] = raw.lower() in ("true", "on", "1", "yes")
        elif kind is int:
            try:
                values[key] = int(raw)
            except ValueError:
                raise RetrievalEvalError(f"hybrid setting {key} must be a whole number, got {raw!r}") from None
        else:
            values[key] = raw
    return HybridConfig(**values)
