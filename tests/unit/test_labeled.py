"""The questions cache: format, validation errors, deterministic and atomic writes."""

import json

import pytest

from conftest import CORPUS, QUESTIONS, requires_hybrid
from pytest_retrieval_eval import LabeledQuery, RetrievalEvalError
from pytest_retrieval_eval.data.corpus import JsonFolder
from pytest_retrieval_eval.data.labeled import LabeledSet, dump_questions_cache, load_questions_cache, write_questions_cache


@requires_hybrid
def test_committed_cache_covers_every_document_twice_every_chunk_once_and_is_honest_about_its_origin():
    from pytest_retrieval_eval.data.chunking import chunk_corpus

    corpus = JsonFolder(CORPUS).load()
    labeled = load_questions_cache(QUESTIONS, known_doc_ids=corpus.doc_ids)
    chunks = {c.chunk_id: c for c in chunk_corpus(corpus)}
    superseded = {"plan-prices-2025", "hub-opening-hours-2024"}  # their answers are out of date
    assert {q.source["chunk_id"] for q in labeled} == {c for c, chunk in chunks.items() if chunk.doc_id not in superseded}
    for q in labeled:
        assert q.source["chunk_sha256"] == chunks[q.source["chunk_id"]].fingerprint
        assert q.source["by"] == "handwritten"
    per_doc = {d: 0 for d in corpus.doc_ids if d not in superseded}
    for q in labeled:
        assert len(q.gold) == 1
        per_doc[q.gold[0]] += 1
        assert q.source["doc_sha256"] == corpus.get(q.gold[0]).fingerprint
    assert min(per_doc.values()) >= 2
    assert labeled.provenance["generator"]["method"] == "handwritten"
    assert labeled.provenance["corpus_fingerprint"] == corpus.fingerprint


def test_round_trip_is_byte_identical(tmp_path):
    labeled = load_questions_cache(QUESTIONS)
    raw = json.loads(QUESTIONS.read_text())
    header = {k: raw[k] for k in ("generator", "corpus_fingerprint", "splitter")}
    text = dump_questions_cache(labeled, **header)
    assert text == QUESTIONS.read_text()
    out = tmp_path / "sub" / "q.json"
    write_questions_cache(out, labeled, **header)
    assert out.read_text() == text
    assert [p.name for p in out.parent.iterdir()] == ["q.json"]  # no temp file left behind


def test_a_failed_write_keeps_the_old_file(tmp_path, monkeypatch):
    out = tmp_path / "q.json"
    out.write_text("good")
    labeled = LabeledSet((LabeledQuery("q", "question?", {"d": 1}),))

    def boom(*a, **k):
        raise OSError("disk full")

    monkeypatch.setattr("os.replace", boom)
    with pytest.raises(OSError, match="disk full"):
        write_questions_cache(out, labeled, generator={}, corpus_fingerprint="x")
    assert out.read_text() == "good"
    assert [p.name for p in tmp_path.iterdir()] == ["q.json"]


def entry(**overrides):
    base = {"id": "q1", "question": "why?", "relevant": {"d1": 1}}
    base.update(overrides)
    return base


def cache(*queries, version=1):
    return {"format": "pytest-retrieval-eval/questions", "version": version, "queries": list(queries)}


@pytest.mark.parametrize(
    "content, message",
    [
        ('{"format": "pytest-retrieval-eval/questions",\n "version": 1,\n "queries": [}', r"q.json:3: not valid JSON"),
        (cache(version=7), r"q.json:\d+: field 'version': unsupported format version 7"),
        ({"queries": []}, r"field 'format': not a questions cache"),
        (cache(entry(), entry()), r"q.json:\d+: field 'queries\[1\].id': duplicate query id 'q1'"),
        (cache(entry(question="")), r"field 'queries\[0\].question': query 'q1': must be a non-empty string"),
        (cache(entry(relevant={"d1": "1"})), r"field 'queries\[0\].relevant': query 'q1': grade of 'd1' must be an integer"),
        (cache(entry(relevant={"d1": 0})), r"no document has grade >= 1"),
        (cache(entry(relevant={"gone": 1})), r"q.json:\d+: field 'queries\[0\].relevant': query 'q1': gold document\(s\) gone not in the corpus"),
    ],
)
def test_bad_caches_name_file_line_and_field(tmp_path, content, message):
    path = tmp_path / "q.json"
    path.write_text(content if isinstance(content, str) else json.dumps(content, indent=2))
    with pytest.raises(RetrievalEvalError, match=message):
        load_questions_cache(path, known_doc_ids={"d1"})


def test_truncated_cache(tmp_path):
    path = tmp_path / "q.json"
    path.write_text(QUESTIONS.read_text()[:500])
    with pytest.raises(RetrievalEvalError, match=r"q.json:\d+: not valid JSON"):
        load_questions_cache(path)
