"""Corpus lint: each check names its chunk; the counts gate."""

from __future__ import annotations

import pytest

pytestmark = [pytest.mark.model]


def test_bundled_report_lists_truncation_and_a_duplicated_document_is_flagged(pytester, shared_cache_dir, sandbox_tmp):
    import json
    import os
    import shutil
    import subprocess
    import sys

    from conftest import CORPUS, QUESTIONS

    if __import__("importlib.util").util.find_spec("haystack") is None:
        pytest.skip("the hybrid extra is not installed")
    corpus = pytester.path / "corpus"
    shutil.copytree(CORPUS, corpus)
    copy = json.loads((corpus / "battery-care.json").read_text())
    copy["doc_id"] = "battery-care-copy"
    (corpus / "battery-care-copy.json").write_text(json.dumps(copy))
    pytester.makeini(f"[pytest]\nretrieval_corpus = corpus\nretrieval_questions = {QUESTIONS}\nretrieval_engines = hybrid\n"
                     f"retrieval_cache_dir = {shared_cache_dir}\n")  # warm: the lint is of the ingestion, cached embeddings or not
    pytester.makepyfile("def test_x(retrieval_results):\n    pass\n")
    done = subprocess.run([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "--retrieval-report",
                           "--retrieval-threshold", "lint.duplicate<=0", "--retrieval-stale=warn", "-v"],
                          cwd=pytester.path, env={**os.environ, "TMPDIR": str(sandbox_tmp)},
                          capture_output=True, text=True, timeout=300)
    out = done.stdout
    assert "corpus lint, corpus: 39 chunks, embedder window 256 tokens: truncated 10, duplicate 1" in out
    assert "duplicate: battery-care:0 (same text as battery-care-copy:0)" in out or \
           "duplicate: battery-care-copy:0 (same text as battery-care:0)" in out
    assert "FAIL retrieval gate: corpus corpus: lint.duplicate = 1, required <= 0" in out
    assert done.returncode == pytest.ExitCode.TESTS_FAILED
