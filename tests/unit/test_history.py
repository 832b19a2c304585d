"""The run history's storage (issue 31 item 1): one file per record, written by several writers at
once without loss, bounded, found by commit; a file that is not a record is skipped, named in a
warning; each listed number names its measure."""

from __future__ import annotations

import json
import threading

from pytest_retrieval_eval.archive.history import History, fingerprints
from pytest_retrieval_eval.analysis.result import EvaluationResult
from pytest_retrieval_eval.evaluation.results import RunResults
from pytest_retrieval_eval.data.labeled import LabeledSet
from pytest_retrieval_eval.types import LabeledQuery, QueryResult
from conftest import results_text


def results_json(hit: bool = True) -> str:
    labeled = LabeledSet((LabeledQuery("q1", "x", {"g": 1}),))
    return results_text(RunResults([EvaluationResult("e", labeled, (QueryResult("q1", ("g",) if hit else ("x",)),))]))


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
    assert len(history.records()) == 2  # skipped, and said: never the end of a run
    assert [w for w in history.warnings if "stray.json" in w and "not a history record" in w]


def test_a_json_file_that_is_not_a_record_is_skipped_with_one_warning_naming_it(tmp_path):
    history = History(tmp_path)
    history.append(results_json(), {"commit": "c" * 40}, now=1e9)
    (tmp_path / "notes.json").write_text('{"team": "search"}')
    (tmp_path / "broken.json").write_text('{"format": ')
    assert len(history.records()) == 1
    assert len(history.records()) == 1  # read twice, warned once per file
    assert len(history.warnings) == 2
    assert [w for w in history.warnings if "notes.json" in w and "not a history record" in w]
    assert [w for w in history.warnings if "broken.json" in w]
    for _ in range(3):  # pruning removes records only, never a file of the team's
        History(tmp_path, keep=1).append(results_json(), {"commit": "d" * 40}, now=2e9)
    assert (tmp_path / "notes.json").exists() and (tmp_path / "broken.json").exists()


def test_history_lines_name_their_measure(tmp_path, capsys):
    from pytest_retrieval_eval.cli import main

    history = History(tmp_path)
    history.append(results_json(True), {"commit": "c" * 40, "branch": "main"}, now=1e9)
    assert main(["history", "--history", str(tmp_path)]) == 0
    [line] = capsys.readouterr().out.splitlines()
    assert "e hit@5 1.000" in line
    assert main(["history", "--history", str(tmp_path), "--measure", "mrr"]) == 0
    assert "e mrr 1.000" in capsys.readouterr().out


def test_a_trend_points_title_names_its_measure(tmp_path):
    from pytest_retrieval_eval.analysis.trend import trend_points
    from pytest_retrieval_eval.report.trend import trend_svg

    history = History(tmp_path)
    history.append(results_json(True), {"commit": "c" * 40}, now=1e9)
    svg = trend_svg(trend_points(history.records(), "mrr"), "mrr")
    assert ": mrr 1.000 [" in svg


def test_a_record_whose_results_cannot_be_read_is_left_out_of_the_trend_and_named(tmp_path, capsys):
    from pytest_retrieval_eval.cli import main

    history = History(tmp_path)
    history.append(results_json(True), {"commit": "c" * 40}, now=1e9)
    broken = history.append(results_json(False), {"commit": "d" * 40}, now=2e9)
    doc = json.loads(broken.read_text())
    del doc["results"]["evaluations"][0]["queries"]  # a hand-edited or truncated record
    broken.write_text(json.dumps(doc))
    assert main(["history", "trend", "--history", str(tmp_path), "--out", str(tmp_path / "t.svg")]) == 0
    out, err = capsys.readouterr()
    assert "over 2 record(s), 1 point(s)" in out
    assert err.count(broken.name) == 1 and "left out of the trend" in err
    assert main(["history", "--history", str(tmp_path)]) == 0  # the list reads only the summary
    assert len(capsys.readouterr().out.splitlines()) == 2
