"""pytest glue: options, the marker, fixtures and hooks. The work happens in the modules they call."""

from __future__ import annotations

import importlib.util
import os
from typing import Any

import pytest

from . import hookspecs, settings
from ._secrets import install_log_redaction
from .corpus import Corpus
from .engines.keyword import KeywordEngine
from .errors import RetrievalEvalError
from .evaluation import EvaluationResult, MeasureValue
from .labeled import LabeledSet
from .report import terminal
from .session import Controller, RetrievalSession, role_for

SESSION_NAME = "retrieval_session"
_FLIP = {">=": "<=", "<=": ">=", ">": "<", "<": ">", "==": "==", "!=": "!="}


def _session(config: pytest.Config) -> RetrievalSession:
    return config.pluginmanager.get_plugin(SESSION_NAME)


# --- options, hooks ------------------------------------------------------------------------

def pytest_addhooks(pluginmanager: pytest.PytestPluginManager) -> None:
    pluginmanager.add_hookspecs(hookspecs)


def pytest_addoption(parser: pytest.Parser) -> None:
    settings.addoptions(parser)


def pytest_configure(config: pytest.Config) -> None:
    # Haystack looks up its telemetry host on every pipeline run and waits ~1 s at exit when it
    # cannot reach it; a test run has no business sending telemetry. The user's choice wins.
    os.environ.setdefault("HAYSTACK_TELEMETRY_ENABLED", "False")
    install_log_redaction()
    config.addinivalue_line("markers", "retrieval: a retrieval-quality evaluation (select with -m retrieval)")
    config.pluginmanager.register(RetrievalSession(settings.build(config), config), SESSION_NAME)


def pytest_sessionstart(session: pytest.Session) -> None:
    # xdist registers its controller plugin during configure; by now the role is knowable.
    _session(session.config).role = role_for(session.config)


@pytest.hookimpl(tryfirst=True)
def pytest_retrieval_engines(registry, config) -> None:
    """Built-in engines first, so they lead the parametrization and the table."""
    registry.register("keyword", lambda request: KeywordEngine(request.getfixturevalue("retrieval_corpus")))
    missing = [m for m in ("haystack", "haystack_integrations.document_stores.pgvector", "psycopg")
               if not _importable(m)]
    if missing:
        registry.unavailable("hybrid", f"needs {', '.join(missing)}: pip install 'pytest-retrieval-eval[hybrid]'")
    else:
        registry.register("hybrid", hybrid_variant())
        for name, hybrid, ingest in _session(config).config.variants:
            registry.register(name, hybrid_variant(hybrid, ingest))


def _importable(module: str) -> bool:
    try:
        return importlib.util.find_spec(module) is not None
    except ModuleNotFoundError:
        return False


def hybrid_variant(hybrid=None, ingest=None, **settings):
    """A factory for ``registry.register``: the hybrid engine with the session's settings, or
    others, e.g. ``hybrid_variant(use_vector=False)`` or ``hybrid_variant(split_length=200)``.
    Variants whose ingestion settings match share one ingested table."""
    import dataclasses

    def factory(request: pytest.FixtureRequest):
        from .engines.hybrid import HybridEngine

        cfg = _session(request.config).config
        h = hybrid or cfg.hybrid
        i = ingest or cfg.ingest
        split = {k: settings[k] for k in ("split_length", "split_overlap") if k in settings}
        other = {k: v for k, v in settings.items() if k not in split}
        return HybridEngine(_or_fail(_session(request.config).index_for, request, dataclasses.replace(i, **split)),
                            dataclasses.replace(h, **other))

    return factory


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    if "retrieval_engine" in metafunc.fixturenames:
        try:
            names = _session(metafunc.config).selected_engines()
        except RetrievalEvalError as exc:
            raise pytest.UsageError(str(exc)) from None
        metafunc.parametrize("retrieval_engine", names, indirect=True, ids=names, scope="session")


@pytest.hookimpl(optionalhook=True)
def pytest_testnodedown(node: Any, error: Any) -> None:
    role = _session(node.config).role
    if isinstance(role, Controller):
        role.node_down(node, error)


@pytest.hookimpl(wrapper=True)
def pytest_runtestloop(session: pytest.Session):
    """The gate, after every test (and under xdist every worker) has finished."""
    result = yield
    outcome = _session(session.config).finish()
    if outcome is not None and outcome.failed:
        session.testsfailed += 1
    return result


def pytest_terminal_summary(terminalreporter, exitstatus, config: pytest.Config) -> None:
    rs = _session(config)
    if rs.outcome is not None:
        terminal.write_summary(terminalreporter, rs.outcome, report=rs.config.report,
                               thresholds=len(rs.config.thresholds), unavailable=rs.registry.unavailable_engines(),
                               verbosity=config.get_verbosity())


@pytest.hookimpl(wrapper=True)
def pytest_runtest_setup(item: pytest.Item):
    """Headline figures as JUnit XML properties (``retrieval.<engine>.<measure>``) of every test
    that reads an engine's results; they travel with the reports under xdist too."""
    result = yield
    evaluation = getattr(item, "funcargs", {}).get("retrieval_results")
    if isinstance(evaluation, EvaluationResult):
        for m in _session(item.config).config.table_measures:
            item.user_properties.append((f"retrieval.{evaluation.engine}.{m.name}", f"{float(evaluation.score(m)):.6f}"))
        item.user_properties.append((f"retrieval.{evaluation.engine}.n", str(evaluation.n)))
        item.user_properties.append((f"retrieval.{evaluation.engine}.errored", str(evaluation.n_errored)))
    return result


def pytest_assertrepr_compare(config: pytest.Config, op: str, left: object, right: object):
    if isinstance(left, MeasureValue):
        return left.explain(op, right)
    if isinstance(right, MeasureValue):
        return right.explain(_FLIP.get(op, op), left)
    return None


# --- fixtures ------------------------------------------------------------------------------

def _or_fail(fn, *args):
    """Call ``fn``; a user-fixable error fails the test with its message alone. No traceback:
    pytest would print every frame's arguments, and a DSN with its password is one of them."""
    try:
        return fn(*args)
    except RetrievalEvalError as exc:
        problem = str(exc)
    pytest.fail(problem, pytrace=False)  # outside the except: no chained traceback either


@pytest.fixture(scope="session")
def retrieval_session(pytestconfig: pytest.Config) -> RetrievalSession:
    """The run's retrieval state: configuration, engines, every evaluation recorded so far."""
    return _session(pytestconfig)


@pytest.fixture(scope="session")
def retrieval_corpus(retrieval_session: RetrievalSession) -> Corpus:
    """The corpus from ``--retrieval-corpus`` / ``retrieval_corpus``: JSON documents or BEIR."""
    return _or_fail(retrieval_session.load_corpus)


@pytest.fixture(scope="session")
def labeled_queries(retrieval_session: RetrievalSession, retrieval_corpus: Corpus) -> LabeledSet:
    """Labeled queries: a BEIR folder's queries and qrels, or the questions cache, checked for
    staleness against the corpus (``--retrieval-stale``)."""
    return _or_fail(retrieval_session.load_labeled, retrieval_corpus)


@pytest.fixture(scope="session")
def retrieval_engine(request: pytest.FixtureRequest, retrieval_session: RetrievalSession):
    """Each registered engine in turn (test ids are engine names), built once per session."""
    return retrieval_session.engine(request.param, request)


@pytest.fixture(scope="session")
def evaluate_retrieval(retrieval_session: RetrievalSession, labeled_queries: LabeledSet, retrieval_corpus: Corpus):
    """``evaluate_retrieval(engine, labeled=None, name=None) -> EvaluationResult``, once per
    session per engine and labeled set; every evaluation is recorded for the report and gate."""

    def run(engine, labeled: LabeledSet | None = None, *, name: str | None = None) -> EvaluationResult:
        return retrieval_session.evaluate(engine, labeled if labeled is not None else labeled_queries, name=name,
                                          corpus=retrieval_corpus)

    return run


@pytest.fixture(scope="session")
def retrieval_results(retrieval_engine, evaluate_retrieval) -> EvaluationResult:
    """The current engine's evaluation on the labeled queries: ``assert retrieval_results.hit_at(5) >= 0.8``."""
    return evaluate_retrieval(retrieval_engine)


@pytest.fixture(scope="session")
def pgvector_store(retrieval_session: RetrievalSession):
    """A started PostgreSQL + pgvector store (``--retrieval-store``), stopped at session end,
    Ctrl-C included. Each pytest-xdist worker gets its own server or schema."""
    store = _or_fail(retrieval_session.open_store)
    _or_fail(store.start)
    try:
        yield store
    finally:
        store.stop()


@pytest.fixture(scope="session")
def retrieval_embedder(retrieval_session: RetrievalSession):
    """The configured embedder behind the on-disk embedding cache."""
    return _or_fail(retrieval_session.embedder)


@pytest.fixture(scope="session")
def ingested_index(request: pytest.FixtureRequest, retrieval_session: RetrievalSession):
    """The corpus run through the Haystack ingestion pipeline into ``pgvector_store``."""
    return _or_fail(retrieval_session.index_for, request)


@pytest.fixture(scope="session")
def ingested_chunks(ingested_index):
    """The chunks written to the store: ``doc_id``, ``index`` (id ``doc_id:index``), text, metadata."""
    return ingested_index.chunks
