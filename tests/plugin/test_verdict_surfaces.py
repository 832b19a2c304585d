"""Every surface states the verdict and the failures the analysis gives, first: the terminal,
results.md, results.json, the page and the PR comment, on a passing run, a failing run and a
run whose baseline is refused."""

from __future__ import annotations

import html
import json

import pytest

from projects import BUNDLED_TESTS, ORACLE_CONFTEST
from pytest_retrieval_eval.cli import main as cli
from pytest_retrieval_eval.archive.saved import load_run, load_saved
from pytest_retrieval_eval.gate.verdict import conclude

OUTPUTS = ["--retrieval-report", "--retrieval-report-dir=out", "--retrieval-html=page.html"]


def refuse_baseline(path) -> None:
    """The baseline was measured with other metric definitions: nothing may be compared."""
    doc = json.loads(path.read_text(encoding="utf-8"))
    doc["metrics"]["fingerprint"] = "0" * 64
    path.write_text(json.dumps(doc), encoding="utf-8")


CASES = {
    "passing": ["--retrieval-threshold=oracle:hit@1>=0.99"],
    "failing": ["--retrieval-threshold=keyword:hit@5>=0.9", "--retrieval-threshold=keyword:mrr>=0.9"],
    "refused baseline": ["--retrieval-baseline=base.json", "--retrieval-max-drop=hit@5=0.05"],
}


@pytest.mark.parametrize("case", list(CASES))
def test_every_surface_leads_with_the_analysis_verdict(make_project, capsys, case):
    p = make_project(engines="keyword oracle", conftest=ORACLE_CONFTEST, tests=BUNDLED_TESTS)
    if case == "refused baseline":
        assert p.runpytest("-m", "retrieval", "--retrieval-save-baseline=base.json").ret == 0
        refuse_baseline(p.path / "base.json")
    result = p.runpytest("-m", "retrieval", *OUTPUTS, *CASES[case])
    saved = load_saved(p.path / "out" / "results.json")
    baseline = load_run(p.path / "base.json", check_fingerprints=False) if case == "refused baseline" else None
    verdict = conclude(saved.run, saved.settings, baseline, recorded=saved.analysis)
    failures = [str(f) for f in verdict.failures]
    assert verdict.analysis == saved.analysis  # the run's own analysis, read back
    assert result.ret == (1 if failures else 0)
    assert bool(failures) == (case != "passing")
    if case == "refused baseline":
        assert verdict.baseline.refused and any(f.startswith("baseline refused: metric definitions differ")
                                                for f in failures)
    # results.json: the verdict as the gate said it
    doc = json.loads((p.path / "out" / "results.json").read_text(encoding="utf-8"))
    assert doc["verdict"]["failed"] == bool(failures)
    assert [f["text"] for f in doc["verdict"]["failures"]] == failures
    # the terminal: the heading says it, every failure closes the section
    terminal = result.stdout.lines
    heading = next(line for line in terminal if line.startswith("---") and "retrieval evaluation" in line)
    assert ("gate FAILED" in heading) == bool(failures)
    assert [line[len("FAIL retrieval gate: "):] for line in terminal if line.startswith("FAIL retrieval gate: ")] \
        == failures
    assert ("retrieval gate: passed" in terminal) == (not failures)
    # results.md and the comment: the verdict within the first lines, every failure in it
    md = (p.path / "out" / "results.md").read_text(encoding="utf-8").splitlines()
    capsys.readouterr()
    cli(["report", "comment", str(p.path / "out" / "results.json")])
    comment = capsys.readouterr().out.splitlines()
    for name, lines in (("results.md", md), ("comment", comment)):
        lead = "\n".join(lines[:10])
        assert ("**FAIL**" in lead) == bool(failures) and ("**PASS**" in lead) == (not failures), name
        assert [line[len("- FAIL "):] for line in lines[:10] if line.startswith("- FAIL ")] == failures, name
    # the page: the verdict box first, listing every failure; a refused baseline reads refused
    page = (p.path / "page.html").read_text(encoding="utf-8")
    box = page[page.index('<section id="verdict"'):]
    box = box[:box.index("</section>")]
    assert ("FAIL:" in box) == bool(failures) and ("<h2>PASS</h2>" in box) == (not failures)
    assert all(html.escape(f) in box for f in failures)
    if case == "refused baseline":
        for name, text in (("terminal", "\n".join(terminal)), ("results.md", "\n".join(md)),
                           ("comment", "\n".join(comment)), ("page", page)):
            assert "refused" in text and "no measure moved" not in text and "measures moved" not in text, name
