"""A measure with no value (an ids-only engine's ``+evidence`` twin, a ``+judged`` twin without
judgments, a ``~ppi`` estimate without human-judged questions) is None, JSON's null: never a
number, never compared with a baseline, never counted among the comparisons a p is corrected
over, never "moved"; a rule on it fails saying it checked nothing; results.json stays strict JSON."""

from __future__ import annotations

import json
import math

import pytest

from conftest import results_text
from pytest_retrieval_eval import LabeledQuery, LabeledSet, Passage, adapters
from conftest import evaluate_engine
from pytest_retrieval_eval.evaluation.results import RunResults
from pytest_retrieval_eval.analysis.baseline import compare
from pytest_retrieval_eval.rules.drops import MaxDrop
from pytest_retrieval_eval.rules.thresholds import Threshold
from pytest_retrieval_eval.archive.saved import load_saved
from pytest_retrieval_eval.rules.settings import GateSettings
from pytest_retrieval_eval.gate.verdict import verdict_of
from pytest_retrieval_eval.ir.stats import adjust

N = 12
#: the answer is in each document's second passage
TEXTS = {f"d{i}": (f"Notes number {i} about the service.", f"The fee for item{i} is {i + 3} euros a month.")
         for i in range(N)}
LABELED = LabeledSet(tuple(LabeledQuery(f"q{i}", f"fee for item{i}?", {f"d{i}": 1},
                                        {"evidence": {f"d{i}": [f"the fee for item{i} is {i + 3} euros"]}})
                           for i in range(N)), name="set")
MEASURES = ["hit@1", "hit@1+evidence", "hit@2", "hit@2+evidence"]


def _doc(query: str) -> str:
    return next(d for d in TEXTS if f"item{d[1:]}?" in query)


def ids_engine():
    return adapters.function(lambda q, k: [_doc(q)], name="ids")


def chunks_engine(answer_first: bool = True):
    def passages(q, k):
        doc = _doc(q)
        found = [Passage(doc, TEXTS[doc][1]), Passage(doc, TEXTS[doc][0])]
        return found if answer_first else found[::-1]
    return adapters.function(passages, name="chunks")


def run_of(*engines) -> RunResults:
    return RunResults([evaluate_engine(e, LABELED) for e in engines])


def strict(text: str):
    """JSON as Node's JSON.parse and GitHub's fromJSON read it: NaN and Infinity are no JSON."""
    def refuse(constant):
        raise ValueError(f"{constant} is not JSON")
    return json.loads(text, parse_constant=refuse)


def test_a_measure_without_a_value_is_none_and_one_with_a_value_a_number():
    ids, chunks = run_of(ids_engine(), chunks_engine()).evaluations[1], run_of(chunks_engine()).evaluations[0]
    assert ids.engine == "ids" and ids.mean("hit@1+evidence") is None and ids.mean("hit@1") == 1.0
    assert ids.mean("ndcg@10+judged") is None and ids.mean("ndcg@10~ppi") is None  # no judgments
    assert ids.mean("freshness.stale_free@5") is None  # no versioned documents
    assert chunks.mean("hit@1+evidence") == 1.0
    empty = RunResults([evaluate_engine(ids_engine(), LabeledSet((), name="none"))]).evaluations[0]
    assert empty.mean("hit@1") is None  # 0 of 0 questions: no value


def test_an_identical_rerun_compares_only_measures_with_a_value_on_both_sides_and_holm_counts_only_those():
    base = run_of(ids_engine(), chunks_engine(answer_first=False))
    now = run_of(ids_engine(), chunks_engine())
    compared = compare(now, base, MEASURES)
    names = [(d.engine, d.measure) for d in compared.diffs]
    # ids has no +evidence value on either side: 2 of its 4 measures, not 4; chunks all 4
    assert names == [("chunks", m) for m in MEASURES] + [("ids", "hit@1"), ("ids", "hit@2")]
    assert all(not math.isnan(x) for d in compared.diffs for x in (d.before, d.after, d.delta, d.p, d.p_adjusted))
    # the family is the six measures compared: hit@1+evidence's p corrected over 6, not 8
    assert [d.p_adjusted for d in compared.diffs] == adjust([d.p for d in compared.diffs], "holm")
    moved = [(d.engine, d.measure) for d in compared.diffs if d.moved]
    assert moved == [("chunks", "hit@1+evidence")]
    again = compare(now, now, MEASURES)
    assert len(again.diffs) == 6 and not any(d.moved for d in again.diffs)  # against itself: nothing moved
    assert not any("evidence" in n for n in again.notes)  # no value on either side: nothing to say per measure


def test_a_measure_with_a_value_on_one_side_only_is_not_compared_and_said_so():
    base = run_of(chunks_engine())
    now = RunResults([evaluate_engine(adapters.function(lambda q, k: [_doc(q)], name="chunks"), LABELED)])
    compared = compare(now, base, MEASURES)
    assert [d.measure for d in compared.diffs] == ["hit@1", "hit@2"]
    [note] = [n for n in compared.notes if "evidence" in n]
    assert note.startswith("chunks: hit@1+evidence, hit@2+evidence not compared: no value in this run (the "
                           "baseline has one)")


def test_a_threshold_on_a_measure_without_a_value_fails_saying_it_checked_nothing():
    run = run_of(ids_engine(), chunks_engine())
    rule = Threshold.parse("hit@1+evidence>=0.9", source="t")
    [failed] = verdict_of(run, GateSettings(thresholds=(rule,)), measures=["hit@1"]).of_kind("rule")
    assert failed.startswith("ids: hit@1+evidence has no value, so the rule hit@1+evidence>=0.9 checked nothing "
                             "(from t; n=12; no evidence-level value: the engine returns document ids, not passages")
    assert failed.engine == "ids" and "nan" not in failed
    lower = GateSettings(thresholds=(Threshold.parse("ids:hit@1+evidence>=0.9", source="t"),), confidence="lower")
    [failed] = verdict_of(run, lower, measures=["hit@1"]).of_kind("rule")
    assert "has no value, so the rule" in failed and "nan" not in failed  # no interval of no value judged


def test_a_max_drop_rule_on_a_measure_without_a_value_fails_saying_it_checked_nothing():
    run = run_of(ids_engine(), chunks_engine())
    for text in ("ids:hit@1+evidence=0.05", "hit@1+evidence=0.05"):
        settings = GateSettings(max_drops=(MaxDrop.parse(text, source="t"),))
        verdict = verdict_of(run, settings, measures=["hit@1"], baseline=run)
        [failed] = verdict.of_kind("drop")
        assert failed.startswith(f"max-drop rule {text} (from t): ids has no value of hit@1+evidence (in this run "
                                 "and in the baseline), so the rule checked nothing"), failed
    one_sided = RunResults([evaluate_engine(adapters.function(lambda q, k: [_doc(q)], name="chunks"), LABELED)])
    settings = GateSettings(max_drops=(MaxDrop.parse("hit@1+evidence=0.05", source="t"),))
    [failed] = verdict_of(one_sided, settings, measures=["hit@1"], baseline=run_of(chunks_engine())).of_kind("drop")
    assert "chunks has no value of hit@1+evidence (in this run), so the rule checked nothing" in failed


def test_results_json_is_strict_json_with_null_for_no_value_and_reads_back(tmp_path):
    run = run_of(ids_engine(), chunks_engine())
    settings = GateSettings(table_measures=tuple(MEASURES))
    text = results_text(run, settings, baseline=run)
    doc = strict(text)
    ids = next(e for e in doc["evaluations"] if e["engine"] == "ids")
    assert ids["summary"]["hit@1+evidence"] == {"mean": None, "ci95": None}
    assert all(q["values"]["hit@1+evidence"] is None for q in ids["queries"])
    [row] = [r for r in doc["analysis"]["rows"] if r["engine"] == "ids"]
    assert row["values"]["hit@1+evidence"] is None and row["values"]["hit@1"] == 1.0
    path = tmp_path / "results.json"
    path.write_text(text)
    saved = load_saved(path)
    assert saved.analysis is not None
    assert next(r for r in saved.analysis.rows if r.engine == "ids").values["hit@1+evidence"] is None


def test_an_old_results_file_with_nan_reads_back_as_no_value(tmp_path):
    run = run_of(ids_engine(), chunks_engine())
    doc = json.loads(results_text(run, GateSettings(table_measures=tuple(MEASURES))))
    ids = next(e for e in doc["evaluations"] if e["engine"] == "ids")
    ids["summary"]["hit@1+evidence"] = {"mean": math.nan, "ci95": [math.nan, math.nan]}  # as files were written
    [row] = [r for r in doc["analysis"]["rows"] if r["engine"] == "ids"]
    row["values"]["hit@1+evidence"] = math.nan
    path = tmp_path / "old.json"
    path.write_text(json.dumps(doc, allow_nan=True))
    assert "NaN" in path.read_text()
    saved = load_saved(path)
    assert next(r for r in saved.analysis.rows if r.engine == "ids").values["hit@1+evidence"] is None
    again = verdict_of(saved.run, saved.settings)  # made again from the run: the same
    assert next(r for r in again.rows if r.engine == "ids").values["hit@1+evidence"] is None


def test_the_results_writer_refuses_nan_naming_where_it_is():
    from pytest_retrieval_eval._plain import strict_json

    assert strict_json({"a": [1.0, None]}) == '{"a": [1.0, null]}'
    with pytest.raises(ValueError, match=r"a\[1\]"):
        strict_json({"a": [1.0, math.nan]})
    with pytest.raises(ValueError, match=r"b"):
        strict_json({"b": math.inf})


def test_a_judges_kappa_on_one_kind_of_label_throughout_is_null_not_nan():
    from pytest_retrieval_eval.data.judges import Judge
    from pytest_retrieval_eval.data.judgments import Judgment, Judgments
    from pytest_retrieval_eval.evaluation.judging import with_judgments

    run = run_of(ids_engine())
    judge = Judge("model-a", "p" * 64, 0.0, 1, "127.0.0.1")
    # people and judge call both calibration pairs relevant: chance agreement is 1, kappa says nothing
    run, used = with_judgments(run, Judgments([Judgment(f"q{i}", f"d{i}", 3, (3,), "s" * 64, judge, "calibration", 1)
                                               for i in (0, 1)]), shown_path="j.jsonl")
    assert used.calibrated == 2 and used.kappa is None
    assert strict(results_text(run))["judgments"]["kappa"] is None


def test_a_shadows_gain_over_no_weighted_measure_with_a_value_is_null_in_results_json():
    run = run_of(ids_engine(), chunks_engine())
    settings = GateSettings(table_measures=("hit@1",), shadows=(("chunks", "ids"),),
                            gain_weights={"freshness.stale_free@5": 1.0})  # no versioned documents: no value
    [shadow] = strict(results_text(run, settings))["shadows"]
    assert shadow["skipped"] == ["freshness.stale_free@5"] and shadow["gain"] is None and shadow["gain_p"] is None


def test_a_subset_file_writes_a_drop_of_no_number_as_null(tmp_path):
    from pytest_retrieval_eval.analysis.subset import write_subset

    path = tmp_path / "pr.subset.json"
    write_subset(path, name="pr", ids=["q0"], measure="hit@1", labeled=LABELED, sources=["a.json"], spread=1,
                 alpha=0.05, by_engine={"ids": {"full": math.nan, "subset": 0.25}})
    saved = json.loads(path.read_text(), parse_constant=lambda c: pytest.fail(f"{c} in the subset file"))
    assert saved["detectable_drop"] == {"ids": {"full": None, "subset": 0.25}}


def test_a_shadow_headline_and_a_turns_table_print_no_value_as_the_tables_do_never_nan():
    from types import SimpleNamespace

    from pytest_retrieval_eval.report import shadow, turns
    from pytest_retrieval_eval.report.table import NO_VALUE, signed

    sh = SimpleNamespace(candidate="new", baseline="old", labeled="set", n=3, gain=None, gain_ci=None, gain_p=math.nan,
                         weights={"hit@5+judged": 1.0}, blended_gain=None)
    line = shadow.headline(sh)
    assert "nan" not in line and f"knowledge gain {NO_VALUE} {NO_VALUE}, p={NO_VALUE}" in line
    assert signed(math.nan) == signed(None) == NO_VALUE and signed(0.25) == "+0.250"
    assert turns._num(math.nan) == turns._num(None) == NO_VALUE


def test_a_table_cell_of_no_number_prints_as_no_value_never_nan():
    from pytest_retrieval_eval.report.table import NO_VALUE, fmt

    assert fmt(None) == fmt(math.nan) == NO_VALUE and fmt(0.5) == "0.500"


def test_a_weight_left_out_of_a_shadows_gain_names_the_engines_one_of_which_has_no_value():
    from types import SimpleNamespace

    from pytest_retrieval_eval.report.shadow import skipped_text

    sh = SimpleNamespace(candidate="passages", baseline="ids", skipped=("hit@5+evidence",))
    assert skipped_text(sh) == "not weighted (no value in passages or in ids): hit@5+evidence"
    assert skipped_text(SimpleNamespace(candidate="a", baseline="b", skipped=())) is None
