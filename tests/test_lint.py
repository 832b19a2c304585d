"""Corpus lint: each check names its chunk; the counts gate."""

from __future__ import annotations

import pytest

from pytest_retrieval_eval.data.lint import lint_chunks
from pytest_retrieval_eval.types import Chunk


def test_each_kind_of_finding_names_the_chunk():
    chunks = [
        Chunk("a", 0, "a perfectly ordinary chunk of text with enough words"),
        Chunk("b", 0, "   "),
        Chunk("c", 0, "too short"),
        Chunk("d", 0, "a perfectly ordinary chunk of text with enough words"),
        Chunk("", 0, "orphan chunk without any document id at all"),
        Chunk("e", 0, "text with a \x07 bell and a \ufeff byte order mark inside"),
        Chunk("f", 0, " ".join(["word"] * 40)),
    ]
    report = lint_chunks(chunks, dataset="t", count_tokens=lambda text: len(text.split()), window=30)
    found = {(f.kind, f.chunk_id) for f in report.findings}
    assert found == {("empty", "b:0"), ("tiny", "c:0"), ("duplicate", "d:0"), ("missing_id", ":0"),
                     ("control_chars", "e:0"), ("bom", "e:0"), ("truncated", "f:0")}
    assert "same text as a:0" in next(str(f) for f in report.findings if f.kind == "duplicate")
    assert report.counts()["truncated"] == 1


def test_near_duplicates_are_opt_in_and_use_minhash():
    pytest.importorskip("datasketch")
    base = " ".join(f"word{i}" for i in range(80))
    chunks = [Chunk("a", 0, base), Chunk("b", 0, base + " extra"), Chunk("c", 0, " ".join(f"other{i}" for i in range(80)))]
    assert not any(f.kind == "near_duplicate" for f in lint_chunks(chunks, dataset="t").findings)
    report = lint_chunks(chunks, dataset="t", near_duplicates=0.7)
    assert [(f.kind, f.chunk_id) for f in report.findings] == [("near_duplicate", "b:0")]


@pytest.mark.slow
def test_bundled_report_lists_truncation_and_a_duplicated_document_is_flagged(pytester, tmp_path, sandbox_tmp):
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
                     f"retrieval_cache_dir = {tmp_path}\n")
    pytester.makepyfile("def test_x(retrieval_results):\n    pass\n")
    done = subprocess.run([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "--retrieval-report",
                           "--retrieval-threshold", "lint.duplicate<=0", "--retrieval-stale=warn"],
                          cwd=pytester.path, env={**os.environ, "TMPDIR": str(sandbox_tmp)},
                          capture_output=True, text=True, timeout=300)
    out = done.stdout
    assert "corpus lint, corpus: 39 chunks, embedder window 256 tokens: truncated 10, duplicate 1" in out
    assert "duplicate: battery-care:0 (same text as battery-care-copy:0)" in out or \
           "duplicate: battery-care-copy:0 (same text as battery-care:0)" in out
    assert "FAIL retrieval gate: corpus corpus: lint.duplicate = 1, required <= 0" in out
    assert done.returncode == pytest.ExitCode.TESTS_FAILED
