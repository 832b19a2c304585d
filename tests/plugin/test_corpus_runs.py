"""Bad corpus input that test_corpus.py does not already cover: a huge document, a qrels row
about a document the corpus does not have."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap

from conftest import requires_files, requires_hybrid
from projects import make_beir, make_help_center


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


#: a new help-center team's labels: questions about its articles, each with the sentence that answers it
HELP_LABELS = (
    "id,question,doc_id,evidence\n"
    "reset,How do I reset my password?,account/reset-password,follow the link we email you\n"
    "invoices,When are invoices emailed?,billing/invoices,Invoices are emailed on the first day of each month\n"
    "refund,Is a yearly plan refunded?,billing/refunds,We refund a yearly plan within 30 days of purchase\n"
    "close,How do I close my account?,account/close,Your data is removed within thirty days\n"
    "start,How do I get started with Acme?,getting-started,invite your team\n"
)


@requires_files
def test_a_help_centers_markdown_text_and_html_articles_are_labeled_and_searched(pytester):
    """A folder of articles as a help center keeps them is the corpus: ``label import`` checks
    each quote against the converted text (no markup left to break a quote), and the keyword
    engine runs over the titles the files gave."""
    make_help_center(pytester.path / "articles")
    (pytester.path / "labels.csv").write_text(HELP_LABELS)
    imported = pytester.run(sys.executable, "-m", "pytest_retrieval_eval", "label", "import", "labels.csv",
                            "--corpus", "articles", "--questions", "questions.cache.json")
    assert imported.ret == 0, imported.stdout.str() + imported.stderr.str()
    pytester.makeini("[pytest]\nretrieval_corpus = articles\nretrieval_questions = questions.cache.json\n"
                     "retrieval_engines = keyword\n")
    pytester.makepyfile(
        """
        import pytest

        @pytest.mark.retrieval
        def test_articles(retrieval_results):
            assert retrieval_results.n == 5
            hits = retrieval_results.per_query("hit@1")
            assert hits["reset"] == 1 and hits["invoices"] == 1 and hits["close"] == 1, hits
        """
    )
    result = pytester.runpytest("-m", "retrieval", "--retrieval-report", "--retrieval-report-dir=out")
    assert result.ret == 0, result.stdout.str()
    saved = json.loads((pytester.path / "out" / "results.json").read_text())
    corpus, = saved["fingerprints"]["corpora"].values()
    assert corpus["name"] == "articles" and sorted(corpus["documents"]) == [
        "account/close", "account/reset-password", "billing/invoices", "billing/refunds", "getting-started", "notes"]
    assert saved["coverage"]["documents"] == {"judged": 5, "total": 6}
    assert saved["coverage"]["by_tag"]["versioned"] == 1  # the front matter's valid_from: a freshness field


@requires_hybrid
def test_without_the_files_extra_a_folder_of_markdown_says_what_to_install(tmp_path):
    (tmp_path / "articles").mkdir()
    (tmp_path / "articles" / "a.md").write_text("# A\n\ntext\n")
    code = textwrap.dedent(f"""
        import sys
        class Missing:
            def find_spec(self, name, path, target=None):
                if name.split(".")[0] == "mdit_plain":
                    raise ModuleNotFoundError(f"No module named {{name!r}}", name=name)
        sys.meta_path.insert(0, Missing())
        from pytest_retrieval_eval.data.corpus import open_corpus
        from pytest_retrieval_eval import RetrievalEvalError
        try:
            open_corpus({str(tmp_path / "articles")!r}).load()
        except RetrievalEvalError as exc:
            print(exc)
    """)
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip().endswith('a.md: reading markdown files needs Haystack\'s converters and their '
                                        'packages, and markdown-it-py mdit_plain is not installed: '
                                        'pip install "pytest-retrieval-eval[files]"'), done.stdout
