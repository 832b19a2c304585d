"""The run history's storage (issue 31 item 1): one file per record, written by several writers at
once without loss, bounded, found by commit; a file that is not a record is refused by name."""

from __future__ import annotations

import json
import threading

import pytest

from pytest_retrieval_eval.errors import RetrievalEvalError
from pytest_retrieval_eval.gate.history import History, fingerprints
from pytest_retrieval_eval.run.results import EvaluationResult, RunResults
from pytest_retrieval_eval.data.labeled import LabeledSet
from pytest_retrieval_eval.types import LabeledQuery, QueryResult


def results_json(hit: bool = True) -> str:
    labeled = LabeledSet((LabeledQuery("q1", "x", {"g": 1}),))
    return RunResults([EvaluationResult("e", labeled, (QueryResult("q1", ("g",) if hit else ("x",)),))]).to_json()


def test_writers_at_once_keep_every_record_and_the_oldest_go_beyond_keep(tmp_path):
    history = History(tmp_path / "h", keep=50)
    text = results_json()
    threads = [threading.Thread(target=history.append, args=(text, {"commit": "a" * 40}), kwargs={"now": 1e9})
               for _ in range(12)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(history.records()) == 12  # the same second, the same commit, the same process: twelve files
    small = History(tmp_path / "h", keep=5)
    small.append(text, {"commit": "b" * 40}, now=2e9)
    assert len(small.records()) == 5 and small.records()[-1].commit == "b" * 40


def test_the_record_at_a_commit_prefers_a_clean_checkout_and_reads_back_as_a_run(tmp_path):
    history = History(tmp_path)
    history.append(results_json(True), {"commit": "c" * 40, "dirty": False}, now=1e9)
    history.append(results_json(False), {"commit": "c" * 40, "dirty": True}, now=2e9)
    found = history.at(["ccccccc"])
    assert found is not None and found.git["dirty"] is False
    assert found.run().evaluations[0].hit_at(5) == 1.0
    assert history.at(["d" * 40]) is None
    assert set(fingerprints(json.loads(results_json()))["engines"]) == {"e on labeled"}
    (tmp_path / "stray.json").write_text('{"format": "something else"}')
    with pytest.raises(RetrievalEvalError, match=r"stray.json: field 'format': not a history record"):
        history.records()
