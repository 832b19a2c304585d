"""A turn's human rewrite (``LabeledQuery.rewrite``) in the labels: a JSONL turn's ``rewrite``
field, a CSV ``rewrite`` column, the questions cache's turns; fingerprinted with the label, and a
changed rewrite is a changed question for a baseline."""

from __future__ import annotations

import json

import pytest

from conftest import write_docs
from pytest_retrieval_eval import RetrievalEvalError
from pytest_retrieval_eval.cli import main as cli
from pytest_retrieval_eval.data.labeled import LabeledSet, load_questions_cache, question_changes
from pytest_retrieval_eval.data.label_files import read_labels
from pytest_retrieval_eval.types import LabeledQuery, Turn


def kb(tmp_path):
    return write_docs(tmp_path / "kb", [{"doc_id": d, "title": d, "content": f"{d} words about {d} " * 5}
                                        for d in ("d1", "d2")])


LINE = {"conversation": "c1", "turns": [
    {"user": "How do I upgrade my plan?", "relevant": {"d1": 1}},
    {"user": "and what does it cost?", "rewrite": "What does upgrading my plan cost?", "relevant": {"d2": 1}}]}


def test_a_jsonl_turn_carries_its_rewrite_into_the_cache_and_back(tmp_path):
    folder, labels, cache = kb(tmp_path), tmp_path / "labels.jsonl", tmp_path / "q.json"
    labels.write_text(json.dumps(LINE) + "\n")
    first, second = read_labels(labels)
    assert (first.rewrite, second.rewrite) == (None, "What does upgrading my plan cost?")
    assert cli(["label", "import", str(labels), "--corpus", str(folder), "--questions", str(cache)]) == 0
    written = json.loads(cache.read_text())["conversations"][0]["turns"]
    assert "rewrite" not in written[0] and written[1]["rewrite"] == "What does upgrading my plan cost?"
    assert load_questions_cache(cache).by_id()["c1#2"].rewrite == "What does upgrading my plan cost?"


def test_a_csv_rewrite_column_gives_a_turn_its_rewrite(tmp_path):
    path = tmp_path / "labels.csv"
    path.write_text("conversation,turn,user,rewrite,doc_id\n"
                    "c1,1,How do I upgrade?,,d1\n"
                    "c1,2,and the price?,What does the upgrade cost?,d2\n"
                    "c1,2,and the price?,,d1\n")
    first, second = read_labels(path)
    assert (first.rewrite, second.rewrite) == (None, "What does the upgrade cost?")


def test_two_rewrites_of_one_turn_are_refused_quoting_both(tmp_path):
    path = tmp_path / "labels.csv"
    path.write_text("conversation,turn,user,rewrite,doc_id\n"
                    "c1,1,How do I upgrade?,,d1\n"
                    "c1,2,and the price?,What does the upgrade cost?,d2\n"
                    "c1,2,and the price?,How much is Pro?,d1\n")
    with pytest.raises(RetrievalEvalError) as err:
        read_labels(path)
    assert f"{path}:4: field 'rewrite': two rewrites for turn 'c1#2'" in str(err.value)
    assert "'What does the upgrade cost?' on line 3" in str(err.value)


def test_a_bad_rewrite_is_refused_naming_line_and_field(tmp_path):
    path = tmp_path / "labels.jsonl"
    bad = {**LINE, "turns": [LINE["turns"][0], {**LINE["turns"][1], "rewrite": 3}]}
    path.write_text(json.dumps(bad) + "\n")
    with pytest.raises(RetrievalEvalError) as err:
        read_labels(path)
    assert f"{path}:1: field 'turns[1].rewrite': " in str(err.value)
    assert "must be a non-empty string" in str(err.value)


def test_the_rewrite_is_part_of_the_labels_fingerprint_and_of_a_questions_changes():
    history = (Turn("user", "How do I upgrade my plan?"),)
    bare = LabeledQuery("c1#2", "and what does it cost?", {"d2": 1}, conversation="c1", turn=2, history=history)
    rewritten = LabeledQuery("c1#2", "and what does it cost?", {"d2": 1}, conversation="c1", turn=2, history=history,
                             rewrite="What does upgrading my plan cost?")
    other = LabeledQuery("c1#2", "and what does it cost?", {"d2": 1}, conversation="c1", turn=2, history=history,
                         rewrite="How much is the upgrade?")
    prints = {LabeledSet((q,)).fingerprint for q in (bare, rewritten, other)}
    assert len(prints) == 3
    assert question_changes(bare, rewritten) == ["rewrite changed"]
    assert question_changes(rewritten, rewritten.__class__(**{**rewritten.__dict__,
                                                              "rewrite": "what does  upgrading my plan cost?"})) == []
    assert LabeledSet((LabeledQuery("q1", "x", {"d1": 1}),)).fingerprint == LabeledSet(
        (LabeledQuery("q1", "x", {"d1": 1}),)).fingerprint  # a set without rewrites keeps its fingerprint


def test_reimporting_a_changed_rewrite_replaces_the_turn_and_an_evidence_file_keeps_it(tmp_path, capsys):
    folder, labels, cache = kb(tmp_path), tmp_path / "labels.jsonl", tmp_path / "q.json"
    labels.write_text(json.dumps(LINE) + "\n")
    assert cli(["label", "import", str(labels), "--corpus", str(folder), "--questions", str(cache)]) == 0
    changed = json.loads(json.dumps(LINE))
    changed["turns"][1]["rewrite"] = "How much is the upgrade?"
    labels.write_text(json.dumps(changed) + "\n")
    capsys.readouterr()
    assert cli(["label", "import", str(labels), "--corpus", str(folder), "--questions", str(cache)]) == 0
    assert "added 0, replaced 1, unchanged 1" in capsys.readouterr().out
    assert load_questions_cache(cache).by_id()["c1#2"].rewrite == "How much is the upgrade?"
    evidence = tmp_path / "evidence.csv"
    evidence.write_text("id,question,doc_id,evidence\nc1#2,and what does it cost?,d2,d2 words\n")
    assert cli(["label", "import", str(evidence), "--corpus", str(folder), "--questions", str(cache)]) == 0
    assert load_questions_cache(cache).by_id()["c1#2"].rewrite == "How much is the upgrade?"


def test_a_set_with_rewrites_reads_back_from_the_results_document_with_its_fingerprint():
    from pytest_retrieval_eval.evaluation.evaluate import evaluate_engine
    from pytest_retrieval_eval.evaluation.results import Evaluation

    class Engine:
        name = "e"

        def retrieve(self, query, k):
            return ["d2"]

    history = (Turn("user", "How do I upgrade my plan?"),)
    whole = LabeledSet((LabeledQuery("c1#2", "and what does it cost?", {"d2": 1}, conversation="c1", turn=2,
                                     history=history, rewrite="What does upgrading my plan cost?"),))
    back = Evaluation.from_dict(evaluate_engine(Engine(), whole).to_dict())
    assert back.labeled.computed_fingerprint == whole.fingerprint
    assert back.labeled.queries[0].rewrite == "What does upgrading my plan cost?"
