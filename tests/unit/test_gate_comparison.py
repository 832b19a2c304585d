"""One paired comparison (``ir.paired``) behind engine pairs, baselines and shadows, computed
once when the run is judged: writing the outputs reads it and runs no test again. A results file
read back keeps its recorded labeled-set identity without writing into the labeled set."""

from __future__ import annotations

import pytest

from pytest_retrieval_eval.data.labeled import LabeledSet
from pytest_retrieval_eval.rules.settings import GateSettings
from pytest_retrieval_eval.gate.verdict import for_run, verdict_of as judge
from pytest_retrieval_eval.ir import paired as paired_module
from pytest_retrieval_eval.ir.paired import moved, paired
from pytest_retrieval_eval.report.outputs import write_outputs
from pytest_retrieval_eval.analysis.result import EvaluationResult
from pytest_retrieval_eval.evaluation.results import RunResults
from pytest_retrieval_eval.types import LabeledQuery, QueryResult
from conftest import results_text

N = 20
QUERIES = tuple(LabeledQuery(f"q{i:02d}", f"question {i}", {f"d{i}": 1}) for i in range(N))
LABELED = LabeledSet(QUERIES, name="set")


def _engine(name: str, missed: set[int]) -> EvaluationResult:
    return EvaluationResult(name, LABELED, tuple(
        QueryResult(q.query_id, ("x", f"d{i}") if i in missed else (f"d{i}",)) for i, q in enumerate(QUERIES)))


def test_the_movers_are_defined_once_largest_first_then_by_id_and_never_unmoved():
    assert moved([0.0, -0.5, 0.5, 1.0, 0.0], ["e", "d", "c", "b", "a"]) == (3, 2, 1)
    pair = paired([1.0, 0.5, 0.0], [0.0, 0.5, 1.0], ["a", "b", "c"])
    assert (pair.delta, pair.wins, pair.losses, pair.ties, pair.movers) == (0.0, 1, 1, 1, (0, 2))
    assert pair.p_adjusted == pair.p  # uncorrected until the family is known


def test_engine_pairs_baselines_and_shadows_read_one_statistic():
    a, b = _engine("a", set()), _engine("b", {1, 4, 9, 16})
    run = RunResults([a, b])
    baseline = RunResults([_engine("a", {1, 4, 9, 16})])  # a's baseline ranked as b does now
    verdict = judge(run, GateSettings(shadows=(("a", "b"),), correction="none"), measures=["hit@1"],
                    baseline=baseline)
    expected = paired(a.values("hit@1"), b.values("hit@1"), [q.query_id for q in QUERIES])
    [pair] = verdict.comparisons
    [diff] = [d for d in verdict.baseline.diffs if d.engine == "a"]
    [delta] = [d for d in verdict.shadows[0].deltas if d.measure == "hit@1"]
    assert pair.paired == expected and diff.paired == expected
    assert (delta.p, delta.ci) == (expected.p, expected.ci) and delta.delta == pytest.approx(expected.delta)
    assert [m.query_id for m in diff.movers] == ["q01", "q04", "q09", "q16"]
    assert (verdict.shadows[0].better, verdict.shadows[0].worse) == (4, 0)


def test_writing_the_outputs_runs_no_paired_test(tmp_path, monkeypatch):
    run = RunResults([_engine("a", set()), _engine("b", {2, 3, 5})])
    settings = for_run(run, GateSettings(shadows=(("a", "b"),), gain_weights={"hit@1": 1.0}))
    verdict = judge(run, settings)
    expected = results_text(run, settings)

    def refused(*args, **kwargs):
        raise AssertionError("a paired test ran while the outputs were written")

    monkeypatch.setattr(paired_module, "paired_randomization", refused)
    write_outputs(verdict, report_dir=tmp_path / "out", save_baseline=tmp_path / "baseline.json")
    assert (tmp_path / "out" / "results.json").read_text(encoding="utf-8") == expected
    assert (tmp_path / "baseline.json").read_text(encoding="utf-8") == expected


def test_a_recorded_labeled_set_keeps_its_identity_without_writing_into_the_set():
    d = _engine("a", set()).to_dict()
    d["labeled"]["fingerprint"] = "f" * 64
    e = EvaluationResult.from_dict(d)
    assert e.labeled.fingerprint == "f" * 64 and "fingerprint" not in vars(e.labeled)
    assert e.labeled.computed_fingerprint == LABELED.fingerprint


def test_a_forced_baseline_over_other_questions_is_compared_over_the_questions_both_hold():
    """After ``label remove`` the sets differ: their means over different questions can agree
    while a question went from hit to miss; the comparison pairs the shared ones and says how
    many each side left out."""
    from pytest_retrieval_eval.rules.drops import parse_max_drops

    six = tuple(LabeledQuery(f"q{i}", f"question {i}", {f"d{i}": 1}) for i in range(6))
    before = LabeledSet(six, name="set")
    after = LabeledSet(six[:4] + (LabeledQuery("q9", "a new question", {"d9": 1}),), name="set")  # q4, q5 removed

    def engine(labeled, hits):
        return EvaluationResult("a", labeled, tuple(QueryResult(q.query_id, (f"d{q.query_id[1:]}",) if q.query_id in hits
                                                                 else ("x",)) for q in labeled.queries))

    baseline = RunResults([engine(before, {"q0", "q1", "q2"})])  # 3 of 6: 0.5
    now = RunResults([engine(after, {"q1", "q2", "q9"})])  # q0 hit -> miss; 3 of 5 hits: 0.6 over other questions
    verdict = judge(now, GateSettings(baseline_force=True, max_drops=tuple(parse_max_drops([("a:hit@1=0.1", "ci")]))),
                    measures=["hit@1"], baseline=baseline)
    [diff] = verdict.baseline.diffs
    assert (diff.before, diff.after) == (0.75, 0.5)  # over q0..q3, the questions both hold
    assert (diff.wins, diff.losses, diff.ties) == (0, 1, 3)
    assert diff.left_out == (2, 1)  # q4, q5 only in the baseline; q9 only now
    assert any("hit@1 dropped 0.2500 (0.7500 -> 0.5000)" in f for f in verdict.failures), verdict.failures
    assert any("4 questions both hold" in n and "2 only in the baseline" in n and "1 only in this run" in n
               for n in verdict.baseline.notes), verdict.baseline.notes


def test_an_evaluation_without_a_baseline_says_what_the_baseline_holds():
    other = LabeledSet(QUERIES[:5], name="other")
    baseline = RunResults([EvaluationResult("a", other, tuple(QueryResult(q.query_id, ()) for q in QUERIES[:5]))])
    verdict = judge(RunResults([_engine("a", set())]), GateSettings(), measures=["hit@1"], baseline=baseline)
    assert "a on set has no baseline (new engine or labeled set; the baseline holds a on other)" in verdict.baseline.notes


def test_questions_that_moved_both_ways_are_shown_though_the_mean_held():
    from pytest_retrieval_eval.report.files import baseline_section
    from pytest_retrieval_eval.report.terminal import baseline_lines

    baseline = RunResults([_engine("a", {3})])
    verdict = judge(RunResults([_engine("a", {5})]), GateSettings(), measures=["hit@1"], baseline=baseline)
    [diff] = verdict.baseline.diffs
    assert diff.delta == 0 and (diff.wins, diff.losses) == (1, 1) and diff.moved
    lines = baseline_lines(verdict)
    assert "no measure moved" not in "\n".join(lines)
    assert any("a: hit@1 0.9500 -> 0.9500 (+0.0000; 1 up, 1 down" in line for line in lines), lines
    assert "- a hit@1 q05: 1 -> 0" in "\n".join(baseline_section(verdict))


def test_a_baseline_of_another_labeled_set_is_refused_naming_what_changed():
    from pytest_retrieval_eval.analysis.baseline import compare

    edited = tuple(
        LabeledQuery(q.query_id, q.question + " again" if i == 3 else q.question,
                     {"other": 1} if i in (5, 6) else dict(q.relevant))
        for i, q in enumerate(QUERIES) if i not in (0, 1, 2, 4))
    now_set = LabeledSet(edited + (LabeledQuery("q99", "a new question", {"d99": 1}),), name="set")
    now = RunResults([EvaluationResult("a", now_set, tuple(QueryResult(q.query_id, ()) for q in now_set.queries))])
    found = compare(now, RunResults([_engine("a", set())]), ["hit@1"])
    [refusal] = found.refusals
    assert refusal.startswith("a: labeled set set fingerprint ")
    assert refusal.endswith("(1 added (q99); 4 removed (q00, q01, q02 and 1 more); "
                            "3 changed (q03 (reworded), q05 (labels), q06 (labels)))")
    same = EvaluationResult.from_dict({**_engine("a", set()).to_dict(), "labeled": {
        **_engine("a", set()).to_dict()["labeled"], "fingerprint": "0" * 64}})
    [refusal] = compare(RunResults([_engine("a", set())]), RunResults([same]), ["hit@1"]).refusals
    assert "no question differs: only the recorded fingerprint does" in refusal


def test_an_embedder_that_answered_its_canaries_otherwise_is_noted_beside_the_comparison_never_refused():
    from dataclasses import replace

    from pytest_retrieval_eval.analysis.baseline import compare

    base = replace(_engine("hybrid", {1}), engine_info={"embedder": "openai:http://x:emb", "embedder_canary": "a" * 64})
    same = replace(_engine("hybrid", {1}), engine_info=dict(base.engine_info))
    moved_model = replace(_engine("hybrid", {1, 2}), engine_info={**base.engine_info, "embedder_canary": "b" * 64})
    quiet = compare(RunResults([same]), RunResults([base]), ["hit@1"])
    assert not any("canaries" in n for n in quiet.notes)
    said = compare(RunResults([moved_model]), RunResults([base]), ["hit@1"])
    assert not said.refusals and said.diffs
    assert (f"hybrid: its embedder answered the drift canaries otherwise than the baseline's (canary {'a' * 12} -> "
            f"{'b' * 12}): the embedding model behind openai:http://x:emb changed") in " ".join(said.notes)


def _left_out_as_stale(labeled: LabeledSet, stale: dict[str, list[str]]) -> LabeledSet:
    """``labeled`` as a run on an edited corpus holds it: its stale questions left out."""
    return LabeledSet(tuple(q for q in labeled.queries if q.query_id not in stale), name=labeled.name,
                      provenance={**labeled.provenance, "stale_left_out": stale})


def _run(labeled: LabeledSet) -> RunResults:
    return RunResults([EvaluationResult("a", labeled, tuple(QueryResult(q.query_id, (f"d{q.query_id[1:].lstrip('0') or '0'}",))
                                                            for q in labeled.queries))])


def test_questions_left_out_as_stale_are_said_left_out_as_stale_not_removed():
    from pytest_retrieval_eval.analysis.baseline import labeled_changes

    now = _left_out_as_stale(LABELED, {"q03": ["changed: d3"], "q07": ["deleted: d7"]})
    said = labeled_changes(LABELED, now)
    assert said == "2 left out as stale in this run (their document changed: q03 (changed: d3), q07 (deleted: d7))"
    assert "removed" not in said
    back = labeled_changes(now, LABELED)  # the baseline left them out, this run holds them again
    assert back == "2 left out as stale in the baseline (their document changed: q03 (changed: d3), q07 (deleted: d7))"
    assert "added" not in back
    removed_too = LabeledSet(tuple(q for q in now.queries if q.query_id != "q09"), name="set",
                             provenance=now.provenance)  # and one truly removed from the labels
    assert labeled_changes(LABELED, removed_too) == ("1 removed (q09); 2 left out as stale in this run (their document "
                                                     "changed: q03 (changed: d3), q07 (deleted: d7))")


def test_a_baseline_differing_only_by_stale_questions_is_compared_over_the_questions_both_hold_not_refused():
    from pytest_retrieval_eval.analysis.baseline import compare

    now = _run(_left_out_as_stale(LABELED, {"q03": ["changed: d3"]}))
    found = compare(now, _run(LABELED), ["hit@1"])
    assert not found.refusals, found.refusals
    [diff] = found.diffs
    assert diff.left_out == (1, 0) and diff.wins + diff.losses + diff.ties == N - 1
    assert any("compared over the 19 questions both hold" in n and "1 left out as stale in this run (their document "
               "changed: q03 (changed: d3))" in n for n in found.notes), found.notes


def test_a_baseline_refused_after_an_evidence_or_history_edit_names_the_questions_and_what_changed():
    from pytest_retrieval_eval.analysis.baseline import compare
    from pytest_retrieval_eval.types import Turn

    def with_(quote: str, reply: str) -> EvaluationResult:
        queries = (LabeledQuery("q00", "question 0", {"d0": 1}, {"evidence": {"d0": [quote]}}),
                   LabeledQuery("c1#1", "How do I connect?", {"d1": 1}, conversation="c1", turn=1),
                   LabeledQuery("c1#2", "and does it need a code?", {"d2": 1}, conversation="c1", turn=2,
                                history=(Turn("user", "How do I connect?"), Turn("assistant", reply))))
        labeled = LabeledSet(queries, name="set")
        return EvaluationResult("a", labeled, tuple(QueryResult(q.query_id, tuple(q.relevant)) for q in queries))

    base = RunResults([with_("a quote", "Use the VPN client.")])
    [refusal] = compare(RunResults([with_("another quote", "Use the VPN client.")]), base, ["hit@1"]).refusals
    assert refusal.endswith("(1 changed (q00 (evidence changed)))")
    [refusal] = compare(RunResults([with_("a quote", "Join the wifi.")]), base, ["hit@1"]).refusals
    assert refusal.endswith("(1 changed (c1#2 (history changed)))")
    read_back = EvaluationResult.from_dict(with_("a quote", "Use the VPN client.").to_dict())  # as results.json keeps it
    assert compare(RunResults([read_back]), base, ["hit@1"]).refusals == []


def test_a_quote_edit_the_rule_cannot_see_changes_no_question_and_refuses_no_baseline():
    from pytest_retrieval_eval.data.labeled import question_changes
    from pytest_retrieval_eval.analysis.baseline import compare

    def with_(*quotes: str) -> EvaluationResult:
        labeled = LabeledSet((LabeledQuery("q00", "question 0", {"d0": 1}, {"evidence": {"d0": list(quotes)}}),
                              LabeledQuery("q01", "question 1", {"d1": 1})), name="set")
        return EvaluationResult("a", labeled, tuple(QueryResult(q.query_id, tuple(q.relevant)) for q in labeled))

    base = with_("The plan costs 5 euros a month", "Invoices are sent by e-mail")
    # case, a full stop, whitespace, the Unicode form, the order of the quotes: what the rule reads is the same
    same = with_("invoices are sent by e\u2011mail", "the plan costs 5 EUROS  a ｍｏｎｔｈ.")
    assert question_changes(base.labeled.queries[0], same.labeled.queries[0]) == []
    assert same.labeled.fingerprint != base.labeled.fingerprint  # the file's text did change
    assert compare(RunResults([same]), RunResults([base]), ["hit@1"]).refusals == []
    moved = with_("The plan costs 15 euros a month", "Invoices are sent by e-mail")
    assert question_changes(base.labeled.queries[0], moved.labeled.queries[0]) == ["evidence changed"]
    [refusal] = compare(RunResults([moved]), RunResults([base]), ["hit@1"]).refusals
    assert refusal.endswith("(1 changed (q00 (evidence changed)))")
    order = LabeledSet(tuple(reversed(same.labeled.queries)), name="set")  # the same questions in another order
    reordered = EvaluationResult("a", order, tuple(QueryResult(q.query_id, tuple(q.relevant)) for q in order))
    [refusal] = compare(RunResults([reordered]), RunResults([base]), ["hit@1"]).refusals
    assert refusal.endswith("(no question differs: only the recorded fingerprint does)")
