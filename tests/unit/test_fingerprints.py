"""What a run measured, by content (``evaluation/fingerprints.py``): results.json records the
corpus with a digest per document, the labeled sets, the judgments file and the engines'
canaries; a baseline refused (or forced) across another corpus or judgments names the documents
and grades added, removed and changed, the first few by name, then counts."""

from __future__ import annotations

import hashlib
import json
from dataclasses import replace

import pytest

from conftest import results_text
from pytest_retrieval_eval.data.corpus import Corpus
from pytest_retrieval_eval.data.labeled import LabeledSet
from pytest_retrieval_eval.errors import RetrievalEvalError
from pytest_retrieval_eval.evaluation.fingerprints import (corpus_changes, diff, document_digests, grades_changes,
                                                           judgments_changes, record)
from pytest_retrieval_eval.analysis.result import EvaluationResult
from pytest_retrieval_eval.evaluation.results import RunResults
from pytest_retrieval_eval.archive.results_json import from_document
from pytest_retrieval_eval.analysis.baseline import compare
from pytest_retrieval_eval.types import Doc, LabeledQuery, QueryResult

DOCS = tuple(Doc(f"d{i}", f"text of document {i}", title=f"Title {i}") for i in range(8))
LABELED = LabeledSet(tuple(LabeledQuery(f"q{i}", f"question {i}", {f"d{i}": 1}) for i in range(4)), name="set")


def _edited(corpus: Corpus) -> Corpus:
    """d2 edited, d9 added, d3 removed."""
    docs = [Doc(d.doc_id, d.content + " (revised)", title=d.title) if d.doc_id == "d2" else d
            for d in corpus.docs if d.doc_id != "d3"]
    return Corpus(tuple(docs) + (Doc("d9", "a new document"),), name=corpus.name)


def _run(corpus: Corpus | None, *, engine_info=None, judged=None, judge=None) -> RunResults:
    context = {"corpus": corpus.name, "corpus_fingerprint": corpus.fingerprint} if corpus is not None else {}
    e = EvaluationResult("a", LABELED, tuple(QueryResult(q.query_id, (f"d{q.query_id[1:]}",)) for q in LABELED.queries),
                         engine_info=engine_info or {}, context=context, judged=judged or {}, judge=judge)
    run = RunResults([e])
    return replace(run, fingerprints=record(run, corpus))


def test_a_diff_names_added_removed_and_changed_keys_sorted_whatever_the_order_built():
    before = {"d5": "aa", "d1": "bb", "d3": "cc", "d2": "dd"}
    after = {"d2": "dd", "d9": "ee", "d1": "xx", "d0": "ff"}
    assert diff(before, after) == (["d0", "d9"], ["d3", "d5"], ["d1"])
    assert diff(dict(reversed(before.items())), dict(reversed(after.items()))) == diff(before, after)


def test_the_corpus_change_names_the_first_three_of_each_kind_then_counts():
    before = {f"d{i}": "0" * 12 for i in range(10)}
    after = {**{f"d{i}": "0" * 12 for i in range(5, 10)}, **{f"n{i}": "1" * 12 for i in range(4)}, "d7": "2" * 12}
    fingerprints = ({"corpora": {"A": {"documents": before}}}, {"corpora": {"B": {"documents": after}}})
    assert corpus_changes(*fingerprints, "A", "B") == ("documents: 4 added (n0, n1, n2 and 1 more); "
                                                       "5 removed (d0, d1, d2 and 2 more); 1 changed (d7)")
    assert corpus_changes({"corpora": {"A": {"documents": before}}}, {"corpora": {"B": {"documents": before}}},
                          "A", "B") == "no document's digest differs"


def test_a_corpus_change_the_baseline_cannot_itemise_says_so():
    now = {"corpora": {"B": {"documents": {"d1": "0" * 12}}}}
    assert corpus_changes({}, now, "A", "B") == "the change cannot be itemised: the baseline records no document digests"
    assert corpus_changes(now, {}, "B", "A") == "the change cannot be itemised: this run records no document digests"


def test_a_document_digest_is_twelve_hex_characters_of_its_fingerprint_and_moves_with_any_field_read():
    digests = document_digests(Corpus(DOCS))
    assert digests["d0"] == DOCS[0].fingerprint[:12] and len(digests) == 8
    retitled = document_digests(Corpus((Doc("d0", DOCS[0].content, title="Another title"),)))
    assert retitled["d0"] != digests["d0"]


def test_results_json_records_the_corpus_labeled_set_judgments_file_and_canaries(tmp_path):
    corpus = Corpus(DOCS, name="kb")
    judgments = tmp_path / "judgments.jsonl"
    judgments.write_bytes(b'{"query_id": "q1"}\n')
    run = _run(corpus, engine_info={"embedder_canary": "c0ffee"})  # as engines/hybrid.py describes it
    run = replace(run, fingerprints=record(run, corpus, judgments=judgments))
    doc = json.loads(results_text(run))
    assert doc["fingerprints"] == {
        "corpora": {corpus.fingerprint: {"name": "kb", "documents": {d.doc_id: d.fingerprint[:12] for d in DOCS}}},
        "labeled": {"set": LABELED.fingerprint},
        "judgments": {"sha256": hashlib.sha256(b'{"query_id": "q1"}\n').hexdigest()},
        "canaries": {"a": "c0ffee"}}


def test_a_corpus_no_evaluation_searched_is_not_recorded_and_no_judgments_file_is_null():
    run = _run(None)
    assert record(run, Corpus(DOCS)) == {"corpora": {}, "labeled": {"set": LABELED.fingerprint}, "judgments": None,
                                         "canaries": {}}


def test_the_fingerprints_round_trip_through_results_json_byte_for_byte(tmp_path):
    run = _run(Corpus(DOCS))
    text = results_text(run)
    again = from_document(json.loads(text), tmp_path / "results.json")
    assert again.fingerprints == run.fingerprints
    assert results_text(again) == text


def test_a_results_file_saved_before_fingerprints_were_kept_still_reads(tmp_path):
    doc = json.loads(results_text(_run(Corpus(DOCS))))
    del doc["fingerprints"]
    assert from_document(doc, tmp_path / "old.json").fingerprints == {}


@pytest.mark.parametrize("broken", [[], {"corpora": []}, {"corpora": {"A": {"documents": ["d1"]}}},
                                    {"corpora": {}, "judgments": "abc"}])
def test_a_malformed_fingerprints_section_is_refused_naming_file_and_field(tmp_path, broken):
    doc = json.loads(results_text(_run(Corpus(DOCS))))
    doc["fingerprints"] = broken
    with pytest.raises(RetrievalEvalError) as exc:
        from_document(doc, tmp_path / "results.json")
    message = str(exc.value)
    assert "results.json" in message and "fingerprints" in message and "\n" not in message


def test_a_baseline_on_another_corpus_is_refused_naming_the_documents_added_removed_and_changed():
    before, after = Corpus(DOCS), _edited(Corpus(DOCS))
    found = compare(_run(after), _run(before), ["hit@1"])
    [refusal] = found.refusals
    assert refusal == (f"a: corpus fingerprint {before.fingerprint[:12]} -> {after.fingerprint[:12]} "
                       "(documents: 1 added (d9); 1 removed (d3); 1 changed (d2))")
    assert not found.diffs


def test_a_forced_comparison_across_corpora_names_the_documents_too():
    before, after = Corpus(DOCS), _edited(Corpus(DOCS))
    found = compare(_run(after), _run(before), ["hit@1"], force=True)
    assert not found.refusals and found.diffs
    assert (f"compared although a: corpus fingerprint {before.fingerprint[:12]} -> {after.fingerprint[:12]} "
            "(documents: 1 added (d9); 1 removed (d3); 1 changed (d2)) (--retrieval-baseline-force)") in found.notes


def test_an_old_baseline_on_another_corpus_still_loads_and_says_the_change_cannot_be_itemised(tmp_path):
    doc = json.loads(results_text(_run(Corpus(DOCS))))
    del doc["fingerprints"]
    old = from_document(doc, tmp_path / "old.json", check_fingerprints=False)
    [refusal] = compare(_run(_edited(Corpus(DOCS))), old, ["hit@1"]).refusals
    assert refusal.endswith("(the change cannot be itemised: the baseline records no document digests)")


JUDGE = {"model": "m", "fingerprint": "j1"}


def test_grades_added_removed_and_changed_are_named_question_slash_document():
    before = {"q1": {"d5": 1, "d6": 0}, "q2": {"d7": 2}}
    after = {"q1": {"d5": 3}, "q2": {"d7": 2, "d8": 1}, "q3": {"d1": 0}}
    assert grades_changes(before, after) == "grades 2 added (q2/d8, q3/d1); 1 removed (q1/d6); 1 changed (q1/d5 1->3)"
    assert grades_changes(before, before) == ""


def test_another_judgments_file_is_said_with_its_grades_or_that_they_are_the_same():
    a, b = {"judgments": {"sha256": "a" * 64}}, {"judgments": {"sha256": "b" * 64}}
    grades = {"q1": {"d5": 1}}
    assert judgments_changes(a, b, grades, {"q1": {"d5": 2}}) == (
        f"the judgments file differs (sha256 {'a' * 12} -> {'b' * 12}); grades 1 changed (q1/d5 1->2)")
    assert judgments_changes(a, b, grades, grades) == (
        f"the judgments file differs (sha256 {'a' * 12} -> {'b' * 12}); the grades used are the same")
    assert judgments_changes({}, b, grades, grades) == ""  # an old baseline: no digest, the same grades
    assert judgments_changes(a, a, grades, grades) == ""


def test_a_comparison_with_other_judged_grades_notes_them_once_per_labeled_set(tmp_path):
    corpus = Corpus(DOCS)
    base = _run(corpus, judged={"q1": {"d5": 1}}, judge=JUDGE)
    now = _run(corpus, judged={"q1": {"d5": 2}, "q2": {"d6": 1}}, judge=JUDGE)
    b2, n2 = (EvaluationResult("b", e.labeled, e.results, context=e.context, judged=e.judged, judge=e.judge)
              for e in (base.evaluations[0], now.evaluations[0]))
    base, now = RunResults([*base.evaluations, b2], fingerprints=base.fingerprints), \
        RunResults([*now.evaluations, n2], fingerprints=now.fingerprints)
    found = compare(now, base, ["hit@1"])
    said = [n for n in found.notes if n.startswith("judgments on set")]
    assert said == ["judgments on set differ from the baseline's: grades 1 added (q2/d6); 1 changed (q1/d5 1->2)"]
    assert not found.refusals


def test_ci_slices_merge_with_their_corpus_digests_and_the_whole_labeled_sets_fingerprint(tmp_path):
    from pytest_retrieval_eval.archive.combine import combine

    corpus = Corpus(DOCS)
    paths = []
    for i in (1, 2):
        part = LABELED.slice(i, 2)
        e = EvaluationResult("a", part, tuple(QueryResult(q.query_id, ("d1",)) for q in part.queries),
                             context={"corpus": corpus.name, "corpus_fingerprint": corpus.fingerprint})
        run = RunResults([e])
        run = replace(run, fingerprints=record(run, corpus))
        assert run.fingerprints["labeled"] == {"set": part.fingerprint} != {"set": LABELED.fingerprint}
        paths.append(tmp_path / f"s{i}.json")
        paths[-1].write_text(results_text(run))
    merged = combine([str(p) for p in paths]).run
    assert merged.fingerprints["corpora"] == {corpus.fingerprint: {"name": corpus.name,
                                                                   "documents": document_digests(corpus)}}
    assert merged.fingerprints["labeled"] == {"set": LABELED.fingerprint}
