"""Aiming a test at some engines: ``@pytest.mark.retrieval(engine="NAME")`` parametrizes its
``retrieval_engine`` (and so ``retrieval_results``) with those engines only, so a floor meant for
one engine is not asserted of the metadata-only baseline too (plugin/__init__.py)."""

from __future__ import annotations

import pytest

TWO_ENGINES = """
    from pytest_retrieval_eval.engines.keyword import KeywordEngine

    class Oracle:
        name = "oracle"
        def __init__(self, labeled):
            self.gold = {q.question: list(q.relevant) for q in labeled}
        def retrieve(self, query, k):
            return self.gold[query][:k]

    def pytest_retrieval_engines(registry, config):
        registry.register("oracle", lambda request: Oracle(request.getfixturevalue("labeled_queries")))
"""

AIMED = """
    import pytest

    @pytest.mark.retrieval(engine="oracle")
    def test_oracle_floor(retrieval_results):
        assert retrieval_results.hit_at(5) >= 0.8

    @pytest.mark.retrieval
    def test_no_errors(retrieval_results):
        assert retrieval_results.n_errored == 0
"""


def test_a_test_aimed_at_one_engine_runs_for_that_engine_only(make_project):
    project = make_project(engines="oracle keyword", conftest=TWO_ENGINES, tests=AIMED)
    result = project.runpytest("-m", "retrieval", "-v")
    assert result.ret == 0, result.stdout.str()
    result.assert_outcomes(passed=3)
    out = result.stdout.str()
    assert "test_oracle_floor[oracle] PASSED" in out and "test_oracle_floor[keyword]" not in out
    assert "test_no_errors[oracle] PASSED" in out and "test_no_errors[keyword] PASSED" in out


def test_several_engines_and_a_module_wide_aim(make_project):
    project = make_project(engines="oracle keyword", conftest=TWO_ENGINES, tests="""
        import pytest

        pytestmark = pytest.mark.retrieval(engine=["keyword", "oracle"])

        def test_both(retrieval_results):
            assert retrieval_results.n > 0
    """)
    result = project.runpytest("-m", "retrieval", "-v")
    assert result.ret == 0, result.stdout.str()
    result.assert_outcomes(passed=2)


def test_an_aimed_engine_the_run_does_not_select_is_skipped_saying_so(make_project):
    project = make_project(engines="oracle keyword", conftest=TWO_ENGINES, tests=AIMED)
    result = project.runpytest("-m", "retrieval", "-rs", "--retrieval-engine=keyword")
    assert result.ret == 0, result.stdout.str()
    result.assert_outcomes(passed=1, skipped=1)
    result.stdout.fnmatch_lines(["*aimed at engine oracle, which this run does not select*"])


@pytest.mark.parametrize("marker, said", [('engine="oracel"', "unknown engine(s) oracel; registered: keyword, "),
                                          ('engines="oracle"', "engine=NAME")])
def test_a_misspelt_aim_is_a_usage_error_naming_the_test(make_project, marker, said):
    project = make_project(engines="oracle keyword", conftest=TWO_ENGINES, tests=f"""
        import pytest

        @pytest.mark.retrieval({marker})
        def test_floor(retrieval_results):
            assert retrieval_results.n > 0
    """)
    result = project.runpytest("-m", "retrieval")
    assert result.ret == pytest.ExitCode.USAGE_ERROR, result.stdout.str()
    err = result.stderr.str()
    assert "test_floor" in err and said in err, err
    assert "Traceback" not in err
