"""Under pytest-xdist each worker ships the results document a CI job writes (results.json's form,
by the same writer), and the controller puts the workers' documents together with the one
``combine`` that merges CI slices (coverage.py's one data format); a worker lost on the way
fails the gate, and ``report`` on the run's results.json fails it again with the same line."""

from __future__ import annotations

import json

import pytest

from projects import BUNDLED_TESTS, ORACLE_CONFTEST
from pytest_retrieval_eval.cli import main as cli
from pytest_retrieval_eval.archive.combine import combine
from pytest_retrieval_eval.archive.results_json import document_text, load

#: the controller keeps what each worker shipped where the test can read it
SHIPPED = ORACLE_CONFTEST + """
    import pytest

    @pytest.hookimpl(optionalhook=True)
    def pytest_testnodedown(node, error):
        text = (getattr(node, "workeroutput", None) or {}).get("pytest_retrieval_eval")
        if text is not None:
            (node.config.rootpath / f"worker-{node.gateway.id}.json").write_text(text, encoding="utf-8")
"""
#: what a worker times and results.json (without --retrieval-latency) leaves out
TIMED = ("seconds", "stage_seconds", "measured")


def source_of_truth(d: dict, shipped: dict) -> dict:
    """``d`` (an evaluation in results.json's form) on the keys of the one ``shipped``, its
    questions' on the keys of the shipped questions, timings left out."""
    out = {k: d[k] for k in shipped if k not in TIMED}
    out["queries"] = [{k: q[k] for k in s if k not in TIMED} for q, s in zip(d["queries"], shipped["queries"])]
    return out


@pytest.mark.parametrize("extra", [[], ["--retrieval-shard"]], ids=["evaluations", "shares"])
def test_a_worker_ships_the_results_document_a_ci_job_writes_and_combine_reads_it(make_project, extra):
    p = make_project(engines="keyword oracle", conftest=SHIPPED, tests=BUNDLED_TESTS)
    result = p.runpytest_subprocess("-m", "retrieval", "-n", "2", "-p", "no:cacheprovider",
                                    "--retrieval-report-dir=out", *extra)
    assert result.ret == 0, result.stdout.str()
    shipped = {path: path.read_text(encoding="utf-8") for path in sorted(p.path.glob("worker-*.json"))}
    assert len(shipped) == 2
    written = p.path / "out" / "results.json"
    recorded = json.loads(written.read_text(encoding="utf-8"))
    for path, text in shipped.items():
        assert text == document_text(json.loads(text))  # written as results.json is ...
        load(path)  # ... and read as one: its format, version and metric definitions
        for d in json.loads(text)["evaluations"]:
            if "share" in d:  # a share of the labeled set: its questions, where they sit in the whole
                assert set(d["share"]) == {"of", "k", "n", "positions"}
                continue
            [r] = [e for e in recorded["evaluations"] if e["engine"] == d["engine"]]
            assert source_of_truth(d, d) == source_of_truth(r, d)  # what the run's results.json says of it
    combined = combine([json.loads(text) for text in shipped.values()], names=[p.stem for p in shipped]).run
    assert [e.to_dict() for e in combined.evaluations] == [e.to_dict() for e in load(written).evaluations]


CRASH = """
    import os

    def test_crash():
        os._exit(3)
"""


def test_a_lost_worker_fails_the_gate_and_report_fails_its_results_json_again_with_the_same_line(make_project,
                                                                                                  capsys):
    p = make_project(tests=BUNDLED_TESTS)
    p.makepyfile(test_crash=CRASH)
    result = p.runpytest_subprocess("-n", "2", "--dist", "loadfile", "--max-worker-restart", "0",  # a worker each
                                    "-p", "no:cacheprovider", "--retrieval-report-dir=out")
    assert result.ret != 0
    [line] = [x for x in result.stdout.lines if x.startswith("FAIL retrieval gate: xdist worker ")]
    assert line.endswith("); its retrieval results are missing") and " (crashed" in line
    path = p.path / "out" / "results.json"
    assert json.loads(path.read_text(encoding="utf-8"))["settings"]["failures"] == [
        line.removeprefix("FAIL retrieval gate: ")]
    capsys.readouterr()
    assert cli(["report", str(path)]) == 1
    assert line in capsys.readouterr().out.splitlines()
