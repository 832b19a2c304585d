"""The benchmark cannot rot: every section of bench/run.py runs in its quick mode (small sizes,
one repetition), so a change that breaks a section fails the suite. The figures of a quick run
mean nothing; what is checked is that each section runs to the end and records its rows."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from conftest import requires_hybrid

REPO = Path(__file__).resolve().parents[2]
SECTIONS = {"dormant", "http", "judge", "own engine", "evaluate", "bundled", "queries", "overhead", "ingestion",
            "embedding", "memory", "scale", "scaling", "scifact"}

pytestmark = requires_hybrid


def test_every_bench_section_runs_in_quick_mode(tmp_path):
    scifact = REPO.parent / "shared" / "datasets" / "scifact"
    assert scifact.is_dir(), f"the bench's SciFact sections read {scifact}"
    committed = {p.name: p.read_bytes() for p in (REPO / "bench" / "results").glob("*")}
    done = subprocess.run([sys.executable, str(REPO / "bench" / "run.py"), "--quick", "--results", str(tmp_path)],
                          cwd=REPO, capture_output=True, text=True, timeout=1500)
    assert done.returncode == 0, (done.stdout + done.stderr)[-5000:]
    rows = json.loads((tmp_path / "results.json").read_text())["rows"]
    assert {r["section"] for r in rows} == SECTIONS, done.stdout[-3000:]
    assert not [r for r in rows if r.get("name") == "skipped"]
    by_name = {(r["section"], r["name"]): r for r in rows}
    assert by_name[("http", "results.json identical")]["value"] is True
    scale = [r for r in rows if r["section"] == "scale" and r["name"] != "table"]
    assert scale and all(r["sizes"] == [300, 600] and len(r["values"]) == 2 for r in scale)
    assert (tmp_path / "summary.md").read_text().count("\n## ") == len(SECTIONS)
    assert {p.name: p.read_bytes() for p in (REPO / "bench" / "results").glob("*")} == committed  # figures kept
