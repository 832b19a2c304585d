"""``report results.json`` prints the run's own terminal summary: one writer serves the pytest
hook and the command (the pytest session's closing line aside), default and ``-v`` alike."""

from __future__ import annotations

import pytest

from projects import BUNDLED_TESTS, summary_of
from pytest_retrieval_eval.cli import main as cli


@pytest.mark.parametrize("verbose", [[], ["-v"]], ids=["default", "-v"])
def test_report_prints_what_a_failing_run_printed(bundled_project, capsys, verbose):
    p = bundled_project
    p.makepyfile(BUNDLED_TESTS)
    result = p.runpytest("-m", "retrieval", "--retrieval-report", "--retrieval-report-dir=out", *verbose,
                         "--retrieval-threshold=keyword:hit@5>=0.9", "--retrieval-threshold=keyword:mrr>=0.9")
    assert result.ret == 1
    printed = summary_of(result.stdout.lines)
    assert any(line.startswith("FAIL retrieval gate: keyword: hit@5") for line in printed)
    capsys.readouterr()
    assert cli(["report", str(p.path / "out" / "results.json"), *verbose]) == 1
    assert capsys.readouterr().out.splitlines() == printed
