"""The session's frozen configuration, built once from the option table (``options``) and
grouped by concern. A bad value is a ``pytest.UsageError`` that names the option and the value.

Imports stay light (no numpy, no Haystack): a project whose ini file configures the plugin has
its settings checked at start, even in runs that never wake the plugin.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, TypeVar

from .._defaults import CHAT_MODEL as DEFAULT_CHAT_MODEL, EMBED_CONCURRENCY
from .._secrets import SecretText
from ..errors import RetrievalEvalError
from ..rules.drops import MaxDrop
from ..rules.thresholds import Threshold
from ..rules.settings import GateSettings
from ..hybrid.index import IngestConfig
from ..hybrid.settings import HybridConfig
from ..hybrid.store.base import check_identifier
from ..ir.measures import Measure, parse_measures, split_measures
from . import options
from .options import OptionError

T = TypeVar("T")


@dataclass(frozen=True)
class DataConfig:
    """What is evaluated: the corpus and the labeled queries."""

    corpus: Path | None = None
    questions: Path | None = None
    questions_explicit: bool = False  # given on the command line (wins over a BEIR folder's qrels)
    split: str = "test"  # BEIR qrels split
    stale: str = "leave-out"  # leave-out | warn | error
    regenerate: bool = False
    generator_model: str = DEFAULT_CHAT_MODEL
    max_doc_mb: float = 10.0
    as_of: str | None = None  # ISO day freshness is judged on; None: the day the run starts
    subset: Path | None = None  # --retrieval-subset: the subset file (NAME resolved to subsets/NAME.json)


@dataclass(frozen=True)
class RunConfig:
    """How engines are asked."""

    engines: tuple[str, ...] = ()  # selected engine names; empty means every registered engine
    depth: int = 100
    trials: int = 1
    timeout: float | None = None  # seconds per engine call
    concurrency: int = 1  # queries in flight per engine
    slice: tuple[int, int] | None = None  # (I, N): slice I of N of the labeled set (--retrieval-slice)
    exact_check: bool = False  # ask each question again of the engine's exact search (--retrieval-exact-check)


@dataclass(frozen=True)
class HybridSetup:
    """The hybrid stack: store, embedder and its cache, ingestion, the engine and its variants."""

    store: str = "embedded"
    dsn: str | None = None
    schema_prefix: str = "retrieval_eval"
    dsn_keep: bool = False  # dsn store: keep ingested tables (schema <prefix>_kept) for later sessions
    embedder: str = "minilm"
    embed_concurrency: int = EMBED_CONCURRENCY  # an OpenAI-compatible embedder's batches in flight
    embed_rate: float | None = None  # its requests a second (None: no limit)
    cache_dir: Path | None = None  # None: pytest's cache dir, else ~/.cache/pytest-retrieval-eval
    model_cache: Path | None = None  # the built-in MiniLM's ONNX export; None: onnx_embedder.default_model_cache()
    store_cache_mb: float = 2048.0  # snapshots of ingested embedded stores; 0: none
    ingest: IngestConfig = IngestConfig()
    engine: HybridConfig = HybridConfig()
    variants: tuple[tuple[str, HybridConfig, IngestConfig], ...] = ()
    ingest_pipeline: Path | None = None  # a team's Haystack ingestion YAML
    ingest_input: str | None = None  # COMPONENT.SOCKET the corpus goes to
    query_pipelines: tuple[tuple[str, Path, tuple[str, ...]], ...] = ()  # (engine name, YAML, question inputs)
    id_field: str = "doc_id"


@dataclass(frozen=True)
class GateConfig:
    """When the run fails: the gate's settings (thresholds, drops against a baseline, shadows ...),
    and the baseline file they compare with."""

    settings: GateSettings = GateSettings()
    baseline: Path | None = None
    #: the history folder (``--retrieval-history``), how many records it keeps, and the ref the
    #: run is judged against through it (``--retrieval-compare``)
    history: Path | None = None
    history_keep: int = 500
    compare: str | None = None

    @property
    def thresholds(self) -> tuple[Threshold, ...]:
        return self.settings.thresholds

    @property
    def max_drops(self) -> tuple[MaxDrop, ...]:
        return self.settings.max_drops


@dataclass(frozen=True)
class ReportConfig:
    """What the run writes: the terminal table and the files."""

    show: bool = False
    table_measures: tuple[Measure, ...] = ()
    report_dir: Path | None = None
    html: Path | None = None
    save_baseline: Path | None = None


@dataclass(frozen=True)
class JudgingConfig:
    """The judgments file the run reads, and whether (and how) it grades the holes first."""

    judgments: Path | None = None
    judge: bool = False
    model: str | None = None  # None: the default endpoint's default, else the model the server names
    depth: int = 10
    engines: tuple[str, ...] = ()
    votes: int = 1
    concurrency: int | None = None  # None: as the server fits (``ChatEndpoint.in_flight``)
    rate: float | None = None
    candidates: Path | None = None
    novelty_weight: float = 0.1
    #: the judges read as one panel by majority (``--retrieval-judges``: fingerprints, or ``all``)
    panel: tuple[str, ...] = ()
    #: the judge's answer cap, in tokens (``--retrieval-judge-max-tokens``)
    max_tokens: int | None = None


@dataclass(frozen=True)
class RetrievalConfig:
    data: DataConfig
    run: RunConfig
    hybrid: HybridSetup
    gate: GateConfig
    report: ReportConfig
    judging: JudgingConfig = JudgingConfig()


def _checked(fn: Callable[[], T]) -> T:
    """A domain parser's complaint, as a usage error (pytest prints it without a traceback)."""
    import pytest

    try:
        return fn()
    except (RetrievalEvalError, OptionError) as exc:
        raise pytest.UsageError(str(exc)) from None


def build(config: Any) -> RetrievalConfig:
    """Read every option once and check it; the first bad value stops the run before any test."""
    explicit = bool(getattr(config.option, options.BY_KEY["questions"].dest, None))
    ini_base = config.inipath.parent if getattr(config, "inipath", None) else Path(config.rootpath)
    return _checked(lambda: _build(lambda key: options.read(config, key), questions_explicit=explicit,
                                   base_for=lambda source: ini_base if source.startswith("ini") else Path.cwd()))


def _subset_file(path: Path | None) -> Path | None:
    """``--retrieval-subset=NAME`` (resolved as a path by the options) -> ``subsets/NAME.json`` beside it."""
    if path is None:
        return None
    from ..analysis.subset import subset_path

    return subset_path(path)


def _build(get: Callable[[str], Any], *, questions_explicit: bool,
           base_for: Callable[[str], Path] = lambda source: Path.cwd()) -> RetrievalConfig:
    names = {o.key: o.names for o in options.OPTIONS}
    for o in options.OPTIONS:  # a folder where a file belongs: said now, not as a crash at the end
        if o.path:
            options.check_path(o, get(o.key))
    ingest = IngestConfig(split_length=get("split_length"), split_overlap=get("split_overlap"),
                          near_duplicates=get("near_duplicates"))
    top_k = get("top_k")
    engine = hybrid_config([t for t, _ in get("hybrid")], keyword_top_k=top_k, vector_top_k=top_k,
                           fusion_top_k=top_k, rerank=get("rerank"))
    variants = tuple(parse_variant(t, engine, ingest) for t, _ in get("variant")
                     if t.strip() and not t.strip().startswith("#"))
    sweeps = tuple(parse_sweep(t, src, engine, ingest, variants, get("sweep_max")) for t, src in get("sweep")
                   if t.strip() and not t.strip().startswith("#"))
    variants += tuple(v for s in sweeps for v in s.variants)
    settings = GateSettings.from_options(get)
    if sweeps:  # recorded with the run: report and the page lay the sweep out from results.json
        by = Measure.parse(get("sweep_by")).name
        settings = dataclasses.replace(settings, sweeps=tuple((s.base, by, s.points) for s in sweeps))
    gate = GateConfig(settings, get("baseline"), get("history"), get("history_keep"),
                      get("compare"))  # the baseline's shown path is recorded at the end
    if gate.compare is not None and (gate.history is None or gate.baseline is not None):
        raise RetrievalEvalError("--retrieval-compare REF reads the record at REF's merge-base from the history: give "
                                 "--retrieval-history=DIR" if gate.history is None else
                                 "--retrieval-compare and --retrieval-baseline both name what the run is compared "
                                 "with: give one")
    if gate.max_drops and gate.baseline is None and gate.compare is None:
        raise RetrievalEvalError("--retrieval-max-drop / retrieval_max_drops compare with a baseline: "
                                 "give --retrieval-baseline=PATH (save one with --retrieval-save-baseline=PATH)")
    measures = get("measures")
    judging = JudgingConfig(get("judgments"), get("judge"), get("judge_model"), get("judge_depth"),
                            tuple(t for t, _ in get("judge_engine")), get("judge_votes"), get("judge_concurrency"),
                            get("judge_rate"), get("candidates"), get("novelty_weight"),
                            panel_of(get("judges")), get("judge_max_tokens"))
    if judging.judge and judging.judgments is None:
        raise RetrievalEvalError("--retrieval-judge writes its grades to a judgments file: give "
                                 "--retrieval-judgments=PATH (e.g. judgments.jsonl, committed beside the questions)")
    return RetrievalConfig(
        data=DataConfig(corpus=get("corpus"), questions=get("questions"),
                        questions_explicit=questions_explicit,
                        split=get("split"), stale=get("stale"), regenerate=get("regenerate"),
                        generator_model=get("generator_model"), max_doc_mb=get("max_doc_mb"),
                        as_of=get("as_of"), subset=_subset_file(get("subset"))),
        run=RunConfig(engines=tuple(t for t, _ in get("engine")), depth=get("depth"), trials=get("trials"),
                      timeout=get("timeout"), concurrency=get("concurrency"), slice=get("slice"),
                      exact_check=get("exact_check")),
        hybrid=HybridSetup(store=get("store"), dsn=SecretText(get("dsn")) if get("dsn") else None,
                           schema_prefix=check_identifier(get("schema"), names["schema"]), dsn_keep=get("dsn_keep"),
                           embedder=get("embedder"), embed_concurrency=get("embed_concurrency"),
                           embed_rate=get("embed_rate"), cache_dir=get("cache_dir"),
                           model_cache=get("model_cache"),
                           store_cache_mb=get("store_cache_mb"), ingest=ingest, engine=engine,
                           variants=variants, ingest_pipeline=get("ingest_pipeline"),
                           ingest_input=get("ingest_input"),
                           query_pipelines=tuple(parse_query_pipeline(t, src, base_for(src))
                                                 for t, src in get("query_pipeline")
                                                 if t.strip() and not t.strip().startswith("#")),
                           id_field=get("id_field")),
        gate=gate,
        report=ReportConfig(show=get("report"),
                            table_measures=tuple(parse_measures(split_measures(measures))),
                            report_dir=get("report_dir"), html=get("html"), save_baseline=get("save_baseline")),
        judging=judging,
    )


def panel_of(text: str | None) -> tuple[str, ...]:
    """``--retrieval-judges``: the fingerprints (or ``all``), comma-separated, in order, once each."""
    return tuple(dict.fromkeys(t.strip() for t in (text or "").split(",") if t.strip()))


def parse_query_pipeline(text: str, source: str, base: Path = Path(".")) -> tuple[str, Path, tuple[str, ...]]:
    """``NAME=PATH[:COMPONENT.SOCKET,...]``; a relative path is taken from the working dir
    (flag) or the ini file's folder (ini), as other paths are."""
    name, sep, rest = text.partition("=")
    name, rest = name.strip(), rest.strip()
    if not sep or not name or not rest or any(c.isspace() for c in name):
        raise RetrievalEvalError(f"query pipeline {text!r} (from {source}) not understood; expected "
                                 "NAME=PATH[:COMPONENT.SOCKET,...], e.g. 'my-search=pipelines/query.yaml'")
    path, _, inputs = rest.partition(":") if not (len(rest) > 2 and rest[1] == ":") else (rest, "", "")
    resolved = (base / path.strip()).resolve()
    if resolved.is_dir():
        raise RetrievalEvalError(f"query pipeline {text!r} (from {source}) names a file, and {path.strip()} is a folder")
    return name, resolved, tuple(i.strip() for i in inputs.split(",") if i.strip())


def parse_variant(text: str, hybrid: HybridConfig, ingest: IngestConfig) -> tuple[str, HybridConfig, IngestConfig]:
    """``NAME: KEY=VALUE ...``: the session's hybrid and ingestion settings with some changed."""
    name, sep, rest = text.partition(":")
    name = name.strip()
    if not sep or not name or any(c.isspace() for c in name):
        raise RetrievalEvalError(f"engine variant {text!r} not understood; expected 'NAME: KEY=VALUE ...'")
    try:
        return (name, *variant(hybrid, ingest, rest.split()))
    except RetrievalEvalError as exc:
        raise RetrievalEvalError(f"engine variant {name}: {exc}") from None


@dataclass(frozen=True)
class Sweep:
    """A grid over a hybrid engine's settings (``--retrieval-sweep``): the ``base`` engine, each
    point's engine name and swept values (the base's own included), and the variants to register
    (the points whose settings are not the base's)."""

    base: str
    points: tuple[tuple[str, tuple[tuple[str, str], ...]], ...]
    variants: tuple[tuple[str, HybridConfig, IngestConfig], ...]


def parse_sweep(text: str, source: str, hybrid: HybridConfig, ingest: IngestConfig,
                variants: tuple[tuple[str, HybridConfig, IngestConfig], ...], cap: int) -> Sweep:
    """``ENGINE: KEY=V1,V2 KEY=V1,V2 ...`` over ``hybrid`` or a variant: every combination is a
    variant named for its values (``hybrid-split_length200-fusion_top_k10``); the combination
    equal to the base is the base itself. More than ``cap`` combinations is refused."""
    import itertools

    name, sep, rest = text.partition(":")
    base = name.strip()
    where = f"sweep {text.strip()!r} (from {source})"
    axes = [(k.strip(), list(dict.fromkeys(v.strip() for v in vs.split(",") if v.strip()))) for k, _, vs in
            (item.partition("=") for item in rest.split())]  # a value given twice is one configuration
    if not sep or not base or not axes or any(not k or not vs for k, vs in axes):
        raise RetrievalEvalError(f"{where} not understood; expected 'ENGINE: KEY=V1,V2 ...', e.g. "
                                 "'hybrid: split_length=200,300 fusion_top_k=10,50'")
    known = {"hybrid": (hybrid, ingest), **{n: (h, i) for n, h, i in variants}}
    if base not in known:
        raise RetrievalEvalError(f"{where}: sweeps vary the hybrid engine or one of its variants; '{base}' is not one "
                                 f"(known: {', '.join(known)})")
    keys = [k for k, _ in axes]
    if len(set(keys)) < len(keys):
        raise RetrievalEvalError(f"{where}: a setting is swept twice; give each KEY once with all its values")
    settable = [f.name for f in dataclasses.fields(HybridConfig)] + list(INGEST_KEYS)
    unknown = [k for k in keys if k not in settable]
    if unknown:
        raise RetrievalEvalError(f"{where}: unknown setting {unknown[0]!r}; a sweep varies one of {', '.join(settable)}")
    size = 1
    for _, values in axes:
        size *= len(values)
    if size > cap:
        raise RetrievalEvalError(f"{where} makes {size} configurations, more than {cap}: sweep fewer values, or allow "
                                 f"more with --retrieval-sweep-max={size}")
    base_hybrid, base_ingest = known[base]
    if base_hybrid.rerank == "off" and any(k == "rerank_top_k" and len(v) > 1 for k, v in axes):
        raise RetrievalEvalError(f"{where}: rerank_top_k changes nothing while rerank is off: every value would be "
                                 "the same engine; sweep rerank too (rerank=off,local:PATH) or give it one value")
    points, out = [], []
    for combo in itertools.product(*(values for _, values in axes)):
        items = [f"{k}={v}" for k, v in zip(keys, combo)]
        try:
            h, i = variant(base_hybrid, base_ingest, items)
        except RetrievalEvalError as exc:
            raise RetrievalEvalError(f"{where}: {exc}") from None
        if (h, i) == (base_hybrid, base_ingest):
            points.append((base, tuple(zip(keys, combo))))
            continue
        point = base + "".join(f"-{k}{v.lower()}" for k, v in zip(keys, combo))
        if any(c.isspace() or c in ":,[]" for c in point):
            raise RetrievalEvalError(f"{where}: a value makes the engine name {point!r}, which cannot hold spaces, "
                                     "':', ',' or brackets")
        points.append((point, tuple(zip(keys, combo))))
        out.append((point, h, i))
    if not any(name == base for name, _ in points):  # the grid leaves the base out: its row is there all the same
        points.insert(0, (base, tuple((k, _value_of(base_hybrid, base_ingest, k)) for k in keys)))
    return Sweep(base, tuple(points), tuple(out))


def _value_of(hybrid: HybridConfig, ingest: IngestConfig, key: str) -> str:
    value = getattr(ingest if key in INGEST_KEYS else hybrid, key)
    return str(value).lower() if isinstance(value, bool) else str(value)


#: settings of a variant that change the ingestion (and so the table) rather than the engine
INGEST_KEYS = ("split_length", "split_overlap")


def variant(hybrid: HybridConfig, ingest: IngestConfig, items: list[str]) -> tuple[HybridConfig, IngestConfig]:
    """``KEY=VALUE`` items over the session's settings: chunking keys change the ingestion, every
    other key the hybrid engine."""
    split = {k: v for k, _, v in (i.partition("=") for i in items) if k in INGEST_KEYS}
    try:
        ingest = dataclasses.replace(ingest, **{k: int(v) for k, v in split.items()})
    except ValueError:
        raise RetrievalEvalError("split settings must be whole numbers") from None
    engine_items = [i for i in items if i.partition("=")[0] not in INGEST_KEYS]
    return hybrid_config(engine_items, **dataclasses.asdict(hybrid)), ingest


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
