"""The plugin's options, and the frozen configuration built from them once per session."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

import pytest

from .errors import RetrievalEvalError
from .evaluation import DEFAULT_DEPTH
from .engines.hybrid import HybridConfig
from .gate import Threshold, parse_thresholds
from .ingest import IngestConfig
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
        hybrid = HybridConfig(keyword_top_k=top_k, vector_top_k=top_k, fusion_top_k=top_k,
                              rerank=_setting(config, opt.retrieval_rerank, None, "retrieval_rerank", "off"))
    except RetrievalEvalError as exc:
        raise pytest.UsageError(str(exc)) from None
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
        generator_model=_setting(config, opt.retrieval_generator_model, "RETRIEVAL_EVAL_GENERATOR_MODEL",
                                 "retrieval_generator_model", "openai/gpt-4o-mini"),
    )
