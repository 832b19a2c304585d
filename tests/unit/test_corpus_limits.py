"""Bad corpus input that test_corpus.py does not already cover: a huge document, a qrels row
about a document the corpus does not have."""

from __future__ import annotations

import json
import time

import pytest

from pytest_retrieval_eval import RetrievalEvalError
from pytest_retrieval_eval.data.corpus import BeirFolder, JsonFolder
from projects import make_beir


def test_a_50_mb_document_is_refused_quickly_with_a_clear_message(tmp_path):
    big = "word " * (10 * 1024 * 1024)  # 50 MB of text
    (tmp_path / "huge.json").write_text(json.dumps({"doc_id": "huge", "content": big}))
    (tmp_path / "small.json").write_text(json.dumps({"doc_id": "small", "content": "fine"}))
    start = time.perf_counter()
    with pytest.raises(RetrievalEvalError, match=r"huge.json:1: field 'content': document 'huge' is 50.0 MB, over the 10 MB limit; "
                                                 r"split it, or raise the limit with --retrieval-max-doc-mb"):
        JsonFolder(tmp_path).load()
    assert time.perf_counter() - start < 10
    assert len(JsonFolder(tmp_path, max_doc_mb=60).load()) == 2  # handled when the limit allows it


def test_a_huge_beir_document_is_refused_too(tmp_path):
    root = make_beir(tmp_path / "beir", crlf=False, bom=False)
    with open(root / "corpus.jsonl", "a") as fh:
        fh.write(json.dumps({"_id": "d9", "title": "", "text": "x" * (11 * 1024 * 1024)}) + "\n")
    with pytest.raises(RetrievalEvalError, match=r"corpus.jsonl:4: field 'text': document 'd9' is 11.0 MB"):
        BeirFolder(root).load()
