"""Recall by stage (the candidate pool's ceiling) with the real hybrid stack on the bundled corpus:
each leg's, the fusion's and the final ranking's recall@k in results.md, on the page and with -v
in the terminal, the misses by where they were lost, and ``report results.json`` rebuilding it
byte for byte."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys

import pytest

from conftest import REPO, requires_hybrid

pytestmark = [pytest.mark.model]

TEST = "def test_x(retrieval_results):\n    pass\n"
ARGS = ("--retrieval-engine=hybrid", "--retrieval-variant=hybrid-f1: fusion_top_k=1", "--retrieval-engine=hybrid-f1",
        "--retrieval-measures=hit@5,recall@5,recall@10")


def rows_of(md: str, engine: str) -> dict[str, list[str]]:
    """The stage table under ``### engine`` in results.md: stage -> its cells."""
    section = md.split("## Recall by stage", 1)[1].split(f"### {engine}\n", 1)[1].strip().split("\n\n")[0]
    lines = section.splitlines()
    head = [c.strip() for c in lines[0].strip("|").split("|")]
    return {"head": head[1:], **{cells[0]: cells[1:] for cells in
                                 ([c.strip() for c in line.strip("|").split("|")] for line in lines[2:])}}


@requires_hybrid
def test_each_stage_recall_and_where_the_misses_were_lost_on_every_surface(bundled_project, sandbox_tmp,
                                                                          shared_cache_dir, tmp_path):
    bundled_project.makepyfile(TEST)
    report, page = tmp_path / "report", tmp_path / "page.html"
    done = subprocess.run([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "--retrieval-report", "-v",
                           f"--retrieval-cache-dir={shared_cache_dir}", *ARGS, f"--retrieval-report-dir={report}",
                           f"--retrieval-html={page}"], cwd=bundled_project.path,
                          env={**os.environ, "TMPDIR": str(sandbox_tmp)}, capture_output=True, text=True, timeout=600)
    out = done.stdout + done.stderr
    assert done.returncode == 0, out
    md = (report / "results.md").read_text(encoding="utf-8")
    doc = json.loads((report / "results.json").read_text(encoding="utf-8"))
    curves = {c["engine"]: c for c in doc["analysis"]["ceilings"]}
    rows = {r["engine"]: r["values"] for r in doc["analysis"]["rows"]}

    hybrid = rows_of(md, "hybrid")
    assert list(hybrid)[1:] == ["keyword leg", "vector leg", "fusion", "final ranking"]
    assert hybrid["head"] == ["@1", "@3", "@5", "@10", "@20", "all"]
    # the final ranking is the run's own recall@k; the fusion (50 kept) is what the answer was cut from
    final = dict(map(tuple, curves["hybrid"]["stages"][-1]["points"]))
    assert final[5] == pytest.approx(rows["hybrid"]["recall@5"]) and final[10] == pytest.approx(rows["hybrid"]["recall@10"])
    assert hybrid["fusion"] == hybrid["final ranking"]
    # the vector leg's 50 chunks are the whole corpus (38 chunks, 30 documents): every relevant one a candidate
    assert hybrid["vector leg"][-1] == "1.000 (30)" and int(hybrid["keyword leg"][-1].split("(")[1][:-1]) <= 50
    # its two misses at hit@5 (both ranked 6, as the causes say): below the cutoff, not lost earlier
    assert "where the 2 misses at hit@5 were lost: 0 never a candidate, 0 cut by fusion, 2 (100%) ranked below 5." in md

    # the table and losses the docs show are the hybrid's
    shown = (REPO / "docs" / "misses.md").read_text(encoding="utf-8").split("| stage | @1 |", 1)[1]
    assert "| stage | @1 |" + shown.split("\n\n")[0] + "\n\n" + shown.split("\n\n")[1] in md
    # fusion keeping one document: its recall is the full fusion's at 1, and it lost every miss
    f1 = rows_of(md, "hybrid-f1")
    assert f1["fusion"] == f1["final ranking"] == [hybrid["final ranking"][0], "", "", "", "", f"{hybrid['final ranking'][0]} (1)"]
    lost = dict(map(tuple, curves["hybrid-f1"]["losses"]))
    missed = curves["hybrid-f1"]["missed"]
    assert missed == round((1 - rows["hybrid-f1"]["hit@5"]) * 68) > 2
    assert lost == {"never a candidate": 0, "cut by fusion": missed, "ranked below 5": 0}
    assert f"where the {missed} misses at hit@5 were lost: 0 never a candidate, {missed} (100%) cut by fusion, 0 ranked below 5." in md

    # the page: a table and a curve per engine; the terminal with -v: a line per engine
    html = page.read_text(encoding="utf-8")
    assert html.count('<div class="ceiling"') == 2 and "<title>recall@k by stage: hybrid-f1</title>" in html
    said = out.replace("\n    ", " ")
    assert re.search(r"hybrid, recall of all each stage held: keyword leg 0\.\d\d \(\d+\), vector leg 1\.00 \(30\), "
                     r"fusion 1\.00 \(30\), final ranking 1\.00 \(30\); the 2 misses at hit@5 lost: 100% ranked below 5",
                     said), said

    again, again_page = tmp_path / "again", tmp_path / "again.html"
    done = subprocess.run([sys.executable, "-m", "pytest_retrieval_eval", "report", str(report / "results.json"),
                           "--out", str(again), "--html", str(again_page)], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
    assert (again / "results.md").read_bytes() == (report / "results.md").read_bytes()
    assert again_page.read_bytes() == page.read_bytes()
