"""Engines that raise, hang, repeat themselves or invent ids: recorded, counted, gated."""

from __future__ import annotations

import time

import pytest

ENGINES = """
    import threading, time

    class Raising:
        name = "raising"
        def retrieve(self, query, k):
            raise ConnectionError("search backend refused the connection")

    class Flaky:
        name = "flaky"
        def retrieve(self, query, k):
            if "bike" in query:
                raise TimeoutError("upstream timeout")
            return ["battery-care"]

    class Hanging:
        name = "hanging"
        def retrieve(self, query, k):
            if "winter" in query:
                threading.Event().wait()  # never returns
            return ["winter-riding-tips"]

    class Sloppy:
        name = "sloppy"
        def retrieve(self, query, k):
            return ["battery-care", "battery-care", "made-up-doc", "battery-care", "ghost"]

    def pytest_retrieval_engines(registry, config):
        for cls in (Raising, Flaky, Hanging, Sloppy):
            registry.register(cls.name, lambda request, cls=cls: cls())
"""

TESTS = """
    import pytest

    pytestmark = pytest.mark.retrieval

    def test_quality(retrieval_results):
        assert retrieval_results.hit_at(20) >= 0.0
"""


@pytest.fixture
def project(make_project):
    return make_project(conftest=ENGINES, tests=TESTS)


def test_an_engine_that_always_raises_fails_the_run_and_says_why(project):
    result = project.runpytest("-m", "retrieval", "--retrieval-engine", "raising", "--retrieval-report",
                               "--retrieval-threshold", "errors<=0")
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    out = result.stdout.str()
    assert "FAIL retrieval gate: raising: errors = 68, required <= 0 (from --retrieval-threshold; n=68)" in out
    from conftest import parse_table
    assert parse_table(out)["raising"] == {**parse_table(out)["raising"], "hit@1": 0.0, "errored": 68.0}


def test_errors_are_misses_shown_in_the_errored_column(project):
    result = project.runpytest("-m", "retrieval", "--retrieval-engine", "flaky", "--retrieval-report")
    from conftest import parse_table
    row = parse_table(result.stdout.str())["flaky"]
    assert 0 < row["errored"] < 68


def test_a_hanging_engine_is_cut_off_by_the_timeout(project):
    start = time.perf_counter()
    result = project.runpytest_subprocess("-m", "retrieval", "--retrieval-engine", "hanging", "--retrieval-report",
                                          "--retrieval-timeout", "0.5", "--retrieval-report-dir=out", timeout=60)
    assert time.perf_counter() - start < 30
    assert result.ret == 0, result.stdout.str()
    from conftest import parse_table
    assert parse_table(result.stdout.str())["hanging"]["errored"] == 2  # both winter questions
    errors = [l for l in (project.path / "out" / "per_query.jsonl").read_text().splitlines() if "no answer within" in l]
    assert len(errors) == 2 and "no answer within 0.5s (--retrieval-timeout)" in errors[0]


def test_duplicates_are_dropped_and_unknown_ids_reported(project):
    result = project.runpytest("-m", "retrieval", "--retrieval-engine", "sloppy", "--retrieval-report",
                               "--retrieval-report-dir=out", "-v")
    assert result.ret == 0
    assert "unknown_ids=2 returned ids are not in the corpus, e.g. made-up-doc, ghost" in result.stdout.str().replace("\n    ", " ")
    import json
    row = json.loads((project.path / "out" / "per_query.jsonl").read_text().splitlines()[0])
    assert row["ranked"] == ["battery-care", "made-up-doc", "ghost"]


def test_a_failing_prepare_is_recorded_against_the_engine_and_shown(bundled_project):
    bundled_project.makeconftest("""
        class Unprepared:
            name = "unprepared"
            def prepare(self, questions):
                raise RuntimeError("embedding service unreachable while batching")
            def retrieve(self, query, k):
                return ["battery-care"]

        def pytest_retrieval_engines(registry, config):
            registry.register("unprepared", lambda request: Unprepared())
    """)
    bundled_project.makepyfile("""
        def test_x(retrieval_results):
            assert retrieval_results.engine_info["prepare_error"] == (
                "RuntimeError: embedding service unreachable while batching")
            assert retrieval_results.n_errored == 0  # the queries themselves still ran
    """)
    result = bundled_project.runpytest("--retrieval-engine", "unprepared", "--retrieval-report", "-v")
    assert result.ret == 0, result.stdout.str()
    assert "prepare_error=RuntimeError: embedding service unreachable while batching" in " ".join(result.stdout.str().split())
