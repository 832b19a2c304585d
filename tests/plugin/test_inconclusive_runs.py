"""A rule whose 95% interval straddles its line is inconclusive on every surface (the terminal,
results.json, the PR comment's first lines, results.md, the page and JUnit), with how many more
questions would settle it; ``--retrieval-inconclusive`` says what that does to the run: fail it
(the default), warn, or pass with a note."""

from __future__ import annotations

import html
import json
import xml.etree.ElementTree as ET

import pytest

from projects import BUNDLED_TESTS, ORACLE_CONFTEST, summary_of
from pytest_retrieval_eval.cli import main as cli

#: keyword's hit@1 is 0.1176 over 68 questions: its 95% interval reaches well below 0.1
RULE = "--retrieval-threshold=keyword:hit@1>=0.1"
OUTPUTS = ["--retrieval-report", "--retrieval-report-dir=out", "--retrieval-html=page.html", "--junitxml=junit.xml",
           "--retrieval-confidence=lower", RULE]


@pytest.fixture
def project(make_project):
    return make_project(engines="keyword oracle", conftest=ORACLE_CONFTEST, tests=BUNDLED_TESTS)


def surfaces(p, capsys) -> dict:
    """What each surface of the run in ``p`` said: results.json, results.md's and the comment's
    first lines, the page's verdict box, the JUnit properties."""
    doc = json.loads((p.path / "out" / "results.json").read_text(encoding="utf-8"))
    capsys.readouterr()
    cli(["report", "comment", str(p.path / "out" / "results.json")])
    comment = capsys.readouterr().out.splitlines()
    page = (p.path / "page.html").read_text(encoding="utf-8")
    box = page[page.index('<section id="verdict"'):]
    props = [(x.get("name"), x.get("value")) for x in ET.parse(p.path / "junit.xml").iter("property")
             if x.get("name", "").startswith("retrieval.gate")]
    return {"doc": doc, "md": (p.path / "out" / "results.md").read_text(encoding="utf-8").splitlines()[:10],
            "comment": comment[:10], "box": box[:box.index("</section>")], "junit": props}


def test_a_straddling_rule_is_inconclusive_everywhere_and_fails_the_run_by_default(project, capsys):
    result = project.runpytest("-m", "retrieval", *OUTPUTS)
    assert result.ret == pytest.ExitCode.TESTS_FAILED  # inconclusive fails by default: no gate got weaker
    said = surfaces(project, capsys)
    [failure] = said["doc"]["verdict"]["failures"]
    text = failure["text"]
    assert (failure["kind"], failure["state"]) == ("rule", "inconclusive")
    assert said["doc"]["verdict"]["state"] == "inconclusive" and said["doc"]["verdict"]["failed"] is True
    [u] = said["doc"]["analysis"]["unsettled"]
    assert (u["rule"], u["engine"], u["point"], u["n"], u["unit"]) == ("keyword:hit@1>=0.1", "keyword",
                                                                       pytest.approx(8 / 68), 68, "questions")
    more = f"about {u['needed'] - 68:,} more questions ({u['needed']:,} in all) would settle it"
    assert u["needed"] > 68 and more in text and "straddles 0.1 (the estimate 0.0176 above it, the lower end" in text
    # the terminal: the verdict in the heading, the rule's line at the end
    lines = result.stdout.lines
    assert any(line.startswith("---") and "retrieval evaluation: gate FAILED, 1 inconclusive "
               "(causes at the end)" in line for line in lines)
    assert [line for line in lines if "retrieval gate: " in line] == [
        f"INCONCLUSIVE retrieval gate: {text}", "retrieval gate: FAILED, 1 rule inconclusive (--retrieval-inconclusive=fail)"]
    # results.md and the comment lead with it
    for name in ("md", "comment"):
        assert "**FAIL**: the retrieval gate failed (1 rule inconclusive, --retrieval-inconclusive=fail):" \
            in said[name], name
        assert f"- INCONCLUSIVE {text}" in said[name], name
    # the page's verdict box and JUnit
    assert "FAIL: 1 rule inconclusive" in said["box"] and html.escape(text) in said["box"]
    assert 'class="verdict fail"' in said["box"] and "INCONCLUSIVE" in said["box"]
    assert said["junit"] == [("retrieval.gate", "inconclusive"), ("retrieval.gate.failed", "true"),
                             ("retrieval.gate.inconclusive", text)]
    # report results.json prints what the run printed
    capsys.readouterr()
    assert cli(["report", str(project.path / "out" / "results.json")]) == 1
    assert capsys.readouterr().out.splitlines() == summary_of(lines)


def test_with_warn_the_run_passes_and_every_surface_says_so(project, capsys, monkeypatch):
    result = project.runpytest("-m", "retrieval", *OUTPUTS, "--retrieval-inconclusive=warn")
    assert result.ret == pytest.ExitCode.OK
    said = surfaces(project, capsys)
    [failure] = said["doc"]["verdict"]["failures"]
    text = failure["text"]
    assert failure["state"] == "inconclusive" and "more questions (" in text
    assert said["doc"]["verdict"]["state"] == "inconclusive" and said["doc"]["verdict"]["failed"] is False
    assert said["doc"]["settings"]["inconclusive"] == "warn"
    lines = result.stdout.lines
    closing = "retrieval gate: INCONCLUSIVE, 1 rule (--retrieval-inconclusive=warn: a warning, the run passes)"
    assert lines.index(f"INCONCLUSIVE retrieval gate: {text}") < lines.index(closing)
    assert any(line.startswith("---") and "retrieval evaluation: gate INCONCLUSIVE, 1 rule (causes at the end)" in line
               for line in lines)
    assert not any(line.startswith("FAIL retrieval gate") or line == "retrieval gate: passed" for line in lines)
    for name in ("md", "comment"):
        assert ("**INCONCLUSIVE**: the retrieval gate passed with a warning (1 rule inconclusive, "
                "--retrieval-inconclusive=warn):") in said[name], name
        assert f"- INCONCLUSIVE {text}" in said[name], name
    assert 'class="verdict inconclusive"' in said["box"] and "INCONCLUSIVE: 1 rule" in said["box"]
    assert said["junit"] == [("retrieval.gate", "inconclusive"), ("retrieval.gate.failed", "false"),
                             ("retrieval.gate.inconclusive", text)]
    capsys.readouterr()

    def analysed_again(*args, **kwargs):
        raise AssertionError("the recorded analysis (the questions that settle a rule among it) was made again")

    monkeypatch.setattr("pytest_retrieval_eval.gate.verdict.analyse", analysed_again)
    assert cli(["report", str(project.path / "out" / "results.json")]) == 0  # judged again as the run was
    assert capsys.readouterr().out.splitlines() == summary_of(lines)
    # pass: said as a note; fail (given to report): the run fails again
    assert cli(["report", str(project.path / "out" / "results.json"), "--inconclusive=pass"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[-1] == "retrieval gate: passed, 1 rule inconclusive (--retrieval-inconclusive=pass: noted)"
    assert f"INCONCLUSIVE retrieval gate: {text}" in out
    assert cli(["report", str(project.path / "out" / "results.json"), "--inconclusive=fail"]) == 1
