"""The pytest entry point (``retrieval_eval``): options, the marker, fixtures and hooks only.

Dormant until asked (see ``wake``): in a run that selects no retrieval test and passes no
``--retrieval-*`` flag, registering the options, the marker and the fixtures is all it does.
"""

from __future__ import annotations

import sys

import pytest

from . import fixtures, hookspecs, options, roles, wake
from .wake import ENGINE_ERROR_KEY, active, session_of

_FLIP = {">=": "<=", "<=": ">=", ">": "<", "<": ">", "==": "==", "!=": "!="}
_RESULTS_MODULE = "pytest_retrieval_eval.analysis.result"
_SCANNED_KEY = pytest.StashKey[list]()  # the items collection_modifyitems looked at
_DESELECTED_KEY = pytest.StashKey[list]()  # the items -k / -m deselected (a rule's "why" names them)

__all__ = ["session_of"]


def pytest_addhooks(pluginmanager: pytest.PytestPluginManager) -> None:
    pluginmanager.add_hookspecs(hookspecs)


def pytest_addoption(parser: pytest.Parser) -> None:
    options.add_to_pytest(parser)


@pytest.hookimpl(wrapper=True)
def pytest_load_initial_conftests(early_config: pytest.Config, parser: pytest.Parser, args: list[str]):
    """A ``--retrieval-*`` flag pytest would misread, as one usage error: its value apart from it
    (before the conftests load from a rootdir it moved), a misspelt name (after they added theirs)."""
    import os
    import shlex

    first = [*shlex.split(os.environ.get("PYTEST_ADDOPTS", "")), *map(str, early_config.invocation_params.args)]
    try:
        options.check_command_line(first, lambda _: [])
        result = yield
        options.check_command_line([], lambda _: parser.parse_known_and_unknown_args(args)[1])
    except options.OptionError as exc:
        raise pytest.UsageError(str(exc)) from None
    return result


def pytest_configure(config: pytest.Config) -> None:
    known = {o.ini_name for o in options.OPTIONS if o.ini_name}  # pytest's own check of the others only warns
    given = options.ini_keys(config.inipath, config.option.override_ini)
    try:
        options.check_ini_keys(given - known, options.shown(config.inipath) if config.inipath else "the ini file")
    except options.OptionError as exc:
        raise pytest.UsageError(str(exc)) from None
    config.addinivalue_line("markers", "retrieval: a retrieval-quality evaluation (select with -m retrieval); "
                            "retrieval(engine=NAME or [NAME, ...]) aims it at those engines only")
    config.pluginmanager.register(fixtures, "retrieval_eval.fixtures")
    wake.configure(config)


def pytest_unconfigure(config: pytest.Config) -> None:
    wake.sleep(config)


def pytest_sessionstart(session: pytest.Session) -> None:
    # xdist registers its controller plugin during configure; by now the role is knowable.
    roles.register(session.config)


@pytest.hookimpl(tryfirst=True)
def pytest_retrieval_engines(registry, config) -> None:
    """Built-in engines first, so they lead the parametrization and the table."""
    from .engines import register_builtin, register_pipelines

    register_builtin(registry, wake.settings(config))
    register_pipelines(registry, wake.settings(config))


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    if "retrieval_engine" in metafunc.fixturenames:
        params = wake.engine_params(metafunc.config, metafunc.definition)  # a bad name: said after collection
        metafunc.parametrize("retrieval_engine", params, indirect=True, scope="session",
                             ids=[p if isinstance(p, str) else p.id for p in params])


def pytest_deselected(items: list) -> None:
    if items:
        config = items[0].config
        config.stash[_DESELECTED_KEY] = [*config.stash.get(_DESELECTED_KEY, []), *items]


@pytest.hookimpl(trylast=True)
def pytest_collection_modifyitems(session: pytest.Session, config: pytest.Config, items: list) -> None:
    if ENGINE_ERROR_KEY in config.stash:  # a misspelt engine name: one line, no traceback
        return wake.usage_error(config, items, config.stash[ENGINE_ERROR_KEY])
    if options.read(config, "shard"):  # after deselection (trylast): only what runs is shared
        from .shards import add_shares

        add_shares(config, items)
    try:  # waking builds the configuration: a bad value given only in the environment shows here
        if active(config) is None and any(wake.wants_retrieval(item) for item in items):
            session_of(config)
    except pytest.UsageError as exc:
        return wake.usage_error(config, items, str(exc))
    config.stash[_SCANNED_KEY] = items[:]  # collection_finish looks again only if a later hook changed them
    rs = active(config)
    if rs is not None:  # a rule naming an engine no engine has: said before any engine is asked
        problem = wake.unknown_rule_engine(config) or wake.engine_error(config)
        if problem is not None:
            return wake.usage_error(config, items, problem)
        rs.collected(items, config.stash.get(_DESELECTED_KEY, []))
    if rs is not None:  # what the tests will read, read now: a broken input stops the run once
        problem = rs.inputs_problem({name for item in items for name in getattr(item, "fixturenames", ())})
        if problem is not None:
            wake.usage_error(config, items, problem)


def pytest_collection_finish(session: pytest.Session) -> None:
    if active(session.config) is None and session.items != session.config.stash.get(_SCANNED_KEY, None) and any(
            wake.wants_retrieval(item) for item in session.items):
        session_of(session.config)


def pytest_terminal_summary(terminalreporter, exitstatus, config: pytest.Config) -> None:
    rs = active(config)
    if rs is not None and rs.outcome is not None:
        from ..report import terminal

        terminal.write_summary(terminalreporter, rs.outcome, report=rs.config.report.show,
                               thresholds=len(rs.config.gate.thresholds),
                               unavailable=wake.registry(config).unavailable_selected(rs.config.run.engines),
                               verbosity=config.get_verbosity())


@pytest.hookimpl(wrapper=True)
def pytest_runtest_setup(item: pytest.Item):
    """Headline figures as JUnit XML properties (``retrieval.<engine>.<measure>``) of every test
    that reads an engine's results; they travel with the reports under xdist too."""
    result = yield
    rs = active(item.config)
    evaluation = getattr(item, "funcargs", {}).get("retrieval_results") if rs is not None else None
    if evaluation is not None and _RESULTS_MODULE in sys.modules:
        from ..analysis.result import EvaluationResult

        if isinstance(evaluation, EvaluationResult):
            for m in rs.config.report.table_measures:  # a measure without a value: no property, never "nan"
                if (value := evaluation.mean(m)) is not None:
                    item.user_properties.append((f"retrieval.{evaluation.engine}.{m.name}", f"{value:.6f}"))
            item.user_properties.append((f"retrieval.{evaluation.engine}.n", str(evaluation.n)))
            item.user_properties.append((f"retrieval.{evaluation.engine}.errored", str(evaluation.n_errored)))
    return result


def pytest_assertrepr_compare(config: pytest.Config, op: str, left: object, right: object):
    from .._secrets import SecretText

    if isinstance(left, SecretText) or isinstance(right, SecretText):  # no diff of a secret's characters
        return [f"{left!r} {op} {right!r}", "(a value holding a secret: no character diff is shown)"]
    if _RESULTS_MODULE not in sys.modules:  # no result was ever made: nothing to explain
        return None
    from ..analysis.result import MeasureValue

    if isinstance(left, MeasureValue):
        return left.explain(op, right)
    if isinstance(right, MeasureValue):
        return right.explain(_FLIP.get(op, op), left)
    return None
