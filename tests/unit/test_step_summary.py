"""GitHub's step summary (``$GITHUB_STEP_SUMMARY``) gets results.md, and GitHub drops a step's
summary past 1024k: a longer one is cut, as the pull-request comment is, with a pointer to the
full results.md."""

from __future__ import annotations

from pytest_retrieval_eval.report.comment import STEP_SUMMARY_LIMIT, step_summary


def test_a_summary_past_githubs_limit_is_cut_with_a_pointer_and_a_short_one_is_whole():
    text = "# Retrieval evaluation\n\n| segment | n |\n|---|---|\n" + "".join(f"| tag-{i} | 1 |\n" for i in range(90_000))
    assert len(text.encode("utf-8")) > STEP_SUMMARY_LIMIT
    cut = step_summary(text, already=200_000, full_report="out/results.md")
    assert len(cut.encode("utf-8")) + 200_000 < STEP_SUMMARY_LIMIT
    assert cut.startswith("# Retrieval evaluation\n") and "the full report: out/results.md" in cut
    short = "# Retrieval evaluation\n\nall fine\n"
    assert step_summary(short, already=200_000) == short


def test_the_run_appends_a_step_summary_that_fits_after_other_steps(tmp_path):
    from pytest_retrieval_eval.data.labeled import LabeledSet
    from pytest_retrieval_eval.gate.verdict import verdict_of as judge
    from pytest_retrieval_eval.report.outputs import write_outputs
    from pytest_retrieval_eval.analysis.result import EvaluationResult
    from pytest_retrieval_eval.evaluation.results import RunResults
    from pytest_retrieval_eval.types import LabeledQuery, QueryResult

    queries = tuple(LabeledQuery(f"q{i}", f"question {i}", {f"d{i}": 1}) for i in range(30))
    run = RunResults([EvaluationResult("ours", LabeledSet(queries, name="set"),
                                       tuple(QueryResult(q.query_id, (f"d{i}",)) for i, q in enumerate(queries)))])
    summary = tmp_path / "summary.md"
    summary.write_text("x" * (STEP_SUMMARY_LIMIT - 1_500))  # the other steps' summaries, nearly all of it
    write_outputs(judge(run), step_summary=str(summary), report_dir=tmp_path / "out")
    assert summary.stat().st_size < STEP_SUMMARY_LIMIT
    assert f"the full report: {tmp_path / 'out' / 'results.md'}" in summary.read_text()


def test_the_step_summary_leads_with_the_verdict_and_every_failure(tmp_path):
    from pytest_retrieval_eval.data.labeled import LabeledSet
    from pytest_retrieval_eval.rules.thresholds import parse_thresholds
    from pytest_retrieval_eval.rules.settings import GateSettings
    from pytest_retrieval_eval.gate.verdict import verdict_of as judge
    from pytest_retrieval_eval.report.outputs import write_outputs
    from pytest_retrieval_eval.analysis.result import EvaluationResult
    from pytest_retrieval_eval.evaluation.results import RunResults
    from pytest_retrieval_eval.types import LabeledQuery, QueryResult

    queries = tuple(LabeledQuery(f"q{i}", f"question {i}", {f"d{i}": 1}) for i in range(30))
    run = RunResults([EvaluationResult(name, LabeledSet(queries, name="set"),
                                       tuple(QueryResult(q.query_id, ("x",) if i % 2 else (f"d{i}",))
                                             for i, q in enumerate(queries))) for name in ("a", "b")])
    verdict = judge(run, GateSettings(thresholds=tuple(parse_thresholds([("hit@1>=0.9", "ci")]))))
    summary = tmp_path / "summary.md"
    summary.write_text("earlier step\n")
    write_outputs(verdict, step_summary=str(summary))
    lines = summary.read_text().splitlines()
    assert lines[:2] == ["earlier step", "# Retrieval evaluation"]
    assert lines[3].startswith("**FAIL**") and all(f"- FAIL {f}" in lines[:10] for f in verdict.failures)
