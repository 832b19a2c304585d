"""Every run remembered (issue 31 items 1 and 2): ``--retrieval-history`` at three commits of a
team's repository, ``history`` and ``history trend``, a changed labeled set starting a new series,
and ``--retrieval-compare main`` judging a branch against main's merge-base record."""

from __future__ import annotations

import json
import re
import subprocess
import sys

import pytest

from conftest import REPO, results_text
from pytest_retrieval_eval.data.labeled import LabeledSet
from pytest_retrieval_eval.archive.history import History
from pytest_retrieval_eval.analysis.result import EvaluationResult
from pytest_retrieval_eval.evaluation.results import RunResults
from pytest_retrieval_eval.types import LabeledQuery, QueryResult

KB = REPO / "examples" / "helpdesk" / "kb"
ROWS = [("My internet tunnel to work keeps dropping at the hotel", "vpn-setup"),
        ("I forgot my login as a contractor", "password-reset"),
        ("Someone took my work computer from the car", "laptop-replacement"),
        ("Where do print jobs wait before I pick them up", "printer-queue"),
        ("A customer visiting tomorrow needs internet", "guest-wifi"),
        ("Who grants access to the team folder", "shared-drives")]
ENGINE = """
    import json
    from pathlib import Path

    GOLD = {q: d for q, d in json.loads(Path("gold.json").read_text())}
    MISS = int(Path("miss.txt").read_text())  # how many questions the engine gets wrong

    class Ours:
        name = "ours"

        def retrieve(self, query, k):
            wrong = list(GOLD).index(query) < MISS
            return ["nothing"] if wrong else [GOLD[query]]

    def pytest_retrieval_engines(registry, config):
        registry.register("ours", lambda request: Ours())
"""


def sh(cwd, *args: str) -> str:
    done = subprocess.run(args, cwd=cwd, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stdout + done.stderr
    return done.stdout.strip()


def cli(cwd, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "pytest_retrieval_eval", *args], cwd=cwd, capture_output=True,
                          text=True, timeout=120)


@pytest.fixture
def repo(pytester):
    import shutil
    import textwrap

    shutil.copytree(KB, pytester.path / "kb")
    (pytester.path / "labels.csv").write_text("question,doc_id\n" + "".join(f"{q},{d}\n" for q, d in ROWS))
    (pytester.path / "gold.json").write_text(json.dumps(ROWS))
    (pytester.path / "miss.txt").write_text("1")
    pytester.makeconftest(textwrap.dedent(ENGINE))
    pytester.makeini("[pytest]\nretrieval_corpus = kb\nretrieval_questions = questions.cache.json\n"
                     "retrieval_engines = ours keyword\nretrieval_history = retrieval-history\n")
    pytester.makepyfile("import pytest\n\n@pytest.mark.retrieval\ndef test_x(retrieval_results):\n    pass\n")
    assert cli(pytester.path, "label", "import", "labels.csv", "--corpus", "kb", "--questions",
               "questions.cache.json").returncode == 0
    for args in (("init", "-q", "-b", "main"), ("config", "user.email", "t@example.com"), ("config", "user.name", "t")):
        sh(pytester.path, "git", *args)
    (pytester.path / ".gitignore").write_text("retrieval-history/\n")
    sh(pytester.path, "git", "add", "-A")
    sh(pytester.path, "git", "commit", "-qm", "one")
    return pytester


def test_three_commits_three_records_a_trend_and_a_new_series(repo):
    commits = []
    for step in range(3):
        if step == 1:  # the engine changes: it now misses two questions
            (repo.path / "miss.txt").write_text("2")
        if step == 2:  # the labeled set changes: a new series
            rows = ROWS + [("How do I enrol a second factor", "mfa-enrolment")]
            (repo.path / "labels.csv").write_text("question,doc_id\n" + "".join(f"{q},{d}\n" for q, d in rows))
            (repo.path / "gold.json").write_text(json.dumps(rows))
            assert cli(repo.path, "label", "import", "labels.csv", "--corpus", "kb", "--questions",
                       "questions.cache.json").returncode == 0
        if step:
            sh(repo.path, "git", "commit", "-qam", f"step {step}")
        commits.append(sh(repo.path, "git", "rev-parse", "HEAD"))
        run = repo.runpytest("-m", "retrieval", *(["--retrieval-html=page.html"] if step == 2 else []))
        assert run.ret == 0, run.stdout.str()
        run.stdout.fnmatch_lines([f"retrieval: history: retrieval-history/*_{commits[-1][:12]}_*.json ({step + 1} record(s) in "
                                  "retrieval-history)"])
    page = (repo.path / "page.html").read_text()  # the page charts the history it was added to
    assert "Across commits" in page and page.count('class="point"') == 6
    listed = cli(repo.path, "history")
    assert listed.returncode == 0, listed.stderr
    lines = [line for line in listed.stdout.splitlines() if not line.startswith("  ")]  # a line per record
    assert [re.search(r"  ([0-9a-f]{10}) on main  ", l)[1] for l in lines] == [c[:10] for c in commits]
    assert listed.stdout.splitlines()[3] == ("  changed since the record before: labeled set questions.cache.json "
                                             "(1 added ('How do I enrol a second factor'))"), listed.stdout
    assert "ours hit@5 0.833" in lines[0] and "ours hit@5 0.667" in lines[1] and "ours hit@5 0.714" in lines[2]
    trend = cli(repo.path, "history", "trend", "--measure", "hit@5", "--out", "trend.svg")
    assert trend.returncode == 0, trend.stderr
    assert trend.stdout.strip() == "trend.svg: hit@5 over 3 record(s), 6 point(s) in 4 series"
    svg = (repo.path / "trend.svg").read_text()
    assert svg.count('class="point"') == 6  # three points per engine
    assert svg.count('class="new-series"') == 2  # the changed labeled set, for each engine
    assert "ours on questions.cache.json (new series)" in svg
    one = cli(repo.path, "history", "trend", "--engine", "ours", "--out", "ours.svg")
    assert one.stdout.strip() == "ours.svg: hit@5 over 3 record(s), 3 point(s) in 2 series"
    # bounded: the oldest records go
    again = repo.runpytest("-m", "retrieval", "--retrieval-history-keep=2")
    again.stdout.fnmatch_lines(["retrieval: history: * (2 record(s) in retrieval-history)"])


def test_a_branch_is_judged_against_mains_merge_base_and_a_planted_drop_fails(repo):
    assert repo.runpytest("-m", "retrieval").ret == 0  # main's record
    sh(repo.path, "git", "checkout", "-qb", "feature")
    (repo.path / "miss.txt").write_text("3")  # the branch plants a drop: three questions lost
    sh(repo.path, "git", "commit", "-qam", "worse")
    base = sh(repo.path, "git", "merge-base", "HEAD", "main")
    result = repo.runpytest("-m", "retrieval", "--retrieval-report", "-v", "--retrieval-compare=main",
                            "--retrieval-max-drop=ours:hit@5=0.1", "--retrieval-report-dir=out")
    out = result.stdout.str()
    assert result.ret == 1, out
    assert f"note: compared with main at {base[:10]} (history record " in out
    assert "ours: hit@5 0.8333 -> 0.5000 (-0.3333;" in out
    assert "FAIL retrieval gate: ours: hit@5 dropped 0.3333 (0.8333 -> 0.5000), more than 0.1" in out
    comment = cli(repo.path, "report", "comment", "out/results.json")
    assert comment.returncode == 1, comment.stderr
    text = comment.stdout
    assert text.startswith("<!-- pytest-retrieval-eval -->\n")
    assert "| ours ᵇ | questions.cache.json | 0.500 [0.188, 0.812] |" in text  # the table, with intervals
    assert "| ours | hit@5 | 0.8333 | 0.5000 | -0.3333 | [" in text  # the delta with its interval
    assert "**FAIL**" in text and "ours: hit@5 dropped 0.3333" in text  # the verdict
    assert "ours missed 3 of 6 at hit@5" in text  # why it missed
    nothing = repo.runpytest("-m", "retrieval", "--retrieval-compare=no-such-branch")
    assert nothing.ret == 1
    nothing.stdout.fnmatch_lines(["FAIL retrieval gate: --retrieval-compare no-such-branch: not a branch, tag or commit*"])
    sh(repo.path, "git", "commit", "-qm", "unrecorded", "--allow-empty")  # a commit no run has recorded
    missing = repo.runpytest("-m", "retrieval", "--retrieval-compare=HEAD")
    missing.stdout.fnmatch_lines(["FAIL retrieval gate: --retrieval-compare HEAD: no history record at its merge-base *"
                                  "run the eval on HEAD with --retrieval-history=retrieval-history first"])
    assert repo.runpytest("-m", "retrieval", "--retrieval-history=retrieval-history").ret == 0  # as printed
    found = repo.runpytest("-m", "retrieval", "--retrieval-compare=HEAD")
    assert found.ret == 0 and "note: compared with HEAD at " in found.stdout.str(), found.stdout.str()


@pytest.fixture
def branched(tmp_path):
    """A real repository: main at ``base``, a branch ``feature`` off it, then main moved on."""
    work = tmp_path / "repo"
    work.mkdir()
    for args in (("init", "-q", "-b", "main"), ("config", "user.email", "t@example.com"), ("config", "user.name", "t")):
        sh(work, "git", *args)
    (work / "f.txt").write_text("one")
    sh(work, "git", "add", "-A")
    sh(work, "git", "commit", "-qm", "one")
    base = sh(work, "git", "rev-parse", "HEAD")
    sh(work, "git", "checkout", "-qb", "feature")
    sh(work, "git", "commit", "-qm", "branch work", "--allow-empty")
    sh(work, "git", "checkout", "-q", "main")
    sh(work, "git", "commit", "-qm", "main moves on", "--allow-empty")
    tip = sh(work, "git", "rev-parse", "HEAD")
    sh(work, "git", "checkout", "-q", "feature")
    return work, base, tip


def _run(labeled_name: str = "questions.json", ids=("q1", "q2"), engine: str = "e") -> RunResults:
    labeled = LabeledSet(tuple(LabeledQuery(q, f"question {q}", {"g": 1}) for q in ids), name=labeled_name)
    return RunResults([EvaluationResult(engine, labeled, tuple(QueryResult(q, ("g",)) for q in ids))])


def test_a_branch_is_judged_against_the_record_at_its_merge_base_not_mains_newest(branched, tmp_path):
    from pytest_retrieval_eval.archive.history import compare_ref

    work, base, tip = branched
    history = History(tmp_path / "h")
    history.append(results_text(_run()), {"commit": base, "dirty": False}, now=1e9)
    history.append(results_text(_run()), {"commit": tip, "dirty": False}, now=2e9)  # main's newest
    record, said = compare_ref(history, "main", work)
    assert record is not None and record.commit == base, said
    assert f"at {base[:10]}" in said and tip[:10] not in said


def test_no_record_at_the_merge_base_is_said_and_mains_newest_is_not_used(branched, tmp_path):
    from pytest_retrieval_eval.archive.history import compare_ref

    work, base, tip = branched
    history = History(tmp_path / "h")
    history.append(results_text(_run()), {"commit": tip, "dirty": False}, now=2e9)  # only main's tip recorded
    record, said = compare_ref(history, "main", work)
    assert record is None
    assert f"no history record at its merge-base {base[:10]}" in said
    assert f"compared with main at" not in said


def test_another_jobs_record_at_the_merge_base_is_never_the_baseline(branched, tmp_path):
    from pytest_retrieval_eval.archive.history import compare_ref

    work, base, _ = branched
    history = History(tmp_path / "h")
    ours = _run("questions.json", ("q1", "q2"))
    other = _run("other-labels.json", ("x1", "x2", "x3"))  # another CI job: other labels
    history.append(results_text(ours), {"commit": base, "dirty": False}, now=1e9)
    history.append(results_text(other), {"commit": base, "dirty": False}, now=2e9)  # the newest at the merge-base
    record, said = compare_ref(history, "main", work, run=ours)
    assert record is not None and record.run().evaluations[0].labeled.name == "questions.json", said

    alone = History(tmp_path / "alone")
    alone.append(results_text(other), {"commit": base, "dirty": False}, now=2e9)
    record, said = compare_ref(alone, "main", work, run=ours)
    assert record is None
    assert f"at its merge-base {base[:10]}" in said
    assert "other-labels.json" in said and "questions.json" in said  # says why the record there is not this job's


def test_the_same_labeled_set_name_with_other_questions_is_another_job(branched, tmp_path):
    from pytest_retrieval_eval.archive.history import compare_ref

    work, base, _ = branched
    history = History(tmp_path / "h")
    history.append(results_text(_run("questions.json", ("x1", "x2", "x3"))), {"commit": base}, now=1e9)
    ours = _run("questions.json", ("q1", "q2"))
    record, said = compare_ref(history, "main", work, run=ours)
    assert record is None and "fingerprint" in said
    assert ": 2 added (q1, q2); 3 removed (x1, x2, x3); --retrieval-baseline-force compares" in said, said
    # this branch changed the labels: running the eval on main again would record the old ones again
    assert said.endswith("; a record of main made once these labels are merged into it compares"), said
    record, said = compare_ref(history, "main", work, run=ours, force=True)  # forced: the same set by name
    assert record is not None, said


def test_a_record_whose_quotes_differ_only_where_the_rule_does_not_look_is_this_jobs(branched, tmp_path):
    from pytest_retrieval_eval.archive.history import compare_ref

    def quoting(quote: str) -> RunResults:
        labeled = LabeledSet((LabeledQuery("q1", "how much is the plan", {"g": 1}, {"evidence": {"g": [quote]}}),
                              LabeledQuery("q2", "question q2", {"g": 1})), name="questions.json")
        return RunResults([EvaluationResult("e", labeled, tuple(QueryResult(q.query_id, ("g",)) for q in labeled))])

    work, base, _ = branched
    history = History(tmp_path / "h")
    history.append(results_text(quoting("The plan costs 5 euros a month")), {"commit": base}, now=1e9)
    record, said = compare_ref(history, "main", work, run=quoting("the plan costs 5 EUROS a month."))
    assert record is not None, said  # the same words: the same questions
    record, said = compare_ref(history, "main", work, run=quoting("The plan costs 15 euros a month"))
    assert record is None and "1 changed (q1 (evidence changed))" in said, said


def test_another_named_jobs_record_is_never_the_baseline(branched, tmp_path, monkeypatch):
    from pytest_retrieval_eval.archive.history import compare_ref

    work, base, _ = branched
    history = History(tmp_path / "h")
    monkeypatch.setenv("RETRIEVAL_EVAL_JOB", "nightly")
    history.append(results_text(_run()), {"commit": base}, now=1e9)
    monkeypatch.setenv("RETRIEVAL_EVAL_JOB", "pull-request")
    record, said = compare_ref(history, "main", work, run=_run())
    assert record is None and "job nightly" in said and "this job: pull-request" in said
    history.append(results_text(_run()), {"commit": base}, now=0.5e9)  # this job's, older
    record, said = compare_ref(history, "main", work, run=_run())
    assert record is not None and record.job.get("name") == "pull-request", said


def test_a_stray_json_in_the_history_folder_is_skipped_with_a_warning_and_the_page_written(repo):
    assert repo.runpytest("-m", "retrieval").ret == 0
    (repo.path / "retrieval-history" / "notes.json").write_text('{"owner": "search team"}')
    [record] = (repo.path / "retrieval-history").glob("2*.json")
    doc = json.loads(record.read_text())
    del doc["results"]["metrics"]  # a record cut short
    broken = record.with_name("20000101T000000.000000Z_0000000000_1_abcdef.json")
    broken.write_text(json.dumps(doc))
    result = repo.runpytest("-m", "retrieval", "--retrieval-html=page.html", "--retrieval-report-dir=out", "-v")
    out = result.stdout.str()
    assert result.ret == 0, out
    assert "INTERNALERROR" not in out
    assert (repo.path / "out" / "results.md").exists() and (repo.path / "page.html").exists()
    assert len(re.findall(r"warning: .*notes\.json.*not a history record", out)) == 1, out
    assert len(re.findall(rf"warning: .*{broken.name}.*left out of the trend", out)) == 1, out
    listed = cli(repo.path, "history")
    assert listed.returncode == 0 and "notes.json" in listed.stderr, listed.stderr


def test_compare_main_skips_another_ci_jobs_newer_record_and_catches_the_drop(repo):
    other = ROWS[3:] + [("How do I enrol a second factor", "mfa-enrolment")]
    (repo.path / "other.csv").write_text("question,doc_id\n" + "".join(f"{q},{d}\n" for q, d in other))
    assert cli(repo.path, "label", "import", "other.csv", "--corpus", "kb", "--questions", "other.json").returncode == 0
    (repo.path / "gold.json").write_text(json.dumps(ROWS + other))
    sh(repo.path, "git", "add", "-A")
    sh(repo.path, "git", "commit", "-qm", "a second job's labels")
    assert repo.runpytest("-m", "retrieval").ret == 0  # main, this job
    assert repo.runpytest("-m", "retrieval", "-o", "retrieval_questions=other.json").ret == 0  # main, another job
    sh(repo.path, "git", "checkout", "-qb", "feature")
    (repo.path / "miss.txt").write_text("3")  # the branch plants a drop
    sh(repo.path, "git", "commit", "-qam", "worse")
    result = repo.runpytest("-m", "retrieval", "--retrieval-compare=main", "--retrieval-max-drop=ours:hit@5=0.1")
    out = result.stdout.str()
    assert result.ret == 1, out
    assert "no baseline" not in out
    assert "FAIL retrieval gate: ours: hit@5 dropped 0.3333 (0.8333 -> 0.5000)" in out
    sh(repo.path, "git", "checkout", "-qb", "third", "main")
    (repo.path / "third.csv").write_text("question,doc_id\n" + "".join(f"{q},{d}\n" for q, d in ROWS[:2]))
    assert cli(repo.path, "label", "import", "third.csv", "--corpus", "kb", "--questions", "third.json").returncode == 0
    alone = repo.runpytest("-m", "retrieval", "-o", "retrieval_questions=third.json", "--retrieval-compare=main")
    alone.stdout.fnmatch_lines(["FAIL retrieval gate: --retrieval-compare main: no history record of this job at its "
                                "merge-base *third.json*"])


def test_a_forced_baseline_after_label_remove_is_paired_over_the_questions_both_hold(repo):
    assert repo.runpytest("-m", "retrieval", "--retrieval-save-baseline=base.json").ret == 0  # misses 1 of 6
    listed = cli(repo.path, "label", "list", "--corpus", "kb", "--questions", "questions.cache.json").stdout
    [first] = [line.split("\t")[0] for line in listed.splitlines() if line.endswith("\t" + ROWS[0][0])]
    assert cli(repo.path, "label", "remove", first, "--questions", "questions.cache.json").returncode == 0
    (repo.path / "miss.txt").write_text("2")  # the second question now misses too: hit -> miss
    result = repo.runpytest("-m", "retrieval", "--retrieval-baseline=base.json", "--retrieval-baseline-force",
                            "--retrieval-max-drop=ours:hit@5=0.1")
    out = result.stdout.str()
    assert result.ret == 1, out  # 5 of 6 then, 4 of 5 now: the means over different questions nearly agree
    assert "ours: hit@5 1.0000 -> 0.8000 (-0.2000;" in out
    assert "FAIL retrieval gate: ours: hit@5 dropped 0.2000 (1.0000 -> 0.8000)" in out
    assert ("ours on questions.cache.json: compared over the 5 questions both hold; 1 only in the baseline and "
            "0 only in this run left out") in out


def test_another_slices_record_is_never_the_baseline_and_forced_the_same_questions_come_first(branched, tmp_path):
    from pytest_retrieval_eval.archive.history import compare_ref

    work, base, _ = branched
    whole = _run("questions.json", ("q1", "q2", "q3", "q4")).evaluations[0]

    def sliced(i: int, n: int, questions=None) -> RunResults:
        labeled = (questions or whole.labeled).slice(i, n)
        return RunResults([EvaluationResult("e", labeled, tuple(QueryResult(q.query_id, ("g",)) for q in labeled.queries))])

    history = History(tmp_path / "h")
    history.append(results_text(sliced(2, 2)), {"commit": base}, now=1e9)  # the other job of the matrix
    record, said = compare_ref(history, "main", work, run=sliced(1, 2), force=True)
    assert record is None and "slice 2/2 of questions.json (this run: slice 1/2)" in said, said
    history.append(results_text(sliced(1, 2)), {"commit": base}, now=2e9)  # this job's
    edited = LabeledSet(whole.labeled.queries[1:], name="questions.json")  # q1 removed: slice 1/2 is q2, q4
    history.append(results_text(sliced(1, 2, edited)), {"commit": base}, now=3e9)  # newer, other questions
    record, said = compare_ref(history, "main", work, run=sliced(1, 2), force=True)
    assert record is not None and record.path.name.startswith("20330518"), said  # the same questions first


def test_a_subset_run_is_compared_with_mains_full_set_record_over_its_questions(repo):
    assert repo.runpytest("-m", "retrieval").ret == 0  # main's record, the full set
    ids = [q["id"] for q in json.loads((repo.path / "questions.cache.json").read_text())["queries"]]
    (repo.path / "subsets").mkdir()
    (repo.path / "subsets" / "pr.json").write_text(json.dumps({  # the first three: the branch misses them all
        "format": "pytest-retrieval-eval/subset", "version": 1, "name": "pr", "measure": "hit@5",
        "of_n": len(ids), "detectable_drop": {}, "ids": ids[:3]}))
    sh(repo.path, "git", "checkout", "-qb", "feature")
    (repo.path / "miss.txt").write_text("3")
    sh(repo.path, "git", "commit", "-qam", "worse")
    base = sh(repo.path, "git", "merge-base", "HEAD", "main")
    result = repo.runpytest("-m", "retrieval", "--retrieval-subset=pr", "--retrieval-compare=main",
                            "--retrieval-max-drop=ours:hit@5=0.1")
    out = result.stdout.str()
    assert result.ret == 1, out
    assert "no history record" not in out
    assert f"note: compared with main at {base[:10]}" in out
    assert ("FAIL retrieval gate: ours: hit@5 dropped 0.6667 (0.6667 -> 0.0000), more than 0.1, "
            "on subset 'pr' (3 of 6 questions)") in out, out
