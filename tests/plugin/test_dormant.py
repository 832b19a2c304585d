"""Installed but not asked: a project's plain test runs cost nothing beyond the entry point, the
option table and the fixtures' registration (no numpy, no Haystack, no process-wide changes),
and at most 1.05x the run without the plugin (issue 43; timed in ``bench/run.py --only=dormant``,
bounded here in Python calls, which a loaded machine does not change)."""

from __future__ import annotations

import json
import logging
import os
import re
import subprocess
import sys

import pytest

#: What loading the plugin may import: the entry point, its fixtures and option table, and the
#: small modules the table takes its defaults from.
ALLOWED = {
    "pytest_retrieval_eval", "pytest_retrieval_eval.plugin", "pytest_retrieval_eval.plugin.fixtures",
    "pytest_retrieval_eval.plugin.engines", "pytest_retrieval_eval.plugin.wake", "pytest_retrieval_eval.plugin.options",
    "pytest_retrieval_eval.plugin.roles", "pytest_retrieval_eval.plugin.hookspecs", "pytest_retrieval_eval.errors",
    "pytest_retrieval_eval._defaults",  # the option table's defaults, as plain values
}
HEAVY = ("numpy", "haystack", "httpx", "psycopg", "torch", "jinja2")


def imported_modules(pytester: pytest.Pytester, *args: str) -> set[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTEST_", "RETRIEVAL_EVAL_")) or k == "PYTEST_ADDOPTS"}
    proc = subprocess.run([sys.executable, "-X", "importtime", "-m", "pytest", "-p", "no:cacheprovider", *args],
                          cwd=pytester.path, capture_output=True, text=True, env=env, timeout=120)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return {m.group(1).strip() for m in re.finditer(r"^import time:\s+\d+ \|\s+\d+ \|\s+(.+)$", proc.stderr, re.M)}


def test_a_plain_test_run_imports_only_the_entry_point(pytester):
    pytester.makepyfile("def test_plain():\n    assert 1 + 1 == 2\n")
    modules = imported_modules(pytester)
    ours = {m for m in modules if m.startswith("pytest_retrieval_eval")}
    assert "pytest_retrieval_eval.plugin.options" in ours  # the plugin was loaded ...
    assert ours <= ALLOWED, sorted(ours - ALLOWED)  # ... and nothing else of it
    assert not [m for m in modules if m.split(".")[0] in HEAVY]


#: What checking an ini file's settings at start may import besides: the configuration, its
#: settings classes and the parsers of measures and rules (no engine, corpus, lint or cost module).
CHECK = {
    "pytest_retrieval_eval.plugin.config", "pytest_retrieval_eval._secrets", "pytest_retrieval_eval.rules",
    *(f"pytest_retrieval_eval.rules.{m}" for m in ("settings", "quantities", "thresholds", "drops", "shadows", "prices")),
    "pytest_retrieval_eval.ir",
    "pytest_retrieval_eval.ir.measures", "pytest_retrieval_eval.hybrid", "pytest_retrieval_eval.hybrid.settings",
    "pytest_retrieval_eval.hybrid.index", "pytest_retrieval_eval.data", "pytest_retrieval_eval.data.chunking",
    "pytest_retrieval_eval.hybrid.store", "pytest_retrieval_eval.hybrid.store.base",
}


def test_settings_in_the_ini_file_are_checked_at_start_with_the_settings_modules_alone(pytester):
    """The check of an ini file that configures the plugin runs in every run of the project,
    retrieval or not: it imported the engines, the corpus reader, lint and cost (90 ms of a 1.5 s
    run, 1.13x); it imports the settings and the parsers alone."""
    pytester.makeini("[pytest]\nretrieval_corpus = corpus\nretrieval_thresholds =\n    hit@5>=0.8\n    errors<=0\n"
                     "    latency.p95<=200ms\n    lint.truncated<=0\n    run.ties<=3\n")
    pytester.makepyfile("def test_plain():\n    assert 1 + 1 == 2\n")
    modules = imported_modules(pytester)
    ours = {m for m in modules if m.startswith("pytest_retrieval_eval")}
    assert "pytest_retrieval_eval.plugin.config" in ours  # the settings were checked ...
    assert ours <= ALLOWED | CHECK, sorted(ours - ALLOWED - CHECK)  # ... with nothing else of the plugin
    assert not [m for m in modules if m.split(".")[0] in HEAVY]
    pytester.makeini("[pytest]\nretrieval_thresholds = lint.nonsense<=0\n")
    assert "lint.nonsense" in pytester.runpytest_subprocess().stderr.str()  # and a bad rule is refused at start


def test_the_same_run_asking_for_retrieval_wakes_it(pytester):
    pytester.makepyfile("def test_plain():\n    assert 1 + 1 == 2\n")
    modules = imported_modules(pytester, "--retrieval-report")
    assert "pytest_retrieval_eval.plugin.session" in modules


def test_a_dormant_run_changes_nothing_in_the_process(pytester, monkeypatch):
    monkeypatch.delenv("HAYSTACK_TELEMETRY_ENABLED", raising=False)
    factory = logging.getLogRecordFactory()
    pytester.makepyfile(f"""
        import logging, os
        def test_plain():
            assert id(logging.getLogRecordFactory()) == {id(factory)}
            assert "HAYSTACK_TELEMETRY_ENABLED" not in os.environ
    """)
    result = pytester.runpytest()
    assert result.ret == 0
    assert logging.getLogRecordFactory() is factory


def test_waking_changes_are_undone_at_unconfigure(pytester, monkeypatch):
    monkeypatch.delenv("HAYSTACK_TELEMETRY_ENABLED", raising=False)
    factory = logging.getLogRecordFactory()
    pytester.makepyfile(f"""
        import logging, os
        def test_awake(retrieval_session):
            assert os.environ["HAYSTACK_TELEMETRY_ENABLED"] == "False"
            assert id(logging.getLogRecordFactory()) != {id(factory)}
    """)
    result = pytester.runpytest()
    assert result.ret == 0, result.stdout.str()
    assert logging.getLogRecordFactory() is factory
    assert "HAYSTACK_TELEMETRY_ENABLED" not in os.environ


def test_a_marked_test_without_fixtures_wakes_the_plugin(pytester):
    pytester.makepyfile("""
        import pytest
        @pytest.mark.retrieval
        def test_marked(request):
            assert request.config.pluginmanager.get_plugin("retrieval_session") is not None
    """)
    assert pytester.runpytest().ret == 0


#: counts, in the child, every Python call and those made on behalf of the plugin (while a frame
#: of its source is on the stack: its imports, hooks and whatever they call)
COUNTING = """
import json, sys
ours, counts, depth = sys.argv[1], {"all": 0, "ours": 0}, [0]
def profile(frame, event, arg):
    if event == "call":
        counts["all"] += 1
        if depth[0] or frame.f_code.co_filename.startswith(ours):
            counts["ours"] += 1
            depth[0] += 1
    elif event == "return" and depth[0]:
        depth[0] -= 1
sys.setprofile(profile)
import pytest
code = pytest.main(sys.argv[2:])
sys.setprofile(None)
print("CALLS " + json.dumps(counts))
sys.exit(code)
"""
#: on / off at most 1.05x: the plugin's share of the run's calls at most 1 - 1/1.05
SHARE = 1 - 1 / 1.05


def plain_suite(pytester: pytest.Pytester, files: int, tests: int = 20) -> None:
    """The bench's plain project: ``files`` files of ``tests`` plain tests."""
    for f in range(files):
        pytester.makepyfile(**{f"test_plain_{f}": "".join(
            f"def test_sum_{t}():\n    assert sum(range({t})) == {t * (t - 1) // 2}\n\n" for t in range(tests))})


def calls(pytester: pytest.Pytester, *args: str) -> dict:
    """Python calls of a plain run under pytest alone (no other plugin to dilute the share) with
    the plugin loaded: all of them, and the plugin's."""
    import pytest_retrieval_eval

    ours = os.path.dirname(pytest_retrieval_eval.__file__)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTEST_", "RETRIEVAL_EVAL_"))}
    env["PYTEST_DISABLE_PLUGIN_AUTOLOAD"] = "1"
    env.pop("PYTHONDONTWRITEBYTECODE", None)  # as a user's run: assertions rewritten once, not in every run
    command = [sys.executable, "-c", COUNTING, ours, "-q", "-p", "no:cacheprovider", "-p", "pytest_retrieval_eval.plugin", *args]
    for _ in range(2):  # the first run may rewrite and cache the test files' bytecode
        proc = subprocess.run(command, cwd=pytester.path, capture_output=True, text=True, env=env, timeout=120)
        assert proc.returncode == 0, proc.stdout + proc.stderr
    return json.loads(proc.stdout.rsplit("CALLS ", 1)[1])


def test_a_plain_run_spends_at_most_its_share_in_the_plugin(pytester):
    plain_suite(pytester, 10)  # 200 tests, as the bench runs
    counted = calls(pytester)
    assert 0 < counted["ours"] <= SHARE * counted["all"], counted


def test_the_plugin_does_next_to_nothing_per_test_when_dormant(pytester):
    plain_suite(pytester, 10)
    many = calls(pytester)
    few = calls(pytester, "test_plain_0.py")  # 20 of the 200
    ours, every = (many["ours"] - few["ours"]) / 180, (many["all"] - few["all"]) / 180
    assert ours <= 0.05 * every, (ours, every)
