"""Prediction-powered measures in a run, as a team gets them: a judge fills the holes (the
tests' own local chat server), a person grades a worksheet of 30 questions, and the next run
shows each measure's ``~ppi`` estimate with its interval, says what it rests on and what it is
worth, gates a rule on its lower bound, and ``report results.json`` prints the same."""

from __future__ import annotations

import csv
import io
import json
import shlex

import pytest

from conftest import CORPUS
from fake_api import Reply, judge_reply, umbrela_grade
from projects import BUNDLED_TESTS
from pytest_retrieval_eval.cli import main as cli
from pytest_retrieval_eval.data.worksheet import COLUMNS, GRADE_COLUMN


def graded_worksheet(text: str) -> str:
    """The sheet as a person fills it: the judge's grade, but one grade in five is a step off (the
    person reads the passage otherwise than the judge)."""
    rows = list(csv.DictReader(io.StringIO(text.removeprefix("\ufeff"))))
    for i, row in enumerate(rows):
        grade = umbrela_grade(row["question"], f"{row['title']}\n{row['excerpt']}")
        row[GRADE_COLUMN] = (grade + 2) % 4 if i % 5 == 0 else grade
    out = io.StringIO()
    writer = csv.DictWriter(out, COLUMNS, lineterminator="\n")
    writer.writeheader()
    writer.writerows(rows)
    return out.getvalue()


@pytest.fixture
def worksheet_project(bundled_project, fake_api, capsys):
    """The bundled keyword engine judged by the local judge, then 30 questions graded by a person."""
    p = bundled_project
    p.makepyfile(BUNDLED_TESTS)
    fake_api.script("/chat/completions", Reply(200, judge_reply()))
    first = p.runpytest("-m", "retrieval", "--retrieval-judge", "--retrieval-judgments=j.jsonl",
                        "--retrieval-judge-model=openai/gpt-4o-mini", "--retrieval-report-dir=first")
    assert first.ret == 0, first.stdout.str()
    saved = str(p.path / "first" / "results.json")
    sheet = p.path / "sheet.csv"
    assert cli(["judge", saved, "--corpus", str(CORPUS), "--judgments", str(p.path / "j.jsonl"), "--worksheet=30",
                f"--worksheet-file={sheet}"]) == 0
    sheet.write_text(graded_worksheet(sheet.read_text(encoding="utf-8-sig")), encoding="utf-8")
    printed = next(line for line in capsys.readouterr().out.splitlines() if line.startswith("when filled: "))
    # the import as printed: with the corpus its rows' documents are checked against
    assert cli(shlex.split(printed.removeprefix("when filled: python -m pytest_retrieval_eval "))) == 0
    assert "recorded" in capsys.readouterr().out
    return p


def test_a_run_with_a_worksheet_shows_ppi_estimates_says_what_they_rest_on_and_gates_their_bound(worksheet_project):
    p = worksheet_project
    result = p.runpytest("-m", "retrieval", "--retrieval-report", "--retrieval-judgments=j.jsonl", "--retrieval-report-dir=out",
                         "--retrieval-html=out/page.html", "--retrieval-confidence=lower",
                         "--retrieval-threshold=keyword:hit@5~ppi>=0.8", "--retrieval-threshold=keyword:ndcg@10~ppi>=0.2",
                         "-v")
    text = result.stdout.str()
    flat = text.replace("\n    ", " ")
    twins = next(line for line in text.splitlines() if line.startswith("with the judgments"))
    # mrr has no cutoff: its +judged twin, named so beside the estimates (which rest on other questions)
    assert {"hit@1~ppi", "hit@5~ppi", "hit@20+judged", "mrr+judged"} <= set(twins.split())
    assert "~ppi: prediction-powered from 30 of 68 questions people judged completely (a worksheet), correcting " \
           "judge openai/gpt-4o-mini (" in flat
    assert "keyword: hit@1~ppi, hit@3~ppi, hit@5~ppi, hit@10~ppi human-only: a 0/1 measure on 30 human-judged " \
           "questions (under 50)" in flat
    saved = json.loads((p.path / "out" / "results.json").read_text())
    estimates = {x["measure"]: x["ppi"] for x in saved["analysis"]["estimates"]}
    assert estimates["hit@5~ppi"]["n"] == 30 and estimates["hit@5~ppi"]["N"] == 68
    assert estimates["hit@5~ppi"]["fell_back"]  # 0/1 under 50 human questions: the humans alone
    point, (low, _) = estimates["hit@5~ppi"]["estimate"], estimates["hit@5~ppi"]["interval"]
    assert low < 0.8 <= point  # 30 human-judged questions cannot show hit@5 >= 0.8 with 95% confidence
    # its interval straddles 0.8: inconclusive, with the human-judged questions that would settle it
    assert (f"INCONCLUSIVE retrieval gate: keyword: hit@5~ppi = {low:.4f}, required >= 0.8 (from --retrieval-threshold; "
            f"n=68; judged on the 95% lower bound (--retrieval-confidence=lower), point estimate {point:.4f}; "
            "from 30 of 68 questions judged by people, human-only: a 0/1 measure") in flat
    [unsettled] = saved["analysis"]["unsettled"]
    assert (unsettled["rule"], unsettled["n"], unsettled["unit"]) == ("keyword:hit@5~ppi>=0.8", 30, "human-judged questions")
    assert (f"about {unsettled['needed'] - 30:,} more human-judged questions ({unsettled['needed']:,} in all) would "
            "settle it") in flat
    assert "keyword: ndcg@10~ppi" not in flat  # its rule holds
    summary = saved["evaluations"][0]["summary"]
    assert summary["hit@5~ppi"]["ci95"] == estimates["hit@5~ppi"]["interval"]
    assert "~ppi: prediction-powered from 30 of 68" in (p.path / "out" / "results.md").read_text()
    assert "hit@5~ppi" in (p.path / "out" / "page.html").read_text()
    # the saved run prints what the run printed, reading the recorded estimates
    again = p.run("python", "-m", "pytest_retrieval_eval", "report", "out/results.json", "--out=again",
                  "--html=again/page.html")
    assert (p.path / "again" / "results.md").read_bytes() == (p.path / "out" / "results.md").read_bytes()
    assert again.ret == 1  # the same verdict


def test_the_default_summary_says_what_ppi_rests_on_in_one_line(worksheet_project):
    result = worksheet_project.runpytest("-m", "retrieval", "--retrieval-report", "--retrieval-judgments=j.jsonl")
    text = result.stdout.str()
    assert result.ret == 0, text
    [line] = [line for line in text.splitlines() if line.startswith("~ppi")]
    assert line == "~ppi: 30 of 68 questions human-judged; hit@1, hit@3, hit@5, hit@10 columns human-only", text
    assert "prediction-powered from" not in text  # the whole account with -v
    assert "judged@k, the share of each top k judged, by the labels -> with the judgments:" in text  # asked for
    assert "  keyword: judged@1 0.118 -> 1.000, judged@3 0.088 -> 1.000," in text, text


def test_a_ppi_twin_without_human_judged_questions_has_no_value_left_out_said_once_and_never_compared(
        bundled_project, fake_api):
    p = bundled_project
    p.makepyfile(BUNDLED_TESTS)
    fake_api.script("/chat/completions", Reply(200, judge_reply()))
    measures = "--retrieval-measures=hit@5,hit@5~ppi,hit@5+judged"  # judgments, but no worksheet
    first = p.runpytest("-m", "retrieval", "--retrieval-judge", "--retrieval-judgments=j.jsonl",
                        "--retrieval-judge-model=openai/gpt-4o-mini", measures, "--retrieval-save-baseline=base.json",
                        "--retrieval-report")
    text = first.stdout.str()
    assert first.ret == 0, text
    said = "no value in any engine: hit@5~ppi (no question judged by people to its cutoff)"
    assert text.replace("\n  ", " ").count(said) == 1 and "nan" not in text.split()
    again = p.runpytest("-m", "retrieval", "--retrieval-judgments=j.jsonl", measures, "--retrieval-baseline=base.json",
                        "--retrieval-report", "--retrieval-report-dir=out")
    text = again.stdout.str()
    assert again.ret == 0, text
    assert "nan" not in text.split()
    for name in ("base.json", "out/results.json"):
        saved = json.loads((p.path / name).read_text(), parse_constant=lambda c: pytest.fail(f"{c} in {name}"))
        assert saved["evaluations"][0]["summary"]["hit@5~ppi"] == {"mean": None, "ci95": None}
    # hit@5, hit@5+judged (and the corpus's freshness columns) against the baseline; the estimate never
    compared = [d["measure"] for d in saved["analysis"]["baseline"]["diffs"]]
    assert {"hit@5", "hit@5+judged"} <= set(compared) and "hit@5~ppi" not in compared
    assert (f"against the baseline (p corrected: Holm-Bonferroni over {len(compared)} comparisons):\n"
            "  no measure moved") in text
    header = next(line for line in (p.path / "out" / "results.md").read_text().splitlines()
                  if line.startswith("| engine"))
    assert "hit@5~ppi" not in header and "hit@5+judged" in header
