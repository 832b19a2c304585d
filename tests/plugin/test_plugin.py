"""The plugin end to end, through pytester: table, gate, exit codes, assertion messages, xdist."""

from __future__ import annotations

import json
import re

import pytest

from conftest import parse_table

BUNDLED_TESTS = """
    import pytest

    pytestmark = pytest.mark.retrieval

    def test_hit_at_5(retrieval_results):
        assert retrieval_results.hit_at(5) >= 0.05

    def test_mrr(retrieval_results):
        assert retrieval_results.mrr() >= 0.05
"""


def table_lines(output: str) -> list[str]:
    lines = output.splitlines()
    start = next(i for i, line in enumerate(lines) if "retrieval evaluation" in line)
    out = []
    for line in lines[start + 1:]:
        if line.startswith(("=", "FAIL", "retrieval gate")) or line.split()[0].endswith(":"):
            break
        out.append(line.rstrip())
    return out


def test_marker_is_registered(pytester):
    result = pytester.runpytest("--markers")
    result.stdout.fnmatch_lines(["@pytest.mark.retrieval: a retrieval-quality evaluation*"])


def test_report_prints_a_keyword_row_with_hit_at_5_and_mrr(bundled_project):
    bundled_project.makepyfile(BUNDLED_TESTS)
    result = bundled_project.runpytest("-m", "retrieval", "--retrieval-report")
    result.assert_outcomes(passed=2)
    assert result.ret == 0
    header, row = table_lines(result.stdout.str())[:2]
    assert header.split() == ["engine", "hit@1", "hit@3", "hit@5", "hit@10", "hit@20", "mrr", "n", "errored"]
    cells = row.split()
    assert cells[0] == "keyword" and cells[-2:] == ["68", "0"]
    assert all(re.fullmatch(r"\d\.\d{3}", c) for c in cells[1:7])


def test_no_table_without_the_report_option(bundled_project):
    bundled_project.makepyfile(BUNDLED_TESTS)
    result = bundled_project.runpytest("-m", "retrieval")
    assert result.ret == 0
    assert "retrieval evaluation" not in result.stdout.str()


@pytest.mark.parametrize("how", ["cli", "ini"])
def test_a_breached_threshold_fails_the_run_and_names_the_breach(bundled_project, how):
    bundled_project.makepyfile(BUNDLED_TESTS)
    if how == "ini":
        ini = bundled_project.path / "tox.ini"
        ini.write_text(ini.read_text().rstrip() + "\nretrieval_thresholds =\n    hit@5>=0.1\n    mrr>=0.999\n")
        result = bundled_project.runpytest("-m", "retrieval")
        source = "ini retrieval_thresholds"
    else:
        result = bundled_project.runpytest("-m", "retrieval", "--retrieval-threshold", "mrr>=0.999")
        source = "--retrieval-threshold"
    result.assert_outcomes(passed=2)
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    result.stdout.fnmatch_lines([f"FAIL retrieval gate: keyword: mrr = 0.*, required >= 0.999 (from {source}; n=68)"])
    assert "hit@5" not in "\n".join(l for l in result.stdout.lines if l.startswith("FAIL"))


def test_a_met_threshold_passes(bundled_project):
    bundled_project.makepyfile(BUNDLED_TESTS)
    result = bundled_project.runpytest("-m", "retrieval", "--retrieval-threshold", "keyword:hit@20>=0.5",
                                       "--retrieval-threshold", "errors<=0")
    assert result.ret == 0
    result.stdout.fnmatch_lines(["retrieval gate: passed"])


def test_a_threshold_on_a_misspelt_engine_is_a_usage_error_naming_the_nearest(bundled_project):
    bundled_project.makepyfile(BUNDLED_TESTS)
    result = bundled_project.runpytest("-m", "retrieval", "--retrieval-threshold", "hybird:hit@5>=0.5")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["ERROR: threshold hybird:hit@5>=0.5 (from --retrieval-threshold) names engine 'hybird', "
                                 "which no engine has; registered: keyword*; did you mean hybrid?"])
    ran = bundled_project.runpytest("-m", "retrieval", "--retrieval-threshold", "hybrid:hit@5>=0.5")
    assert ran.ret == pytest.ExitCode.TESTS_FAILED  # registered, not selected: fails by name at the end
    ran.stdout.fnmatch_lines(["FAIL retrieval gate: hybrid:hit@5>=0.5 (--retrieval-threshold): no evaluation of engine "
                              "'hybrid' was recorded (evaluated: keyword)"])


@pytest.mark.parametrize(
    "rule, message",
    [
        ("mrr=>0.5", "threshold 'mrr=>0.5' (from --retrieval-threshold) does not parse"),
        ("hit@0>=0.5", "cutoff must be a whole number >= 1"),
        ("bleu>=0.5", "unknown measure 'bleu'"),
    ],
)
def test_a_bad_threshold_is_a_usage_error(bundled_project, rule, message):
    result = bundled_project.runpytest("--retrieval-threshold", rule)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert message in result.stderr.str()


def test_a_failed_assertion_explains_measure_value_sample_and_worst_misses(bundled_project):
    bundled_project.makepyfile(
        """
        import pytest

        @pytest.mark.retrieval
        def test_strict(retrieval_results):
            assert retrieval_results.hit_at(5) >= 0.99
        """
    )
    result = bundled_project.runpytest("-m", "retrieval")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines([
        "E       AssertionError: assert keyword: hit@5 = 0.*, expected >= 0.99 (n=68 queries, 0 errored, labeled set questions.cache.json)",
        "E         keyword missed 44 of 68 at hit@5: 30 ranked 6-22, 14 never a candidate",
        "E         worst-scoring queries on hit@5:",
        "E           * (hit@5=0.000) '*' gold: * (not retrieved; why: never a candidate (metadata leg: * others)); top 3: *",
    ])


def test_a_comparison_that_held_beside_one_that_failed_explains_no_miss(bundled_project):
    bundled_project.makepyfile(
        """
        import pytest

        @pytest.mark.retrieval
        def test_both(retrieval_results):
            assert retrieval_results.hit_at(5) >= 0.3 and retrieval_results.mrr() >= 0.9
        """
    )
    result = bundled_project.runpytest("-m", "retrieval", "-vv")
    result.assert_outcomes(failed=1)
    out = result.stdout.str()
    assert "keyword: hit@5 = 0.3529 >= 0.3 holds" in out, out  # said, and nothing of its misses
    assert "worst-scoring queries on hit@5" not in out and "at hit@5:" not in out, out
    assert "keyword: mrr = 0.2514, expected >= 0.9" in out and "worst-scoring queries on mrr" in out


ENGINES = ["--retrieval-engine", "keyword", "--retrieval-engine", "constant", "--retrieval-engine", "flaky"]
CUSTOM_ENGINES = """
    import pytest

    class Counting:
        calls = 0
        def __init__(self, name, fail_on=()):
            self.name, self.fail_on = name, fail_on
        def retrieve(self, query, k):
            type(self).calls += 1
            if any(word in query for word in self.fail_on):
                raise TimeoutError("backend did not answer")
            return ["returns-policy", "returns-policy", "battery-care"][:k]

    def pytest_retrieval_engines(registry, config):
        registry.register("constant", lambda request: Counting("constant"))
        registry.register("flaky", lambda request: Counting("flaky", fail_on=("bike",)))
"""


def test_engines_from_conftest_are_parametrized_evaluated_once_and_errors_counted(bundled_project):
    bundled_project.makeconftest(CUSTOM_ENGINES)
    bundled_project.makepyfile(
        """
        import pytest
        from conftest import Counting

        pytestmark = pytest.mark.retrieval

        def test_one(retrieval_results): retrieval_results.hit_at(1)
        def test_two(retrieval_results): retrieval_results.mrr()
        def test_three(retrieval_results): retrieval_results.ndcg_at(10)

        def test_calls_are_not_repeated():
            # two counting engines x 68 questions: each asked once, though three tests read the results
            assert Counting.calls == 2 * 68
        """
    )
    result = bundled_project.runpytest("-m", "retrieval", "--retrieval-report", "-v", *ENGINES)
    result.stdout.fnmatch_lines(["*test_one[[]keyword[]] PASSED*", "*test_one[[]constant[]] PASSED*", "*test_one[[]flaky[]] PASSED*"])
    result.assert_outcomes(passed=10)
    rows = parse_table(result.stdout.str())
    assert set(rows) == {"keyword", "constant", "flaky"}
    assert rows["constant"]["errored"] == 0
    assert rows["flaky"]["errored"] > 0  # errored queries are shown, and scored as misses
    assert rows["flaky"]["hit@5"] <= rows["constant"]["hit@5"]


def test_engine_selection_and_unknown_engine(bundled_project):
    bundled_project.makeconftest(CUSTOM_ENGINES)
    bundled_project.makepyfile(BUNDLED_TESTS)
    result = bundled_project.runpytest("-m", "retrieval", "--retrieval-engine", "constant", "-v")
    result.assert_outcomes(passed=2)
    assert "[keyword]" not in result.stdout.str()
    result = bundled_project.runpytest("-m", "retrieval", "--retrieval-engine", "nope")
    assert re.search(r"unknown engine\(s\) nope; registered: keyword, (hybrid, )?constant, flaky",
                     result.stdout.str() + result.stderr.str())  # hybrid where its extra is installed
    assert result.ret != 0


def test_empty_labeled_set_fails_the_gate(pytester, tmp_path):
    from conftest import CORPUS

    questions = tmp_path / "empty.json"
    questions.write_text(json.dumps({"format": "pytest-retrieval-eval/questions", "version": 1, "queries": []}))
    pytester.makeini(f"[pytest]\nretrieval_corpus = {CORPUS}\nretrieval_questions = {questions}\nretrieval_engines = keyword\n")
    pytester.makepyfile(
        """
        def test_runs(retrieval_results):
            assert retrieval_results.n == 0
        """
    )
    result = pytester.runpytest("--retrieval-report")
    result.assert_outcomes(passed=1)
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    result.stdout.fnmatch_lines(["FAIL retrieval gate: keyword: labeled set empty.json is empty; nothing was measured"])


def test_xdist_gives_the_same_table_and_exit_code(bundled_project):
    bundled_project.makeconftest(CUSTOM_ENGINES)
    bundled_project.makepyfile(BUNDLED_TESTS)
    args = ["-m", "retrieval", "--retrieval-report", "--retrieval-threshold", "mrr>=0.999", "-p", "no:cacheprovider", *ENGINES]
    serial = bundled_project.runpytest_subprocess(*args)
    parallel = bundled_project.runpytest_subprocess(*args, "-n", "2")
    assert serial.ret == parallel.ret == pytest.ExitCode.TESTS_FAILED
    assert "2 workers" in parallel.stdout.str()
    assert table_lines(serial.stdout.str()) == table_lines(parallel.stdout.str())
    assert set(parse_table(serial.stdout.str())) == {"keyword", "constant", "flaky"}
    fails = lambda r: sorted(l for l in r.stdout.lines if l.startswith("FAIL"))
    assert fails(serial) == fails(parallel) and len(fails(serial)) == 3


def test_a_worker_that_dies_makes_the_gate_fail(bundled_project):
    bundled_project.makepyfile(
        """
        import os
        import pytest

        @pytest.mark.retrieval
        def test_quality(retrieval_results):
            assert retrieval_results.hit_at(20) >= 0.1

        def test_crash():
            os._exit(3)
        """
    )
    result = bundled_project.runpytest_subprocess("-n", "2", "--retrieval-report", "-p", "no:cacheprovider")
    assert result.ret != 0
    result.stdout.fnmatch_lines(["FAIL retrieval gate: xdist worker gw* (crashed*); its retrieval results are missing"])


def test_an_unavailable_engine_says_why_when_asked_for(bundled_project):
    bundled_project.makeconftest(
        """
        def pytest_retrieval_engines(registry, config):
            registry.unavailable("fancy", "needs the fancy extra: pip install 'x[fancy]'")
        """
    )
    bundled_project.makepyfile(BUNDLED_TESTS)
    result = bundled_project.runpytest("-m", "retrieval", "--retrieval-report", "--retrieval-engine", "keyword")
    assert result.ret == 0
    result.stdout.fnmatch_lines(["engine fancy not available: needs the fancy extra*"])
    result = bundled_project.runpytest("-m", "retrieval", "--retrieval-engine", "fancy")
    assert result.ret != 0
    assert "engine 'fancy' is not available: needs the fancy extra" in result.stdout.str() + result.stderr.str()


OWN_ENGINE = """
    import json, os, sys

    class Mine:
        name = "mine"
        def __init__(self, labeled):
            self.gold = {q.question: q.gold[0] for q in labeled}
        def retrieve(self, query, k):
            return [self.gold[query]]

    def pytest_retrieval_engines(registry, config):
        registry.register("mine", lambda request: Mine(request.getfixturevalue("labeled_queries")))

    def pytest_sessionfinish(session):
        with open(os.environ["PROBE_FILE"], "w") as fh:
            json.dump({m: m in sys.modules for m in ("torch", "haystack", "psycopg")}, fh)
"""


def test_a_project_with_its_own_engine_runs_only_that_engine(pytester, tmp_path):
    from conftest import CORPUS, QUESTIONS

    pytester.makeini(f"[pytest]\nretrieval_corpus = {CORPUS}\nretrieval_questions = {QUESTIONS}\n")
    pytester.makeconftest(OWN_ENGINE)
    pytester.makepyfile(BUNDLED_TESTS)
    probe = tmp_path / "probe.json"
    result = _run_with_probe(pytester, probe, "-m", "retrieval", "--retrieval-report")
    assert result.returncode == 0, result.stdout + result.stderr
    assert "2 passed" in result.stdout
    assert set(parse_table(result.stdout)) == {"mine"}  # one row: keyword and hybrid were not asked for
    assert "not available" not in result.stdout
    assert json.loads(probe.read_text()) == {"torch": False, "haystack": False, "psycopg": False}
    # named, the built-ins run beside it
    named = _run_with_probe(pytester, probe, "-m", "retrieval", "--retrieval-report",
                            "--retrieval-engine", "mine", "--retrieval-engine", "keyword")
    assert set(parse_table(named.stdout)) == {"mine", "keyword"}


def _run_with_probe(pytester, probe, *args):
    import os
    import subprocess
    import sys

    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTEST_") or k == "PYTEST_ADDOPTS"}
    return subprocess.run([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", *args], cwd=pytester.path,
                          env={**env, "PROBE_FILE": str(probe)}, capture_output=True, text=True, timeout=300)


def test_an_unknown_engine_name_is_a_one_line_usage_error(bundled_project):
    bundled_project.makepyfile(BUNDLED_TESTS)
    result = bundled_project.runpytest("-m", "retrieval", "--retrieval-engine", "nosuch")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    err = result.stderr.str()
    assert "ERROR: --retrieval-engine / retrieval_engines names unknown engine(s) nosuch; registered: keyword" in err
    assert "Traceback" not in err + result.stdout.str() and "pluggy" not in err


SHARDED = """
    import pytest

    @pytest.mark.retrieval
    def test_the_gate_decides():
        pass
"""


def test_sharded_over_xdist_workers_the_same_table_results_and_exit_code(bundled_project, tmp_path):
    from projects import ORACLE_CONFTEST as CONFTEST

    bundled_project.makeconftest(CONFTEST)
    bundled_project.makepyfile(SHARDED)
    common = ["-p", "no:cacheprovider", "--retrieval-engine", "oracle", "--retrieval-engine", "keyword",
              "--retrieval-report"]
    serial = bundled_project.runpytest_subprocess(*common, f"--retrieval-report-dir={tmp_path / 'serial'}",
                                                  "--retrieval-threshold", "keyword:mrr>=0.5", "--retrieval-shard", "-v")
    sharded = bundled_project.runpytest_subprocess(*common, f"--retrieval-report-dir={tmp_path / 'sharded'}",
                                                   "--retrieval-threshold", "keyword:mrr>=0.5",
                                                   "-n", "2", "--retrieval-shard", "-v")
    assert serial.ret == sharded.ret == pytest.ExitCode.TESTS_FAILED  # the keyword floor is breached in both
    out = sharded.stdout.str()
    for share in ("oracle-1of2", "oracle-2of2", "keyword-1of2", "keyword-2of2"):
        assert re.search(rf"\[gw\d\] \[ *\d+%\] PASSED \S+::retrieval-shard\[{share}\]", out), share
    assert table_lines(serial.stdout.str()) == table_lines(out)
    for name in ("results.json", "results.md", "per_query.jsonl", "runs/oracle.trec", "runs/keyword.trec"):
        assert (tmp_path / "serial" / name).read_bytes() == (tmp_path / "sharded" / name).read_bytes(), name
    assert "FAIL retrieval gate: keyword: mrr = 0.2514, required >= 0.5" in out
