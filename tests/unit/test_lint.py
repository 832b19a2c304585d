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
