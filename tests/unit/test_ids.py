"""Identifiers the written files cannot hold are refused where they come in (file,
line, field), an engine's unwritable id is an error on its query, and no engine's output file
overwrites another's. Every file written reads back with the plugin's own readers."""

from __future__ import annotations

import json

import pytest

from conftest import CORPUS, QUESTIONS, write_docs
from pytest_retrieval_eval import RetrievalEvalError
from pytest_retrieval_eval.data.corpus import BeirFolder, JsonFolder
from pytest_retrieval_eval.data.labeled import load_questions_cache
from pytest_retrieval_eval.data.label_files import read_labels
from conftest import evaluate_engine


def test_a_document_id_with_whitespace_is_refused_at_corpus_load(tmp_path):
    folder = write_docs(tmp_path / "c", [{"doc_id": "battery care", "content": "x"}])
    with pytest.raises(RetrievalEvalError, match=r"battery care.json:1: field 'doc_id': .*'battery care' contains whitespace"):
        JsonFolder(folder).load()


def test_a_document_id_longer_than_the_store_holds_is_refused_at_load(tmp_path):
    folder = write_docs(tmp_path / "c", [{"doc_id": "d" * 121, "content": "x"}])
    with pytest.raises(RetrievalEvalError, match=r".json:1: field 'doc_id': .*is 121 characters; the store's chunk ids .* hold 128"):
        JsonFolder(folder).load()
    assert JsonFolder(write_docs(tmp_path / "ok", [{"doc_id": "d" * 120, "content": "x"}])).load()


def test_beir_ids_with_whitespace_are_refused_with_the_line(tmp_path):
    root = tmp_path / "beir"
    (root / "qrels").mkdir(parents=True)
    (root / "corpus.jsonl").write_text('{"_id": "d1", "text": "x"}\n{"_id": "d 2", "text": "y"}\n')
    (root / "queries.jsonl").write_text('{"_id": "q 1", "text": "what"}\n')
    (root / "qrels" / "test.tsv").write_text("query-id\tcorpus-id\tscore\nq 1\td1\t1\n")
    with pytest.raises(RetrievalEvalError, match=r"corpus.jsonl:2: field '_id': id 'd 2' contains whitespace"):
        BeirFolder(root).load()


def test_query_and_judged_ids_with_whitespace_are_refused_in_every_label_format(tmp_path):
    doc = json.loads(QUESTIONS.read_text())
    doc["queries"][2]["id"] = "account deletion q1"
    (tmp_path / "q.json").write_text(json.dumps(doc, indent=2))
    with pytest.raises(RetrievalEvalError, match=r"q.json:\d+: field 'queries\[2\]\.id': query id .* contains whitespace"):
        load_questions_cache(tmp_path / "q.json")
    (tmp_path / "l.csv").write_text("question,doc_id\nhow now,battery care\n")
    with pytest.raises(RetrievalEvalError, match=r"l.csv:2: field 'doc_id': .*judged document id 'battery care'"):
        read_labels(tmp_path / "l.csv")
    (tmp_path / "r.jsonl").write_text('{"query_id": "q 1", "query": "x", "relevant_docs": ["a"]}\n')
    with pytest.raises(RetrievalEvalError, match=r"r.jsonl:1: field 'query_id'"):
        read_labels(tmp_path / "r.jsonl")


def test_an_engine_id_no_file_can_hold_makes_its_query_an_error():
    labeled = load_questions_cache(QUESTIONS)
    one = type(labeled)(labeled.queries[:1], name="one")
    corpus = JsonFolder(CORPUS).load()
    for bad, message in (("battery care", "contains whitespace"), ("x\ud800", "unpaired surrogate")):
        engine = type("E", (), {"name": "e", "retrieve": lambda self, q, k, bad=bad: ["battery-care", bad]})()
        result = evaluate_engine(engine, one, known_ids=corpus)
        assert result.results[0].doc_ids == () and message in result.results[0].error
