"""The suite's lanes: which tests a run takes, chosen by marker, with the folders as tiers.

Every test is marked with its tier (its folder), with ``slow`` where a rule below says so, and,
in the system tier, with what it needs. The markers put each test in exactly one lane:

    inner      unit and not slow        pure and fast: the inner loop, what a bare ``pytest`` runs
    unit-slow  unit and slow            pure, but against oracles, in real time or importing frameworks
    plugin     plugin                   the plugin run as a user runs it, no PostgreSQL, no model
    postgres   system and postgres      a real PostgreSQL + pgvector, plumbing on the model-free embedder
    model      system and model         the real MiniLM (ONNX Runtime or torch), its export, its cache
    browser    system and browser       Chromium driving the HTML page
    packaging  system and packaging     builds and installs: the wheel, the sdist, the docs site, the action

(a system test that needs several is in the last of ``postgres < model < browser < packaging``
it needs). ``pytest --lane NAME`` runs a lane (repeatable), ``pytest --lane all`` every lane, as
``.ci/run`` does. A bare ``pytest``, naming no path, no ``-m``, no ``-k`` and no ``--lane``, runs
``inner``, on every core (``-n auto``; ``-n 0`` for one process); naming anything runs what was
named, so ``pytest -m retrieval --retrieval-report`` (the bundled eval) and
``pytest tests/system/test_store.py`` are what they always were.

``slow`` is applied by rule, never remembered by hand (``SLOW_RULES``), from what a test asks for
and what it, its module's helpers and its fixtures use: an inner pytest run, a real component
(the system tier), an oracle (an independent implementation: pytrec_eval, ir_measures, ranx,
scipy, statsmodels), real time (a local server, a timeout, a sleep) and a framework whose import
alone takes a second. A test that falls in no lane (a system test that names no need) fails at
setup, saying which markers would place it.
"""

from __future__ import annotations

import functools
import re
import types
from pathlib import Path
from typing import Callable

import pytest

TESTS = Path(__file__).resolve().parent

TIERS = {
    "unit": "pure: no process, no pytester, no PostgreSQL, no model (its fast part is the inner loop)",
    "plugin": "the plugin run as a user runs it (pytester, its processes): keyword and own engines, no PostgreSQL",
    "system": "PostgreSQL, the embedding model, the browser, the example project, package installs",
}
#: what a system test needs, in the order that places a test needing several in the last lane
NEEDS = {
    "postgres": "a real PostgreSQL + pgvector (the embedded server, or one of the test's own)",
    "model": "the real MiniLM (ONNX Runtime or torch), its export or its cache",
    "browser": "Chromium",
    "packaging": "builds or installs: the wheel, the sdist, a venv, the docs site, the GitHub action's checks",
}
LANES = {
    "inner": "unit and not slow: pure and fast, the inner loop (a bare `pytest`)",
    "unit-slow": "unit and slow: pure, but against oracles, in real time or importing frameworks",
    "plugin": "plugin: the plugin run as a user runs it (pytester, its processes), no PostgreSQL, no model",
    "postgres": "system and postgres and not (model or browser or packaging)",
    "model": "system and model and not (browser or packaging)",
    "browser": "system and browser and not packaging",
    "packaging": "system and packaging",
}
DEFAULT_LANE = "inner"
OTHER_MARKERS = {
    "slow": "applied by rule (tests/lanes.py SLOW_RULES): an inner pytest run, a real component, an oracle, "
            "real time, a framework's import",
    "dataset(name)": "reads a dataset outside the repository (RETRIEVAL_TESTS_DATASETS, tests/shared_datasets.py); "
                     "skipped where it is absent, a failure under CI",
}

#: libraries that compute what the plugin computes, independently: a test that uses one (itself,
#: through a helper of its module or through a fixture) is checked against an oracle
ORACLES = frozenset({"pytrec_eval", "ir_measures", "ranx", "statsmodels", "scipy"})
#: what waits out real time: a local server of the tests' own (its latency, its timeouts), sleeps,
#: waits on threads and events
REAL_TIME = frozenset({"FakeApi", "OneAtATime", "json_server", "sleep", "wait", "wait_for"})
#: frameworks whose first import alone takes a second or more (the adapters' real counterparts)
FRAMEWORKS = frozenset({"llama_index", "langchain_core", "haystack", "haystack_integrations"})


_DOTTED = re.compile(r"[A-Za-z_]\w*(\.[A-Za-z_]\w*)*")


def _function(item: pytest.Item) -> Callable | None:
    fn = getattr(item, "function", None)
    inner = getattr(getattr(fn, "hypothesis", None), "inner_test", None)  # a @given test's own body
    return inner or fn


def _codes(code: types.CodeType):
    yield code
    for const in code.co_consts:
        if isinstance(const, types.CodeType):
            yield from _codes(const)


@functools.lru_cache(maxsize=None)
def _names_reached(fn: Callable) -> frozenset[str]:
    """The global names ``fn`` uses, and those of the functions of its own module it calls, to
    any depth: what the test reaches, helpers included."""
    module = getattr(fn, "__module__", None)
    seen: set[str] = set()
    todo = [fn]
    done: set[int] = set()
    while todo:
        f = todo.pop()
        code = getattr(f, "__code__", None)
        if code is None or id(code) in done:
            continue
        done.add(id(code))
        for c in _codes(code):
            # a module named in a string (``pytest.importorskip("statsmodels.stats")``) counts as used
            named = [k.split(".")[0] for k in c.co_consts if isinstance(k, str) and _DOTTED.fullmatch(k)]
            for name in (*c.co_names, *named):
                if "." in name:  # ``from scipy.stats import kendalltau`` names "scipy.stats"
                    seen.add(name.split(".")[0])
                seen.add(name)
                target = getattr(f, "__globals__", {}).get(name)
                if isinstance(target, types.FunctionType) and target.__module__ == module:
                    todo.append(target)
                elif isinstance(target, types.ModuleType):
                    seen.add(target.__name__.split(".")[0])
    return frozenset(seen)


@functools.lru_cache(maxsize=None)
def _names_of(functions: tuple[Callable, ...]) -> frozenset[str]:
    return frozenset().union(*(_names_reached(f) for f in functions))


def _reaches(item: pytest.Item, names: frozenset[str]) -> bool:
    """Whether the test, a helper of its module, or one of its fixtures uses one of ``names``."""
    fixtures = getattr(item, "_fixtureinfo", None)
    defs = [d.func for ds in (fixtures.name2fixturedefs.values() if fixtures else ()) for d in ds]
    return not names.isdisjoint(_names_of(tuple(f for f in [_function(item), *defs] if f is not None)))


def tier_of(path: Path) -> str | None:
    return _tier_of(str(path))


@functools.lru_cache(maxsize=None)
def _tier_of(path: str) -> str | None:
    """Per file, once: resolving every item's path (three times each) took 0.5 s of each
    collection of the suite's 1,650 tests (each xdist worker's, and the README's ``pytest -m retrieval``)."""
    resolved = Path(path).resolve()
    rel = resolved.relative_to(TESTS) if resolved.is_relative_to(TESTS) else None
    return rel.parts[0] if rel is not None and len(rel.parts) > 1 and rel.parts[0] in TIERS else None


#: why a test is slow: (what the rule says, the rule)
SLOW_RULES: tuple[tuple[str, Callable[[pytest.Item], bool]], ...] = (
    ("an inner pytest run (asks for pytester)", lambda item: "pytester" in getattr(item, "fixturenames", ())),
    ("a real component (the system tier)", lambda item: tier_of(item.path) == "system"),
    ("an oracle: an independent implementation to compare with", lambda item: _reaches(item, ORACLES)),
    ("real time: a local server, a timeout, a sleep", lambda item: _reaches(item, REAL_TIME)),
    ("a framework imported (Haystack, LangChain, LlamaIndex)", lambda item: _reaches(item, FRAMEWORKS)),
)


def why_slow(item: pytest.Item) -> str | None:
    return next((why for why, rule in SLOW_RULES if rule(item)), None)


def lane_of(item: pytest.Item) -> str | None:
    """The one lane ``item`` is in (its markers as ``mark`` has left them), or None."""
    names = {m.name for m in item.iter_markers()}
    if "unit" in names:
        return "unit-slow" if "slow" in names else "inner"
    if "plugin" in names:
        return "plugin"
    if "system" in names:
        return next((need for need in reversed(NEEDS) if need in names), None)
    return None


# --- hooks: a plugin of the suite's own (``pytest_plugins`` in tests/conftest.py) -------------------

def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption("--lane", action="append", choices=[*LANES, "all"], default=None,
                     help="run one lane of the suite (repeatable; 'all': every lane, as .ci/run does). A bare "
                          f"`pytest` runs {DEFAULT_LANE!r}: {LANES[DEFAULT_LANE]}")


@pytest.hookimpl(tryfirst=True)
def pytest_cmdline_main(config: pytest.Config) -> None:
    """A bare ``pytest`` runs the inner loop on every core, as ``-n auto`` (where pytest-xdist is
    installed and nothing asked for one process: ``-n 0``, ``--pdb``, ``--co``)."""
    if (config.option.lane is None and _names_nothing(config) and getattr(config.option, "numprocesses", 0) is None
            and config.pluginmanager.has_plugin("xdist") and not config.option.collectonly
            and not hasattr(config, "workerinput")):  # a worker: one of those made, never making more
        config.option.numprocesses = "auto"  # xdist's own pytest_cmdline_main, next, makes the workers


def pytest_configure(config: pytest.Config) -> None:
    for name, what in {**TIERS, **NEEDS, **OTHER_MARKERS}.items():
        config.addinivalue_line("markers", f"{name}: {what}")
    if config.option.lane is None and _names_nothing(config):
        config.option.lane = [DEFAULT_LANE]  # workers read the same arguments, so decide the same


def _names_nothing(config: pytest.Config) -> bool:
    """No path, no ``-m``, no ``-k``: the run asked for nothing in particular."""
    return (config.args_source != pytest.Config.ArgsSource.ARGS and not config.option.markexpr
            and not config.option.keyword and not getattr(config.option, "deselect", None))


def selected(config: pytest.Config) -> set[str] | None:
    """The lanes this run takes, or None for every test."""
    lanes = config.option.lane
    return None if not lanes or "all" in lanes else set(lanes)


def pytest_report_header(config: pytest.Config) -> str | None:
    lanes = selected(config)
    if lanes is None:
        return None
    default = config.option.lane == [DEFAULT_LANE] and _names_nothing(config)
    return (f"lanes: {', '.join(sorted(lanes))}"
            + (" (the default of a bare pytest; `pytest --lane all` runs every lane, tests/lanes.py lists them)"
               if default else ""))


def pytest_ignore_collect(collection_path: Path, config: pytest.Config) -> bool | None:
    """A tier folder no selected lane reads is not collected at all (the inner loop imports no
    plugin or system test module)."""
    lanes = selected(config)
    if lanes is None or collection_path.parent != TESTS or collection_path.name not in TIERS:
        return None
    tiers = {"unit" if lane in ("inner", "unit-slow") else "plugin" if lane == "plugin" else "system" for lane in lanes}
    return True if collection_path.name not in tiers else None


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Each item's tier and ``slow``; then the lanes not selected are deselected."""
    for item in items:
        tier = tier_of(item.path)
        if tier is not None:
            item.add_marker(tier)
            if why_slow(item) is not None:
                item.add_marker("slow")
    lanes = selected(config)
    if lanes is None:
        return
    keep, drop = [], []
    for item in items:
        (keep if lane_of(item) in lanes else drop).append(item)
    if drop:
        config.hook.pytest_deselected(items=drop)
        items[:] = keep


def pytest_runtest_setup(item: pytest.Item) -> None:
    """At setup: a test in no lane fails, naming what would place it."""
    if tier_of(item.path) is not None and lane_of(item) is None:
        pytest.fail(f"{item.nodeid} falls in no lane: a system test names what it needs "
                    f"(pytest.mark.{', pytest.mark.'.join(NEEDS)}; tests/lanes.py)", pytrace=False)
