"""Bad corpus input that test_corpus.py does not already cover: a huge document, a qrels row
about a document the corpus does not have."""

from __future__ import annotations

import json
import time

import pytest

from pytest_retrieval_eval import RetrievalEvalError
from pytest_retrieval_eval.data.corpus import BeirFolder, JsonFolder
from test_corpus import make_beir


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


def test_qrels_about_an_unknown_document_warn_and_stay_judged(pytester, tmp_path):
    root = make_beir(tmp_path / "beir", crlf=False, bom=False)
    (root / "qrels" / "test.tsv").write_text("query-id\tcorpus-id\tscore\nq1\td1\t1\nq1\tghost\t1\nq2\td2\t1\n")
    pytester.makeini("[pytest]\nretrieval_engines = keyword\n")
    pytester.makepyfile(
        """
        def test_recall(retrieval_results):
            # q1 has two relevant documents, one of which cannot be retrieved: recall@100 <= 0.5
            assert retrieval_results.per_query("recall@100")["q1"] <= 0.5
        """
    )
    result = pytester.runpytest(f"--retrieval-corpus={root}", "-W", "default")
    assert result.ret == 0, result.stdout.str()
    result.stdout.fnmatch_lines(["*UnknownJudgedDocumentsWarning: qrels/test.tsv judges 1 document(s) not in corpus.jsonl, e.g. ghost*"])
