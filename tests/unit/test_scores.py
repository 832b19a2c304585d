"""``Scores`` (``analysis/scores.py``): one table of values per recorded evaluation, made once,
read by the analysis and by the fixture API; a saved run's recorded per-question values are read,
not scored again, where its measures are defined as this version defines them."""

from __future__ import annotations

import json

import pytest

from conftest import evaluate_engine, results_text
from pytest_retrieval_eval import LabeledQuery, LabeledSet, adapters
from pytest_retrieval_eval.analysis.result import EvaluationResult
from pytest_retrieval_eval.analysis.scores import Scores
from pytest_retrieval_eval.evaluation.results import Evaluation, RunResults
from pytest_retrieval_eval.evaluation.record_json import evaluation_from_dict
from pytest_retrieval_eval.archive.saved import load_saved

LABELED = LabeledSet(tuple(LabeledQuery(f"q{i}", f"item{i}", {f"d{i}": 1}) for i in range(6)), name="set")


def engine():
    """d{i} first for even questions, second for odd ones."""
    return adapters.function(lambda q, k: ([f"d{q[4:]}", "x"] if int(q[4:]) % 2 == 0 else ["x", f"d{q[4:]}"]),
                             name="alt")


def no_evaluation(monkeypatch):
    import pytest_retrieval_eval.analysis.scores as scores
    import pytest_retrieval_eval.ir.metrics as metrics

    def refused(*args, **kwargs):
        raise AssertionError("a measure was scored again")

    monkeypatch.setattr(metrics, "evaluate", refused)
    monkeypatch.setattr(scores, "evaluate", refused)


def test_one_scores_per_evaluation_made_on_first_use_and_a_new_evaluation_gets_its_own():
    e = evaluate_engine(engine(), LABELED)
    assert Scores.of(e) is Scores.of(e) is e.scores
    judged = e.with_judged({"q1": {"x": 2}}, {"fingerprint": "f", "model": "m"})
    assert Scores.of(judged) is not Scores.of(e)
    assert e.mrr() == Scores.of(e).mean("mrr") == pytest.approx(0.75)


def test_the_record_computes_nothing_and_the_fixture_api_delegates_to_its_scores():
    record = Evaluation("alt", LABELED, evaluate_engine(engine(), LABELED).results)
    computing = {"per_query", "values", "mean", "ci", "ppi", "causes", "misses", "hit_curve", "trial_means",
                 "prefetch", "has_value", "tokens_at", "worst", "freshness_lines", "stale_documents"}
    assert not computing & set(dir(record))
    result = EvaluationResult.of(record)
    assert result.hit_at(1) == 0.5 and result.hit_at(2) == 1.0
    assert result.per_query("hit@1") == Scores.of(result).per_query("hit@1")


def test_a_saved_run_reads_its_recorded_values_and_scores_nothing_again(tmp_path, monkeypatch):
    run = RunResults([evaluate_engine(engine(), LABELED)])
    path = tmp_path / "results.json"
    path.write_text(results_text(run))
    no_evaluation(monkeypatch)
    again = load_saved(path).run.evaluations[0]
    assert again.recorded_values["mrr"] == run.evaluations[0].per_query("mrr")
    assert again.mrr() == run.evaluations[0].mrr() and again.hit_at(5) == 1.0


def test_recorded_values_are_what_is_read_not_the_rankings_scored_again(tmp_path):
    """A file's values are the record: edit one and the read-back reports the edit (so nothing
    was scored again); the rankings of a file from another definition are scored."""
    path = tmp_path / "results.json"
    path.write_text(results_text(RunResults([evaluate_engine(engine(), LABELED)])))
    doc = json.loads(path.read_text())
    doc["evaluations"][0]["queries"][1]["values"]["mrr"] = 1.0
    path.write_text(json.dumps(doc))
    assert load_saved(path).run.evaluations[0].mrr() == pytest.approx(5 / 6)  # was 4.5 / 6
    scored = evaluation_from_dict(doc["evaluations"][0], EvaluationResult, recorded=False)
    assert scored.recorded_values == {} and scored.mrr() == pytest.approx(0.75)


def test_a_measure_recorded_without_a_value_for_some_question_is_scored_not_read():
    d = Evaluation("alt", LABELED, evaluate_engine(engine(), LABELED).results).to_dict()
    for i, q in enumerate(d["queries"]):
        q["values"] = {"mrr": None if i == 0 else 0.5, "hit@1": 1.0}
    e = evaluation_from_dict(d, EvaluationResult, recorded=True)
    assert set(e.recorded_values) == {"hit@1"} and e.mrr() == pytest.approx(0.75)


def test_a_baseline_is_compared_from_the_values_it_recorded_not_scored_again(tmp_path, monkeypatch):
    from pytest_retrieval_eval.analysis.baseline import compare
    from pytest_retrieval_eval.archive.saved import load_baseline

    now = RunResults([evaluate_engine(engine(), LABELED)])
    path = tmp_path / "base.json"
    path.write_text(results_text(now))
    base, problems = load_baseline(path)
    assert problems == []
    for m in ("hit@1", "mrr"):  # this run's own values, scored before the comparison
        Scores.of(now.evaluations[0]).per_query(m)
    no_evaluation(monkeypatch)
    compared = compare(now, base, ["hit@1", "mrr"])
    assert [(d.measure, d.delta) for d in compared.diffs] == [("hit@1", 0.0), ("mrr", 0.0)]
