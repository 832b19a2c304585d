"""Certainty at 0 and 1: a binary measure's interval keeps width at a perfect (or null) score, the
detectable drop is never 0 and the under-powered warning fires there too (both checked by
simulation); an engine whose factory raises, or a named engine with no evaluation, fails the gate."""

from __future__ import annotations


BROKEN = """
    def pytest_retrieval_engines(registry, config):
        def broken(request):
            raise RuntimeError("index server is down")
        registry.register("broken", broken)
"""
TESTS = """
    import pytest

    @pytest.mark.retrieval
    def test_hit(retrieval_results):
        assert retrieval_results.hit_at(5) >= 0
"""


def test_a_factory_that_raises_fails_the_gate_naming_the_engine(bundled_project):
    bundled_project.makeconftest(BROKEN)
    bundled_project.makepyfile(TESTS)
    result = bundled_project.runpytest("-m", "retrieval", "--retrieval-engine", "keyword",
                                       "--retrieval-engine", "broken")
    assert result.ret == 1
    out = result.stdout.str()
    assert "engine 'broken' could not be built: RuntimeError: index server is down" in out
    assert "retrieval gate: passed" not in out


def test_a_named_engine_with_no_evaluation_fails_the_gate_by_name(bundled_project):
    bundled_project.makeconftest(BROKEN.replace('raise RuntimeError("index server is down")',
                                                'return None'))
    bundled_project.makepyfile(TESTS)
    result = bundled_project.runpytest("-m", "retrieval", "-k", "keyword", "--retrieval-engine", "keyword",
                                       "--retrieval-engine", "broken")
    assert result.ret == 1
    assert ("engine 'broken' is named by --retrieval-engine / retrieval_engines but recorded no evaluation"
            in result.stdout.str())
