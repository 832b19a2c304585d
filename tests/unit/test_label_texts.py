"""Texts kept as written: a question's and a turn's text (and an assistant's reply) are stored
and handed to engines exactly as the labels hold them; only matching folds them, with the one
normalisation (``data.text.normalise``). A cache written when imports folded whitespace still
compares with a run of the texts as written: the same questions, said once on re-import."""

from __future__ import annotations

import json

from conftest import write_docs
from pytest_retrieval_eval.analysis.baseline import labeled_changes, same_questions
from pytest_retrieval_eval.cli import main as cli
from pytest_retrieval_eval.data.labeled import LabeledSet, load_questions_cache, question_changes
from pytest_retrieval_eval.data.label_files import read_labels
from pytest_retrieval_eval.evaluation.evaluate import evaluate_engine
from pytest_retrieval_eval.types import LabeledQuery, Turn

SPACED = "How  do I\tupgrade my plan? "
REPLY = "Open the\nbilling page."
FOLLOW = "and  what does it cost?\n"


def kb(tmp_path):
    return write_docs(tmp_path / "kb", [{"doc_id": d, "title": d, "content": f"{d} words about {d} " * 5}
                                        for d in ("d1", "d2", "d3")])


def conversation_line() -> str:
    return json.dumps({"conversation": "c1", "turns": [
        {"user": SPACED, "assistant": REPLY, "relevant": {"d1": 1}},
        {"user": FOLLOW, "relevant": {"d2": 1}}]}) + "\n"


def test_a_jsonl_conversation_keeps_its_texts_as_written(tmp_path):
    path = tmp_path / "labels.jsonl"
    path.write_text(conversation_line() + json.dumps({"question": "Where  is the office?", "doc_id": "d3"}) + "\n")
    first, second, question = read_labels(path)
    assert first.question == SPACED and second.question == FOLLOW and question.question == "Where  is the office?"
    assert second.history == (Turn("user", SPACED), Turn("assistant", REPLY))


def test_a_csv_keeps_its_cells_as_written_and_rows_of_one_turn_match_by_the_one_normalisation(tmp_path):
    path = tmp_path / "labels.csv"
    path.write_text('conversation,turn,user,assistant,doc_id\n'
                    'c1,1,"How  do I upgrade?","Open the\nbilling page.",d1\n'
                    'c1,1,"how do I  upgrade?",,d2\n'  # the same turn, spelled otherwise: one turn, first spelling
                    'c1,2,"and  the price?",,d3\n'
                    ',,"Where  is the office?",,d3\n'
                    ',,"where is the office?",,d2\n')
    entries = read_labels(path)
    assert [(q.query_id, q.question) for q in entries][:2] == [("c1#1", "How  do I upgrade?"), ("c1#2", "and  the price?")]
    assert dict(entries[0].relevant) == {"d1": 1, "d2": 1}
    assert entries[1].history == (Turn("user", "How  do I upgrade?"), Turn("assistant", "Open the\nbilling page."))
    assert entries[2].question == "Where  is the office?" and dict(entries[2].relevant) == {"d3": 1, "d2": 1}


def test_the_questions_cache_round_trips_texts_as_written(tmp_path):
    folder, labels, cache = kb(tmp_path), tmp_path / "labels.jsonl", tmp_path / "q.json"
    labels.write_text(conversation_line())
    assert cli(["label", "import", str(labels), "--corpus", str(folder), "--questions", str(cache)]) == 0
    labeled = load_questions_cache(cache)
    assert labeled.by_id()["c1#2"].question == FOLLOW
    assert labeled.by_id()["c1#2"].history == (Turn("user", SPACED), Turn("assistant", REPLY))


def test_an_engine_is_handed_the_text_as_written():
    seen = []

    class Engine:
        name = "probe"

        def retrieve(self, query, k):
            seen.append(query)
            return []

        def retrieve_conversation(self, turns, k):
            seen.append(turns)
            return []

    turn = LabeledQuery("c1#2", FOLLOW, {"d2": 1}, conversation="c1", turn=2, history=(Turn("user", SPACED),))
    evaluate_engine(Engine(), LabeledSet((LabeledQuery("q1", "Where  is it?", {"d1": 1}), turn)))
    assert seen == ["Where  is it?", (Turn("user", SPACED), Turn("user", FOLLOW))]


def test_question_changes_fold_texts_as_matching_does():
    folded = LabeledQuery("c1#2", "and what does it cost?", {"d2": 1}, conversation="c1", turn=2,
                          history=(Turn("user", "How do I upgrade my plan?"),))
    written = LabeledQuery("c1#2", FOLLOW, {"d2": 1}, conversation="c1", turn=2, history=(Turn("user", SPACED),))
    assert question_changes(folded, written) == []
    reworded = LabeledQuery("c1#2", "and what does it weigh?", {"d2": 1}, conversation="c1", turn=2,
                            history=(Turn("user", "How do I cancel my plan?"),))
    assert question_changes(folded, reworded) == ["reworded", "history changed"]


def test_a_baseline_of_folded_texts_is_the_same_labeled_set():
    before = LabeledSet((LabeledQuery("q1", "Where is the office?", {"d1": 1}),
                         LabeledQuery("c1#2", "and what does it cost?", {"d2": 1}, conversation="c1", turn=2,
                                      history=(Turn("user", "How do I upgrade my plan?"),))))
    after = LabeledSet((LabeledQuery("q1", "Where  is the office?", {"d1": 1}),
                        LabeledQuery("c1#2", FOLLOW, {"d2": 1}, conversation="c1", turn=2,
                                     history=(Turn("user", SPACED),))))
    assert before.fingerprint != after.fingerprint  # the texts as written are hashed
    assert same_questions(before, after)  # ... and no measure could tell them apart: compared, not refused
    assert labeled_changes(before, after) == "no question differs: only the recorded fingerprint does"


def test_reimporting_over_a_cache_of_folded_texts_says_so_once(tmp_path, capsys):
    folder, labels, cache = kb(tmp_path), tmp_path / "labels.jsonl", tmp_path / "q.json"
    labels.write_text(conversation_line())
    assert cli(["label", "import", str(labels), "--corpus", str(folder), "--questions", str(cache)]) == 0
    raw = json.loads(cache.read_text())  # as an older version wrote it: every text's whitespace folded
    for t in raw["conversations"][0]["turns"]:
        t["user"] = " ".join(t["user"].split())
        if "assistant" in t:
            t["assistant"] = " ".join(t["assistant"].split())
    cache.write_text(json.dumps(raw, indent=2))
    capsys.readouterr()
    assert cli(["label", "import", str(labels), "--corpus", str(folder), "--questions", str(cache)]) == 0
    out = capsys.readouterr().out
    assert "replaced 2" in out
    assert ("note: 2 questions differ from the cache's only in whitespace or case (an older import folded "
            "them): now kept as the file writes them; a baseline compares them as the same questions") in out
    assert load_questions_cache(cache).by_id()["c1#2"].question == FOLLOW
    capsys.readouterr()
    assert cli(["label", "import", str(labels), "--corpus", str(folder), "--questions", str(cache)]) == 0
    out = capsys.readouterr().out
    assert "unchanged 2" in out and "whitespace" not in out
