"""A judge's validation in a team's own run, against the tests' own chat server: a judge never
validated draws a warning with the command that validates it; once ``judge --validate`` stores a
failure, a rule on its grades fails the run by name on every surface (terminal first, results.json,
results.md, the comment, ``report``) unless --retrieval-allow-failed-judge (or its ini key) lets
it gate; several models' grades read as one panel by majority, their agreement said."""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys

import pytest

from conftest import CORPUS
from fake_api import Reply, judge_reply, umbrela_grade
from projects import BUNDLED_TESTS
from pytest_retrieval_eval.data.judges import Panel
from pytest_retrieval_eval.data.judgments import Judgments
from pytest_retrieval_eval.data.validation import load

RULE = "--retrieval-threshold=keyword:hit@5+judged>=0.1"


def by_model(request: dict) -> dict:
    """``lazy`` grades every document 0 (it fails validation); any other model as UMBRELA would."""
    return judge_reply((lambda q, p: 0) if request["model"] == "lazy" else umbrela_grade)(request)


@pytest.fixture
def project(bundled_project, fake_api):
    bundled_project.makepyfile(BUNDLED_TESTS)
    fake_api.script("/chat/completions", Reply(200, by_model))
    return bundled_project


def flat(text: str) -> str:
    """Terminal text with its wrapped lines joined (warnings wrap at the terminal's width)."""
    return " ".join(text.split())


def command(argv: list[str] | str) -> subprocess.CompletedProcess:
    args = shlex.split(argv) if isinstance(argv, str) else argv
    assert args[:3] == ["python", "-m", "pytest_retrieval_eval"] or args[0] != "python"
    if args[0] == "python":
        args = args[3:]
    return subprocess.run([sys.executable, "-m", "pytest_retrieval_eval", *args], capture_output=True, text=True,
                          timeout=120, env=os.environ.copy())


def test_a_judge_that_failed_validation_fails_the_runs_judged_rules_by_name_unless_allowed(project):
    p = project
    first = p.runpytest("-m", "retrieval", "--retrieval-judge", "--retrieval-judgments=j.jsonl",
                        "--retrieval-judge-model=lazy", "--retrieval-judge-depth=3", "--retrieval-report-dir=out", RULE)
    text = first.stdout.str()
    suggested = (f"python -m pytest_retrieval_eval judge out/results.json --validate --judgments=j.jsonl "
                 f"--corpus={shlex.quote(str(CORPUS))} --model=lazy")
    assert first.ret == 0, text
    assert "judge not validated: lazy (" in text and f"run `{suggested}`" in flat(text)
    # the command the warning prints, run as printed: the lazy judge fails the floor and it is stored
    validated = command(suggested)
    assert validated.returncode == 1, validated.stdout + validated.stderr
    judge = Judgments.load(p.path / "j.jsonl").current()
    assert f"judge {judge.fingerprint} FAILS the floor" in validated.stdout
    assert load(p.path / "j.validation.json")[judge.fingerprint]["passed"] is False

    failed = p.runpytest("-m", "retrieval", "--retrieval-judgments=j.jsonl", "--retrieval-report-dir=out", RULE,
                         "--retrieval-threshold=keyword:hit@5>=0.3", "--retrieval-report")
    out = failed.stdout.str()
    assert failed.ret == 1
    gate = [line for line in failed.stdout.lines if line.startswith("FAIL retrieval gate")]
    assert len(gate) == 1, gate  # the rule on the human labels passes; the judged one is not gated on its number
    assert gate[0].startswith(f"FAIL retrieval gate: judge lazy ({judge.fingerprint}) failed judge --validate (")
    assert "floor 0.4), so the rule(s) on its grades are not gated: keyword:hit@5+judged>=0.1;" in gate[0]
    assert f"validate it again with `{suggested}`, or gate on it anyway with --retrieval-allow-failed-judge" in gate[0]
    assert out.index("gate FAILED, 1 failure") < out.index("\nengine ")  # the verdict first
    doc = json.loads((p.path / "out" / "results.json").read_text())
    assert [f["kind"] for f in doc["verdict"]["failures"]] == ["judge"]
    assert doc["judgments"]["validation"]["passed"] is False
    assert f"judge lazy ({judge.fingerprint}) failed judge --validate" in (p.path / "out" / "results.md").read_text()
    comment = command(["report", "comment", str(p.path / "out" / "results.json")])
    assert comment.returncode == 1 and f"judge lazy ({judge.fingerprint}) failed judge --validate" in \
        "\n".join(comment.stdout.splitlines()[:12]), comment.stdout[:3000]
    again = command(["report", str(p.path / "out" / "results.json")])
    assert again.returncode == 1 and "FAIL retrieval gate: judge lazy" in again.stdout
    allowed_report = command(["report", str(p.path / "out" / "results.json"), "--allow-failed-judge"])
    assert allowed_report.returncode == 0, allowed_report.stdout
    assert "allowed by --retrieval-allow-failed-judge" in flat(allowed_report.stdout)

    for how in (["--retrieval-allow-failed-judge"], ["-o", "retrieval_allow_failed_judge=true"]):
        allowed = p.runpytest("-m", "retrieval", "--retrieval-judgments=j.jsonl", RULE, *how)
        said = flat(allowed.stdout.str())
        assert allowed.ret == 0, said
        assert ("keyword:hit@5+judged>=0.1 gated on the grades of judge lazy" in said
                and "allowed by --retrieval-allow-failed-judge" in said)


def test_a_run_reads_several_models_as_one_panel_and_says_how_they_agree(project, fake_api):
    p = project
    for model in ("judge-a", "judge-b", "judge-c"):
        assert p.runpytest("-m", "retrieval", "--retrieval-judge", "--retrieval-judgments=j.jsonl",
                           f"--retrieval-judge-model={model}", "--retrieval-judge-depth=3").ret == 0
    asked = len(fake_api.hits("/chat/completions"))
    panel = Panel(tuple(Judgments.load(p.path / "j.jsonl").judges(people=False)))
    result = p.runpytest("-m", "retrieval", "--retrieval-judge", "--retrieval-judgments=j.jsonl",
                         "--retrieval-judges=all", "--retrieval-judge-depth=3", "--retrieval-report-dir=out", "--retrieval-report",
                         "-v")
    text = result.stdout.str()
    assert result.ret == 0 and len(fake_api.hits("/chat/completions")) == asked  # each member had every grade
    doc = json.loads((p.path / "out" / "results.json").read_text())
    assert doc["judgments"]["judge"]["fingerprint"] == panel.fingerprint and doc["judgments"]["used"] > 0
    assert [m["model"] for m in doc["judgments"]["judge"]["panel"]] == ["judge-a", "judge-b", "judge-c"]
    text = flat(text)
    assert "judge a panel of 3 by majority (a tie to the lower grade): judge-a" in text
    # the server grades alike whatever model it is sent: the members agree on every pair
    assert "the panel's members: Fleiss' kappa" in text and "100% unanimous" in text
    assert "judge-a ~ judge-b" in text
    assert f"judge not validated: panel of 3 (judge-a, judge-b, judge-c) ({panel.fingerprint})" in text
    assert f"--judges={','.join(m.fingerprint for m in panel.members)}" in text
    rebuilt = command(["report", str(p.path / "out" / "results.json"), "-v"])
    assert rebuilt.returncode == 0 and "the panel's members: Fleiss' kappa 1.00" in flat(rebuilt.stdout)
    again = command(["report", str(p.path / "out" / "results.json"), "--judgments=j.jsonl",
                     f"--judges={panel.members[0].fingerprint[:8]},{panel.members[1].fingerprint}", "-v"])
    two = Panel(panel.members[:2])
    assert again.returncode == 0 and f"panel fingerprint {two.fingerprint}" in flat(again.stdout)
    alone = command(["report", str(p.path / "out" / "results.json"), "--judges=all"])
    assert alone.returncode == 2
    assert "--judges reads a panel of the judges of a judgments file: give --judgments=PATH too" in alone.stderr
