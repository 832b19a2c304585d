"""Freshness: which documents are stale on a day, the measures built on it, and how a run shows
and gates them (bundled corpus: two versioned pairs, questions whose answer changed)."""

from __future__ import annotations

import datetime as dt
import json

import pytest

from conftest import CORPUS, QUESTIONS, write_docs
from pytest_retrieval_eval import Doc, QueryResult, RetrievalEvalError
from pytest_retrieval_eval.data.corpus import JsonFolder, open_corpus
from pytest_retrieval_eval.data.freshness import Freshness
from pytest_retrieval_eval.data.labeled import LabeledSet
from pytest_retrieval_eval.ir.measures import Measure
from pytest_retrieval_eval.ir.metrics import evaluate
from pytest_retrieval_eval.analysis.result import EvaluationResult
from pytest_retrieval_eval.types import LabeledQuery

DAY = dt.date(2026, 11, 30)


def docs(**metas):
    return [Doc(doc_id, "x", meta=meta) for doc_id, meta in metas.items()]


def test_each_reason_a_document_is_stale_on_a_day():
    f = Freshness.of(docs(
        marked={"superseded_by": "plain"},
        old={"version_key": "k", "valid_from": "2025-01-01"},
        new={"version_key": "k", "valid_from": "2026-01-01"},
        future={"version_key": "k", "valid_from": "2027-01-01"},  # not in effect yet: supersedes nothing
        expired={"valid_until": "2026-11-29"},
        last_day={"valid_until": "2026-11-30"},  # inclusive
        undated={"version_key": "u"}, undated_too={"version_key": "u"},  # no order: neither is stale
        plain={},
    ), DAY)
    assert f.stale == {
        "expired": "expired 2026-11-29",
        "future": "not valid until 2027-01-01",
        "marked": "superseded by plain",
        "old": "superseded by new, a newer version of k",
    }
    assert f.as_of == "2026-11-30" and f.versions["undated"] == f.versions["undated_too"] == "u"
    # the day moves the answer: before 2026 the old version was current
    assert "old" not in Freshness.of(docs(old={"version_key": "k", "valid_from": "2025-01-01"},
                                          new={"version_key": "k", "valid_from": "2026-01-01"}), dt.date(2025, 6, 1)).stale


def test_an_unversioned_corpus_has_no_freshness_and_its_measures_no_value():
    assert Freshness.of(docs(a={}, b={"author": "x"}), DAY) is None
    labeled = LabeledSet((LabeledQuery("q", "?", {"a": 1}),), name="s")
    result = EvaluationResult("e", labeled, (QueryResult("q", ("a",)),))
    value = result.score("freshness.stale_free@5")
    assert value != value  # NaN: a rule on it fails, it never passes
    assert "has no versioned documents" in " ".join(value.explain(">=", 1.0))


def test_stale_free_and_conflict_free_per_query_and_errors_count_as_failures():
    f = Freshness.of(docs(old={"version_key": "k", "superseded_by": "new"}, new={"version_key": "k"}, c={}), DAY)
    labeled = LabeledSet(tuple(LabeledQuery(q, "?", {"new": 1}) for q in ("q1", "q2", "q3", "q4")), name="s")
    results = (QueryResult("q1", ("new", "c", "old")), QueryResult("q2", ("new", "c")),
               QueryResult("q3", ("old",)), QueryResult("q4", (), error="boom"))
    e = EvaluationResult("e", labeled, results, freshness=f)
    assert e.per_query("freshness.stale_free@2") == {"q1": 1.0, "q2": 1.0, "q3": 0.0, "q4": 0.0}
    assert e.per_query("freshness.stale_free@3") == {"q1": 0.0, "q2": 1.0, "q3": 0.0, "q4": 0.0}
    assert e.per_query("freshness.conflict_free@3") == {"q1": 0.0, "q2": 1.0, "q3": 1.0, "q4": 0.0}
    assert e.scores.stale_queries(3) == {"q1": ["old (superseded by new)"], "q3": ["old (superseded by new)"]}
    assert e.scores.conflicting_queries(3) == {"q1": [("new", "old")]}
    # results.json keeps what judged it
    again = EvaluationResult.from_dict(json.loads(json.dumps(e.to_dict())))
    assert again.freshness == f and again.per_query("freshness.stale_free@3") == e.per_query("freshness.stale_free@3")


def test_freshness_measures_parse_and_are_refused_by_the_qrels_evaluator():
    assert Measure.parse("Freshness.Stale_Free@5").name == "freshness.stale_free@5"
    with pytest.raises(RetrievalEvalError, match="needs a cutoff"):
        Measure.parse("freshness.conflict_free")
    with pytest.raises(RetrievalEvalError, match="judged on the corpus's document versions"):
        evaluate({"q": {"a": 1}}, {"q": {"a": 1.0}}, ["freshness.stale_free@5"])


@pytest.mark.parametrize("meta, field, message", [
    ({"valid_from": "2026-13-01"}, "valid_from", "must be a date written YYYY-MM-DD"),
    ({"valid_until": 20260101}, "valid_until", "must be a date written YYYY-MM-DD"),
    ({"valid_from": "2026-02-01", "valid_until": "2026-01-01"}, "valid_until", "is before valid_from"),
    ({"version_key": ""}, "version_key", "must be a non-empty string"),
    ({"superseded_by": "nobody"}, "superseded_by", "which is not a document of the corpus"),
])
def test_bad_freshness_fields_name_the_file_line_and_field(tmp_path, meta, field, message):
    folder = write_docs(tmp_path / "c", [{"doc_id": "a", "content": "x", **meta}, {"doc_id": "b", "content": "y"}])
    with pytest.raises(RetrievalEvalError) as info:
        JsonFolder(folder).load()
    assert info.value.field == field and message in str(info.value)
    assert "c" in (info.value.path or "")


def test_a_beir_corpus_carries_freshness_in_metadata_or_beside_it(tmp_path):
    (tmp_path / "qrels").mkdir()
    (tmp_path / "corpus.jsonl").write_text(
        json.dumps({"_id": "old", "title": "t", "text": "x", "metadata": {"version_key": "k", "superseded_by": "new"}}) + "\n"
        + json.dumps({"_id": "new", "title": "t", "text": "y", "version_key": "k", "valid_from": "2026-01-01"}) + "\n"
        + json.dumps({"_id": "bad", "title": "t", "text": "z", "valid_until": "soon"}) + "\n")
    (tmp_path / "queries.jsonl").write_text(json.dumps({"_id": "q", "text": "?"}) + "\n")
    (tmp_path / "qrels" / "test.tsv").write_text("query-id\tcorpus-id\tscore\nq\tnew\t1\n")
    with pytest.raises(RetrievalEvalError) as info:
        open_corpus(tmp_path).load()
    assert (info.value.line, info.value.field) == (3, "valid_until")
    (tmp_path / "corpus.jsonl").write_text("\n".join((tmp_path / "corpus.jsonl").read_text().splitlines()[:2]) + "\n")
    f = Freshness.of(open_corpus(tmp_path).load().docs, DAY)
    assert f.stale == {"old": "superseded by new"} and f.versions == {"new": "k", "old": "k"}


def test_the_bundled_corpus_has_versions_and_the_new_ones_are_gold():
    corpus = JsonFolder(CORPUS).load()
    f = Freshness.of(corpus.docs, DAY)
    assert set(f.stale) == {"plan-prices-2025", "hub-opening-hours-2024"}
    gold = {d for q in json.loads(QUESTIONS.read_text())["queries"] for d in q["relevant"]}
    assert {"plan-prices-2026", "hub-opening-hours-2026"} <= gold and not set(f.stale) & gold
