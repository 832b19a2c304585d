"""Installed but not asked: a project's plain test runs cost nothing beyond the entry point, the
option table and the fixtures' registration (no numpy, no Haystack, no process-wide changes)."""

from __future__ import annotations

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
    "pytest_retrieval_eval.types", "pytest_retrieval_eval._http", "pytest_retrieval_eval._secrets",
    "pytest_retrieval_eval._lazy_torch", "pytest_retrieval_eval.data", "pytest_retrieval_eval.data.chunking",
    "pytest_retrieval_eval.data.terms",  # the keyword engine's tokenizer, which the derived segments share
    "pytest_retrieval_eval.engines", "pytest_retrieval_eval.engines.base", "pytest_retrieval_eval.engines.hybrid",
    "pytest_retrieval_eval.engines.keyword", "pytest_retrieval_eval.hybrid", "pytest_retrieval_eval.hybrid.store",
    "pytest_retrieval_eval.hybrid.store.base", "pytest_retrieval_eval.ir", "pytest_retrieval_eval.ir.measures",
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
