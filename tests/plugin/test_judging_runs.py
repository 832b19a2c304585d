"""Judgments in a run and from the command line, against the tests' own deterministic judge (a
real local chat-completions server): --retrieval-judge fills the holes of the bundled keyword
engine, the table shows each measure beside its judged twin, rules gate either, the page marks
judged documents; `judge` resumes after SIGKILL and asks nothing twice; `judge --calibrate`
prints kappa and the confusion table; a baseline made with another judge is refused."""

from __future__ import annotations

import importlib.resources
import json
import os
import signal
import subprocess
import sys
import re
import time

import pytest

from conftest import CORPUS, FAKE_KEY, interruptible
from fake_api import FakeApi, Reply, judge_reply
from projects import BUNDLED_TESTS
from pytest_retrieval_eval.cli import main as cli
from pytest_retrieval_eval.data.judgments import Judgments


@pytest.fixture
def judged_project(bundled_project, fake_api):
    bundled_project.makepyfile(BUNDLED_TESTS)
    fake_api.script("/chat/completions", Reply(200, judge_reply()))
    return bundled_project


def test_a_run_judges_its_holes_shows_both_numbers_and_gates_either(judged_project, fake_api):
    p = judged_project
    # the test's server echoes the model it is sent: name it (unnamed, an echoing local server is refused)
    result = p.runpytest("-m", "retrieval", "--retrieval-report", "--retrieval-judge", "--retrieval-judgments=j.jsonl",
                         "--retrieval-judge-model=openai/gpt-4o-mini", "--retrieval-report-dir=out",
                         "--retrieval-html=page.html", "--retrieval-judge-depth=5",
                         "--retrieval-threshold=keyword:hit@5+judged>=0.99", "--retrieval-threshold=keyword:hit@5>=0.3",
                         "-v")
    text = result.stdout.str()
    asked = len(fake_api.hits("/chat/completions"))
    assert asked > 100 and f"j.jsonl: judged {asked} pair(s)" in text
    # each measure's judged twin in a table of its own under the table, the width kept
    header = next(line for line in text.splitlines() if line.startswith("engine"))
    twins = next(line for line in text.splitlines() if line.startswith("with the judgments"))
    assert "hit@5" in header.split() and "mrr" in header.split() and "+judged" not in header
    assert "hit@5" in twins.split() and "mrr" in twins.split()
    rows = [line for line in text.splitlines() if line.startswith(("engine", "with the judgments", "keyword ", "  95% CI"))]
    assert max(len(line) for line in rows) <= 100, max(rows, key=len)
    assert "keyword: hit@5 rests on a top 5 that is" in text and "% unjudged (0% with the judgments)" in text
    assert "judged@5 0.071 -> 1.000 with the judgments" in text
    assert "the judgments moved keyword most: hit@1" in text
    assert "FAIL retrieval gate: keyword: hit@5+judged = 0.7647, required >= 0.99" in text
    assert "FAIL retrieval gate: keyword: hit@5 " not in text  # the rule on the human labels passes
    # a miss whose top 5 holds a document the judge graded relevant: a hole, not a miss
    holes = re.search(r"^keyword missed 44 of 68 at hit@5: (\d+) judged relevant by the judge \(holes\)",
                      text.replace("\n    ", " "), re.M)
    assert holes and int(holes[1]) == round((0.7647 - 0.353) * 68), text
    assert result.ret == 1
    doc = json.loads((p.path / "out" / "results.json").read_text())
    assert doc["judgments"]["used"] == asked and doc["judgments"]["judge"]["model"] == "openai/gpt-4o-mini"
    assert "hit@5+judged" in doc["evaluations"][0]["summary"]
    assert any(q.get("judged") for q in doc["evaluations"][0]["queries"])
    import hashlib  # what the run used, by content: a later comparison says when the file differs

    assert doc["fingerprints"]["judgments"] == {"sha256": hashlib.sha256((p.path / "j.jsonl").read_bytes()).hexdigest()}
    page = (p.path / "page.html").read_text()
    assert 'class="judged-tag" data-grade="' in page and "What the labels judge" in page
    assert FAKE_KEY not in text + page + (p.path / "j.jsonl").read_text()
    again = p.runpytest("-m", "retrieval", "--retrieval-report", "--retrieval-judge", "--retrieval-judgments=j.jsonl",
                        "--retrieval-judge-model=openai/gpt-4o-mini", "--retrieval-judge-depth=5",
                        "--retrieval-threshold=keyword:hit@5+judged>=0.5", "-n", "2", "-v")
    assert len(fake_api.hits("/chat/completions")) == asked  # every pair is in the file: nothing asked
    assert f"judged 0 pair(s) with openai/gpt-4o-mini (0 call(s), 0.0 s), {asked} already in the file" in again.stdout.str()
    assert again.ret == 0
    rebuilt = cli_output(["report", str(p.path / "out" / "results.json"), "-v"])
    assert "hit@5+judged" in rebuilt and "the judgments moved keyword most" in rebuilt


def test_a_run_judges_at_a_local_server_one_pair_at_a_time_with_the_cap_it_is_given(judged_project, fake_api):
    result = judged_project.runpytest("-m", "retrieval", "--retrieval-judge", "--retrieval-judgments=j.jsonl",
                                      "--retrieval-judge-model=m", "--retrieval-judge-depth=1",
                                      "--retrieval-judge-max-tokens=48")
    text = result.stdout.str()
    hits = fake_api.hits("/chat/completions")
    assert result.ret == 0 and hits and {h.body["max_tokens"] for h in hits} == {48}
    assert fake_api.max_in_flight == 1  # the test's server answers side by side: the run sent one at a time
    assert "1 at a time (127.0.0.1 is a local or private server, which answers one request at a time" in text


def cli_output(argv: list[str]) -> str:
    done = subprocess.run([sys.executable, "-m", "pytest_retrieval_eval", *argv], capture_output=True, text=True,
                          timeout=60, env=os.environ.copy())
    return done.stdout + done.stderr


def test_judge_without_a_judgments_file_is_a_usage_error_naming_the_flag(judged_project):
    result = judged_project.runpytest("-m", "retrieval", "--retrieval-judge")
    assert result.ret == 4
    assert "--retrieval-judge writes its grades to a judgments file: give --retrieval-judgments=PATH" in \
        result.stderr.str()


def test_an_empty_judgments_file_fails_the_gate_by_name(judged_project):
    (judged_project.path / "j.jsonl").write_text("")
    result = judged_project.runpytest("-m", "retrieval", "--retrieval-judgments=j.jsonl")
    assert result.ret == 1
    result.stdout.fnmatch_lines(["*FAIL retrieval gate: judgments j.jsonl: the file holds no judgment*"])


def test_a_judgments_path_that_is_a_folder_fails_the_run_in_one_line_naming_it(judged_project):
    (judged_project.path / "jdir").mkdir()
    result = judged_project.runpytest("-m", "retrieval", "--retrieval-judgments=jdir")
    text = result.stdout.str() + result.stderr.str()
    assert result.ret in (1, 4) and "INTERNALERROR" not in text and "Traceback" not in text
    assert "--retrieval-judgments / retrieval_judgments names a file, and jdir is a folder" in text


def test_a_baseline_made_with_another_judge_is_refused_in_one_line(judged_project):
    p = judged_project
    first = p.runpytest("-m", "retrieval", "--retrieval-judge", "--retrieval-judgments=j.jsonl",
                        "--retrieval-judge-model=judge-a", "--retrieval-judge-depth=3", "--retrieval-save-baseline=base.json")
    assert first.ret == 0
    second = p.runpytest("-m", "retrieval", "--retrieval-judge", "--retrieval-judgments=j.jsonl",
                         "--retrieval-judge-model=judge-b", "--retrieval-judge-depth=3", "--retrieval-baseline=base.json",
                         "--retrieval-report", "--retrieval-report-dir=out", "--retrieval-html=page.html")
    assert second.ret == 1
    refused = [line for line in second.stdout.lines if line.startswith("FAIL retrieval gate: baseline refused")]
    assert len(refused) == 1
    assert "keyword: judged with another judge (judge-a, fingerprint" in refused[0]
    assert "-> judge-b, fingerprint" in refused[0] and "--retrieval-baseline-force" in refused[0]
    # every surface says refused, and none that the baseline was compared
    comment = cli_output(["report", "comment", str(p.path / "out" / "results.json"), "--baseline=base.json"])
    surfaces = {"terminal": second.stdout.str(), "results.md": (p.path / "out" / "results.md").read_text(),
                "page": (p.path / "page.html").read_text(), "comment": comment}
    for name, text in surfaces.items():
        assert "refused" in text, name
        assert "no measure moved" not in text and "measures moved" not in text, name
    assert "against the baseline: refused, nothing compared" in surfaces["terminal"]
    assert any("judged with another judge" in line for line in comment.splitlines()[:10]), comment[:2000]
    forced = p.runpytest("-m", "retrieval", "--retrieval-judgments=j.jsonl", "--retrieval-baseline=base.json",
                         "--retrieval-baseline-force")
    assert forced.ret == 0 and "compared although keyword: judged with another judge" in forced.stdout.str()


def test_a_baseline_judged_to_another_depth_notes_the_file_and_the_grades_that_differ(judged_project):
    p = judged_project
    judge = ("--retrieval-judge", "--retrieval-judgments=j.jsonl", "--retrieval-judge-model=judge-a")
    assert p.runpytest("-m", "retrieval", *judge, "--retrieval-judge-depth=2", "--retrieval-save-baseline=base.json").ret == 0
    before = Judgments.load(p.path / "j.jsonl")
    result = p.runpytest("-m", "retrieval", *judge, "--retrieval-judge-depth=3", "--retrieval-baseline=base.json")
    out = result.stdout.str().replace("\n    ", " ")
    assert result.ret == 0, out
    added = len(Judgments.load(p.path / "j.jsonl")) - len(before)
    assert added > 0
    note = next(line for line in out.splitlines() if "judgments on " in line)
    assert "differ from the baseline's: the judgments file differs (sha256 " in note, note
    assert re.search(rf"; grades {added} added \([^,/ ]+/[^,/ ]+, [^,]+, [^,]+ and {added - 3} more\)$", note), note


@pytest.fixture
def saved_run(bundled_project):
    """The bundled keyword engine's results.json, made by a real run."""
    bundled_project.makepyfile(BUNDLED_TESTS)
    assert bundled_project.runpytest("-m", "retrieval", "--retrieval-report-dir=out").ret == 0
    return bundled_project.path / "out" / "results.json"


def test_a_judge_killed_midway_keeps_what_it_finished_and_the_rerun_asks_only_the_rest(saved_run, tmp_path):
    jsonschema = pytest.importorskip("jsonschema")  # a failure under CI
    path = tmp_path / "judgments.jsonl"
    with FakeApi() as api:
        api.script("/chat/completions", Reply(200, judge_reply(), delay=0.02))
        env = {**os.environ, "RETRIEVAL_EVAL_BASE_URL": api.url, "RETRIEVAL_EVAL_API_KEY": FAKE_KEY}
        cmd = [sys.executable, "-m", "pytest_retrieval_eval", "judge", str(saved_run), "--corpus", str(CORPUS),
               "--judgments", str(path), "--model", "openai/gpt-4o-mini", "--depth", "5", "--concurrency", "2"]
        proc = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and (not path.exists() or path.read_text().count("\n") < 20):
            time.sleep(0.02)
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        kept = len(Judgments.load(path))
        asked_before = len(api.hits("/chat/completions"))
        assert kept >= 20 and asked_before >= kept
        done = subprocess.run(cmd[:-1] + ["8"], env=env, capture_output=True, text=True, timeout=120)  # 8 at a time
        assert done.returncode == 0, done.stdout + done.stderr
        pooled = int(done.stdout.split("pooled ")[1].split()[0])
        assert pooled > kept and f"{kept} already in the file, 0 failed" in done.stdout
        assert len(api.hits("/chat/completions")) - asked_before == pooled - kept
        assert "keyword: judged@5 0.071 -> 1.000" in done.stdout and "ndcg@10+judged" in done.stdout
    schema = json.loads(importlib.resources.files("pytest_retrieval_eval.data").joinpath(
        "judgments.schema.json").read_text())
    lines = path.read_text().splitlines()
    assert len(lines) == pooled
    for line in lines:
        jsonschema.validate(json.loads(line), schema)
    assert FAKE_KEY not in path.read_text() + done.stdout


def test_ctrl_c_stops_judge_at_once_while_calls_hang_and_keeps_every_finished_judgment(saved_run, tmp_path):
    path = tmp_path / "judgments.jsonl"
    with FakeApi() as api:  # five answers, then a server that never answers
        api.script("/chat/completions", *[Reply(200, judge_reply())] * 5, Reply(200, judge_reply(), delay=600))
        env = {**os.environ, "RETRIEVAL_EVAL_BASE_URL": api.url, "RETRIEVAL_EVAL_API_KEY": FAKE_KEY}
        cmd = [sys.executable, "-m", "pytest_retrieval_eval", "judge", str(saved_run), "--corpus", str(CORPUS),
               "--judgments", str(path), "--model", "m", "--concurrency", "2"]
        proc = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                **interruptible())
        try:
            deadline = time.monotonic() + 60
            while time.monotonic() < deadline and len(api.hits("/chat/completions")) < 7:  # two calls hang
                time.sleep(0.05)
            time.sleep(0.3)
            assert len(api.hits("/chat/completions")) == 7
            sent = time.monotonic()
            proc.send_signal(signal.SIGINT)
            out, err = proc.communicate(timeout=30)
            assert time.monotonic() - sent < 5
        finally:
            proc.kill()
            proc.wait()
    assert proc.returncode == 130 and "interrupted" in err and "Traceback" not in err + out
    assert len(Judgments.load(path)) == 5 and path.read_text().endswith("\n")


def test_calibrate_prints_kappa_the_confusion_table_and_the_engines_order(saved_run, tmp_path, fake_api, capsys):
    fake_api.script("/chat/completions", Reply(200, judge_reply()))
    path = tmp_path / "judgments.jsonl"
    assert cli(["judge", str(saved_run), "--corpus", str(CORPUS), "--judgments", str(path), "--calibrate",
                "--sample", "30", "--model", "openai/gpt-4o-mini"]) == 0  # a local server: the model named
    out = capsys.readouterr().out
    assert "calibration of openai/gpt-4o-mini" in out and "on 30 pairs the humans judged" in out
    assert "Cohen's kappa " in out and "human \\ judge     0     1     2     3" in out
    assert "engines by ndcg@10, human labels: keyword" in out
    assert len([j for j in Judgments.load(path) if j.kind == "calibration"]) == 30
    assert cli(["report", str(saved_run), "--judgments", str(path), "-v"]) == 0
    out = capsys.readouterr().out  # calibration alone fills no hole; the report says what the judge is worth
    assert "+judged: human labels with 0 judged hole(s)" in out and "Cohen's kappa" in out


def test_a_run_judging_at_a_server_that_only_echoes_the_model_name_says_to_name_it(judged_project):
    result = judged_project.runpytest("-m", "retrieval", "--retrieval-judge", "--retrieval-judgments=j.jsonl",
                                      "--retrieval-judge-depth=1")
    text = result.stdout.str() + result.stderr.str()
    assert result.ret != 0 and "INTERNALERROR" not in text and "Traceback" not in text
    assert "--retrieval-judge-model" in text or "--model" in text, text


def test_a_run_whose_judge_refuses_every_call_fails_naming_the_http_cause(bundled_project, fake_api):
    bundled_project.makepyfile(BUNDLED_TESTS)
    fake_api.script("/chat/completions", Reply(401, {"error": {"message": "invalid api key"}}))
    result = bundled_project.runpytest("-m", "retrieval", "--retrieval-judge", "--retrieval-judgments=j.jsonl",
                                       "--retrieval-judge-model=openai/gpt-4o-mini", "--retrieval-judge-depth=1")
    text = result.stdout.str()
    assert result.ret == 1 and "Traceback" not in text
    failure = next(line for line in text.splitlines() if line.startswith("FAIL retrieval gate: judgments j.jsonl"))
    assert failure.startswith("FAIL retrieval gate: judgments j.jsonl: the judge graded nothing: all ")
    assert "401" in failure and "no judge with fingerprint" not in text
