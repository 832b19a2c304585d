"""Gate rules that would pass without checking anything. A max-drop rule on an
engine that was not compared fails; the command line replaces the ini's rules (it wins, as the
README says); a rule that can never fail (or never pass) is a usage error."""

from __future__ import annotations

import pytest

TESTS = """
    import pytest

    pytestmark = pytest.mark.retrieval

    def test_q(retrieval_results):
        assert retrieval_results.n == 68
"""


@pytest.fixture
def project(make_project):
    return make_project(tests=TESTS)


def test_a_max_drop_rule_on_an_engine_that_never_ran_fails(project, tmp_path):
    base = tmp_path / "base.json"
    assert project.runpytest("-m", "retrieval", f"--retrieval-save-baseline={base}").ret == 0
    result = project.runpytest("-m", "retrieval", f"--retrieval-baseline={base}", "--retrieval-max-drop", "hybrid:hit@5=0.02")
    assert result.ret == pytest.ExitCode.TESTS_FAILED  # registered, not selected: no evaluation to compare
    result.stdout.fnmatch_lines(["FAIL retrieval gate: max-drop rule hybrid:hit@5=0.02 (from --retrieval-max-drop): engine "
                                 "'hybrid' was not compared with the baseline (compared: keyword), so the rule checked nothing"])
    ok = project.runpytest("-m", "retrieval", f"--retrieval-baseline={base}", "--retrieval-max-drop", "keyword:hit@5=0.02")
    assert ok.ret == 0


def test_the_command_line_replaces_the_ini_rules(project):
    ini = project.path / "tox.ini"
    ini.write_text(ini.read_text().rstrip() + "\nretrieval_thresholds =\n    mrr>=0.999\n")
    strict = project.runpytest("-m", "retrieval")
    assert strict.ret == pytest.ExitCode.TESTS_FAILED and "(from ini retrieval_thresholds" in strict.stdout.str()
    loosened = project.runpytest("-m", "retrieval", "--retrieval-threshold", "mrr>=0.1")
    assert loosened.ret == 0, loosened.stdout.str()
    out = loosened.stdout.str()
    assert "(from ini retrieval_thresholds" not in out and "retrieval gate: passed" in out  # replaced, not judged
    assert "note: --retrieval-threshold replaced 1 rule of tox.ini (mrr>=0.999)" in out  # and said


@pytest.mark.parametrize("rule, message", [
    ("hit@5>=-1", "can never fail: hit@5 takes values in [0, 1]"),
    ("hit@5>=0", "can never fail"),
    ("keyword:mrr<=1", "can never fail"),
    ("ndcg@10<1.5", "can never fail"),
    ("hit@5>1", "can never pass"),
    ("mrr>=1.2", "can never pass"),
    ("errors>=0", "can never fail: errors takes values in whole numbers >= 0"),
    ("lint.truncated<0", "can never pass"),
])
def test_a_rule_that_decides_nothing_is_a_usage_error(project, rule, message):
    result = project.runpytest("--retrieval-threshold", rule)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert f"threshold '{rule}' (from --retrieval-threshold) {message}" in result.stderr.str()


@pytest.mark.parametrize("rule", ["hit@5=1", "hit@5=2.5"])
def test_a_max_drop_that_can_never_fail_is_a_usage_error(project, tmp_path, rule):
    result = project.runpytest("--retrieval-max-drop", rule, f"--retrieval-baseline={tmp_path / 'b.json'}")
    assert result.ret == pytest.ExitCode.USAGE_ERROR and "can never fail" in result.stderr.str()


def test_edge_rules_that_do_decide_are_accepted(project):
    for rule in ("hit@5>=1", "mrr>0", "errors<=0", "lint.truncated<=0", "hit@5<1"):
        result = project.runpytest("-m", "retrieval", "--retrieval-threshold", rule)
        assert result.ret in (0, 1), (rule, result.stderr.str())


def test_rules_on_the_command_line_replace_the_ini_files_and_the_summary_says_so(pytester):
    from conftest import CORPUS, QUESTIONS

    pytester.makepyprojecttoml(f"""
        [tool.pytest.ini_options]
        retrieval_corpus = "{CORPUS}"
        retrieval_questions = "{QUESTIONS}"
        retrieval_engines = ["keyword"]
        retrieval_thresholds = ["hit@5>=0.999", "mrr>=0.999", "errors<=0"]
    """)
    pytester.makepyfile(TESTS)
    loosened = pytester.runpytest("-m", "retrieval", "--retrieval-threshold=hit@5>=0.1")
    out = loosened.stdout.str()
    assert loosened.ret == 0, out
    assert ("note: --retrieval-threshold replaced 3 rules of pyproject.toml (hit@5>=0.999, mrr>=0.999, errors<=0)"
            in out.replace("\n    ", " ")), out
    assert "retrieval gate: passed" in out
    alone = pytester.runpytest("-m", "retrieval", "-o", "retrieval_thresholds=")  # nothing replaced: nothing said
    assert "replaced" not in alone.stdout.str()
