"""A judge updated by its provider under the same name, caught by ``judge --recheck`` and then
said by every run that uses its grades (the bundled keyword engine, the tests' own chat server)."""

from __future__ import annotations

import json

from conftest import CORPUS
from fake_api import Reply, judge_reply, umbrela_grade
from projects import BUNDLED_TESTS
from pytest_retrieval_eval.cli import main as cli
from pytest_retrieval_eval.data.grades import is_judged_relevant
from pytest_retrieval_eval.data.judgments import Judgments


def test_a_run_using_a_drifted_judges_grades_warns_naming_the_judge_and_its_agreement(bundled_project, fake_api):
    p = bundled_project
    p.makepyfile(BUNDLED_TESTS)
    updated = []

    def grade(query: str, passage: str) -> int:
        g = umbrela_grade(query, passage)
        return (0 if is_judged_relevant(g) else 3) if updated else g

    fake_api.script("/chat/completions", Reply(200, judge_reply(grade)))
    model = "--retrieval-judge-model=judge-1"
    first = p.runpytest("-m", "retrieval", "--retrieval-judge", "--retrieval-judgments=j.jsonl", model,
                        "--retrieval-judge-depth=1", "--retrieval-report-dir=out")
    assert ") drifted: " not in first.stdout.str()
    judge = Judgments.load(p.path / "j.jsonl").current()
    updated.append(True)  # the provider updates judge-1 in place
    argv = ["judge", str(p.path / "out" / "results.json"), f"--corpus={CORPUS}", "--model=judge-1",
            f"--judgments={p.path / 'j.jsonl'}", "--recheck=20"]
    assert cli(argv) == 1
    again = p.runpytest("-m", "retrieval", "--retrieval-judgments=j.jsonl", "--retrieval-report-dir=out")
    text = " ".join(again.stdout.str().split())
    assert f"warning: judge judge-1 ({judge.fingerprint}) drifted: graded again on 20 of its stored pairs (" in text
    assert "it gave the same relevance on 0% of them, below 90%: the model changed under the same name" in text
    doc = json.loads((p.path / "out" / "results.json").read_text())
    assert any("drifted" in w for w in doc["analysis"]["warnings"]) and doc["judgments"]["recheck"]["pairs"] == 20
