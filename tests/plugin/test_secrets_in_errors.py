"""A recognisable fake key through the error paths that end in files and the terminal
(HTTP paths: test_embedders, test_http, test_generate, test_ingest_hybrid, test_plugin_hybrid)."""

from __future__ import annotations

import pytest

from conftest import FAKE_KEY, requires_hybrid


def test_an_engine_error_carrying_the_key_is_masked_everywhere(bundled_project, monkeypatch):
    monkeypatch.setenv("RETRIEVAL_EVAL_API_KEY", FAKE_KEY)
    bundled_project.makeconftest(
        """
        import logging, os

        class Leaky:
            name = "leaky"
            def retrieve(self, query, k):
                key = os.environ["RETRIEVAL_EVAL_API_KEY"]
                logging.getLogger("backend").error("request with key %s failed", key)
                raise PermissionError(f"401 for Authorization: Bearer {key}")

        def pytest_retrieval_engines(registry, config):
            registry.register("leaky", lambda request: Leaky())
        """
    )
    bundled_project.makepyfile(
        """
        def test_fails(retrieval_results):
            assert retrieval_results.hit_at(5) >= 0.5
        """
    )
    result = bundled_project.runpytest("--retrieval-engine", "leaky", "--retrieval-report", "--retrieval-report-dir=out",
                                       "--junitxml=junit.xml", "-rA", "--log-level=INFO")
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    everything = result.stdout.str() + result.stderr.str()
    for path in [*(bundled_project.path / "out").rglob("*"), bundled_project.path / "junit.xml"]:
        if path.is_file():
            everything += path.read_text()
    assert "Bearer ***" in everything  # the error was recorded, masked
    assert "request with key *** failed" in everything  # and the log line
    assert FAKE_KEY not in everything


@requires_hybrid
def test_a_dsn_password_stays_out_of_the_terminal(pytester):
    pytester.makepyfile("def test_x(pgvector_store):\n    pass\n")
    result = pytester.runpytest("--retrieval-store", "dsn",
                                "--retrieval-dsn=postgresql://app:s3cret-pw-991@/db?host=/nonexistent&port=5",
                                "-rA")
    out = result.stdout.str() + result.stderr.str()
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    assert "cannot connect to postgresql://app:***@/db" in out
    assert "s3cret-pw-991" not in out


@requires_hybrid
def test_a_dsn_that_does_not_parse_is_a_clear_error_and_its_password_is_masked_anyway(pytester):
    pytester.makepyfile("""
        import logging
        def test_x(pgvector_store):
            pass
        def test_later_output_is_masked_too():
            logging.getLogger("app").warning("retrying with " + "p4ss-w0rd" + "-zz9 once more")
            assert False
    """)
    result = pytester.runpytest("--retrieval-store", "dsn", "--retrieval-dsn=host=db password=p4ss-w0rd-zz9 =broken",
                                "-rA")
    out = result.stdout.str() + result.stderr.str()
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    assert "connection string 'host=db password=*** =broken' does not parse" in out
    assert "retrying with *** once more" in out  # registered for masking although the DSN never parsed
    assert "p4ss-w0rd-zz9" not in out
