"""Text that cannot be encoded (a lone surrogate from a JSON \\ud800 escape) in a
document or a question is an error naming file, line and field, never a traceback from the
fingerprinting."""

from __future__ import annotations

import json

import pytest

from conftest import QUESTIONS
from pytest_retrieval_eval import RetrievalEvalError
from pytest_retrieval_eval.data.corpus import BeirFolder, JsonFolder
from pytest_retrieval_eval.data.labeled import load_questions_cache
from pytest_retrieval_eval.data.label_files import read_labels


@pytest.mark.parametrize("field", ["content", "title", "description", "filename"])
def test_a_lone_surrogate_in_a_document_names_the_field(tmp_path, field):
    folder = tmp_path / "c"
    folder.mkdir()
    record = {"doc_id": "d1", "content": "fine", field: "broken \\ud83d text"}
    (folder / "d1.json").write_text(json.dumps(record).replace("\\\\ud83d", "\\ud83d"))
    with pytest.raises(RetrievalEvalError, match=rf"d1.json:1: field '{field}': document 'd1': contains an unpaired surrogate"):
        JsonFolder(folder).load()


def test_a_lone_surrogate_in_a_beir_document_or_query_names_the_line(tmp_path):
    root = tmp_path / "beir"
    (root / "qrels").mkdir(parents=True)
    (root / "corpus.jsonl").write_text('{"_id": "d1", "text": "ok"}\n{"_id": "d2", "text": "bad \\udc80"}\n')
    with pytest.raises(RetrievalEvalError, match=r"corpus.jsonl:2: field 'text': document 'd2': contains an unpaired"):
        BeirFolder(root).load()
    (root / "corpus.jsonl").write_text('{"_id": "d1", "text": "ok"}\n')
    (root / "queries.jsonl").write_text('{"_id": "q1", "text": "why \\ud800"}\n')
    (root / "qrels" / "test.tsv").write_text("query-id\tcorpus-id\tscore\nq1\td1\t1\n")
    with pytest.raises(RetrievalEvalError, match=r"queries.jsonl:1: field 'text': query 'q1': contains an unpaired"):
        BeirFolder(root).labeled()


def test_a_lone_surrogate_in_a_question_names_the_line_and_field(tmp_path):
    text = QUESTIONS.read_text().replace("I want to remove my profile", "I want to remove my \\udfff profile", 1)
    (tmp_path / "q.json").write_text(text)
    with pytest.raises(RetrievalEvalError, match=r"q.json:\d+: field 'queries\[0\]\.question': query 'account-deletion.q1': contains an unpaired"):
        load_questions_cache(tmp_path / "q.json")
    (tmp_path / "l.jsonl").write_text('{"question": "bad \\ud800 one", "doc_id": "a"}\n')
    with pytest.raises(RetrievalEvalError, match=r"l.jsonl:1: field 'question'"):
        read_labels(tmp_path / "l.jsonl")
