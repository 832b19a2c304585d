"""Haystack imported without what a run does not use: torch until a model runs, NLTK (with
scipy behind it) until a sentence is split. Each check runs in a fresh interpreter, since what
a process has imported cannot be taken back."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap

import pytest

from conftest import CORPUS, requires_hybrid

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
