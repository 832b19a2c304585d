"""Bad configuration is a usage error that names the option and the value."""

from __future__ import annotations

import pytest


@pytest.mark.parametrize("args, message", [
    (["--retrieval-measures", "hit@5,bleu"], "unknown measure 'bleu'"),
    (["--retrieval-measures", "hit@0"], "the cutoff must be a whole number >= 1 (got 0)"),
    (["--retrieval-threshold", "hit@-1>=0.5"], "the cutoff must be a whole number >= 1 (got -1)"),
    (["--retrieval-threshold", "hit@5 is high"], "threshold 'hit@5 is high' (from --retrieval-threshold) does not parse"),
    (["--retrieval-depth", "0"], "--retrieval-depth / retrieval_depth must be a whole number >= 1, got '0'"),
    (["--retrieval-timeout", "-3"], "--retrieval-timeout / retrieval_timeout must be a positive number, got '-3.0'"),
    (["--retrieval-schema", "evil; DROP SCHEMA public"], "--retrieval-schema / retrieval_schema 'evil; DROP SCHEMA public' must be a plain identifier"),
    (["--retrieval-hybrid", "use_vector=maybe"], "hybrid setting use_vector must be true or false, got 'maybe'"),
    (["--retrieval-hybrid", "color=blue"], "hybrid setting 'color=blue' not understood"),
    (["--retrieval-split-overlap", "500"], "split settings need split_length >= 1 and 0 <= split_overlap < split_length"),
    (["--retrieval-alpha", "2"], "--retrieval-alpha / retrieval_alpha must be between 0 and 1"),
])
def test_bad_options(pytester, args, message):
    result = pytester.runpytest(*args)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert message in result.stderr.str()


def test_bad_ini_threshold_names_the_ini(pytester):
    pytester.makeini("[pytest]\nretrieval_thresholds =\n    mrr>=0.5\n    recall>=0.5\n")
    result = pytester.runpytest()
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert "threshold 'recall>=0.5' (from ini retrieval_thresholds): measure 'recall' needs a cutoff" in result.stderr.str()


def test_a_threshold_naming_an_engine_that_does_not_exist_is_a_usage_error(bundled_project):
    bundled_project.makepyfile("def test_x(retrieval_results):\n    pass\n")
    result = bundled_project.runpytest("--retrieval-threshold", "bm25:hit@5>=0.1")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert ("threshold bm25:hit@5>=0.1 (from --retrieval-threshold) names engine 'bm25', which no engine has; "
            "registered: keyword") in result.stderr.str()
