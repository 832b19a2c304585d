"""Haystack imported without what a run does not use: torch until a model runs, NLTK (with
scipy behind it) until a sentence is split. Each check runs in a fresh interpreter, since what
a process has imported cannot be taken back."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap

import pytest

from conftest import CORPUS, QUESTIONS, requires_files, requires_hybrid

pytestmark = requires_hybrid


def fresh(code: str) -> dict:
    done = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stdout + done.stderr
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_word_splitting_imports_neither_nltk_nor_torch_and_sentence_splitting_still_gets_nltk():
    pytest.importorskip("nltk")  # where NLTK is not installed there is nothing to defer
    seen = fresh("""
        import json, sys
        from pytest_retrieval_eval.data.chunking import Chunking, chunk_corpus
        from pytest_retrieval_eval.data.corpus import open_corpus
        CORPUS = __CORPUS__
        chunks = chunk_corpus(open_corpus(CORPUS).load(), Chunking())
        after_words = {m: m in sys.modules for m in ("nltk", "scipy", "torch")}
        from haystack.components.preprocessors import document_splitter, sentence_tokenizer
        from haystack.components.preprocessors.document_splitter import DocumentSplitter
        DocumentSplitter(split_by="sentence", split_length=2)  # checks for NLTK: imported now
        print(json.dumps({"chunks": len(chunks), "after_words": after_words, "nltk": "nltk" in sys.modules,
                          "defined": hasattr(sentence_tokenizer, "load_sentence_tokenizer"),
                          "checked": document_splitter.nltk_imports.is_successful()}))
    """.replace("__CORPUS__", repr(str(CORPUS))))
    assert seen["chunks"] == 38  # the bundled corpus's chunks, as ever
    assert seen["after_words"] == {"nltk": False, "scipy": False, "torch": False}
    assert seen["nltk"] and seen["defined"] and seen["checked"]


def test_without_nltk_a_sentence_splitter_fails_as_haystack_says():
    seen = fresh("""
        import json, sys
        class NoNltk:
            def find_spec(self, name, path, target=None):
                if name.split(".")[0] == "nltk":
                    raise ModuleNotFoundError(f"No module named {name!r}", name=name)
        sys.meta_path.insert(0, NoNltk())
        from pytest_retrieval_eval._lazy_torch import import_haystack
        import_haystack()
        from haystack.components.preprocessors.document_splitter import DocumentSplitter
        DocumentSplitter(split_by="word", split_length=2)
        try:
            DocumentSplitter(split_by="sentence", split_length=2)
        except ImportError as exc:
            print(json.dumps({"error": str(exc)}))
    """)
    assert "pip install nltk" in seen["error"]


def test_whoever_imports_haystack_first_gets_it_without_torch_and_torch_imported_later_reaches_haystack():
    """A team's code importing Haystack once the plugin is awake (``watch``): no torch, no NLTK
    for a word splitter; the modules keep their own loaders; a later ``import torch`` (a team's
    sentence-transformers component) is handed to Haystack's records, so devices resolve."""
    pytest.importorskip("nltk")
    seen = fresh("""
        import json, sys
        from pytest_retrieval_eval._lazy_torch import watch
        watch()
        from haystack import Document
        from haystack.components.preprocessors import DocumentSplitter
        split = DocumentSplitter(split_by="word", split_length=3, split_overlap=0)
        chunks = split.run(documents=[Document(content="one two three four five six seven")])["documents"]
        before = {m: m in sys.modules for m in ("torch", "nltk")}
        import haystack, haystack.utils.device as device
        loaders = sorted({type(m.__loader__).__name__ for m in (haystack, device, sys.modules[DocumentSplitter.__module__])}
                         | {type(haystack.__spec__.loader).__name__})
        recorded = device.torch_import.is_successful()
        import torch
        print(json.dumps({"chunks": len(chunks), "before": before, "loaders": loaders, "recorded": recorded,
                          "handed": device.torch_import.is_successful() and device.torch is torch,
                          "device": device.ComponentDevice.resolve_device(None).to_torch_str()}))
    """)
    assert seen["chunks"] == 3 and seen["before"] == {"torch": False, "nltk": False}
    assert seen["loaders"] == ["SourceFileLoader"]
    assert seen["recorded"] is False and seen["handed"] is True  # deferred, then handed over
    assert seen["device"] == "cpu" or seen["device"].startswith(("cuda", "mps", "xpu"))


TEAM_PIPELINE = """
    def make():
        from haystack import Document, Pipeline
        from haystack.components.preprocessors import DocumentSplitter
        from haystack.components.retrievers.in_memory import InMemoryBM25Retriever
        from haystack.document_stores.in_memory import InMemoryDocumentStore

        store = InMemoryDocumentStore()
        docs = [Document(content=text, meta={"doc_id": doc_id}) for doc_id, text in DOCS.items()]
        store.write_documents(DocumentSplitter(split_by="word", split_length=30).run(documents=docs)["documents"])
        pipeline = Pipeline()
        pipeline.add_component("retriever", InMemoryBM25Retriever(document_store=store, top_k=10))
        return pipeline

    def pytest_retrieval_engines(registry, config):
        from pytest_retrieval_eval import adapters
        registry.register("theirs", lambda request: adapters.haystack(make()))
"""


def test_a_teams_haystack_pipeline_built_in_its_conftest_loads_neither_torch_nor_nltk(pytester):
    """The engine factory imports Haystack itself (the plugin's engines not selected, so nothing
    of the plugin's imported it before): the run answers and the process never loaded either."""
    pytest.importorskip("nltk")
    import json as _json

    from pytest_retrieval_eval.data.corpus import open_corpus

    docs = {d.doc_id: d.content for d in open_corpus(CORPUS).load().docs}
    pytester.makeconftest(f"DOCS = {_json.dumps(docs)}\n" + textwrap.dedent(TEAM_PIPELINE))
    pytester.makepyfile("""
        import sys
        import pytest

        @pytest.mark.retrieval
        def test_q(retrieval_results):
            assert retrieval_results.hit_at(10) > 0.5
            print("LOADED", sorted(m for m in ("torch", "nltk", "haystack") if m in sys.modules))
    """)
    done = pytester.runpytest_subprocess("-s", f"--retrieval-corpus={CORPUS}", f"--retrieval-questions={QUESTIONS}",
                                         "--retrieval-engine=theirs",
                                         "-p", "no:cacheprovider")
    assert done.ret == 0, done.stdout.str()
    assert "LOADED ['haystack']" in done.stdout.str(), done.stdout.str()


@requires_files
def test_a_corpus_imports_only_the_converters_its_files_need(tmp_path):
    """A JSON corpus imports no converter, nor Haystack; a folder of Markdown imports Haystack's
    Markdown converter, but not the HTML one's trafilatura, nor torch."""
    (tmp_path / "articles").mkdir()
    (tmp_path / "articles" / "a.md").write_text("---\ntitle: A\n---\n# Heading\n\nSome text.\n")
    seen = fresh("""
        import json, sys
        from pytest_retrieval_eval.data.corpus import open_corpus
        HEAVY = ("haystack", "yaml", "markdown_it", "mdit_plain", "trafilatura", "torch")
        json_corpus = len(open_corpus(__CORPUS__).load())
        after_json = sorted(m for m in HEAVY if m in sys.modules)
        titles = [d.title for d in open_corpus(__ARTICLES__).load()]
        print(json.dumps({"json": json_corpus, "after_json": after_json, "titles": titles,
                          "after_markdown": sorted(m for m in HEAVY if m in sys.modules)}))
    """.replace("__CORPUS__", repr(str(CORPUS))).replace("__ARTICLES__", repr(str(tmp_path / "articles"))))
    assert seen["json"] > 0 and seen["after_json"] == []
    assert seen["titles"] == ["A"]
    assert seen["after_markdown"] == ["haystack", "markdown_it", "mdit_plain", "yaml"]
