"""Corpus loaders: JSON folders and BEIR folders, and the errors they give on bad input."""

import json

import pytest

from conftest import CORPUS, write_docs
from projects import make_beir
from shared_datasets import dataset_path
from pytest_retrieval_eval import RetrievalEvalError
from pytest_retrieval_eval.data.corpus import BeirFolder, JsonFolder, open_corpus


def test_bundled_corpus_shape():
    corpus = JsonFolder(CORPUS).load()
    assert 20 <= len(corpus) <= 30
    words = {d.doc_id: len(d.content.split()) for d in corpus}
    assert sum(w >= 600 for w in words.values()) >= 3  # long, multi-chunk policy pages
    for d in corpus:
        assert d.title and d.description and d.filename and d.content


def test_fingerprint_changes_with_content_and_not_with_file_order(tmp_path):
    a = write_docs(tmp_path / "a", [{"doc_id": "x", "content": "one"}, {"doc_id": "y", "content": "two"}])
    fp = JsonFolder(a).load().fingerprint
    (a / "y.json").write_text(json.dumps({"doc_id": "y", "content": "two!"}))
    assert JsonFolder(a).load().fingerprint != fp


def test_list_files_and_jsonl_and_extra_fields_as_meta(tmp_path):
    (tmp_path / "many.json").write_text(json.dumps([{"doc_id": "a", "content": "x", "lang": "en"}, {"doc_id": "b", "content": "y"}]))
    (tmp_path / "more.jsonl").write_text('{"doc_id": "c", "content": "z"}\n\n{"doc_id": "d", "content": "w"}\n')
    corpus = JsonFolder(tmp_path).load()
    assert corpus.doc_ids == ("a", "b", "c", "d")
    assert corpus.get("a").meta == {"lang": "en"}


@pytest.mark.parametrize(
    "files, message",
    [
        ({"a.json": '{"doc_id": "a",\n "content": "x",\n}'}, r"a.json:3: not valid JSON"),
        ({"a.json": '{"doc_id": "a", "title": "t"}'}, r"a.json:1: field 'content': document 'a': required field is missing"),
        ({"a.json": '{"doc_id": "a", "content": "   "}'}, r"a.json:1: field 'content': document 'a': is empty"),
        ({"a.json": '{"content": "x"}'}, r"a.json:1: field 'doc_id': document: required"),
        ({"a.json": '{"doc_id": "a", "content": "x", "title": 3}'}, r"field 'title': document 'a': must be a string"),
        ({"a.jsonl": '{"doc_id": "a", "content": "x"}\n{"doc_id": "b"}\n'}, r"a.jsonl:2: field 'content'"),
        ({"a.json": '{"doc_id": "a", "content": "x"}', "b.json": '{"doc_id": "a", "content": "y"}'},
         r"b.json:1: field 'doc_id': duplicate doc_id 'a' \(also in .*a.json"),
    ],
)
def test_bad_documents_name_file_line_and_field(tmp_path, files, message):
    for name, text in files.items():
        (tmp_path / name).write_text(text)
    with pytest.raises(RetrievalEvalError, match=message):
        JsonFolder(tmp_path).load()


def test_non_utf8_bytes_name_the_line(tmp_path):
    (tmp_path / "a.json").write_bytes(b'{"doc_id": "a",\n"content": "caf\xe9"}')
    with pytest.raises(RetrievalEvalError, match=r"a.json:2: not valid UTF-8"):
        JsonFolder(tmp_path).load()


def test_empty_or_missing_folder(tmp_path):
    with pytest.raises(RetrievalEvalError, match="no documents found"):
        JsonFolder(tmp_path).load()
    with pytest.raises(RetrievalEvalError, match="corpus folder not found"):
        JsonFolder(tmp_path / "nope").load()


def test_beir_folder_with_crlf_bom_header_and_blank_lines(tmp_path):
    root = make_beir(tmp_path / "beir")
    provider = open_corpus(root)
    assert isinstance(provider, BeirFolder)
    corpus = provider.load()
    assert corpus.doc_ids == ("d1", "d2")
    labeled = provider.labeled()
    assert [q.query_id for q in labeled] == ["q1", "q2"]
    assert labeled.by_id()["q1"].relevant == {"d1": 2, "d2": 0}
    assert labeled.by_id()["q1"].question == "does vitamin d help bones"


def test_beir_query_without_text_is_an_error(tmp_path):
    root = make_beir(tmp_path / "beir", crlf=False, bom=False)
    (root / "qrels" / "test.tsv").write_text("query-id\tcorpus-id\tscore\nq9\td1\t1\n")
    with pytest.raises(RetrievalEvalError, match=r"queries.jsonl: 1 query id\(s\) in qrels/test.tsv have no text"):
        BeirFolder(root).labeled()


@pytest.mark.dataset("scifact")
def test_scifact_loads_when_present():
    provider = BeirFolder(dataset_path("scifact"))
    assert len(provider.load()) == 5183
    labeled = provider.labeled()
    assert len(labeled) == 300
    assert sum(len(q.relevant) for q in labeled) == 339
