"""The benchmark cannot rot: every section of bench/run.py runs in its quick mode (small sizes,
one repetition), so a change that breaks a section fails the suite. The figures of a quick run
mean nothing; what is checked is that each section runs to the end and records its rows, and
that each comparison with a peer library times the same inputs to the same outputs."""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import requires_hybrid

REPO = Path(__file__).resolve().parents[2]
SECTIONS = {"dormant", "http", "judge", "own engine", "evaluate", "bundled", "queries", "overhead", "ingestion",
            "embedding", "memory", "scale", "scaling", "scifact", "canary"}

pytestmark = requires_hybrid


@pytest.fixture(scope="module")
def quick_bench(tmp_path_factory):
    """One quick run of the whole bench for this module's tests: (the process, its rows, the
    results folder, the committed results' bytes from before the run)."""
    scifact = REPO.parent / "shared" / "datasets" / "scifact"
    assert scifact.is_dir(), f"the bench's SciFact sections read {scifact}"
    out = tmp_path_factory.mktemp("bench")
    committed = {p.name: p.read_bytes() for p in (REPO / "bench" / "results").glob("*")}
    done = subprocess.run([sys.executable, str(REPO / "bench" / "run.py"), "--quick", "--results", str(out)],
                          cwd=REPO, capture_output=True, text=True, timeout=1500)
    assert done.returncode == 0, (done.stdout + done.stderr)[-5000:]
    return done, json.loads((out / "results.json").read_text())["rows"], out, committed


def test_every_bench_section_runs_in_quick_mode(quick_bench):
    done, rows, tmp_path, committed = quick_bench
    assert {r["section"] for r in rows} == SECTIONS, done.stdout[-3000:]
    assert not [r for r in rows if r.get("name") == "skipped"]
    by_name = {(r["section"], r["name"]): r for r in rows}
    assert by_name[("http", "results.json identical")]["value"] is True
    scale = [r for r in rows if r["section"] == "scale" and r["name"] != "table"]
    assert scale and all(r["sizes"] == [300, 600] and len(r["values"]) == 2 for r in scale)
    assert (tmp_path / "summary.md").read_text().count("\n## ") == len(SECTIONS)
    assert {p.name: p.read_bytes() for p in (REPO / "bench" / "results").glob("*")} == committed  # figures kept


def test_peer_ratios_compare_the_same_inputs_and_outputs(quick_bench):
    """A ratio against pytrec-eval-terrier or ranx divides two timings of the same inputs to the
    same outputs, both warm (or both in a fresh process), and its label says which; ranx is timed
    from dicts (its Qrels and Run built inside the timed region), not only from prebuilt objects."""
    _, rows, _, _ = quick_bench
    timed = {r["name"]: r for r in rows if r["section"] == "evaluate" and "median" in r}
    ratios = [r for r in rows if r["section"] == "evaluate" and "ratio" in r]
    assert ratios
    peers = set()
    for r in ratios:
        theirs, ours = (timed[name] for name in r["of"])
        assert ours["peer"] == "ours" and theirs["peer"] != "ours", r["name"]
        for key in ("inputs", "outputs", "state", "size"):
            assert theirs[key] == ours[key], (r["name"], key, theirs[key], ours[key])
            assert theirs[key] in r["name"], (r["name"], key)
        assert r["name"].startswith(f"{theirs['peer']} / ours, "), r["name"]
        assert theirs["agree"] or theirs["differs"], (r["name"], "outputs differ from ours unexplained")
        peers.add((theirs["peer"], theirs["inputs"]))
    assert "pytrec-eval-terrier" in {p for p, _ in peers}
    if importlib.util.find_spec("ranx"):
        assert any(p == "ranx" and i.startswith("dicts") for p, i in peers), sorted(peers)
