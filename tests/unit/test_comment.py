"""The pull-request comment (``report comment``): GitHub refuses a comment over 65,536
characters, so a long one is cut to fit, keeping the verdict and the gate's failures, with a
pointer to the full report."""

from __future__ import annotations

from pytest_retrieval_eval.data.labeled import LabeledSet
from pytest_retrieval_eval.rules.drops import parse_max_drops
from pytest_retrieval_eval.rules.thresholds import parse_thresholds
from pytest_retrieval_eval.rules.settings import GateSettings
from pytest_retrieval_eval.gate.verdict import decide, verdict_of as judge
from pytest_retrieval_eval.report.comment import MARKER, comment
from pytest_retrieval_eval.analysis.result import EvaluationResult
from pytest_retrieval_eval.evaluation.results import RunResults
from pytest_retrieval_eval.types import LabeledQuery, QueryResult

from analyses import handed_analysis

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
    from pytest_retrieval_eval.report.outputs import write_outputs

    verdict = _verdict(600)
    write_outputs(verdict, report_dir=tmp_path / "out")
    assert main(["report", "comment", str(tmp_path / "out" / "results.json")]) == 1  # the gate fails
    text = capsys.readouterr().out
    assert len(text) < GITHUB_LIMIT and f"the full report: {tmp_path / 'out' / 'results.md'}" in text


# --- verdict first, tables folded ------------------------------------------------------------------

def _set(n: int, name: str = "set", tags: int = 3) -> LabeledSet:
    return LabeledSet(tuple(LabeledQuery(f"q{i:04d}", f"question {i}", {f"d{i}": 1}, tags=(f"t{i % tags}",))
                            for i in range(n)), name=name)


def _engine(name: str, labeled: LabeledSet, missed: set[int]) -> EvaluationResult:
    return EvaluationResult(name, labeled, tuple(
        QueryResult(q.query_id, ("x",) if i in missed else ("x",) * ((i * 7) % 4) + (f"d{i}",))
        for i, q in enumerate(labeled.queries)))


def _dropped(max_drops=("hit@5=0.02", "mrr=0.02"), thresholds=()):
    """Three engines against a baseline: one fell on every measure, two did not move at all."""
    labeled = _set(60)
    base = RunResults([_engine("bm25", labeled, set(range(10))), _engine("dense", labeled, set(range(5))),
                       _engine("hybrid", labeled, set(range(3)))])
    now = RunResults([_engine("bm25", labeled, set(range(10))), _engine("dense", labeled, set(range(25))),
                      _engine("hybrid", labeled, set(range(3)))])
    return judge(now, GateSettings(max_drops=tuple(parse_max_drops([(r, "ci") for r in max_drops])),
                                   thresholds=tuple(parse_thresholds([(t, "ci") for t in thresholds]))), baseline=base)


def _folded(text: str) -> None:
    """Every table of ``text`` inside a ``<details>`` whose summary line is followed by a blank line."""
    lines, inside = text.splitlines(), False
    for i, line in enumerate(lines):
        if line.startswith("<details>"):
            assert not inside and line.startswith("<details><summary>") and line.endswith("</summary>")
            assert lines[i + 1] == "", "GitHub renders a table after <summary> only past a blank line"
            inside = True
        elif line == "</details>":
            assert inside and lines[i - 1] == ""
            inside = False
        elif line.startswith("|"):
            assert inside, f"a table outside <details>: {line}"
    assert not inside


def test_a_failing_comment_names_every_failure_with_its_cause_in_its_first_ten_lines():
    verdict = _dropped()
    assert len(verdict.failures) == 2
    text = comment(verdict)
    lead = text.splitlines()[:10]
    assert lead[0] == MARKER and "**FAIL**" in "\n".join(lead)
    for failure in verdict.failures:  # with its cause: what dropped, by how much, against which rule
        assert f"- FAIL {failure}" in lead
    _folded(text)
    assert text.count("<details><summary>") >= 3  # the scores, the baseline, the engines' differences


def test_measures_that_did_not_move_are_folded_into_a_count():
    text = comment(_dropped())
    assert "| bm25 | hit@1 |" not in text and "+0.0000 |" not in text  # 12 unchanged rows not shown
    assert "| dense | hit@5 | 0.9167 | 0.5833 | -0.3333 |" in text
    assert "12 measures unchanged" in text
    assert "<details><summary>Against the baseline: 6 of 18 measures moved" in text


def _named_in(lead: list[str], failure) -> bool:
    """Whether a lead line names ``failure``: whole, or its engine's line holding it said briefly."""
    return f"- FAIL {failure}" in lead or bool(failure.engine) and any(
        line.startswith(f"- FAIL {failure.engine}: ") and failure.brief in line for line in lead)


def test_many_failures_are_named_one_line_per_engine_in_the_first_ten_lines_and_given_in_full_below():
    thresholds = [f"{m}>=0.99" for m in ("hit@1", "hit@3", "hit@5", "hit@10", "mrr")]
    verdict = _dropped(thresholds=thresholds)
    failures = list(verdict.failures)
    assert len(failures) > 6
    text = comment(verdict)
    lead = text.splitlines()[:10]
    assert [line.split(":")[0] for line in lead if line.startswith("- FAIL ")] == ["- FAIL bm25", "- FAIL dense",
                                                                                  "- FAIL hybrid"]
    assert all(_named_in(lead, f) for f in failures), [f for f in failures if not _named_in(lead, f)]
    assert "- FAIL dense: hit@1 = " in "\n".join(lead) and "; hit@5 dropped 0.3333 (0.9167 -> 0.5833), more than 0.02" in (
        "\n".join(lead))
    assert not any("more failures" in line for line in lead)
    rest = "\n".join(text.splitlines()[10:])
    assert all(f"- FAIL {f}" in rest for f in failures)  # each whole, with its provenance, further down
    _folded(text)


def test_failures_of_more_engines_than_the_lead_holds_are_cut_there_and_given_in_full_below():
    labeled = _set(30)
    engines = [f"engine-{j}" for j in range(8)]
    verdict = judge(RunResults([_engine(e, labeled, set(range(j + 1))) for j, e in enumerate(engines)]),
                    GateSettings(thresholds=tuple(parse_thresholds([("hit@10>=0.99", "ci"), ("mrr>=0.99", "ci")]))))
    failures = list(verdict.failures)
    assert len(failures) == 16
    text = comment(verdict)
    lead = text.splitlines()[:10]
    shown = [line for line in lead if line.startswith("- FAIL ")]
    assert [line.split(":")[0] for line in shown] == [f"- FAIL {e}" for e in engines[:len(shown)]]
    named = [f for f in failures if _named_in(shown, f)]
    assert named == [f for f in failures if f.engine in engines[:len(shown)]] and len(named) == 2 * len(shown)
    assert any(f"... and {len(failures) - len(named)} more failures" in line for line in lead)
    rest = "\n".join(text.splitlines()[10:])
    assert all(f"- FAIL {f}" in rest for f in failures)
    _folded(text)


def test_a_passing_comment_says_so_first_and_folds_its_tables():
    verdict = _dropped(max_drops=("hit@5=0.5",))
    assert not verdict.failures
    text = comment(verdict)
    assert text.splitlines()[3].startswith("**PASS**") and "FAIL" not in text
    _folded(text)
    assert "Against the baseline: 6 of 18 measures moved" in text


def test_a_refused_baseline_says_refused_not_that_nothing_moved():
    labeled, other = _set(60), _set(40)
    base = RunResults([_engine("bm25", other, set())])
    verdict = judge(RunResults([_engine("bm25", labeled, set(range(10)))]), GateSettings(), baseline=base)
    assert verdict.baseline.refusals
    text = comment(verdict)
    assert "<details><summary>Against the baseline: refused" in text
    assert "unchanged" not in text and "no measure moved" not in text and "0 comparisons" not in text
    assert "baseline refused: bm25" in "\n".join(text.splitlines()[:10])
    _folded(text)


def test_a_run_of_two_thousand_questions_and_six_engines_gives_a_comment_under_githubs_limit():
    """Every default column, every engine pair and every measure against the baseline: the
    comment is handed the run's analysis (tests/analyses.py) rather than running 10,000-resample
    bootstraps and paired tests over 2,000 questions to lay it out."""
    labeled = LabeledSet(tuple(LabeledQuery(f"q{i:04d}", f"what does section {i} of the manual say?", {f"d{i}": 1})
                               for i in range(2000)), name="set")
    engines = [f"engine-{j}" for j in range(6)]
    base = RunResults([_engine(e, labeled, set(range(0, 2000, 3 + j))) for j, e in enumerate(engines)])
    now = RunResults([_engine(e, labeled, set(range(0, 2000, 2 + j))) for j, e in enumerate(engines)])
    settings = GateSettings(thresholds=tuple(parse_thresholds([("hit@1>=0.9", "ci")])),
                            max_drops=tuple(parse_max_drops([("hit@5=0.01", "ci")])))
    verdict = decide(now, settings, handed_analysis(now, settings, base))
    assert len(verdict.measures) == 6 and len(verdict.comparisons) == 15 * 6 and len(verdict.baseline.diffs) == 6 * 6
    text = comment(verdict)
    assert len(text) < GITHUB_LIMIT and len(text.encode("utf-8")) < GITHUB_LIMIT
    lead = text.splitlines()[:10]
    assert "**FAIL**" in "\n".join(lead)
    named = [f for f in verdict.failures if _named_in(lead, f)]
    assert named and {f.engine for f in named} == {f.engine for f in verdict.failures if _named_in(lead, f)}
    assert any(f"... and {len(verdict.failures) - len(named)} more failures" in line for line in lead)
    _folded(text)


def test_a_failure_of_many_lines_or_characters_is_one_line_in_the_lead_and_whole_under_gate():
    long = "worker gw1 was lost:\n" + "; ".join(f"q{i:04d} not scored" for i in range(300))
    labeled = _set(30)
    verdict = judge(RunResults([_engine("bm25", labeled, set())]), GateSettings(), other_failures=[long])
    lines = comment(verdict).splitlines()
    [shown] = [line for line in lines[:10] if line.startswith("- FAIL ")]
    assert shown.startswith("- FAIL worker gw1 was lost: q0000 not scored;") and shown.endswith("…")
    assert "- FAIL " + " ".join(long.splitlines()) in lines[10:]
