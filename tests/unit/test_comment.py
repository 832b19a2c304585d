"""The pull-request comment (``report comment``): GitHub refuses a comment over 65,536
characters, so a long one is cut to fit, keeping the verdict and the gate's failures, with a
pointer to the full report."""

from __future__ import annotations

from pytest_retrieval_eval.data.labeled import LabeledSet
from pytest_retrieval_eval.gate.rules import parse_thresholds
from pytest_retrieval_eval.gate.settings import GateSettings
from pytest_retrieval_eval.gate.verdict import judge
from pytest_retrieval_eval.report.comment import MARKER, comment
from pytest_retrieval_eval.run.results import EvaluationResult, RunResults
from pytest_retrieval_eval.types import LabeledQuery, QueryResult

GITHUB_LIMIT = 65_536


def _verdict(tags: int):
    queries = tuple(LabeledQuery(f"q{i:03d}", f"question {i}", {f"d{i}": 1}, tags=(f"a-rather-long-team-tag-{i:03d}",))
                    for i in range(tags))
    labeled = LabeledSet(queries, name="set")
    e = EvaluationResult("ours", labeled, tuple(QueryResult(q.query_id, ("x",) if i % 3 == 0 else (f"d{i}",))
                                                for i, q in enumerate(queries)))
    return judge(RunResults([e]), GateSettings(by=("tags",), thresholds=tuple(parse_thresholds([("hit@1>=0.9", "ci")]))),
                 measures=["hit@1"])


def test_a_comment_over_githubs_limit_is_cut_with_a_pointer_to_the_full_report():
    verdict = _verdict(600)
    text = comment(verdict)
    assert len(text) < GITHUB_LIMIT and len(text.encode("utf-8")) < GITHUB_LIMIT
    assert text.startswith(MARKER + "\n") and "**FAIL**" in text
    assert "- FAIL ours: hit@1 = 0.6667, required >= 0.9" in text  # the gate's failures are kept
    lines = text.splitlines()
    [at] = [i for i, line in enumerate(lines) if "cut" in line.lower() and "results.md" in line]
    assert lines[at - 1] == "" and lines[at + 1] == ""  # a paragraph of its own, never a table row
    named = comment(verdict, full_report="out/results.md")
    assert "out/results.md" in named and len(named) < GITHUB_LIMIT


def test_a_short_comment_is_whole():
    text = comment(_verdict(20))
    assert "cut here" not in text.lower() and "results.md" not in text
    assert text.count("| a-rather-long-team-tag-") == 20


def test_report_comment_points_to_the_results_md_beside_the_saved_run(tmp_path, capsys):
    from pytest_retrieval_eval.cli import main
    from pytest_retrieval_eval.gate.verdict import record_settings
    from pytest_retrieval_eval.report.outputs import write_outputs

    verdict = _verdict(600)
    record_settings(verdict.run, verdict.settings)
    write_outputs(verdict, report_dir=tmp_path / "out")
    assert main(["report", "comment", str(tmp_path / "out" / "results.json")]) == 1  # the gate fails
    text = capsys.readouterr().out
    assert len(text) < GITHUB_LIMIT and f"the full report: {tmp_path / 'out' / 'results.md'}" in text
