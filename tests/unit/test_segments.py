"""Segments of the labeled set (issue 30): tags, derived segments, rows, rules, baselines, coverage."""

from __future__ import annotations

import pytest
from conftest import results_text

from pytest_retrieval_eval.data.labeled import LabeledSet, dump_questions_cache, load_questions_cache
from pytest_retrieval_eval.data.label_files import read_jsonl
from pytest_retrieval_eval.data.label_tables import read_table
from pytest_retrieval_eval.data.segments import derive, parse_tags
from pytest_retrieval_eval.errors import RetrievalEvalError
from pytest_retrieval_eval.analysis.baseline import compare
from pytest_retrieval_eval.gate import checks
from pytest_retrieval_eval.gate.checks import check_coverage
from pytest_retrieval_eval.rules.drops import MaxDrop
from pytest_retrieval_eval.rules.thresholds import Threshold
from pytest_retrieval_eval.rules.settings import GateSettings
from pytest_retrieval_eval.gate.verdict import verdict_of as judge
from pytest_retrieval_eval.report.misses import coverage_line
from pytest_retrieval_eval.analysis.coverage import coverage_record
from pytest_retrieval_eval.analysis.result import EvaluationResult
from pytest_retrieval_eval.evaluation.results import RunResults
from pytest_retrieval_eval.analysis.segments import segment_rows
from pytest_retrieval_eval.types import Doc, LabeledQuery, QueryResult

DOCS = [Doc("vpn", "Install the WireGuard client and import the profile.", title="VPN setup"),
        Doc("prices", "The plan costs 10 euros.", title="Prices 2026", meta={"version_key": "prices"}),
        Doc("big", " ".join(["word"] * 500), title="Handbook")]


def test_derived_segments_read_the_question_as_the_keyword_engine_does():
    labeled = LabeledSet((LabeledQuery("q1", "How do I import a WireGuard profile?", {"vpn": 1}),
                          LabeledQuery("q2", "What does the VPN cost?", {"vpn": 1, "prices": 1}),
                          LabeledQuery("q3", "euros", {"prices": 1}, tags=("product:plans",))))
    tags = {q.query_id: q.tags for q in derive(labeled, DOCS)}
    assert tags["q1"] == ("body-only", "length:short")  # wireguard, profile: in the body, not the title
    assert tags["q2"] == ("length:short", "multi-gold", "versioned")  # vpn is in a title
    assert tags["q3"] == ("body-only", "length:short", "product:plans", "versioned")


def test_tags_come_from_a_csv_column_a_jsonl_field_and_the_cache(tmp_path):
    csv = tmp_path / "labels.csv"
    csv.write_text("question,doc_id,tags\nHow to set up the VPN?,vpn,product:net; onboarding\n"
                   "How to set up the VPN?,prices,urgent\n")
    [q] = read_table(csv)
    assert q.tags == ("onboarding", "product:net", "urgent")  # rows of one question merge their tags
    jsonl = tmp_path / "labels.jsonl"
    jsonl.write_text('{"question": "Price?", "doc_id": "prices", "tags": ["billing"]}\n')
    assert read_jsonl(jsonl)[0].tags == ("billing",)
    cache = tmp_path / "questions.cache.json"
    cache.write_text(dump_questions_cache(LabeledSet((q,)), generator={}, corpus_fingerprint="x"))
    assert load_questions_cache(cache).queries[0].tags == q.tags
    from pytest_retrieval_eval.data.corpus import Corpus
    from pytest_retrieval_eval.data.label_import import import_labels

    imported = tmp_path / "imported.cache.json"
    assert import_labels(read_table(csv), Corpus(tuple(DOCS)), imported).added == [q.query_id]
    assert load_questions_cache(imported).queries[0].tags == ("onboarding", "product:net", "urgent")  # kept
    csv.write_text("question,doc_id,tags\nHow to set up the VPN?,vpn,product:net\nHow to set up the VPN?,prices,\n")
    report = import_labels(read_table(csv), Corpus(tuple(DOCS)), imported)  # only the tags changed: replaced
    assert report.replaced == [q.query_id] and load_questions_cache(imported).queries[0].tags == ("product:net",)
    jsonl.write_text('{"question": "Price?", "doc_id": "prices", "tags": ["two words"]}\n')
    with pytest.raises(RetrievalEvalError, match=r"labels.jsonl:1: field 'tags': tag 'two words' must be a word"):
        read_jsonl(jsonl)
    with pytest.raises(RetrievalEvalError, match="tags must be a list of names"):
        parse_tags(3, "tags")


def check_segments(thresholds, run):
    """The segment rules over ``run`` as the gate judges them: on the analysis's values."""
    from pytest_retrieval_eval.analysis.segments import segment_rules

    return checks.check_segments(thresholds, segment_rules(run, thresholds))


def _result(engine: str, hits: dict[str, bool], queries) -> EvaluationResult:
    return EvaluationResult(engine, LabeledSet(tuple(queries)),
                            tuple(QueryResult(q.query_id, ("g",) if hits[q.query_id] else ("x",)) for q in queries))


QUERIES = [LabeledQuery(f"q{i:02d}", f"question {i}", {"g": 1}, tags=("body-only",) if i < 20 else ())
           for i in range(60)]


def test_segment_rows_and_a_failed_segment_rule_name_the_segment_its_n_and_the_questions():
    a = _result("a", {q.query_id: True for q in QUERIES}, QUERIES)
    b = _result("b", {q.query_id: "body-only" not in q.tags for q in QUERIES}, QUERIES)
    run = RunResults([a, b])
    rows = {r.tag: r for r in segment_rows(run, ["body-only"], "hit@5")}
    assert list(rows) == ["all", "body-only", "not body-only"]
    assert rows["body-only"].values["b"][0] == 0.0 and rows["not body-only"].values["b"][0] == 1.0
    assert rows["body-only"].wins == {"a": ("b",)} and rows["not body-only"].wins == {}
    assert rows["body-only"].n == 20 and not rows["body-only"].few
    [failure] = check_segments([Threshold.parse("b[body-only]:hit@5>=0.9", source="ini")], run)
    assert failure.startswith("b[body-only]: hit@5 = 0.0000, required >= 0.9 (from ini; segment body-only, n=20 of "
                              "60, smallest detectable drop ")
    assert "lowest: q00, q01, q02, q03, q04 and 15 more" in failure
    assert check_segments([Threshold.parse("[body-only]:hit@5>=0.9")], run)[0].startswith("b[body-only]")
    assert len(check_segments([Threshold.parse("[nosuch]:hit@5>=0.5", source="ini")], run)) == 1  # once, not per engine
    [none] = check_segments([Threshold.parse("a[nosuch]:hit@5>=0.5", source="ini")], run)
    assert "no question of labeled carries tag 'nosuch' (tags: body-only)" in none
    assert str(Threshold.parse("[body-only]:hit@5>=0.9")) == "[body-only]:hit@5>=0.9"
    with pytest.raises(RetrievalEvalError, match="does not parse"):
        Threshold.parse(":hit@5>=0.9")
    with pytest.raises(RetrievalEvalError, match="a segment rule judges a measure"):
        Threshold.parse("a[x]:errors<=0")


@pytest.mark.parametrize("measure, why", [
    ("hit@5+evidence", "no evidence-level value: the engine returns document ids, not passages (return "
                       "pytest_retrieval_eval.Passage(doc_id, text) to score passages)"),
    ("ndcg@10+judged", "the run reads no judgments (--retrieval-judgments=FILE)"),
])
def test_a_segment_rule_on_a_measure_with_no_value_says_it_checked_nothing(measure, why):
    """As the same rule without a segment does: never ``= nan`` nor a detectable drop of nan."""
    run = RunResults([_result("a", {q.query_id: True for q in QUERIES}, QUERIES)])
    [failure] = check_segments([Threshold.parse(f"[body-only]:{measure}>=0.5", source="ini")], run)
    assert failure == (f"a[body-only]: {measure} has no value, so the rule [body-only]:{measure}>=0.5 checked nothing "
                       f"(from ini; segment body-only, n=20 of 60; {why})")


def test_a_failed_rule_on_a_segment_of_one_question_says_it_has_no_detectable_drop_not_nan():
    queries = [LabeledQuery("q0", "x", {"g": 1}, tags=("lonely",)), LabeledQuery("q1", "y", {"g": 1})]
    run = RunResults([_result("a", {"q0": False, "q1": True}, queries)])
    [failure] = check_segments([Threshold.parse("[lonely]:hit@5>=0.5", source="ini")], run)
    assert failure == ("a[lonely]: hit@5 = 0.0000, required >= 0.5 (from ini; segment lonely, n=1 of 2, no detectable "
                       "drop with one question); lowest: q0")


def test_a_family_name_stands_for_its_values_and_an_unknown_tag_is_said():
    from pytest_retrieval_eval.analysis.segments import unknown_tags

    queries = [LabeledQuery(f"q{i}", "x", {"g": 1}, tags=(f"area:{'ab'[i % 2]}",)) for i in range(6)]
    run = RunResults([_result("a", {q.query_id: True for q in queries}, queries)])
    assert [r.tag for r in segment_rows(run, ["area"], "hit@5")] == ["all", "area:a", "area:b"]
    assert unknown_tags(run, ["area", "nope"]) == ["--retrieval-by nope: no question of labeled carries it (tags: "
                                                   "area:a, area:b)"]
    two = [LabeledQuery("q0", "x", {"g": 1}, tags=("t",)), LabeledQuery("q1", "x", {"g": 1}, tags=("t",))]
    tiny = segment_rows(RunResults([_result("a", {"q0": True, "q1": False}, two)]), ["t"], "hit@5")
    assert tiny[1].drop == 1.0  # the normal approximation says more than hit@5 can fall: at most its range


def test_a_baseline_names_the_segment_that_fell_while_the_total_held():
    before = _result("a", {q.query_id: "body-only" in q.tags for q in QUERIES}, QUERIES)  # 20 of 60
    after = _result("a", {q.query_id: "body-only" not in q.tags and q.query_id < "q45" for q in QUERIES}, QUERIES)
    assert after.mean("hit@5") >= before.mean("hit@5")  # 25 of 60: the total held
    comparison = compare(RunResults([after]), RunResults([before]), ["hit@5"])
    [fell] = comparison.regressed_segments(0.05)
    assert fell.tag == "body-only" and (fell.before, fell.after) == (1.0, 0.0)
    assert fell.describe().startswith("a[body-only]: hit@5 1.0000 -> 0.0000 (-1.0000; n=20, 20 down, 0 up;")
    assert ": beyond noise) while the total held (+0.0833); fell: q00, q01, q02, q03, q04 and 15 more" in fell.describe()
    # a fall within noise is named too where the total held; where the total fell, only beyond noise
    few = [q for q in QUERIES[:23]]  # 3 body-only questions fall, the total of 23 does not
    small = compare(RunResults([_result("a", {q.query_id: q.query_id in ("q20", "q21", "q22", "q00") for q in few}, few)]),
                    RunResults([_result("a", {q.query_id: q.query_id in ("q00", "q01", "q02", "q03") for q in few}, few)]),
                    ["hit@5"])
    [within] = small.regressed_segments(0.05)
    assert within.paired.p_adjusted > 0.05 and ": within noise) while the total held (+0.0000)" in within.describe()


def test_a_max_drop_rule_on_a_segment_fails_where_the_total_rule_holds():
    before = _result("a", {q.query_id: "body-only" in q.tags for q in QUERIES}, QUERIES)
    after = _result("a", {q.query_id: "body-only" not in q.tags and q.query_id < "q45" for q in QUERIES}, QUERIES)
    rules = (MaxDrop.parse("hit@5=0.05", source="ini"), MaxDrop.parse("a[body-only]:hit@5=0.05", source="ini"),
             MaxDrop.parse("[nosuch]:hit@5=0.05", source="ini"))
    verdict = judge(RunResults([after]), GateSettings(max_drops=rules), measures=["hit@5"], baseline=RunResults([before]))
    assert [str(r) for r in rules] == ["hit@5=0.05", "a[body-only]:hit@5=0.05", "[nosuch]:hit@5=0.05"]
    assert verdict.of_kind("drop")[0].startswith("a[body-only]: hit@5 dropped 1.0000 (1.0000 -> 0.0000), more than 0.05 "
                                               "(from ini; segment body-only, n=20, 20 down, 0 up, p=")
    assert "the total +0.0833); fell: q00, q01, q02, q03, q04 and 15 more" in verdict.of_kind("drop")[0]
    assert "no segment nosuch of any engine was compared with the baseline" in verdict.of_kind("drop")[1]
    assert len(verdict.of_kind("drop")) == 2  # the total held
    assert any("a on labeled[body-only] can only detect a drop of" in w and "with 20 queries" in w
               for w in verdict.warnings)


def test_the_baseline_lines_in_the_docs_are_what_it_prints():
    from conftest import results_text, REPO, results_text
    from projects import contiguous_in, shown_block
    from pytest_retrieval_eval.report.terminal import baseline_lines

    before = _result("a", {q.query_id: "body-only" in q.tags for q in QUERIES}, QUERIES)
    after = _result("a", {q.query_id: "body-only" not in q.tags and q.query_id < "q45" for q in QUERIES}, QUERIES)
    verdict = judge(RunResults([after]), GateSettings(), measures=["hit@5"], baseline=RunResults([before]))
    shown = shown_block(REPO / "docs" / "misses.md", "against the baseline")
    assert contiguous_in(shown, baseline_lines(verdict)), "\n".join(baseline_lines(verdict))


def test_coverage_counts_documents_and_chunks_and_a_rule_names_what_no_question_reaches():
    labeled = derive(LabeledSet((LabeledQuery("q1", "WireGuard profile?", {"vpn": 1, "prices": 0}),)), DOCS)
    record = coverage_record(DOCS, [labeled], ["vpn", "vpn", "prices", "big", "big", "big"])
    assert record["documents"] == {"judged": 2, "total": 3}  # a grade-0 judgment judges too
    assert record["chunks"] == {"judged": 3, "total": 6} and record["unreached"] == [["big", 500]]
    assert record["by_tag"] == {"body-only": 2, "length:short": 2}
    assert coverage_line(record) == ("coverage: the questions judge 2 of 3 documents (66.7%) and 3 of 6 chunks "
                                     "(50.0%); the largest no question reaches: big (500 words)")
    [failure] = check_coverage([Threshold.parse("coverage.documents>=1.0", source="ini")], record)
    assert failure == ("coverage.documents = 0.6667 (2 of 3 documents judged by some question), required >= 1 "
                       "(from ini); no question reaches big (500 words)")
    assert check_coverage([Threshold.parse("coverage.chunks>=0.5")], record) == []
    assert "checked nothing" in check_coverage([Threshold.parse("coverage.chunks>=0.5")], {})[0]


def test_the_verdict_counts_misses_at_the_gated_cutoff_and_results_json_keeps_them():
    a = _result("a", {q.query_id: q.query_id < "q50" for q in QUERIES}, QUERIES)
    run = RunResults([a])
    settings = GateSettings(thresholds=(Threshold.parse("hit@3>=0.5"),), by=("body-only",)).for_run(run, ())
    verdict = judge(run, settings)
    assert verdict.miss_k == 3 and verdict.misses[0].line() == "a missed 10 of 60 at hit@3: 10 not retrieved"
    import json

    from pytest_retrieval_eval.archive.saved import results_json

    doc = json.loads(results_json(verdict))
    assert doc["misses"][0]["missed"] == 10 and doc["settings"]["by"] == ["body-only"]
    assert [r["tag"] for r in doc["segments"]] == ["all", "body-only", "not body-only"]
    assert results_text(run, settings) == results_json(verdict)  # made again from the same settings, the same


def test_a_shadow_comparison_says_where_its_gain_came_from():
    from pytest_retrieval_eval.report.shadow import segment_text
    from pytest_retrieval_eval.analysis.shadow import compare as shadow

    base = _result("base", {q.query_id: False for q in QUERIES}, QUERIES)
    cand = _result("cand", {q.query_id: "body-only" in q.tags for q in QUERIES}, QUERIES)  # gains on 20 of 60
    sh = shadow(cand, base, {"hit@5": 1.0})
    [(tag, n, gain, p)] = sh.segments
    assert (tag, n, gain) == ("body-only", 20, 1.0) and p < 0.001 and sh.gain == pytest.approx(1 / 3)
    assert segment_text(sh) == f"body-only +1.000 (n=20, p={p:.3g})"
    assert sh.to_dict()["segments"] == [{"tag": "body-only", "n": 20, "gain": 1.0, "p": p}]
