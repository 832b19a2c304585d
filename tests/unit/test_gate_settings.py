"""The gate's settings as one frozen value: recorded in results.json in the same keys, read back
equal, and changed by the report command's flags without losing what the flags do not name."""

from __future__ import annotations

import dataclasses
import json

import pytest

from pytest_retrieval_eval.cli import main as cli
from pytest_retrieval_eval.data.labeled import LabeledSet
from pytest_retrieval_eval.rules.drops import parse_max_drops
from pytest_retrieval_eval.rules.thresholds import parse_thresholds
from pytest_retrieval_eval.archive.saved import load_saved, results_json
from pytest_retrieval_eval.rules.settings import GateSettings
from pytest_retrieval_eval.gate.verdict import conclude, for_run
from pytest_retrieval_eval.analysis.result import EvaluationResult
from pytest_retrieval_eval.evaluation.results import RunResults
from pytest_retrieval_eval.types import LabeledQuery, QueryResult
from conftest import results_text

N = 12


def _run() -> RunResults:
    """``cand`` finds every gold document first; ``base`` misses a third of them."""
    queries = tuple(LabeledQuery(f"q{i}", f"question {i}", {f"d{i}": 1}) for i in range(N))
    labeled = LabeledSet(queries, name="set")
    cand = tuple(QueryResult(q.query_id, (f"d{i}", "x")) for i, q in enumerate(queries))
    base = tuple(QueryResult(q.query_id, ("x",) if i % 3 == 0 else ("x", f"d{i}")) for i, q in enumerate(queries))
    return RunResults([EvaluationResult("cand", labeled, cand), EvaluationResult("base", labeled, base)])


def _settings(rule: str = "cand:shadow.gain>=0") -> GateSettings:
    return GateSettings(thresholds=tuple(parse_thresholds([(rule, "ini retrieval_thresholds")])),
                        max_drops=tuple(parse_max_drops([("hit@5=0.05", "--retrieval-max-drop")])),
                        alpha=0.05, correction="bh", shadows=(("cand", "base"),), gain_weights={"hit@5": 1.0})


def test_settings_go_to_results_json_in_the_same_keys_and_come_back_equal():
    s = _settings()
    d = s.to_dict()
    assert set(d) == {"table_measures", "recorded_measures", "thresholds", "max_drops", "alpha", "noise_aware",
                      "baseline", "baseline_force", "failures", "correction", "confidence", "shadows", "gain_weights"}
    assert d["thresholds"] == [["cand:shadow.gain>=0", "ini retrieval_thresholds"]]
    assert d["shadows"] == [["cand", "base"]] and d["gain_weights"] == {"hit@5": 1.0}
    back = GateSettings.from_dict(json.loads(json.dumps(d)))
    assert back == s and back.to_dict() == d
    assert "shadows" not in GateSettings().to_dict()  # no shadow: the keys a run without one always had


def test_a_change_is_a_replace_that_keeps_everything_else():
    s = _settings()
    changed = dataclasses.replace(s, alpha=0.1)
    assert changed.alpha == 0.1 and changed.shadows == s.shadows and changed.thresholds == s.thresholds
    with pytest.raises(dataclasses.FrozenInstanceError):
        s.alpha = 0.2  # type: ignore[misc]


@pytest.mark.parametrize("rule, code, said", [
    ("cand:shadow.gain>=0", 0, None),  # the candidate gained: the rule passes
    ("cand:shadow.gain>=0.5", 1, "shadow cand:base: knowledge gain = +0.3333, required >= 0.5"),
])
def test_report_with_another_alpha_keeps_the_shadow_comparisons_and_the_rules_verdict(tmp_path, capsys, rule, code,
                                                                                      said):
    saved = tmp_path / "results.json"
    run = _run()
    saved.write_text(results_text(run, for_run(run, _settings(rule))), encoding="utf-8")
    out = tmp_path / "out"
    assert cli(["report", str(saved), "--alpha", "0.1", "--out", str(out)]) == code
    printed = capsys.readouterr().out
    assert "no shadow comparison ran" not in printed
    if said:
        assert said in printed
    doc = json.loads((out / "results.json").read_text())
    assert doc["settings"]["alpha"] == 0.1 and doc["settings"]["shadows"] == [["cand", "base"]]
    assert doc["shadows"][0]["gain"] == pytest.approx(1 / 3)
    assert "## Shadow comparisons" in (out / "results.md").read_text()


def test_a_saved_run_is_judged_by_its_settings_after_a_reload(tmp_path):
    saved = tmp_path / "results.json"
    run = _run()
    settings = for_run(run, _settings())
    saved.write_text(results_text(run, settings), encoding="utf-8")
    loaded = load_saved(saved)
    assert isinstance(loaded.settings, GateSettings) and loaded.settings == settings
    verdict = conclude(loaded.run, loaded.settings, recorded=loaded.analysis)
    assert verdict.analysis == loaded.analysis  # the recorded analysis, read: nothing made again
    assert verdict.correction == "bh" and [sh.candidate for sh in verdict.shadows] == ["cand"]
    assert results_json(verdict) == saved.read_text(encoding="utf-8")
