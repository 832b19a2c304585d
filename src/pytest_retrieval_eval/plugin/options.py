"""Every option, declared once: flag, ini key, environment variable, parser, default, help.

From this table come pytest's command-line flags and ini keys (``add_to_pytest``), the values
the frozen configuration is built from (``read``), the shared options of ``python -m
pytest_retrieval_eval`` (``add_to_argparse``, without the ``retrieval-`` prefix, as
pytest-benchmark shares its options with its command) and the README's options table
(``markdown_table``; a test keeps the two equal).

This module is imported when pytest loads the plugin, so it takes the defaults from ``_defaults``
(plain values), not from the modules that use them: no numpy, no Haystack, no dataclasses of theirs.
"""

from __future__ import annotations

import argparse
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

from .._defaults import (BACKENDS, CHAT_MODEL, DEPTH, EMBED_CONCURRENCY, GAIN_WEIGHTS, JUDGE_MAX_TOKENS, KEYWORD_TOP_K,
                         RERANK, SPLIT_LENGTH, SPLIT_OVERLAP, TABLE_MEASURES)

PREFIX = "retrieval"
ENV_PREFIX = "RETRIEVAL_EVAL_"


# --- parsers: text -> value, or ValueError saying what was expected ----------------------------

def whole(minimum: int) -> Callable[[str], int]:
    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            value = minimum - 1
        if value < minimum:
            raise ValueError(f"must be a whole number >= {minimum}, got {text!r}")
        return value
    return parse


def _number(text: str) -> tuple[float, str]:
    """The number and how to show it back (as read: ``-3`` is shown ``'-3.0'``)."""
    try:
        value = float(text)
    except ValueError:
        return float("nan"), repr(text)
    return value, repr(str(value))


def positive(text: str) -> float:
    value, shown = _number(text)
    if not value > 0:
        raise ValueError(f"must be a positive number, got {shown}")
    return value


def fraction(*, closed_top: bool) -> Callable[[str], float]:
    def parse(text: str) -> float:
        value, shown = _number(text)
        if not (0 < value <= 1 if closed_top else 0 < value < 1):
            raise ValueError(f"must be {'a similarity in (0, 1]' if closed_top else 'between 0 and 1'}, got {shown}")
        return value
    return parse


def slice_of(text: str) -> tuple[int, int]:
    """``I/N`` -> (I, N), 1 <= I <= N."""
    index, sep, count = text.partition("/")
    try:
        i, n = int(index), int(count)
    except ValueError:
        i = n = 0
    if not sep or not 1 <= i <= n:
        raise ValueError(f"must be I/N with 1 <= I <= N (slice I of N), e.g. 2/3, got {text!r}")
    return i, n


def day(text: str) -> str:
    from ..data.freshness import parse_day

    return parse_day(text).isoformat()


def choice(*names: str) -> Callable[[str], str]:
    def parse(text: str) -> str:
        if text not in names:
            raise ValueError(f"must be one of {', '.join(names)}, got {text!r}")
        return text
    return parse


# --- the table ---------------------------------------------------------------------------------

@dataclass(frozen=True)
class Option:
    """One setting. ``kind``: ``value`` (one value), ``switch`` (on/off) or ``lines`` (repeatable
    flag, one ini line each; ``merge``: ini lines and flags both count, else flags replace)."""

    key: str
    help: str
    default: Any = None
    parse: Callable[[str], Any] | None = None
    kind: str = "value"
    metavar: str | None = None
    env: str | None = None
    ini: str | None = ""  # "" -> retrieval_<key>; None -> command line only
    flag: str = ""  # "" -> --retrieval-<key with dashes>
    #: "file", "dir" or "any" for a path (a flag's is relative to the working dir, an ini one's to the
    #: ini file); a file option naming a folder, or a folder option naming a file, is refused at start
    path: str = ""
    merge: bool = True
    ini_type: str | None = None  # pytest ini type when not implied by kind
    cli: tuple[str, ...] = ()  # subcommands of `python -m pytest_retrieval_eval` sharing it
    cli_aliases: tuple[str, ...] = ()  # other spellings there (``--model``)

    @property
    def flag_name(self) -> str:
        return self.flag or f"--{PREFIX}-{self.key.replace('_', '-')}"

    @property
    def ini_name(self) -> str | None:
        return None if self.ini is None else (self.ini or f"{PREFIX}_{self.key}")

    @property
    def dest(self) -> str:
        return self.flag_name.lstrip("-").replace("-", "_")

    @property
    def cli_flag(self) -> str:
        return "--" + self.flag_name[len(f"--{PREFIX}-"):]

    @property
    def names(self) -> str:
        """How a message names it: ``--retrieval-depth / retrieval_depth``."""
        return " / ".join(n for n in (self.flag_name, self.ini_name) if n)


_TOP_K = KEYWORD_TOP_K
OPTIONS: tuple[Option, ...] = (
    # what to evaluate
    Option("corpus", "corpus folder: JSON documents, Markdown/text/HTML files, or a BEIR folder", path="any", metavar="PATH",
           cli=("generate", "check", "judge", "report")),
    Option("questions", "labeled questions cache, questions.cache.json (not needed for a BEIR folder)", path="file",
           metavar="PATH", cli=("generate", "check")),
    Option("engine", "evaluate only this engine; repeatable (default: every registered engine)", kind="lines",
           ini="retrieval_engines", ini_type="args", merge=False, metavar="NAME"),
    Option("depth", "documents asked of each engine", DEPTH, whole(1), metavar="K"),
    Option("split", "BEIR qrels split to evaluate, qrels/NAME.tsv", "test", metavar="NAME"),
    Option("stale", "when questions no longer match the corpus: leave-out lists the stale ones and leaves them out of "
           "the numbers and the gates; warn evaluates them anyway (a question about a "
           "deleted document misses, its cause 'not in the corpus'); error blocks the run", "leave-out", choice("leave-out", "warn", "error"),
           metavar="MODE"),
    Option("regenerate", "before evaluating, generate questions for chunks that lack a fresh one (calls the LLM; "
           "needs RETRIEVAL_EVAL_API_KEY or OPENROUTER_API_KEY)", False, kind="switch", ini=None),
    Option("generator_model", "chat model for question generation", CHAT_MODEL, metavar="MODEL",
           env=f"{ENV_PREFIX}GENERATOR_MODEL", cli=("generate",), cli_aliases=("--model",)),
    Option("subset", "evaluate only the questions of a subset written by python -m pytest_retrieval_eval subset "
           "(NAME reads subsets/NAME.json; or a .json path); the report says the smallest drop it can still detect "
           "against the full set's", path="any", metavar="NAME"),
    Option("as_of", "the day freshness is judged on: documents outside their validity then, or superseded by a "
           "document already valid then, are stale (default: today; recorded in the reports)", None, day,
           metavar="YYYY-MM-DD", env=f"{ENV_PREFIX}AS_OF"),
    Option("max_doc_mb", "refuse corpus documents larger than this", 10.0, positive, metavar="MB"),
    Option("trials", "evaluate each engine N times: spread across trials and pass@k / pass^k of each threshold", 1,
           whole(1), metavar="N"),
    Option("concurrency", "queries an engine is asked at a time: threads for a sync engine, one event loop for an "
           "async one (an engine or adapter may carry its own)", 1, whole(1), metavar="N"),
    Option("shard", "under pytest-xdist, spread each engine's queries over the workers (a share each, merged "
           "by the controller; gate with thresholds: a test reading retrieval_results still evaluates them all)",
           False, kind="switch"),
    Option("slice", "evaluate slice I of N of the labeled set (one CI job of N; the same questions in every run) "
           "and record it; combine the jobs' results.json with python -m pytest_retrieval_eval report merge",
           None, slice_of, metavar="I/N", env=f"{ENV_PREFIX}SLICE"),
    Option("timeout", "record an engine call slower than this as an error (a miss) and go on (default: no limit)",
           None, positive, metavar="SECONDS"),
    Option("exact_check", "ask every question again of each engine's exact search (the built-in hybrid engine: a "
           "scan without its HNSW index; an engine of your own: its exact_search(query, k)) and report the approximate "
           "answer's recall@k against it with its interval, naming the misses the index caused", False, kind="switch"),
    # the hybrid stack
    Option("store", "where pgvector runs: embedded (a throwaway local server), dsn (an existing server) or "
           "testcontainers", "embedded", choice(*BACKENDS), metavar="NAME", env=f"{ENV_PREFIX}STORE"),
    Option("dsn", "connection string for the dsn store (prefer the environment variable for passwords)",
           metavar="DSN", env=f"{ENV_PREFIX}DSN"),
    Option("schema", "schema name prefix for the dsn and testcontainers stores, a plain identifier",
           "retrieval_eval", metavar="NAME"),
    Option("dsn_keep", "dsn store: keep ingested tables in the schema PREFIX_kept and reuse them in later "
           "sessions with the same ingestion (never dropped by the plugin)", False, kind="switch"),
    Option("embedder", "minilm (offline; on ONNX Runtime where installed, else torch; minilm:onnx or minilm:torch "
           "chooses), sentence-transformers:PATH, openai:MODEL or hashing[:DIM]", "minilm",
           metavar="SPEC", env=f"{ENV_PREFIX}EMBEDDER"),
    Option("embed_concurrency", "batches an openai:MODEL embedder sends at a time (a TEI or vLLM server behind an "
           "OpenAI-compatible API embeds a large corpus at its pace; the vectors are those of a serial run)",
           EMBED_CONCURRENCY, whole(1), metavar="N"),
    Option("embed_rate", "at most this many requests a second to an openai:MODEL embedder (default: no limit; the "
           "server's 429 and Retry-After are honoured besides)", None, positive, metavar="PER_SECOND"),
    Option("cache_dir", "where embeddings and store snapshots are cached (default: pytest's cache dir)", path="dir",
           metavar="DIR"),
    Option("model_cache", "where the built-in embedder's ONNX export is kept (made once per weights hash, shared by "
           "every project on the machine; default: the user's cache folder, ~/.cache/pytest-retrieval-eval/models)",
           path="dir", metavar="DIR", env=f"{ENV_PREFIX}MODEL_CACHE"),
    Option("store_cache_mb", "room for snapshots of ingested embedded stores (restored instead of ingesting "
           "again; least recently used go first; killed writers' temp folders count too; 0 turns them off)", 2048.0, whole(0), metavar="MB"),
    Option("split_length", "chunk length in words", SPLIT_LENGTH, whole(1), metavar="WORDS",
           cli=("generate", "judge")),
    Option("split_overlap", "chunk overlap in words", SPLIT_OVERLAP, whole(0), metavar="WORDS",
           cli=("generate", "judge")),
    Option("top_k", "hybrid engine: top k of each retriever and of the fusion", _TOP_K, whole(1), metavar="K"),
    Option("rerank", "hybrid engine reranker: off, local:PATH (a cross-encoder folder) or http:MODEL "
           "(a Cohere-style /rerank endpoint)", RERANK, metavar="SPEC"),
    Option("hybrid", "hybrid engine setting, e.g. use_vector=false, fusion_top_k=20; repeatable", kind="lines",
           metavar="KEY=VALUE"),
    Option("variant", "a hybrid engine variant as an engine of its own, e.g. 'hybrid-kw: use_vector=false' or "
           "'hybrid-200: split_length=200 split_overlap=40'; repeatable", kind="lines", ini="retrieval_variants",
           metavar="'NAME: KEY=VALUE ...'"),
    Option("sweep", "evaluate every combination of hybrid settings as an engine of its own, e.g. 'hybrid: "
           "split_length=200,300 fusion_top_k=10,50' (each chunking ingested once and kept as a snapshot; query-side "
           "settings share it); prints them sorted with intervals, corrected significance against the base engine, "
           "p95 latency and chunk count, the Pareto front marked; repeatable", kind="lines", ini="retrieval_sweeps",
           metavar="'ENGINE: KEY=V1,V2 ...'"),
    Option("sweep_by", "the measure a sweep is sorted and judged by", "ndcg@10", metavar="MEASURE"),
    Option("sweep_max", "the most configurations one sweep may make", 32, whole(1), metavar="N"),
    Option("ingest_pipeline", "your own Haystack ingestion pipeline (YAML, Pipeline.dumps): run on the corpus with "
           "its PgvectorDocumentStore pointed at the session's store; what it writes is ingested_chunks",
           path="file", metavar="PATH", env=f"{ENV_PREFIX}INGEST_PIPELINE"),
    Option("ingest_input", "the ingestion pipeline's input socket the corpus goes to (default: the first component's "
           "'documents')", metavar="COMPONENT.SOCKET"),
    Option("query_pipeline", "your own Haystack query pipeline (YAML) as an engine named NAME, on the ingestion "
           "pipeline's table; the question goes to its open text/query inputs, or those named after the path; "
           "repeatable", kind="lines", ini="retrieval_query_pipelines", metavar="NAME=PATH[:COMPONENT.SOCKET,...]"),
    Option("id_field", "the meta field of a pipeline's documents that holds the corpus doc id", "doc_id",
           metavar="FIELD"),
    Option("near_duplicates", "lint: flag chunks whose estimated Jaccard similarity is at least J (MinHash; off "
           "by default)", None, fraction(closed_top=True), metavar="J"),
    # the gate
    Option("threshold", "fail the run when a rule is breached, e.g. 'hit@5>=0.8', 'keyword:mrr>=0.5', "
           "'errors<=0', 'lint.truncated<=0'; repeatable; given here, they replace the ini's rules", kind="lines",
           ini="retrieval_thresholds", merge=False, metavar="[ENGINE:]MEASURE>=VALUE", cli=("report", "calibrate")),
    Option("baseline", "compare with a saved baseline: deltas, per-query movers, paired tests", path="file",
           metavar="PATH", cli=("report",)),
    Option("max_drop", "fail when a measure drops more than DELTA below the baseline; repeatable; given here, "
           "they replace the ini's rules", kind="lines", ini="retrieval_max_drops", merge=False,
           metavar="[ENGINE:]MEASURE=DELTA", cli=("report", "calibrate")),
    Option("noise_aware", "fail max-drop rules only when the drop is significant (paired test, p < alpha)", False,
           kind="switch", cli=("report", "calibrate")),
    Option("alpha", "significance level of the engine comparisons and the noise-aware gate", 0.05,
           fraction(closed_top=False), metavar="ALPHA", cli=("report", "calibrate")),
    Option("correction", "multiple-comparison correction of the significance marks and the noise-aware gate: holm "
           "(Holm-Bonferroni), bh (Benjamini-Hochberg) or none", "holm", choice("holm", "bh", "none"),
           metavar="METHOD", cli=("report", "calibrate")),
    Option("confidence", "judge threshold rules on the point estimate, or on the lower bound of its 95 percent interval "
           "(Wilson for hit@k and the rates, else bootstrap; lower: pass only when 95 percent sure)", "point", choice("point", "lower"), metavar="MODE",
           cli=("report", "calibrate")),
    Option("inconclusive", "what a rule whose 95 percent interval straddles its line does to the run (with "
           "--retrieval-confidence=lower, --retrieval-noise-aware): fail it, warn, or pass with a note", "fail",
           choice("fail", "warn", "pass"), metavar="MODE", cli=("report",)),
    Option("history", "keep one record per run in DIR (results.json, commit, branch, dirty flag, time, "
           "fingerprints); list and chart them with python -m pytest_retrieval_eval history", path="dir", metavar="DIR",
           env=f"{ENV_PREFIX}HISTORY", cli=("history",)),
    Option("history_keep", "records the history keeps (the oldest beyond go)", 500, whole(1), metavar="N"),
    Option("compare", "judge the run against the history record at the merge-base of HEAD and REF (a branch, tag "
           "or commit), with every baseline rule; needs --retrieval-history", metavar="REF"),
    Option("shadow", "compare two engines of this run on the same queries: per-measure deltas with paired tests, "
           "the queries and documents that moved, and one knowledge-gain score; gate with 'shadow.gain>=0'; repeatable",
           kind="lines", ini="retrieval_shadows", metavar="CANDIDATE:BASELINE"),
    Option("by", "a row per segment: the questions carrying TAG (and those that do not), per engine, with n, the "
           "interval and the engines' corrected comparisons; 'tags' for every tag (the derived body-only, versioned, "
           "multi-gold, length:* and the labels' own); repeatable", kind="lines", ini_type="args", merge=False,
           metavar="TAG", cli=("report",)),
    Option("latency", "time each engine call (a monotonic clock around the call only) and show p50, p95, p99 and max "
           "per engine, and per stage where the engine times its stages, with the concurrency and machine they were "
           "measured at; results.json then holds each call's time (so two runs' files differ); a latency rule "
           "('hybrid:latency.p95<=150ms') turns it on", False, kind="switch"),
    Option("prices", "what the endpoints' tokens cost, in dollars per million tokens: MODEL=INPUT[/OUTPUT], '*' for "
           "any other model, e.g. 'text-embedding-3-small=0.02 gpt-4o-mini=0.15/0.60'; gives each engine a cost per "
           "query (gate with 'cost.per_query<=0.001'); repeatable", kind="lines", ini="retrieval_prices",
           metavar="MODEL=PRICE", cli=("report",)),
    Option("gain_weights", "weights of the knowledge gain: the weighted mean of the shadow's measure deltas",
           GAIN_WEIGHTS, metavar="MEASURE=W,..."),
    Option("baseline_force", "compare with a baseline even when its corpus, labeled set or metric fingerprints "
           "differ", False, kind="switch", ini=None, cli=("report",)),
    # judgments of the documents the labels left unjudged
    Option("judgments", "LLM judgments of unjudged documents (judgments.jsonl): every measure is also shown and "
           "gated on the human labels plus the judged ones (NAME+judged, e.g. ndcg@10+judged)", path="file",
           metavar="PATH", env=f"{ENV_PREFIX}JUDGMENTS", cli=("report", "judge")),
    Option("allow_failed_judge", "let rules on a judge's grades (NAME+judged, NAME~ppi) gate although the judge "
           "failed judge --validate (below its kappa floor); without it such a judge fails the run instead", False,
           kind="switch", cli=("report",)),
    Option("judges", "read a panel of the file's judges by majority instead of the newest judge: their fingerprints "
           "(a prefix will do), comma-separated, or all", None, metavar="FP,FP,...", cli=("report", "judge")),
    Option("judge", "at the end of the run, grade the unjudged documents of each engine's top K with an LLM into "
           "the judgments file first (calls the endpoint of question generation; asks only what the file lacks)",
           False, kind="switch", ini=None),
    Option("judge_model", f"chat model of the judge (default: {CHAT_MODEL} at the default endpoint; at "
           "any other, the model its server says answered)", None, metavar="MODEL",
           env=f"{ENV_PREFIX}JUDGE_MODEL", cli=("judge",), cli_aliases=("--model",)),
    Option("judge_depth", "the top K of each engine pooled for judging", 10, whole(1), metavar="K", cli=("judge",),
           cli_aliases=("--depth",)),
    Option("judge_engine", "pool only this engine's rankings; repeatable (default: every engine)", kind="lines",
           ini="retrieval_judge_engines", ini_type="args", merge=False, metavar="NAME", cli=("judge",),
           cli_aliases=("--engine",)),
    Option("judge_votes", "votes per judgment (the majority is the grade; a tie goes to the lower one)", 1, whole(1),
           metavar="N", cli=("judge",), cli_aliases=("--votes",)),
    Option("judge_concurrency", "judge calls in flight at once (default: 1 at a local or private server, which "
           "answers one request at a time; 8 at a hosted endpoint)", None, whole(1), metavar="N", cli=("judge",),
           cli_aliases=("--concurrency",)),
    Option("judge_max_tokens", "the longest answer the judge may give, in tokens: a small model that reasons before "
           "its grade needs more (an answer the cap cuts is counted, and read for a grade stated before the cut)",
           JUDGE_MAX_TOKENS, whole(1), metavar="N", cli=("judge",), cli_aliases=("--max-tokens",)),
    Option("judge_rate", "judge calls per second at most (default: no limit)", None, positive, metavar="PER_SECOND",
           cli=("judge",), cli_aliases=("--rate",)),
    Option("candidates", "documents a change would add (a corpus folder or JSON file): their novelty against the "
           "corpus in the report, blended into the shadow comparisons' knowledge gain", path="any", metavar="PATH",
           cli=("judge",)),
    Option("novelty_weight", "weight of the candidates' novelty in the shadow comparisons' knowledge gain", 0.1,
           fraction(closed_top=True), metavar="W"),
    # reports
    Option("report", "print the summary table at the end of the run", False, kind="switch"),
    Option("measures", "comma-separated table columns (a comma inside parentheses belongs to the name: "
           "rbp(p=0.9,rel=1))", ",".join(TABLE_MEASURES),
           metavar="LIST", cli=("report",)),
    Option("report_dir", "write results.md, results.json, per_query.jsonl, TREC runs, qrels and a Hit@k plot to DIR",
           path="dir", metavar="DIR"),
    Option("html", "write a self-contained drill-down page: every query, what came back, where the gold was",
           path="file", metavar="PATH"),
    Option("save_baseline", "save this run's results (results.json format) as a baseline", path="file", ini=None,
           metavar="PATH"),
)
BY_KEY = {o.key: o for o in OPTIONS}


def add_to_pytest(parser: Any) -> None:
    group = parser.getgroup(PREFIX, "retrieval evaluation (pytest-retrieval-eval)")
    for o in OPTIONS:
        where = ", ".join(x for x in (f"ini {o.ini_name}" if o.ini_name else "", f"env {o.env}" if o.env else "") if x)
        default = f"default {_shown_default(o)}; " if _shown_default(o) else ""
        text = f"{o.help} ({default}{where})" if (default or where) else o.help
        if o.kind == "switch":
            group.addoption(o.flag_name, action="store_true", default=None, dest=o.dest, help=text)
        elif o.kind == "lines":
            group.addoption(o.flag_name, action="append", default=[], dest=o.dest, metavar=o.metavar, help=text)
        else:
            group.addoption(o.flag_name, default=None, dest=o.dest, metavar=o.metavar or o.key.upper(), help=text)
        if o.ini_name:
            kind = o.ini_type or {"switch": "bool", "lines": "linelist"}.get(o.kind, "string")
            parser.addini(o.ini_name, o.help, type=kind, default=[] if kind in ("linelist", "args") else
                          (False if kind == "bool" else ""))


def add_to_argparse(parser: argparse.ArgumentParser, command: str, **defaults: Any) -> None:
    """The options ``command`` shares with the plugin, without the prefix (``--split-length``);
    ``defaults`` replace the table's (None: "not given", for options that fall back to a saved run)."""
    for o in OPTIONS:
        if command not in o.cli:
            continue
        default = defaults.get(o.key, (os.environ.get(o.env) if o.env else None) or o.default)
        if o.kind == "switch":
            parser.add_argument(o.cli_flag, action="store_true", default=default, dest=o.key, help=o.help)
        elif o.kind == "lines":
            parser.add_argument(o.cli_flag, *o.cli_aliases, action="append", default=None, dest=o.key,
                                metavar=o.metavar, help=o.help)
        else:
            def typed(text: str, o: Option = o) -> Any:
                try:
                    return o.parse(text) if o.parse else text
                except ValueError as exc:
                    raise argparse.ArgumentTypeError(str(exc)) from None
            shown = f" (default {default})" if default not in (None, "") else ""
            parser.add_argument(o.cli_flag, *o.cli_aliases, default=default, type=typed, dest=o.key,
                                metavar=o.metavar, help=o.help + shown)


class OptionError(ValueError):
    """A value an option cannot take; the message names the option and the value."""


def given_on_command_line(config: Any) -> bool:
    """Did the user pass any ``--retrieval-*`` flag? (Then the plugin wakes at configure.)"""
    for o in OPTIONS:
        v = getattr(config.option, o.dest, None)
        if v not in (None, [], False):
            return True
    return False


def set_in_ini(config: Any) -> bool:
    """Does the ini file set any of the plugin's keys?"""
    return any(config.getini(o.ini_name) not in ("", [], False) for o in OPTIONS if o.ini_name)


def read(config: Any, key: str) -> Any:
    """The option's value: command line, then environment, then ini file, then default.
    ``lines`` options give ``[(text, source), ...]``; paths are resolved."""
    o = BY_KEY[key]
    cli = getattr(config.option, o.dest, None)
    if o.kind == "lines":
        ini = [(t, f"ini {o.ini_name}") for t in (config.getini(o.ini_name) if o.ini_name else [])]
        flags = [(t, o.flag_name) for t in cli or []]
        return [*ini, *flags] if o.merge or not flags else flags
    if o.kind == "switch":
        if cli is not None:
            return bool(cli)
        return bool(config.getini(o.ini_name)) if o.ini_name else bool(o.default)
    for text, source in ((cli, o.flag_name), (os.environ.get(o.env) if o.env else None, o.env),
                         (config.getini(o.ini_name) if o.ini_name else None, f"ini {o.ini_name}")):
        if text in (None, ""):
            continue
        text = str(text)
        if o.path:
            base = Path.cwd() if source != f"ini {o.ini_name}" else (
                config.inipath.parent if config.inipath else config.rootpath)
            return (base / text).resolve()
        if o.parse is None:
            return text
        try:
            return o.parse(text)
        except ValueError as exc:
            raise OptionError(f"{o.names} {exc}") from None
    return o.default


#: the options whose flags replace the ini's lines and whose lines are rules of the gate
RULES = ("threshold", "max_drop")


def replaced_rules(config: Any) -> list[str]:
    """A line per rule option whose flags replaced the ini file's rules (pytest's convention: the
    command line wins), naming the file and the rules, so a loosened gate never passes silently:
    ``--retrieval-threshold replaced 3 rules of pyproject.toml (hit@5>=0.8, ...)``."""
    out = []
    for o in (BY_KEY[k] for k in RULES):
        ini = [t.strip() for t in (config.getini(o.ini_name) or []) if t.strip() and not t.strip().startswith("#")]
        if not getattr(config.option, o.dest, None) or not ini:
            continue
        where = config.inipath.name if getattr(config, "inipath", None) else o.ini_name
        out.append(f"{o.flag_name} replaced {len(ini)} rule{'s' if len(ini) != 1 else ''} of {where} "
                   f"({', '.join(ini)})")
    return out


def ini_keys(path: Path | None, overrides: list[str] | None = None) -> set[str]:
    """The keys the ini file sets (``[pytest]``, ``[tool:pytest]``, ``[tool.pytest.ini_options]``)
    and ``-o KEY=VALUE`` overrides: pytest keeps its own list private."""
    keys = {o.partition("=")[0].strip() for o in overrides or []}
    if path is None or not Path(path).is_file():
        return keys
    if Path(path).suffix == ".toml":
        try:
            import tomllib
        except ImportError:  # Python 3.10: pytest's own warning stands
            return keys
        try:
            data = tomllib.loads(Path(path).read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return keys
        pytest_table = data.get("pytest") or data.get("tool", {}).get("pytest", {})
        return keys | set(pytest_table.get("ini_options", pytest_table))
    import configparser

    parser = configparser.ConfigParser(interpolation=None, strict=False)
    try:
        parser.read(path, encoding="utf-8")
    except (configparser.Error, UnicodeDecodeError):
        return keys
    return keys | {k for section in ("pytest", "tool:pytest") if parser.has_section(section)
                   for k in parser.options(section)}


def check_ini_keys(unknown: set[str], where: str) -> None:
    """An ini key pytest does not know that is a near miss of one of the plugin's: a usage error
    naming the nearest (pytest only warns, and a misspelt ``retrieval_thresholds`` gates nothing)."""
    import difflib

    names = [o.ini_name for o in OPTIONS if o.ini_name]
    for key in sorted(unknown):
        head = key.replace("-", "_").partition("_")[0]
        nearest = difflib.get_close_matches(key.replace("-", "_"), names, n=3, cutoff=0.75)
        if nearest and difflib.SequenceMatcher(None, head, PREFIX).ratio() >= 0.75:
            raise OptionError(f"{where}: unknown ini key {key}: did you mean {' or '.join(nearest)}?")


def check_path(o: Option, path: Any) -> None:
    """A file option that names a folder, or a folder option that names a file, refused by name
    (else it surfaces as an IsADirectoryError at the end of the run)."""
    if path is None or o.path not in ("file", "dir") or not Path(path).exists():
        return
    if o.path == "file" and Path(path).is_dir():
        raise OptionError(f"{o.names} names a file, and {shown(path)} is a folder")
    if o.path == "dir" and not Path(path).is_dir():
        raise OptionError(f"{o.names} names a folder, and {shown(path)} is a file")


def shown(path: Any) -> str:
    """A path as typed: relative to the working directory when below it."""
    try:
        return str(Path(path).relative_to(Path.cwd()))
    except ValueError:
        return str(path)


def takes_value(o: Option) -> bool:
    return o.kind != "switch"


def check_command_line(args: list[str], known: Callable[[list[str]], list[str]]) -> None:
    """What pytest would misread on the command line, said with the option's name.

    ``args``: the arguments pytest parsed before plugins added their options (PYTEST_ADDOPTS and
    the command line). There ``--retrieval-judgments judgments.jsonl`` is an unknown flag and a
    test path, and an existing path moves pytest's rootdir and ini file away from the project;
    only ``--retrieval-judgments=judgments.jsonl`` is read the same before and after.
    ``known(args)`` gives what pytest will call unrecognized: a near miss of a ``--retrieval-*``
    flag is named with its nearest flags."""
    import difflib

    valued = {o.flag_name for o in OPTIONS if takes_value(o)}
    for flag, value in zip(args, args[1:]):
        if flag in valued and not value.startswith("-") and Path(value.split("::")[0]).exists():
            raise OptionError(f"{flag} {value}: pytest reads a value after a space as a test path before the "
                              f"plugin's options exist (its rootdir and ini file then move); write {flag}={value}")
    rests = {o.flag_name[len(f"--{PREFIX}-"):]: o.flag_name for o in OPTIONS}
    for arg in known(args):
        name = arg.partition("=")[0]
        head, _, rest = name.lstrip("-").replace("_", "-").partition("-")
        if not name.startswith("--") or difflib.SequenceMatcher(None, head, PREFIX).ratio() < 0.75:
            continue
        nearest = [rests[r] for r in difflib.get_close_matches(rest, rests, n=3, cutoff=0.6)]
        hint = f"did you mean {' or '.join(nearest)}?" if nearest else "no --retrieval-* option is near it"
        raise OptionError(f"unrecognized option {name}: {hint} (pytest --help lists every --retrieval-* option)")


def _shown_default(o: Option) -> str:
    if o.kind in ("switch", "lines") or o.default in (None, ""):
        return ""
    return f"{o.default:g}" if isinstance(o.default, float) else str(o.default)


def markdown_table() -> list[str]:
    """The options table of docs/options.md, made from the declarations."""
    lines = ["| flag | ini | env | default | meaning |", "|---|---|---|---|---|"]
    for o in OPTIONS:
        flag = f"`{o.flag_name}`" if o.kind == "switch" else f"`{o.flag_name}={o.metavar or o.key.upper()}`"
        if o.kind == "lines":
            flag += " (repeatable)"
        ini = f"`{o.ini_name}`" + (" (one per line)" if o.kind == "lines" and o.ini_type != "args" else "") if o.ini_name else ""
        env = f"`{o.env}`" if o.env else ""
        default = f"`{_shown_default(o)}`" if _shown_default(o) else ""
        meaning = o.help.replace("; repeatable", "")
        lines.append(f"| {flag} | {ini} | {env} | {default} | {meaning} |")
    return lines


def docs_block(text: str) -> list[str]:
    """The options table as docs/options.md holds it (between its two markers)."""
    start, end = "<!-- options-table:start -->", "<!-- options-table:end -->"
    if start not in text or end not in text:
        return []
    return text.split(start, 1)[1].split(end, 1)[0].strip().splitlines()
