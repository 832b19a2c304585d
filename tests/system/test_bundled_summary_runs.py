"""The bundled eval's terminal summary (``pytest -m retrieval --retrieval-report`` in this
repository's layout: both engines, the corpus, the committed questions, ``retrieval_by``) reads
verdict first: at most 30 lines, none wider than 88 columns, the detail with ``-v``."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from conftest import requires_hybrid

pytestmark = [pytest.mark.model]

SEP = "----------------------------- retrieval evaluation"
RUN = ("--retrieval-engine=hybrid", "--retrieval-engine=keyword", "--retrieval-by=body-only",
       "--retrieval-by=versioned", "--retrieval-as-of=2026-11-30")


def summary(project, sandbox_tmp, cache_dir, *args: str) -> list[str]:
    project.makepyfile("def test_x(retrieval_results):\n    pass\n")
    done = subprocess.run([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "--retrieval-report",
                           f"--retrieval-cache-dir={cache_dir}", *RUN, *args], cwd=project.path,
                          env={**os.environ, "TMPDIR": str(sandbox_tmp)}, capture_output=True, text=True, timeout=600)
    lines = done.stdout.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith(SEP))
    end = max(i for i, line in enumerate(lines) if line.startswith("====="))
    return lines[start:end]


@requires_hybrid
def test_the_bundled_eval_summary_fits_30_lines_of_88_columns_and_v_brings_the_detail(
        bundled_project, sandbox_tmp, shared_cache_dir):
    lines = summary(bundled_project, sandbox_tmp, shared_cache_dir)
    text = "\n".join(lines)
    assert len(lines) <= 30, f"{len(lines)} lines:\n{text}"
    assert max(len(line) for line in lines) <= 88, max(lines, key=len)
    assert lines[1].startswith("engine ") and "hybrid missed 2 of 68 at hit@5: 2 ranked 6" in lines
    assert "differences (paired mean" not in text and "keyword_top_k=" not in text

    verbose = "\n".join(summary(bundled_project, sandbox_tmp, shared_cache_dir, "-v"))
    assert "differences (paired mean, 95% CI; * significant after correction):" in verbose
    configurations = [line for line in verbose.splitlines() if line.startswith(("hybrid: ", "keyword: "))]
    assert [line.split(":")[0] for line in configurations] == ["hybrid", "keyword"]  # one paragraph per engine
    assert "keyword_top_k=50" in verbose and "fields=title 4" in verbose
    assert "judged@k, the share of each top k" in verbose and "segments at hit@5" in verbose
