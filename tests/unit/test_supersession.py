"""Freshness edge cases: a successor replaces a document only once it is valid itself, and a
``superseded_by`` loop (which leaves no version current) is refused, naming its ids and file."""

from __future__ import annotations

import datetime as dt
import json

import pytest

from conftest import CORPUS, write_docs
from pytest_retrieval_eval import Doc, RetrievalEvalError
from pytest_retrieval_eval.data.corpus import JsonFolder, open_corpus
from pytest_retrieval_eval.data.freshness import Freshness
from pytest_retrieval_eval.plugin.options import BY_KEY


def docs(**metas):
    return [Doc(doc_id, "x", meta=meta) for doc_id, meta in metas.items()]


# --- the successor's validity decides -------------------------------------------------------------

PAIR = dict(old={"superseded_by": "new"}, new={"valid_from": "2027-01-01"})


@pytest.mark.parametrize("day, stale", [
    # the successor is not valid yet: the old document is current (the new one is the stale one)
    (dt.date(2026, 12, 31), {"new": "not valid until 2027-01-01"}),
    (dt.date(2027, 1, 1), {"old": "superseded by new"}),  # the successor's first day (inclusive)
    (dt.date(2027, 6, 1), {"old": "superseded by new"}),
])
def test_a_document_is_superseded_only_once_its_successor_is_valid(day, stale):
    assert Freshness.of(docs(**PAIR), day).stale == stale


def test_a_successor_without_valid_from_supersedes_at_once_and_the_other_reasons_still_hold():
    day = dt.date(2026, 11, 30)
    assert Freshness.of(docs(old={"superseded_by": "new"}, new={}), day).stale == {"old": "superseded by new"}
    expired = Freshness.of(docs(old={"superseded_by": "new", "valid_until": "2026-01-31"},
                                new={"valid_from": "2027-01-01"}), day)
    assert expired.stale["old"] == "expired 2026-01-31"  # its own end date, not the successor's


def test_the_bundled_price_list_is_current_before_its_successor_starts():
    corpus = JsonFolder(CORPUS).load()
    assert "plan-prices-2025" not in Freshness.of(corpus.docs, dt.date(2025, 6, 1)).stale
    assert Freshness.of(corpus.docs, dt.date(2026, 11, 30)).stale["plan-prices-2025"].startswith(
        "superseded by plan-prices-2026")


def test_the_as_of_help_says_what_the_code_does():
    text = BY_KEY["as_of"].help
    assert "superseded by a document already valid then" in text


# --- loops are refused ------------------------------------------------------------------------------

def test_a_two_document_loop_in_a_json_folder_names_both_ids_and_the_file(tmp_path):
    folder = write_docs(tmp_path / "kb", [{"doc_id": "a", "content": "x", "superseded_by": "b"},
                                          {"doc_id": "b", "content": "y", "superseded_by": "a"},
                                          {"doc_id": "c", "content": "z"}])
    with pytest.raises(RetrievalEvalError) as info:
        JsonFolder(folder).load()
    message = str(info.value)
    assert "\n" not in message and info.value.field == "superseded_by"
    assert "loop of 2 documents (a -> b -> a)" in message and "remove superseded_by" in message
    assert info.value.path == f"{folder / 'a.json'}:1"


def test_a_longer_loop_in_a_beir_corpus_names_its_ids_and_the_file_and_a_chain_into_it_is_left_out(tmp_path):
    (tmp_path / "qrels").mkdir()
    rows = [("x", "a"), ("a", "b"), ("b", "c"), ("c", "a"), ("plain", None)]
    (tmp_path / "corpus.jsonl").write_text("".join(
        json.dumps({"_id": i, "title": "t", "text": "w", **({"metadata": {"superseded_by": s}} if s else {})}) + "\n"
        for i, s in rows))
    (tmp_path / "queries.jsonl").write_text(json.dumps({"_id": "q", "text": "?"}) + "\n")
    (tmp_path / "qrels" / "test.tsv").write_text("query-id\tcorpus-id\tscore\nq\tplain\t1\n")
    with pytest.raises(RetrievalEvalError) as info:
        open_corpus(tmp_path).load()
    assert "corpus.jsonl" in info.value.path and "\n" not in str(info.value)
    assert "loop of 3 documents (a -> b -> c -> a)" in str(info.value)


def test_a_chain_without_a_loop_is_accepted_and_judged_link_by_link(tmp_path):
    folder = write_docs(tmp_path / "kb", [
        {"doc_id": "v1", "content": "x", "superseded_by": "v2"},
        {"doc_id": "v2", "content": "y", "superseded_by": "v3", "valid_from": "2026-01-01"},
        {"doc_id": "v3", "content": "z", "valid_from": "2027-01-01"}])
    corpus = JsonFolder(folder).load()
    assert set(Freshness.of(corpus.docs, dt.date(2026, 6, 1)).stale) == {"v1", "v3"}  # v2 is current
