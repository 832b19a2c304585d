"""The public API: every name the package re-exports resolves, lazily, to what its module holds
(a renamed module cannot leave a dangling name behind)."""

from __future__ import annotations

import importlib

import pytest_retrieval_eval as pre


def test_every_public_name_resolves_to_its_module_s_object():
    for name, module in pre._PUBLIC.items():
        imported = importlib.import_module(f"pytest_retrieval_eval.{module}")
        expected = imported if module.rsplit(".", 1)[-1] == name else getattr(imported, name)
        assert getattr(pre, name) is expected, name
    assert sorted(pre._PUBLIC) == pre.__all__


def test_a_saved_run_is_read_and_concluded_through_the_public_api(tmp_path):
    from pytest_retrieval_eval import (EvaluationResult, GateSettings, LabeledQuery, LabeledSet, QueryResult,
                                       RunResults, conclude, load_saved, results_json)

    labeled = LabeledSet((LabeledQuery("q1", "a question", {"d1": 1}), LabeledQuery("q2", "another", {"d2": 1})),
                         name="set")
    run = RunResults([EvaluationResult("e", labeled, (QueryResult("q1", ("d1",)), QueryResult("q2", ("x",))))])
    path = tmp_path / "results.json"
    path.write_text(results_json(conclude(run, GateSettings())), encoding="utf-8")
    saved = load_saved(path)
    verdict = conclude(saved.run, saved.settings, recorded=saved.analysis)
    assert verdict.analysis is saved.analysis and saved.run.evaluations[0].hit_at(1) == 0.5
    # the verdict hands renderers the record and the analysis, never the calculator
    assert not hasattr(verdict.run.evaluations[0], "hit_at") and verdict.run.evaluations[0].results == run.evaluations[0].results
