"""The plugin's options, and the frozen configuration built from them once per session."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import pytest

from .errors import RetrievalEvalError
from .evaluation import DEFAULT_DEPTH
from .gate import Threshold, parse_thresholds
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
    depth_text = opt.retrieval_depth if opt.retrieval_depth is not None else config.getini("retrieval_depth")
    try:
        depth = int(depth_text)
        if depth < 1:
            raise ValueError
    except ValueError:
        raise pytest.UsageError(f"--retrieval-depth / retrieval_depth must be a whole number >= 1, got {depth_text!r}") from None
    report = opt.retrieval_report if opt.retrieval_report is not None else config.getini("retrieval_report")
    return RetrievalConfig(
        corpus=_path(config, opt.retrieval_corpus, "retrieval_corpus"),
        questions=_path(config, opt.retrieval_questions, "retrieval_questions"),
        engines=tuple(opt.retrieval_engine or config.getini("retrieval_engines")),
        depth=depth,
        thresholds=tuple(thresholds),
        report=bool(report),
        table_measures=table,
    )
