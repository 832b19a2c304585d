"""Gates and baselines that pass (or fail) without saying what they judged. A rule
naming an engine that did not run fails by name on every path (serial, xdist, shards, the
``report`` command); a baseline judged on another as-of day says both days wherever freshness is
compared; ``report`` refuses per-trial data that does not match the labeled set, in one line."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from pytest_retrieval_eval.cli import main as cli

RETRIEVAL_TEST = """
    import pytest

    @pytest.mark.retrieval
    def test_q(retrieval_results):
        assert retrieval_results.n == 68

    def test_other():
        pass
"""
ENGINE_ONLY = """
    def test_engine_built(retrieval_engine):
        assert retrieval_engine is not None
"""
NO_RETRIEVAL = """
    def test_other():
        pass
"""
RULE = ["--retrieval-threshold", "hybrid:hit@5>=0.5"]  # registered (a built-in), not selected by the ini
NAMED = "FAIL retrieval gate: hybrid:hit@5>=0.5 (--retrieval-threshold): no evaluation of engine 'hybrid' was recorded*"


# --- 1. a rule naming an engine that did not run ---------------------------------------------

@pytest.mark.parametrize("tests, args", [
    (RETRIEVAL_TEST, ["-k", "other"]),  # the engine's test deselected
    (NO_RETRIEVAL, []),  # no retrieval test at all
    (ENGINE_ONLY, []),  # the engine was built but never evaluated
], ids=["deselected", "no-retrieval-test", "never-recorded"])
def test_a_rule_naming_an_engine_that_did_not_run_fails_by_name(bundled_project, tests, args):
    bundled_project.makepyfile(tests)
    result = bundled_project.runpytest(*args, *RULE)
    assert result.ret == pytest.ExitCode.TESTS_FAILED, result.stdout.str()
    result.stdout.fnmatch_lines([NAMED + "(evaluated: none)"])
    assert "not checked" not in result.stdout.str()


@pytest.mark.parametrize("extra", [[], ["--retrieval-shard"]], ids=["xdist", "xdist-shards"])
def test_under_xdist_and_shards_a_rule_naming_an_engine_that_did_not_run_fails(bundled_project, extra):
    bundled_project.makepyfile(RETRIEVAL_TEST)
    result = bundled_project.runpytest_subprocess("-p", "no:cacheprovider", "-n", "2", "-k", "other", *extra, *RULE)
    assert result.ret == pytest.ExitCode.TESTS_FAILED, result.stdout.str()
    result.stdout.fnmatch_lines([NAMED + "(evaluated: none)"])


def test_serial_shards_with_nothing_evaluated_fail_the_named_rule(bundled_project):
    bundled_project.makepyfile(RETRIEVAL_TEST)
    result = bundled_project.runpytest("-k", "other", "--retrieval-shard", *RULE)
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    result.stdout.fnmatch_lines([NAMED])


def test_a_max_drop_rule_naming_an_engine_that_did_not_run_fails(bundled_project, tmp_path):
    bundled_project.makepyfile(RETRIEVAL_TEST)
    base = tmp_path / "base.json"
    assert bundled_project.runpytest("-k", "test_q", f"--retrieval-save-baseline={base}").ret == 0
    result = bundled_project.runpytest("-k", "other", f"--retrieval-baseline={base}",
                                       "--retrieval-max-drop", "keyword:hit@5=0.02")
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    result.stdout.fnmatch_lines(["FAIL retrieval gate: max-drop rule keyword:hit@5=0.02 (from --retrieval-max-drop): "
                                 "engine 'keyword' was not compared with the baseline (compared: none)*"])


def test_the_report_command_fails_a_rule_naming_an_engine_the_file_does_not_hold(saved, tmp_path, capsys):
    doc = json.loads(json.dumps(saved))
    doc["evaluations"] = []
    path = tmp_path / "r.json"
    path.write_text(json.dumps(doc))
    assert cli(["report", str(path), "--threshold", "bm25:hit@5>=0.5"]) == 1
    assert "FAIL retrieval gate: bm25:hit@5>=0.5 (--threshold): no evaluation of engine 'bm25' was recorded " \
           "(evaluated: none)" in capsys.readouterr().out


# --- 1b. an engine name no engine has; a registered engine no selected test reads ------------

OWN = """
    from pathlib import Path

    class Bm25:
        name = "bm25"

        def retrieve(self, query, k):
            Path("asked.txt").write_text("asked")  # the engine ran
            return []

    def pytest_retrieval_engines(registry, config):
        registry.register("bm25", lambda request: Bm25())
"""


@pytest.mark.parametrize("args, said", [
    (["--retrieval-threshold", "bm52:hit@5>=0.1"], "threshold bm52:hit@5>=0.1 (from --retrieval-threshold) names "
                                                   "engine 'bm52', which no engine has; registered: keyword, "),
    (["--retrieval-max-drop", "bm52:hit@5=0.1", "--retrieval-baseline=base.json"],
     "max-drop rule bm52:hit@5=0.1 (from --retrieval-max-drop) names engine 'bm52', which no engine has; "),
    (["--retrieval-engine", "bm52"], "--retrieval-engine / retrieval_engines names unknown engine(s) bm52; "),
    (["--retrieval-threshold", "Keyword:hit@5>=0.1"], "names engine 'Keyword', which no engine has; "),
], ids=["threshold", "max-drop", "selection", "case"])
def test_an_engine_name_no_engine_has_is_a_usage_error_before_anything_runs(make_project, args, said):
    project = make_project(engines="keyword bm25", conftest=OWN, tests=RETRIEVAL_TEST)
    result = project.runpytest(*args)
    assert result.ret == pytest.ExitCode.USAGE_ERROR, result.stdout.str()
    err = [line for line in result.stderr.lines if line.strip()]
    assert len(err) == 1 and said in err[0], err
    assert "registered: keyword, " in err[0] and err[0].startswith("ERROR: "), err
    assert err[0].endswith("; did you mean keyword?" if "Keyword" in err[0] else "; did you mean bm25?"), err
    assert not (project.path / "asked.txt").exists()  # found before any engine was asked


def test_a_rule_on_an_unselected_engine_says_how_to_select_it(make_project):
    project = make_project(engines="keyword", conftest=OWN, tests=RETRIEVAL_TEST)
    result = project.runpytest("--retrieval-threshold", "bm25:hit@5>=0.1")
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    out = result.stdout.str()
    fail = "FAIL retrieval gate: bm25:hit@5>=0.1 (--retrieval-threshold): no evaluation of engine 'bm25' was recorded " \
           "(evaluated: keyword)\n"
    assert fail in out, out
    why = out.split(fail, 1)[1].replace("\n    ", " ").splitlines()[0]
    assert why == ("  why: bm25 is registered but not selected (selected: keyword): add it to retrieval_engines "
                   "(retrieval_engines = keyword bm25), or pass --retrieval-engine=bm25"), why


def test_a_rule_on_an_engine_no_selected_test_reads_names_the_tests_selected_and_what_to_add(make_project):
    project = make_project(engines="keyword bm25", conftest=OWN, tests=RETRIEVAL_TEST)
    result = project.runpytest("-k", "other", "--retrieval-threshold", "bm25:hit@5>=0.1")
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    out = result.stdout.str()
    assert "FAIL retrieval gate: bm25:hit@5>=0.1 (--retrieval-threshold): no evaluation of engine 'bm25' was " \
           "recorded (evaluated: none)" in out, out
    why = out.split("(evaluated: none)\n", 1)[1].replace("\n    ", " ").splitlines()[0]
    module = "test_a_rule_on_an_engine_no_selected_test_reads_names_the_tests_selected_and_what_to_add.py"
    assert why == (f"  why: no selected test reads the results of bm25 (selected: {module}::test_other); add a test "
                   f"that reads retrieval_results, or select one of those deselected: {module}::test_q[bm25]"), why
    # a max-drop rule on it says the same under its failure
    assert project.runpytest("--retrieval-save-baseline=base.json").ret == 0
    dropped = project.runpytest("-k", "other", "--retrieval-baseline=base.json", "--retrieval-max-drop=bm25:hit@5=0.1")
    out = dropped.stdout.str()
    assert dropped.ret == pytest.ExitCode.TESTS_FAILED, out
    assert "FAIL retrieval gate: max-drop rule bm25:hit@5=0.1 (from --retrieval-max-drop): engine 'bm25' was not " \
           "compared with the baseline" in out.replace("\n    ", " "), out
    assert "  why: no selected test reads the results of bm25 (selected: " in out.replace("\n    ", " "), out


# --- 2. a baseline judged on another as-of day -----------------------------------------------

BUNDLED = "import pytest\n\n@pytest.mark.retrieval\ndef test_runs(retrieval_results):\n    assert retrieval_results.n == 68\n"
DAYS = "freshness judged on different days (baseline as of 2025-06-01, this run as of 2026-11-30)"


@pytest.fixture
def old_baseline(bundled_project, tmp_path):
    bundled_project.makepyfile(BUNDLED)
    base = tmp_path / "base.json"
    assert bundled_project.runpytest("--retrieval-as-of=2025-06-01", f"--retrieval-save-baseline={base}").ret == 0
    return base


def test_a_freshness_drop_against_another_day_names_both_days_and_the_calendars_share(bundled_project, old_baseline):
    result = bundled_project.runpytest("--retrieval-as-of=2026-11-30", f"--retrieval-baseline={old_baseline}",
                                       "--retrieval-max-drop", "keyword:freshness.stale_free@5=0.01", "-v")
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    fail = next(l for l in result.stdout.lines if l.startswith("FAIL retrieval gate: keyword: freshness.stale_free@5"))
    # the engine did not change: the baseline's own rankings, judged on this run's day, score what the run does
    assert DAYS in fail and "the baseline's rankings score 0.8824 as of 2026-11-30: the day accounts for all " \
                            "of the drop" in fail, fail
    warning = next(l for l in result.stdout.lines if "compared across days" in l)
    assert "baseline as of 2025-06-01, this run as of 2026-11-30" in warning and len(warning) <= 300
    assert "--retrieval-as-of=2025-06-01" in warning


def test_other_measures_compare_as_usual_and_the_day_is_said_without_a_freshness_rule(bundled_project, old_baseline):
    result = bundled_project.runpytest("--retrieval-as-of=2026-11-30", f"--retrieval-baseline={old_baseline}",
                                       "--retrieval-max-drop", "keyword:hit@5=0.0", "-v")
    assert result.ret == 0, result.stdout.str()  # relevance does not depend on the day
    out = result.stdout.str()
    assert "compared across days" in out and "baseline as of 2025-06-01, this run as of 2026-11-30" in out
    same_day = bundled_project.runpytest("--retrieval-as-of=2025-06-01", f"--retrieval-baseline={old_baseline}",
                                         "--retrieval-max-drop", "keyword:freshness.stale_free@5=0.0")
    assert same_day.ret == 0 and "compared across days" not in same_day.stdout.str()


def test_the_report_command_names_both_days_too(bundled_project, old_baseline, tmp_path):
    out = tmp_path / "now"
    bundled_project.runpytest("--retrieval-as-of=2026-11-30", f"--retrieval-report-dir={out}")
    done = subprocess.run([sys.executable, "-m", "pytest_retrieval_eval", "report", str(out / "results.json"),
                           "--baseline", str(old_baseline), "--max-drop", "keyword:freshness.stale_free@5=0.01"],
                          capture_output=True, text=True)
    assert done.returncode == 1, done.stderr
    assert DAYS in done.stdout and "compared across days" in done.stdout


# --- 3. per-trial data that does not match the labeled set -----------------------------------

@pytest.fixture(scope="module")
def saved(tmp_path_factory):
    """A real results.json of keyword and oracle on the bundled set, three trials each."""
    from projects import saved_oracle_run

    return saved_oracle_run(tmp_path_factory.mktemp("saved"), BUNDLED, "--retrieval-trials=3")


def _last_id(doc, i=0):
    return doc["evaluations"][i]["queries"][-1]["id"]


def _rename(doc, i, new):
    old = doc["evaluations"][i]["queries"][0]["id"]
    doc["evaluations"][i]["queries"][0]["id"] = new
    return old


@pytest.mark.parametrize("edit, field, message", [
    (lambda d: d["evaluations"][1]["trial_rankings"][1].pop(), "evaluations[1].trial_rankings[1]",
     lambda d: f"oracle, trial 3: 67 rankings for 68 questions (none for '{_last_id(d, 1)}')"),
    (lambda d: d["evaluations"][0]["trial_rankings"][0].append([[], None]), "evaluations[0].trial_rankings[0]",
     lambda d: "keyword, trial 2: 69 rankings for 68 questions (one more than there are questions)"),
    (lambda d: d["evaluations"][0]["trial_rankings"].pop(), "evaluations[0].trial_rankings",
     lambda d: "keyword: 2 trials recorded, but 'trials' holds 3 per measure"),
    (lambda d: (d["evaluations"][0]["trial_rankings"].pop(), d["evaluations"][0].pop("trials")),
     "evaluations[0].trial_rankings", lambda d: "keyword: 2 trials, but oracle in the same file has 3"),
    (lambda d: [e["queries"].pop() for e in d["evaluations"]], "evaluations[0].queries",
     lambda d: "keyword: 67 questions, but labeled set questions.cache.json has 68"),
    (lambda d: [_rename(d, i, "made.up") for i in (0, 1)], "evaluations[0].queries",
     lambda d: "keyword: the questions do not make up labeled set questions.cache.json"),
    (lambda d: d["evaluations"][0]["run_lint"]["empty"].append("made.up"), "evaluations[0].run_lint.empty",
     lambda d: "keyword: unknown query id 'made.up' (not in labeled set questions.cache.json)"),
], ids=["short-trial", "long-trial", "trial-dropped", "fewer-trials-than-another-engine", "fewer-queries",
        "unknown-id", "run-lint-unknown-id"])
def test_report_refuses_per_trial_data_that_does_not_fit_the_labeled_set(saved, tmp_path, capsys, edit, field, message):
    path = tmp_path / "results.json"
    path.write_text(json.dumps(saved))
    assert cli(["report", str(path)]) == 0, capsys.readouterr()  # as saved, the file is read
    doc = json.loads(json.dumps(saved))
    edit(doc)
    path.write_text(json.dumps(doc))
    capsys.readouterr()
    code = cli(["report", str(path)])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and len(err) == 1, err
    assert err[0].startswith(f"error: {path}: field '{field}': {message(doc)}"), err[0]


def test_an_id_one_engine_holds_and_the_other_does_not_is_named(saved, tmp_path, capsys):
    doc = json.loads(json.dumps(saved))
    old = _rename(doc, 1, "made.up")
    path = tmp_path / "results.json"
    path.write_text(json.dumps(doc))
    assert cli(["report", str(path)]) == 2
    err = capsys.readouterr().err
    assert "hold different queries (68 and 68) for the same labeled set" in err
    assert f"oracle lacks '{old}' and holds 'made.up', which keyword does not" in err

