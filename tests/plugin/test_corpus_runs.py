"""Bad corpus input that test_corpus.py does not already cover: a huge document, a qrels row
about a document the corpus does not have."""

from __future__ import annotations


from projects import make_beir


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
