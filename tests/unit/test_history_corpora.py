"""The run history keeps each corpus's document digests once (``corpora/<fingerprint>.json``),
not in every record: a record names its corpus by fingerprint, the digests are read back only
for a comparison across two corpora, pruning drops a map no record names, a map deleted by hand
leaves the change "cannot be itemised", and records holding the digests inline still read."""

from __future__ import annotations

import json
from dataclasses import replace

import pytest

from conftest import results_text
from pytest_retrieval_eval.data.corpus import Corpus
from pytest_retrieval_eval.data.labeled import LabeledSet
from pytest_retrieval_eval.evaluation import fingerprints as fingerprints_module
from pytest_retrieval_eval.evaluation.fingerprints import document_digests, record
from pytest_retrieval_eval.analysis.result import EvaluationResult
from pytest_retrieval_eval.evaluation.results import RunResults
from pytest_retrieval_eval.archive import history as history_module
from pytest_retrieval_eval.archive.history import History, changes_since
from pytest_retrieval_eval.archive.saved import load_saved
from pytest_retrieval_eval.types import Doc, LabeledQuery, QueryResult

DOCS = tuple(Doc(f"doc-{i:04d}", f"text of document {i}", title=f"Title {i}") for i in range(2000))
LABELED = LabeledSet(tuple(LabeledQuery(f"q{i}", f"question {i}", {f"doc-{i:04d}": 1}) for i in range(4)), name="set")
CHANGED = "documents: 1 added (doc-new); 1 removed (doc-0003); 1 changed (doc-0002)"


def edited(corpus: Corpus) -> Corpus:
    """doc-0002 edited, doc-new added, doc-0003 removed."""
    docs = [Doc(d.doc_id, d.content + " (revised)", title=d.title) if d.doc_id == "doc-0002" else d
            for d in corpus.docs if d.doc_id != "doc-0003"]
    return Corpus(tuple(docs) + (Doc("doc-new", "a new document"),), name=corpus.name)


A = Corpus(DOCS, name="kb")
B = edited(A)


def results(corpus: Corpus) -> str:
    e = EvaluationResult("e", LABELED, tuple(QueryResult(q.query_id, (f"doc-{q.query_id[1:]:0>4}",))
                                             for q in LABELED.queries),
                         context={"corpus": corpus.name, "corpus_fingerprint": corpus.fingerprint})
    run = RunResults([e])
    run = replace(run, fingerprints=record(run, corpus))
    return results_text(run)


def maps(folder) -> list[str]:
    return sorted(p.name for p in (folder / "corpora").glob("*.json"))


def test_many_records_of_one_corpus_keep_its_digests_in_one_file_and_none_in_a_record(tmp_path):
    history = History(tmp_path)
    for i in range(20):
        history.append(results(A), {"commit": f"{i:040x}"}, now=1e9 + i)
    assert maps(tmp_path) == [f"{A.fingerprint}.json"]
    kept = tmp_path / "corpora" / f"{A.fingerprint}.json"
    assert json.loads(kept.read_text())["documents"] == document_digests(A)
    records = sorted(tmp_path.glob("*.json"))
    assert len(records) == 20
    some_digest = document_digests(A)["doc-1999"]
    for path in records:
        doc = json.loads(path.read_text())
        assert doc["corpora"] == {A.fingerprint: {"name": "kb", "documents": f"corpora/{A.fingerprint}.json"}}
        assert doc["results"]["fingerprints"]["corpora"] == {}
        assert some_digest not in path.read_text() and path.stat().st_size < kept.stat().st_size
    # 20 records and their one map take less room than 5 records with the digests inline would
    inline = len(results(A).encode())
    assert sum(p.stat().st_size for p in records) + kept.stat().st_size < 5 * inline


def test_two_corpora_keep_two_maps_and_a_record_reads_back_with_its_digests(tmp_path):
    history = History(tmp_path)
    for i, corpus in enumerate((A, B, A, B)):
        history.append(results(corpus), {"commit": f"{i:040x}"}, now=1e9 + i)
    assert maps(tmp_path) == sorted([f"{A.fingerprint}.json", f"{B.fingerprint}.json"])
    first = history.records()[0]
    assert first.run().fingerprints["corpora"] == {A.fingerprint: {"name": "kb", "documents": document_digests(A)}}
    # read as a baseline file (--retrieval-baseline DIR/RECORD.json) too
    saved = load_saved(first.path).run
    assert saved.fingerprints["corpora"][A.fingerprint]["documents"] == document_digests(A)


def test_the_history_change_line_names_the_documents_from_the_maps(tmp_path):
    history = History(tmp_path)
    history.append(results(A), {"commit": "a" * 40}, now=1e9)
    history.append(results(B), {"commit": "b" * 40}, now=2e9)
    before, after = history.records()
    [said] = changes_since(before, after)
    assert said == f"corpus {A.fingerprint[:12]} -> {B.fingerprint[:12]} ({CHANGED})"


def test_a_maps_digests_are_read_only_when_two_records_corpora_differ(tmp_path, monkeypatch):
    history = History(tmp_path)
    history.append(results(A), {"commit": "a" * 40}, now=1e9)
    history.append(results(A), {"commit": "b" * 40}, now=2e9)
    history.append(results(B), {"commit": "c" * 40}, now=3e9)
    read = []
    real = fingerprints_module.read_map
    monkeypatch.setattr(fingerprints_module, "read_map", lambda folder, fp: read.append(fp) or real(folder, fp))
    first, second, third = history.records()
    assert changes_since(first, second) == [] and read == []
    assert first.run(against={A.fingerprint}).fingerprints["corpora"] == {} and read == []
    assert changes_since(second, third) and sorted(read) == sorted([A.fingerprint, B.fingerprint])


def test_pruning_drops_a_map_once_no_record_left_names_it(tmp_path):
    for i, corpus in enumerate((A, A, B)):
        History(tmp_path, keep=2).append(results(corpus), {"commit": f"{i:040x}"}, now=1e9 + i)
    assert maps(tmp_path) == sorted([f"{A.fingerprint}.json", f"{B.fingerprint}.json"])  # A's second record names it
    History(tmp_path, keep=2).append(results(B), {"commit": "f" * 40}, now=2e9)
    assert maps(tmp_path) == [f"{B.fingerprint}.json"]
    assert [r.commit for r in History(tmp_path).records()] == [f"{2:040x}", "f" * 40]


def test_a_record_whose_map_was_deleted_still_loads_and_the_change_cannot_be_itemised(tmp_path):
    history = History(tmp_path)
    history.append(results(A), {"commit": "a" * 40}, now=1e9)
    history.append(results(B), {"commit": "b" * 40}, now=2e9)
    (tmp_path / "corpora" / f"{A.fingerprint}.json").unlink()
    before, after = history.records()
    assert before.run().evaluations[0].hit_at(1) == 1.0
    [said] = changes_since(before, after)
    assert said.endswith("(the change cannot be itemised: the baseline records no document digests)"), said
    assert not history.warnings


def test_a_record_holding_the_digests_inline_still_reads_and_is_compared_by_name(tmp_path):
    history = History(tmp_path)
    history.append(results(B), {"commit": "b" * 40}, now=2e9)
    [new] = sorted(tmp_path.glob("*.json"))
    old = json.loads(new.read_text())  # a record as written before the maps: digests inline, no "corpora"
    old.pop("corpora")
    old["results"] = json.loads(results(A))
    (tmp_path / new.name.replace("2033", "2001")).write_text(json.dumps(old))
    before, after = history.records()
    assert before.corpora == {} and before.run().fingerprints["corpora"][A.fingerprint]["documents"]
    [said] = changes_since(before, after)
    assert said.endswith(f"({CHANGED})"), said
    History(tmp_path, keep=1).append(results(B), {"commit": "c" * 40}, now=3e9)  # pruning an inline record
    assert maps(tmp_path) == [f"{B.fingerprint}.json"]


def test_a_failed_record_write_leaves_no_map_of_its_own_and_never_removes_a_kept_one(tmp_path, monkeypatch):
    real = history_module.write_text_atomic

    def failing(path, text):
        if path.parent == tmp_path:  # the record, not its map
            raise OSError("disk full")
        real(path, text)

    history = History(tmp_path)
    history.append(results(A), {"commit": "a" * 40}, now=1e9)
    monkeypatch.setattr(history_module, "write_text_atomic", failing)
    for corpus in (B, A):
        with pytest.raises(OSError, match="disk full"):
            history.append(results(corpus), {"commit": "b" * 40}, now=2e9)
    assert maps(tmp_path) == [f"{A.fingerprint}.json"]  # B's went with its record; A's first record still reads it
    [kept] = history.records()
    assert kept.run().fingerprints["corpora"][A.fingerprint]["documents"] == document_digests(A)
