"""Every run remembered (issue 31 items 1 and 2): ``--retrieval-history`` at three commits of a
team's repository, ``history`` and ``history trend``, a changed labeled set starting a new series,
and ``--retrieval-compare main`` judging a branch against main's merge-base record."""

from __future__ import annotations

import json
import re
import subprocess
import sys

import pytest

from conftest import REPO

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
    lines = listed.stdout.splitlines()
    assert [re.search(r"  ([0-9a-f]{10}) on main  ", l)[1] for l in lines] == [c[:10] for c in commits]
    assert "ours 0.833" in lines[0] and "ours 0.667" in lines[1] and "ours 0.714" in lines[2]
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
    result = repo.runpytest("-m", "retrieval", "--retrieval-report", "--retrieval-compare=main",
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
                                  "run the eval on HEAD with --retrieval-history retrieval-history first"])
