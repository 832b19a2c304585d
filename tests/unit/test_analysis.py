"""The run's one analysis (``analysis/analyse.py``): every derived quantity computed once, written
to results.json in an exact form (``_plain.py``) and read back equal, and read back only where it
was made from the same run, settings and baseline."""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field, replace
from typing import Mapping

import pytest

from pytest_retrieval_eval._plain import from_plain, to_plain
from pytest_retrieval_eval.data.labeled import LabeledSet
from pytest_retrieval_eval.analysis.result import EvaluationResult
from pytest_retrieval_eval.evaluation.results import RunResults
from pytest_retrieval_eval.analysis.analyse import Analysis, analyse, basis
from pytest_retrieval_eval.gate.verdict import conclude, for_run
from pytest_retrieval_eval.ir.paired import Paired
from pytest_retrieval_eval.rules.drops import MaxDrop
from pytest_retrieval_eval.rules.settings import GateSettings
from pytest_retrieval_eval.rules.thresholds import Threshold
from pytest_retrieval_eval.types import LabeledQuery, QueryResult

N = 24
QUERIES = tuple(LabeledQuery(f"q{i:02d}", f"question {i}", {f"d{i}": 1},
                             tags=("short",) if i % 3 == 0 else ()) for i in range(N))
LABELED = LabeledSet(QUERIES, name="set")


def _engine(name: str, missed: set[int]) -> EvaluationResult:
    return EvaluationResult(name, LABELED, tuple(
        QueryResult(q.query_id, ("x", "y", f"d{i}") if i in missed else (f"d{i}",)) for i, q in enumerate(QUERIES)))


def _settings(run: RunResults) -> GateSettings:
    return for_run(run, GateSettings(thresholds=(Threshold.parse("a:hit@1>=0.9", source="t"),),
                                     max_drops=(MaxDrop.parse("hit@1=0.0", source="t"),), by=("short",),
                                     shadows=(("b", "a"),), gain_weights={"hit@1": 1.0}), baseline="base.json")


@pytest.fixture
def judged():
    run = RunResults([_engine("a", {1, 4, 9}), _engine("b", {2, 3, 5, 7, 11})])
    baseline = RunResults([_engine("a", {1}), _engine("b", {2, 3})])
    return run, _settings(run), baseline


def test_an_analysis_is_written_and_read_back_exactly(judged):
    run, settings, baseline = judged
    a = analyse(run, settings, baseline)
    text = json.dumps(a.to_dict(), sort_keys=True, allow_nan=True)
    b = Analysis.from_dict(json.loads(text))
    assert json.dumps(b.to_dict(), sort_keys=True, allow_nan=True) == text
    assert isinstance(b.comparisons[0].paired, Paired) and isinstance(b.comparisons[0].paired.ci, tuple)
    assert b.baseline is not None and b.baseline.diffs and b.segments and b.shadows and b.misses
    assert b.interval(("a", "set"), "hit@1") == a.interval(("a", "set"), "hit@1")
    assert [c.text for c in b.causes(("b", "set")).values()] == [c.text for c in a.causes(("b", "set")).values()]
    assert Analysis.from_dict({**json.loads(text), "version": 0}) is None  # another form: made again


def test_the_basis_names_the_run_the_settings_and_the_baseline(judged):
    run, settings, baseline = judged
    first = basis(run, settings, baseline)
    assert basis(run, settings, baseline) == first
    assert basis(run, replace(settings, alpha=0.1), baseline) != first
    assert basis(run, settings, None) != first
    assert basis(run, settings, RunResults([_engine("a", {1, 2}), _engine("b", {2, 3})])) != first
    moved = RunResults([_engine("a", {1, 4, 10}), _engine("b", {2, 3, 5, 7, 11})])
    assert basis(moved, settings, baseline) != first


def test_conclude_reads_a_recorded_analysis_that_fits_and_makes_one_that_does_not(judged, monkeypatch):
    run, settings, baseline = judged
    recorded = Analysis.from_dict(json.loads(json.dumps(analyse(run, settings, baseline).to_dict())))

    def refused(*args, **kwargs):
        raise AssertionError("analysed again")

    monkeypatch.setattr("pytest_retrieval_eval.gate.verdict.analyse", refused)
    verdict = conclude(run, settings, baseline, recorded=recorded)
    assert verdict.analysis is recorded and verdict.failed  # a's hit@1 is 0.875 < 0.9, and drops
    assert {f.kind for f in verdict.failures} == {"rule", "drop"}
    with pytest.raises(AssertionError, match="analysed again"):
        conclude(run, replace(settings, alpha=0.1), baseline, recorded=recorded)


def test_a_failed_rule_carries_its_engines_misses_as_its_cause(judged):
    run, settings, baseline = judged
    [rule] = conclude(run, settings, baseline).of_kind("rule")
    assert rule.startswith("a: hit@1 = 0.8750, required >= 0.9")
    assert rule.causes == ("  cause: a missed 3 of 24 at hit@1: 3 ranked 3",)


def test_intervals_cover_every_recorded_measure_and_the_miss_cutoff(judged):
    run, settings, baseline = judged
    a = analyse(run, settings, baseline)
    for name in ("hit@1", "hit@5", "mrr", "ndcg@10", "map", f"hit@{a.miss_k}"):
        low, high = a.interval(("a", "set"), name)
        assert low <= run.get("a", "set").mean(name) <= high, name
    assert all(math.isnan(x) for x in a.interval(("nosuch", "set"), "hit@1"))


@dataclass(frozen=True)
class Inner:
    pair: tuple[float, float]
    rank: int | None = None


@dataclass(frozen=True)
class Outer:
    name: str
    inner: tuple[Inner, ...]
    by: Mapping[str, tuple[int, int, int]] = field(default_factory=dict)
    maybe: Inner | None = None
    _cache: dict = field(default_factory=dict)


def test_plain_values_round_trip_by_type_hints_nan_and_none_included():
    value = Outer("x", (Inner((0.1, math.nan)), Inner((1e-300, 2.5), 3)), {"m": (1, 2, 3)}, None)
    plain = json.loads(json.dumps(to_plain(value), allow_nan=True))
    assert "_cache" not in plain  # private fields are not the value's
    back = from_plain(Outer, plain)
    assert back.inner[1] == Inner((1e-300, 2.5), 3) and back.by == {"m": (1, 2, 3)} and back.maybe is None
    assert math.isnan(back.inner[0].pair[1]) and isinstance(back.inner, tuple) and isinstance(back.inner[0].pair, tuple)
    with pytest.raises(ValueError):
        from_plain(Inner, {"pair": [1.0]})  # a pair of one: refused, never read half
    with pytest.raises(ValueError):
        from_plain(Inner, {"pair": [1.0, 2.0], "rank": "3"})



def test_results_json_holds_each_questions_values_once_and_a_reading_restores_them(judged, tmp_path):
    """The analysis shows per-question values (what results.json writes under each question);
    its recorded form leaves them out, and ``load_saved`` restores them from the questions, so
    the file holds them once. A file whose questions lack them has its analysis made again."""
    from conftest import results_text
    from pytest_retrieval_eval.archive.saved import load_saved

    run, settings, _ = judged
    path = tmp_path / "results.json"
    path.write_text(results_text(run, settings))
    doc = json.loads(path.read_text())
    assert doc["analysis"]["recorded"] and all("values" not in x for x in doc["analysis"]["recorded"])
    made = analyse(run, settings)
    saved = load_saved(path)
    assert saved.analysis is not None and saved.analysis.recorded == made.recorded
    for q in doc["evaluations"][0]["queries"]:
        del q["values"]["hit@1"]
    path.write_text(json.dumps(doc))
    assert load_saved(path).analysis is None
