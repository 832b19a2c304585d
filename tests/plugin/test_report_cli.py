"""The report command's exit codes. 1 means "the gate failed" and nothing else;
every malformed input is exit 2 with one line naming the file and the problem."""

from __future__ import annotations

import json

import pytest

from pytest_retrieval_eval.cli import main as cli

TESTS = "import pytest\n\n@pytest.mark.retrieval\ndef test_q(retrieval_results):\n    pass\n"


@pytest.fixture(scope="module")
def saved(tmp_path_factory):
    """A real results.json of two engines (keyword and oracle) on the bundled set."""
    from projects import saved_oracle_run

    return saved_oracle_run(tmp_path_factory.mktemp("saved"), TESTS)


def run(tmp_path, doc, *args, capsys):
    path = tmp_path / "r.json"
    path.write_text(doc if isinstance(doc, str) else json.dumps(doc))
    code = cli(["report", str(path), *args])
    err = capsys.readouterr().err.strip().splitlines()
    return code, err


def test_a_good_file_passes_and_a_breached_rule_is_exit_1(saved, tmp_path, capsys):
    assert run(tmp_path, saved, capsys=capsys)[0] == 0
    assert run(tmp_path, saved, "--threshold", "keyword:mrr>=0.9", capsys=capsys)[0] == 1


@pytest.mark.parametrize("edit, message", [
    (lambda d: d["evaluations"][1]["queries"].pop(), "hold different queries (68 and 67) for the same labeled set"),
    (lambda d: d["evaluations"][0].pop("queries"), "evaluation 0 is missing or has a malformed 'queries'"),
    (lambda d: d["evaluations"][0]["queries"][0].__setitem__("ranked", 5), "malformed"),
    (lambda d: d.__setitem__("settings", {"thresholds": "mrr>=0.5"}), "field 'settings': thresholds must be a list"),
    (lambda d: d["settings"].__setitem__("alpha", 7), "alpha must be a number between 0 and 1"),
    (lambda d: d.__setitem__("version", 9), "unsupported results version 9"),
    (lambda d: d.pop("metrics"), "missing or has a malformed 'metrics'"),
    (lambda d: d["evaluations"][0]["queries"][0].__setitem__("relevant", {"a": "x"}), "malformed"),
])
def test_every_malformed_file_is_exit_2_in_one_line(saved, tmp_path, capsys, edit, message):
    doc = json.loads(json.dumps(saved))
    edit(doc)
    code, err = run(tmp_path, doc, capsys=capsys)
    assert code == 2 and len(err) == 1, err
    assert err[0].startswith("error: ") and "r.json" in err[0] and message in err[0]


@pytest.mark.parametrize("text", ["", "{", "[]", '{"format": "something/else"}', "null"])
def test_not_a_results_file_at_all_is_exit_2(tmp_path, capsys, text):
    code, err = run(tmp_path, text, capsys=capsys)
    assert code == 2 and len(err) == 1 and "r.json" in err[0]


def test_a_missing_file_or_baseline_is_exit_2(saved, tmp_path, capsys):
    assert cli(["report", str(tmp_path / "nope.json")]) == 2
    assert "nope.json: file not found" in capsys.readouterr().err
    code, err = run(tmp_path, saved, "--baseline", str(tmp_path / "gone.json"), "--max-drop", "hit@5=0.1", capsys=capsys)
    assert code == 1  # an unusable baseline with rules that need it: the gate fails, and says why
