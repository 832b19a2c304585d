"""The drill-down page's text (``report/html.py``): the verdict first, and every section agrees
with it; a refused baseline is said refused, never shown as compared."""

from __future__ import annotations

import re
from html import unescape

from pytest_retrieval_eval.data.labeled import LabeledSet
from pytest_retrieval_eval.rules.thresholds import parse_thresholds
from pytest_retrieval_eval.rules.settings import GateSettings
from pytest_retrieval_eval.gate.verdict import verdict_of as judge
from pytest_retrieval_eval.report.html import render
from pytest_retrieval_eval.analysis.result import EvaluationResult
from pytest_retrieval_eval.evaluation.results import RunResults
from pytest_retrieval_eval.types import LabeledQuery, QueryResult


def _run(wording: str, swap: bool = False) -> RunResults:
    queries = tuple(LabeledQuery(f"q{i}", f"{wording} {i}", {f"d{i}": 1}) for i in range(6))
    return RunResults([EvaluationResult("ours", LabeledSet(queries, name="set"), tuple(
        QueryResult(q.query_id, (f"d{i}", "x") if (i % 2 == 0) != swap else ("x", f"d{i}")) for i, q in enumerate(queries)))])


def _section(html: str, id_: str) -> str:
    found = re.search(rf'<section id="{id_}".*?</section>', html, re.S)
    assert found, id_
    return re.sub(r"\s+", " ", unescape(re.sub(r"<[^>]+>", " ", found.group(0))))


def test_a_refused_baseline_reads_refused_with_its_reason_and_nothing_compared():
    base, now = _run("reworded question", swap=True), _run("question")  # another labeled set: refused
    verdict = judge(now, GateSettings(), measures=["hit@1"], baseline=base)
    [reason] = verdict.baseline.refusals
    html = render(verdict, baseline=base)
    assert "no measure moved" not in html
    said = _section(html, "baseline")
    assert "Against the baseline: refused" in said and reason in said
    assert "(baseline)" not in html and "stroke-dasharray" not in html.split('id="curve"')[1].split("</div>")[0]
    assert 'data-moved="1"' not in html and "was 1" not in html
    assert "baseline refused" in _section(html, "verdict")


def test_a_forced_baseline_is_compared_and_says_it_was_forced():
    base, now = _run("reworded question", swap=True), _run("question")
    verdict = judge(now, GateSettings(baseline_force=True), measures=["hit@1"], baseline=base)
    html = render(verdict, baseline=base)
    said = _section(html, "baseline")
    assert "refused" not in said.replace("compared although", "") and "compared although" in said
    assert "(baseline)" in html


def test_the_verdict_and_its_failures_lead_the_page():
    verdict = judge(_run("question"), GateSettings(thresholds=tuple(parse_thresholds([("hit@1>=0.9", "ci")]))),
                    measures=["hit@1"])
    html = render(verdict)
    said = _section(html, "verdict")
    assert said.strip().startswith("FAIL") and "ours: hit@1 = 0.5000, required >= 0.9" in said
    assert html.index('id="verdict"') < html.index('id="summary"')
    assert 'href="#per-query"' in html.split('id="summary"')[0] and 'id="per-query"' in html
    passed = _section(render(judge(_run("question"), GateSettings(), measures=["hit@1"])), "verdict")
    assert passed.strip().startswith("PASS")


def test_the_report_folders_curve_leaves_a_refused_baseline_out_too(tmp_path):
    from pytest_retrieval_eval.report.outputs import write_outputs

    base, now = _run("reworded question", swap=True), _run("question")
    write_outputs(judge(now, GateSettings(), measures=["hit@1"], baseline=base), report_dir=tmp_path, baseline=base)
    assert "(baseline)" not in (tmp_path / "hit_at_k.svg").read_text()
    write_outputs(judge(now, GateSettings(baseline_force=True), measures=["hit@1"], baseline=base), report_dir=tmp_path,
                  baseline=base)
    assert "(baseline)" in (tmp_path / "hit_at_k.svg").read_text()


def test_the_page_counts_misses_at_the_runs_miss_cutoff_as_the_terminal_and_the_gate_do():
    queries = tuple(LabeledQuery(f"q{i}", f"question {i}", {f"d{i}": 1}) for i in range(4))
    filler = [f"x{j}" for j in range(12)]
    ranks = [1, 3, 7, 11]  # at hit@5: two misses; at the old fixed cutoff of 10, one
    run = RunResults([EvaluationResult("ours", LabeledSet(queries, name="set"), tuple(
        QueryResult(q.query_id, tuple([*filler[:r - 1], f"d{i}", *filler[r - 1:]])) for i, (q, r) in
        enumerate(zip(queries, ranks))))])
    verdict = judge(run, GateSettings(), measures=["hit@5"])
    assert verdict.miss_k == 5 and len(verdict.analysis.misses_of(run.evaluations[0].key, 5).causes) == 2
    html = render(verdict)
    text = re.sub(r"\s+", " ", unescape(re.sub(r"<[^>]+>", " ", html)))
    assert "on set: 2 misses at hit@5," in text, text
    assert "no relevant document in the top 5" in text
    assert html.count('data-miss="1"') == 2, html


def test_the_pages_misses_are_the_analysis_misses_an_errored_question_with_a_ranking_among_them():
    """A question whose engine call failed is a miss however its ranking reads (a results file of
    another tool can keep both): the page counts it as the gate and the terminal do."""
    from pytest_retrieval_eval.report.misses import miss_lines

    queries = tuple(LabeledQuery(f"q{i}", f"question {i}", {f"d{i}": 1}) for i in range(3))
    results = (QueryResult("q0", ("d0",)), QueryResult("q1", ("d1",), error="timeout"), QueryResult("q2", ("x",)))
    verdict = judge(RunResults([EvaluationResult("ours", LabeledSet(queries, name="set"), results)]), GateSettings(),
                    measures=["hit@5"])
    [misses] = verdict.misses
    assert {c.query_id: c.kind for c in misses.causes} == {"q1": "error", "q2": "absent"}
    assert miss_lines(verdict) == ["ours missed 2 of 3 at hit@5: 1 engine error, 1 not retrieved"]
    html = render(verdict)
    text = re.sub(r"\s+", " ", unescape(re.sub(r"<[^>]+>", " ", html)))
    assert "on set: 2 misses at hit@5," in text  # the page used to count 1: q1's ranking holds d1 at rank 1
    assert html.count('data-miss="1"') == 2
