"""Segments through a team's run (issue 30): CSV labels with an area column imported with their
tags, a row per area, a baseline comparison in which one area regresses while the total holds
(named, and failed by a max-drop rule on that area only), and ``report`` reading it back."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from conftest import REPO

KB = REPO / "examples" / "helpdesk" / "kb"
# area:network questions first; the engine's second version loses every one of them and gains
# as many elsewhere, so the total holds
ROWS = [
    ("My internet tunnel to work keeps dropping at the hotel", "vpn-setup", "area:network"),
    ("A customer visiting tomorrow needs internet", "guest-wifi", "area:network"),
    ("Who grants access to the team folder", "shared-drives", "area:network"),
    ("How do I join the office network as a guest", "guest-wifi", "area:network"),
    ("I forgot my login as a contractor", "password-reset", "area:accounts"),
    ("Someone took my work computer from the car", "laptop-replacement", "area:devices"),
    ("Where do print jobs wait before I pick them up", "printer-queue", "area:devices"),
    ("How do I set up the second factor on a new phone", "mfa-enrolment", "area:accounts"),
    ("Can I get a paid design tool installed", "software-requests", "area:devices"),
    ("My login code app is on a lost phone", "mfa-enrolment", "area:accounts"),
]
CONFTEST = """
    import os

    GOLD = {GOLD}

    class Versioned:
        name = "ours"

        def retrieve(self, query, k):
            gold, area = GOLD[query]
            found = area != "area:network" if os.environ.get("V2") else area == "area:network"
            if os.environ.get("V2") and area == "area:devices":
                found = True
            return [gold, "other"] if found else ["other", "x1", "x2", "x3", "x4", gold]

    def pytest_retrieval_engines(registry, config):
        registry.register("ours", lambda request: Versioned())
"""


@pytest.fixture
def team(pytester):
    import shutil
    import textwrap

    shutil.copytree(KB, pytester.path / "kb")
    (pytester.path / "labels.csv").write_text("question,doc_id,tags\n" + "".join(f"{q},{d},{t}\n" for q, d, t in ROWS))
    gold = {q: (d, t) for q, d, t in ROWS}
    pytester.makeconftest(textwrap.dedent(CONFTEST).replace("{GOLD}", repr(gold)))
    pytester.makeini("[pytest]\nretrieval_corpus = kb\nretrieval_questions = questions.cache.json\n"
                     "retrieval_engines = ours\nretrieval_by = area:network area:accounts area:devices\n")
    pytester.makepyfile("import pytest\n\n@pytest.mark.retrieval\ndef test_x(retrieval_results):\n    pass\n")
    done = subprocess.run([sys.executable, "-m", "pytest_retrieval_eval", "label", "import", "labels.csv", "--corpus", "kb",
                           "--questions", "questions.cache.json"], cwd=pytester.path, capture_output=True, text=True)
    assert done.returncode == 0, done.stdout + done.stderr
    return pytester


def test_one_area_regresses_while_the_total_holds_and_is_named(team, monkeypatch):
    cache = json.loads((team.path / "questions.cache.json").read_text())
    assert sorted({t for q in cache["queries"] for t in q.get("tags", [])}) == ["area:accounts", "area:devices",
                                                                                  "area:network"]
    first = team.runpytest("--retrieval-report", "--retrieval-save-baseline=baseline.json", "-v")
    assert first.ret == 0, first.stdout.str()
    # a family's values split the set between them: no "not area:network" row
    first.stdout.fnmatch_lines(["ours missed 6 of 10 at hit@5: 6 ranked 6", "segment * n *ours*",
                                "area:network  * 4  1.000 *", "area:accounts  * 3  0.000 *"])
    assert "not area:" not in first.stdout.str()
    monkeypatch.setenv("V2", "1")
    second = team.runpytest("--retrieval-report", "--retrieval-baseline=baseline.json", "--retrieval-report-dir=out",
                            "--retrieval-max-drop=ours:hit@5=0.05", "--retrieval-max-drop=ours[area:network]:hit@5=0.05", "-v")
    out = second.stdout.str()
    assert second.ret == 1, out
    assert "ours: hit@5 0.4000 -> 0.6000 (+0.2000;" in out  # the total rose
    assert "  segments that fell (p corrected over 42 segment comparisons; the total held, or beyond noise):" in out
    assert ("    ours[area:network]: hit@5 1.0000 -> 0.0000 (-1.0000; n=4, 4 down, 0 up; p=0.124, corrected 1: within "
            "noise) while the total held (+0.2000); fell: 'My internet tunnel to work keeps…',") in out
    [failure] = [l for l in out.splitlines() if l.startswith("FAIL retrieval gate")]
    assert failure.startswith("FAIL retrieval gate: ours[area:network]: hit@5 dropped 1.0000 (1.0000 -> 0.0000), more "
                              "than 0.05 (from --retrieval-max-drop; segment area:network, n=4, 4 down, 0 up")
    rebuilt = subprocess.run([sys.executable, "-m", "pytest_retrieval_eval", "report", "out/results.json",
                              "--baseline", "baseline.json", "-v"], cwd=team.path, capture_output=True, text=True)
    assert rebuilt.returncode == 1 and "ours[area:network]: hit@5 1.0000 -> 0.0000" in rebuilt.stdout
