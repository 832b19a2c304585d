"""A turn labeled unanswerable (``answerable: false``: no relevant document exists) in the labels:
kept, not refused as "no judged document", held beside the scored questions
(``LabeledSet.unanswerable``), written back and left out of the fingerprint of what the scores
depend on."""

from __future__ import annotations

import json

import pytest

from conftest import write_docs
from pytest_retrieval_eval import RetrievalEvalError
from pytest_retrieval_eval.cli import main as cli
from pytest_retrieval_eval.data.labeled import LabeledSet, load_questions_cache
from pytest_retrieval_eval.data.label_files import read_labels
from pytest_retrieval_eval.types import LabeledQuery, Turn


def kb(tmp_path):
    return write_docs(tmp_path / "kb", [{"doc_id": d, "title": d, "content": f"{d} words about {d} " * 5}
                                        for d in ("d1", "d2")])


LINE = {"conversation": "c1", "turns": [
    {"user": "How do I upgrade my plan?", "relevant": {"d1": 1}},
    {"user": "and can I pay in bitcoin?", "answerable": False},
    {"user": "and by card?", "relevant": {"d2": 1}}]}


def test_an_unanswerable_turn_is_read_kept_and_written_back(tmp_path, capsys):
    folder, labels, cache = kb(tmp_path), tmp_path / "labels.jsonl", tmp_path / "q.json"
    labels.write_text(json.dumps(LINE) + "\n")
    entries = read_labels(labels)
    assert [(q.query_id, q.answerable) for q in entries] == [("c1#1", True), ("c1#2", False), ("c1#3", True)]
    assert cli(["label", "import", str(labels), "--corpus", str(folder), "--questions", str(cache)]) == 0
    assert "imported 1 conversation, 3 turns (1 unanswerable)" in capsys.readouterr().out
    written = json.loads(cache.read_text())["conversations"][0]["turns"]
    assert written[1]["answerable"] is False and "relevant" not in written[1] and written[1]["user"] == (
        "and can I pay in bitcoin?")
    labeled = load_questions_cache(cache)
    assert [q.query_id for q in labeled] == ["c1#1", "c1#3"]  # what is scored
    assert [q.query_id for q in labeled.unanswerable] == ["c1#2"]
    assert labeled.unanswerable[0].history == (Turn("user", "How do I upgrade my plan?"),)
    assert labeled.by_id()["c1#3"].history[-1] == Turn("user", "and can I pay in bitcoin?")


def test_the_fingerprint_is_that_of_the_scored_questions():
    scored = (LabeledQuery("q1", "Where is it?", {"d1": 1}),)
    lost = LabeledQuery("c1#1", "Can I pay in bitcoin?", {}, conversation="c1", turn=1, answerable=False)
    assert not lost.answerable
    with_it = LabeledSet((*scored, lost))
    assert [q.query_id for q in with_it] == ["q1"] and len(with_it) == 1 and with_it.unanswerable == (lost,)
    assert with_it.fingerprint == LabeledSet(scored).fingerprint


def test_a_csv_answerable_column_marks_a_turn_without_documents_unanswerable(tmp_path):
    path = tmp_path / "labels.csv"
    path.write_text("conversation,turn,user,doc_id,grade,answerable\n"
                    "c1,1,How do I upgrade?,d1,1,\n"
                    "c1,2,and in bitcoin?,d2,0,no\n"
                    "c1,3,thanks,,,\n")
    first, second = read_labels(path)
    assert second.query_id == "c1#2" and not second.answerable and dict(second.relevant) == {"d2": 0}


@pytest.mark.parametrize("turn, field, message", [
    ({"user": "x", "answerable": False, "relevant": {"d1": 1}}, "turns[0].answerable",
     "judges 'd1' relevant (grade 1)"),
    ({"user": "x", "answerable": "no"}, "turns[0].answerable", "must be true or false"),
    ({"user": "x", "relevant": {"d1": 0}}, "turns[0].relevant", "needs at least one document with grade >= 1"),
])
def test_a_bad_unanswerable_turn_is_refused_naming_line_and_field(tmp_path, turn, field, message):
    path = tmp_path / "labels.jsonl"
    path.write_text(json.dumps({"conversation": "c1", "turns": [turn]}) + "\n")
    with pytest.raises(RetrievalEvalError) as err:
        read_labels(path)
    assert f"{path}:1: field '{field}': " in str(err.value) and message in str(err.value)


def test_stamp_and_remove_keep_the_unanswerable_turns(tmp_path):
    folder, labels, cache = kb(tmp_path), tmp_path / "labels.jsonl", tmp_path / "q.json"
    labels.write_text(json.dumps(LINE) + "\n" + json.dumps({"id": "q9", "question": "Where?", "doc_id": "d1"}) + "\n")
    assert cli(["label", "import", str(labels), "--corpus", str(folder), "--questions", str(cache)]) == 0
    assert cli(["label", "stamp", "--corpus", str(folder), "--questions", str(cache)]) == 0
    assert cli(["label", "remove", "q9", "--questions", str(cache)]) == 0
    assert [q.query_id for q in load_questions_cache(cache).unanswerable] == ["c1#2"]


def test_label_list_names_the_unanswerable_turns(tmp_path, capsys):
    folder, labels, cache = kb(tmp_path), tmp_path / "labels.jsonl", tmp_path / "q.json"
    labels.write_text(json.dumps(LINE) + "\n")
    assert cli(["label", "import", str(labels), "--corpus", str(folder), "--questions", str(cache)]) == 0
    capsys.readouterr()
    assert cli(["label", "list", "--corpus", str(folder), "--questions", str(cache)]) == 0
    out = capsys.readouterr().out.splitlines()
    assert "c1#2\tunanswerable\t\tand can I pay in bitcoin?" in out
    assert out[-1] == f"{cache}: 2 questions: 2 fresh, 0 stale, 0 unchecked; 1 unanswerable turn"
