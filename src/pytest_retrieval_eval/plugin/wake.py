"""When the plugin wakes, and what waking changes.

Installed, the plugin registers its options, marker and fixtures, and nothing else happens
until the run asks for retrieval (hypothesis's plugin is the model): a ``--retrieval-*`` flag,
a collected test that is marked ``retrieval`` or uses one of the plugin's fixtures, or (on the
xdist controller) a worker that shipped retrieval results. Only then is the session created and
are process-wide changes made, each undone at unconfigure: log records are masked for secrets,
and Haystack's telemetry is turned off unless the user set it.
"""

from __future__ import annotations

import os
from typing import Any

import pytest

from . import options

SESSION_NAME = "retrieval_session"
CONFIG_KEY = pytest.StashKey[Any]()  # config.RetrievalConfig, built when the plugin is configured
REGISTRY_KEY = pytest.StashKey[Any]()  # engines.base.EngineRegistry, filled once
ENGINE_ERROR_KEY = pytest.StashKey[str]()  # why the selected engine names cannot be used
UNDO_KEY = pytest.StashKey[list]()

#: The fixtures whose use wakes the plugin.
FIXTURES = frozenset({"retrieval_session", "retrieval_corpus", "labeled_queries", "retrieval_engine",
                      "evaluate_retrieval", "retrieval_results", "pgvector_store", "retrieval_embedder",
                      "ingested_index", "ingested_chunks"})
TELEMETRY = "HAYSTACK_TELEMETRY_ENABLED"


def configure(config: pytest.Config) -> None:
    """At configure: check the configuration when the user gave any (flags or ini keys), so a
    bad value is a usage error at once; wake when a flag was given."""
    flagged = options.given_on_command_line(config)
    if flagged or options.set_in_ini(config):
        from .config import build

        config.stash[CONFIG_KEY] = build(config)
    if flagged:
        session_of(config)


def wants_retrieval(item: pytest.Item) -> bool:
    return item.get_closest_marker("retrieval") is not None or not FIXTURES.isdisjoint(getattr(item, "fixturenames", ()))


def active(config: pytest.Config):
    """The session if the plugin is awake, else None."""
    return config.pluginmanager.get_plugin(SESSION_NAME)


def settings(config: pytest.Config):
    """The checked configuration (built on first use when configure did not need it)."""
    if CONFIG_KEY not in config.stash:
        from .config import build

        config.stash[CONFIG_KEY] = build(config)
    return config.stash[CONFIG_KEY]


def registry(config: pytest.Config):
    """The engines registered through the ``pytest_retrieval_engines`` hook, asked once. Naming
    them (to parametrize ``retrieval_engine`` at collection) wakes nothing: factories run later."""
    if REGISTRY_KEY not in config.stash:
        from ..engines.base import EngineRegistry

        engines = EngineRegistry()
        config.hook.pytest_retrieval_engines(registry=engines, config=config)
        config.stash[REGISTRY_KEY] = engines
    return config.stash[REGISTRY_KEY]


def selected_engines(config: pytest.Config) -> list[str]:
    """The selected engine names; a name nothing registered is noted and said as a one-line
    usage error once collection is done (conftests in test folders may still register engines
    while modules are collected; raised here, pytest would wrap it in a collection traceback)."""
    from ..errors import RetrievalEvalError

    try:
        names = registry(config).select(settings(config).run.engines)
        swept = [n for _, _, points in settings(config).gate.settings.sweeps for n, _ in points]
        if swept:  # a sweep's engines (its base too) run beside whatever else is selected
            names += [n for n in registry(config).select(swept) if n not in names]
        return names
    except RetrievalEvalError as exc:
        config.stash[ENGINE_ERROR_KEY] = str(exc)
        return []


def engine_error(config: pytest.Config) -> str | None:
    """Why the selected engine names (``--retrieval-engine`` / ``retrieval_engines``) cannot be
    used, or None: checked at collection's end also when no collected test parametrizes by engine."""
    if settings(config).run.engines:  # none named: nothing to check, the registry is not asked for it
        selected_engines(config)
    return config.stash.get(ENGINE_ERROR_KEY, None)


def unknown_rule_engine(config: pytest.Config) -> str | None:
    """A rule (threshold, max-drop, shadow) naming an engine that no engine has, said with the
    nearest names; None when every name is known. Asked once the registry is full (after
    collection, as conftests in test folders register too), so the run stops before any engine
    is asked, not after every one ran."""
    from ..engines.base import nearest

    gate = settings(config).gate.settings
    named = [(f"threshold {t} (from {t.source})", t.engine) for t in gate.thresholds if t.engine]
    named += [(f"max-drop rule {d} (from {d.source})", d.engine) for d in gate.max_drops if d.engine]
    named += [(f"--retrieval-shadow {a}:{b}", n) for a, b in gate.shadows for n in (a, b)]
    if not named:  # no rule names an engine: the registry is not asked for it
        return None
    reg = registry(config)
    known = [*reg.known(), *(n for _, _, points in gate.sweeps for n, _ in points)]
    for what, name in named:
        if name not in known:
            return (f"{what} names engine '{name}', which no engine has; registered: {', '.join(reg.names()) or 'none'}"
                    f"{nearest([name], known)}")
    return None


def engine_params(config: pytest.Config, definition: pytest.Item) -> list:
    """The ``retrieval_engine`` parameters of one test: the selected engines, or those its nearest
    ``@pytest.mark.retrieval(engine=NAME or [NAME, ...])`` aims it at. An aimed engine this run does
    not select is skipped saying so; a name nothing registered is a usage error, as for selection."""
    names = selected_engines(config)
    aimed = _aimed(definition)
    if aimed is None or ENGINE_ERROR_KEY in config.stash:
        return names
    if isinstance(aimed, str):
        config.stash[ENGINE_ERROR_KEY] = f"{definition.nodeid}: {aimed}"
        return []
    known, why_not = registry(config).names(), registry(config).why_unavailable
    unknown = [n for n in aimed if n not in known and why_not(n) is None]
    if unknown:
        config.stash[ENGINE_ERROR_KEY] = (f"{definition.nodeid}: @pytest.mark.retrieval(engine=...) names unknown "
                                          f"engine(s) {', '.join(unknown)}; registered: {', '.join(known) or 'none'}")
        return []
    why = {n: (f"not available: {why_not(n)}" if why_not(n) is not None else
               f"which this run does not select (selected: {', '.join(names) or 'none'})") for n in aimed}
    return [n for n in names if n in aimed] + [pytest.param(n, marks=pytest.mark.skip(
        reason=f"aimed at engine {n}, {why[n]}"), id=n) for n in aimed if n not in names]


def _aimed(definition: pytest.Item) -> tuple[str, ...] | str | None:
    """The engine names of the nearest retrieval marker that names some, None when none does, or
    what is wrong with the marker."""
    for mark in definition.iter_markers("retrieval"):
        if not mark.args and not mark.kwargs:
            continue
        value = mark.kwargs.get("engine")
        names = (value,) if isinstance(value, str) else tuple(value) if isinstance(value, (list, tuple)) else ()
        if mark.args or set(mark.kwargs) != {"engine"} or not names or not all(isinstance(n, str) and n for n in names):
            given = ", ".join([*map(repr, mark.args), *(f"{k}={v!r}" for k, v in mark.kwargs.items())])
            return f"@pytest.mark.retrieval takes engine=NAME or engine=[NAME, ...], got ({given})"
        return tuple(dict.fromkeys(names))
    return None


#: an xdist worker's usage error, in its ``workeroutput`` for the controller to raise
USAGE_ERROR_OUTPUT = "retrieval_usage_error"


def usage_error(config: pytest.Config, items: list, message: str) -> None:
    """Stop the run with a one-line usage error found at collection. An xdist worker that raised
    it would crash (an INTERNALERROR on the controller), so a worker collects nothing and hands
    the message to the controller, which raises it when the worker is done (``worker_said``)."""
    if hasattr(config, "workerinput"):
        config.workeroutput[USAGE_ERROR_OUTPUT] = message
        items[:] = []
        return
    raise pytest.UsageError(message)


def worker_said(node: Any) -> None:
    """On the controller: a worker's usage error, raised as the run's."""
    message = (getattr(node, "workeroutput", None) or {}).get(USAGE_ERROR_OUTPUT)
    if message:
        raise pytest.UsageError(message)


def check_engines(config: pytest.Config) -> list[str]:
    """The selected engine names, or a usage error."""
    names = selected_engines(config)
    if ENGINE_ERROR_KEY in config.stash:
        raise pytest.UsageError(config.stash[ENGINE_ERROR_KEY])
    return names


def session_of(config: pytest.Config):
    """The session, woken on first use."""
    session = active(config)
    if session is not None:
        return session
    from .session import RetrievalSession

    cfg = settings(config)
    config.stash[UNDO_KEY] = _process_changes()
    session = RetrievalSession(cfg, config)
    config.pluginmanager.register(session, SESSION_NAME)
    return session


def _process_changes() -> list:
    from .._lazy_torch import watch
    from .._secrets import install_log_redaction

    # a team's engine or pipeline that imports Haystack first gets it as the plugin's own code does
    # (no torch until a model runs, no NLTK until a sentence is split); kept for the process: it
    # acts on first imports only, and torch imported later is handed to what recorded it missing
    watch()
    undo = [install_log_redaction()]
    if TELEMETRY not in os.environ:
        # Haystack looks up its telemetry host on every pipeline run and waits ~1 s at exit when
        # it cannot reach it; a test run has no business sending telemetry.
        os.environ[TELEMETRY] = "False"
        undo.append(lambda: os.environ.pop(TELEMETRY, None))
    return undo


def sleep(config: pytest.Config) -> None:
    """Undo what waking changed (at unconfigure)."""
    for undo in reversed(config.stash.get(UNDO_KEY, [])):
        undo()
    config.stash[UNDO_KEY] = []
