"""What a run's ending found wrong before any rule (an xdist worker lost, a share that never
arrived, an engine that could not be built, judgments that could not be read) reaches the
verdict explicitly, beside the rule settings and never inside them: results.json keeps it in
``settings.failures`` as it always did, and ``report results.json`` fails on it again with the
same message."""

from __future__ import annotations

import dataclasses
import json

from conftest import results_text
from pytest_retrieval_eval.cli import main as cli
from pytest_retrieval_eval.data.labeled import LabeledSet
from pytest_retrieval_eval.analysis.result import EvaluationResult
from pytest_retrieval_eval.evaluation.results import RunResults
from pytest_retrieval_eval.archive.saved import load_saved, results_json
from pytest_retrieval_eval.gate.verdict import conclude, for_run
from pytest_retrieval_eval.rules.settings import GateSettings
from pytest_retrieval_eval.types import LabeledQuery, QueryResult

LOST = "xdist worker gw1 (crashed: boom); its retrieval results are missing"
SHARE = "engine 'kw': share(s) 2 of 2 never arrived"


def run() -> RunResults:
    labeled = LabeledSet((LabeledQuery("q1", "one", {"a": 1}), LabeledQuery("q2", "two", {"b": 1})), name="set")
    return RunResults([EvaluationResult("kw", labeled, (QueryResult("q1", ("a",)), QueryResult("q2", ("c",))))])


def test_the_rule_settings_hold_no_run_failures_but_results_json_keeps_their_key():
    assert "failures" not in {f.name for f in dataclasses.fields(GateSettings)}
    assert GateSettings().to_dict()["failures"] == []


def test_a_lost_worker_fails_the_verdict_first_and_is_recorded_where_results_json_always_kept_it():
    r = run()
    verdict = conclude(r, for_run(r), failures=[LOST, SHARE], problems=["baseline unusable: gone"])
    assert [(f.kind, str(f)) for f in verdict.failures] == [("run", LOST), ("run", SHARE),
                                                           ("run", "baseline unusable: gone")]
    doc = json.loads(results_json(verdict))
    assert doc["settings"]["failures"] == [LOST, SHARE]  # a problem of this judging is not the run's
    assert [f["text"] for f in doc["verdict"]["failures"]] == [LOST, SHARE, "baseline unusable: gone"]


def test_report_fails_a_saved_run_on_its_lost_worker_again_with_the_same_message(tmp_path, capsys):
    r = run()
    path = tmp_path / "results.json"
    text = results_json(conclude(r, for_run(r), failures=[LOST]))
    path.write_text(text)
    saved = load_saved(path)
    assert saved.failures == (LOST,) and saved.settings == for_run(r)
    again = conclude(saved.run, saved.settings, failures=saved.failures, recorded=saved.analysis)
    assert results_json(again) == text
    assert cli(["report", str(path)]) == 1
    assert f"FAIL retrieval gate: {LOST}" in capsys.readouterr().out


def test_a_run_without_failures_writes_what_it_always_wrote():
    assert json.loads(results_text(run()))["settings"]["failures"] == []
