"""SciFact through the built-in hybrid engine with --retrieval-exact-check: a small ef_search shows
its approximate-versus-exact recall@10 with its interval and names the misses the index caused; a
large one has no gap; a vector search cut short by its ef_search under-returns and the fix is named."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys

import pytest

from conftest import requires_hybrid
from shared_datasets import dataset_path

pytestmark = [requires_hybrid, pytest.mark.postgres]

TESTS = """
    import pytest

    @pytest.mark.retrieval
    def test_q(retrieval_results):
        assert retrieval_results.n == 300
"""

GAP = re.compile(r"(?P<engine>[\w-]+): approximate vs exact recall@10 (?P<recall>[\d.]+) \[(?P<lo>[\d.]+), "
                 r"(?P<hi>[\d.]+)\] over (?P<n>\d+) questions at hnsw m=16 ef_construction=64 ef_search=(?P<ef>\d+)")


@pytest.mark.dataset("scifact")
def test_scifact_at_a_small_and_a_large_ef_search(pytester, sandbox_tmp, tmp_path):
    pytester.makeini(f"""
        [pytest]
        retrieval_corpus = {dataset_path("scifact")}
        retrieval_embedder = hashing:384
        retrieval_cache_dir = {tmp_path / "cache"}
        retrieval_engines = small large vector-5
        retrieval_variants =
            small: ef_search=10
            large: ef_search=400
            vector-5: use_keyword=false ef_search=5
        retrieval_thresholds = hit@10>=0.05
    """)
    pytester.makepyfile(TESTS)
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTEST_") or k == "PYTEST_ADDOPTS"}
    env["TMPDIR"] = str(sandbox_tmp)
    done = subprocess.run([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "--retrieval-report",
                           "--retrieval-exact-check", f"--retrieval-report-dir={tmp_path / 'out'}"],
                          cwd=pytester.path, env=env, capture_output=True, text=True, timeout=600)
    out = done.stdout + done.stderr
    assert done.returncode == 0, out
    results = json.loads((tmp_path / "out" / "results.json").read_text())
    gaps = {g["engine"]: g for g in results["analysis"]["index_gaps"]}
    small, large = gaps["small"], gaps["large"]
    assert small["k"] == 10 and small["n"] == 300 and small["recall"] < 0.95
    assert small["interval"][0] < small["recall"] < small["interval"][1] < 1.0
    assert small["misses"] and all(m["kind"] == "approximate" and m["rank"] <= 10 for m in small["misses"])
    assert (large["recall"], large["differ"], large["misses"]) == (1.0, 0, [])  # a large ef_search: no gap

    # every surface names them: the terminal, results.md, the page's miss lines
    said = " ".join(out.split())  # as the terminal says it, its wrapped lines joined
    found = {m["engine"]: m for m in GAP.finditer(said)}
    assert found["small"]["ef"] == "10" and float(found["small"]["recall"]) == pytest.approx(small["recall"], abs=5e-4)
    assert f"{len(small['misses'])} misses at hit@10 caused by the index:" in said
    assert "missed by the approximate index" in (tmp_path / "out" / "results.md").read_text()
    assert "large: approximate vs exact recall@10 1.000" in said and "no gap" in said

    [short] = [u for u in results["analysis"]["under_returns"] if u["engine"] == "vector-5"]
    assert len(short["short"]) == 300 and max(n for _, n in short["short"]) <= 5  # five rows a query at most
    assert "vector-5 under-returned on 300 of 300 questions at k=10" in said
    assert "scan on with --retrieval-hybrid=iterative_scan=relaxed_order (pgvector's hnsw.iterative_scan)" in said

    fixed = subprocess.run([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "--retrieval-report",
                            "--retrieval-engine=vector-5", "--retrieval-hybrid=iterative_scan=relaxed_order"],
                           cwd=pytester.path, env=env, capture_output=True, text=True, timeout=600)
    assert fixed.returncode == 0, fixed.stdout + fixed.stderr
    assert "under-returned" not in fixed.stdout  # the fix, run as the line prints it
