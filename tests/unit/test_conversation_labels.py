"""Conversations in the labels: the questions cache's ``conversations``, JSONL conversation lines
and CSV turn rows for ``label import``, a turn named ``conversation#turn`` in ``check``, and a
cache without conversations kept byte for byte."""

from __future__ import annotations

import json

import pytest

from conftest import QUESTIONS, write_docs
from pytest_retrieval_eval import RetrievalEvalError
from pytest_retrieval_eval.cli import main as cli
from pytest_retrieval_eval.data.labeled import LabeledSet, dump_questions_cache, load_questions_cache
from pytest_retrieval_eval.data.label_files import load_labels, read_labels
from pytest_retrieval_eval.types import LabeledQuery, Turn

HEADER = {"format": "pytest-retrieval-eval/questions", "version": 1, "generator": {"method": "handwritten"},
          "splitter": None, "corpus_fingerprint": None}
CONVERSATION = {"id": "c1", "tags": ["billing"], "turns": [
    {"user": "How do I upgrade my plan?", "assistant": "Open the billing page.", "relevant": {"d1": 1}},
    {"user": "and from the phone app?"},
    {"user": "does that cost anything?", "relevant": {"d2": 2, "d3": 0}, "depends": True, "tags": ["price"],
     "source": {"evidence": {"d2": ["d2 words"]}}},
]}


def write_cache(tmp_path, **extra) -> object:
    path = tmp_path / "q.json"
    path.write_text(json.dumps({**HEADER, "queries": [{"id": "q1", "question": "Where is the office?",
                                                       "relevant": {"d1": 1}, "source": {}}], **extra}, indent=2))
    return path


def dump(labeled: LabeledSet) -> str:
    return dump_questions_cache(labeled, generator=HEADER["generator"], corpus_fingerprint=None)


def test_a_cache_without_conversations_loads_and_dumps_byte_identical():
    raw = json.loads(QUESTIONS.read_text())
    labeled = load_questions_cache(QUESTIONS)
    assert not labeled.has_conversations
    assert dump_questions_cache(labeled, generator=raw["generator"], corpus_fingerprint=raw["corpus_fingerprint"],
                                splitter=raw["splitter"]) == QUESTIONS.read_text()


def test_each_searching_turn_is_a_query_with_the_turns_before_it(tmp_path):
    labeled = load_questions_cache(write_cache(tmp_path, conversations=[CONVERSATION]))
    assert [q.query_id for q in labeled] == ["q1", "c1#1", "c1#3"]  # turn 2 searches nothing
    first, third = labeled.by_id()["c1#1"], labeled.by_id()["c1#3"]
    assert (first.conversation, first.turn, first.history, first.depends, first.tags) == ("c1", 1, (), None, ("billing",))
    assert third.history == (Turn("user", "How do I upgrade my plan?"), Turn("assistant", "Open the billing page."),
                             Turn("user", "and from the phone app?"))
    assert (third.turn, third.depends, third.tags, dict(third.relevant)) == (3, True, ("billing", "price"),
                                                                             {"d2": 2, "d3": 0})
    assert third.source["evidence"] == {"d2": ["d2 words"]}
    assert labeled.clusters == {"q1": "q1", "c1#1": "c1", "c1#3": "c1"} and labeled.has_conversations


def test_conversations_are_written_back_grouped_and_round_trip_exactly(tmp_path):
    labeled = load_questions_cache(write_cache(tmp_path, conversations=[CONVERSATION]))
    text = dump(labeled)
    written = json.loads(text)
    assert [q["id"] for q in written["queries"]] == ["q1"]
    assert written["conversations"][0]["tags"] == ["billing"] and written["conversations"][0]["turns"][1] == {
        "user": "and from the phone app?"}
    again = tmp_path / "again.json"
    again.write_text(text)
    reloaded = load_questions_cache(again)
    assert dump(reloaded) == text
    assert [(q.query_id, q.question, dict(q.relevant), q.history, q.depends, q.tags, dict(q.source)) for q in reloaded] == [
        (q.query_id, q.question, dict(q.relevant), q.history, q.depends, q.tags, dict(q.source)) for q in labeled]
    assert reloaded.fingerprint == labeled.fingerprint


def test_a_turn_built_in_code_dumps_as_a_conversation():
    turn = LabeledQuery("c9#2", "and its price?", {"d1": 1}, conversation="c9", turn=2,
                        history=(Turn("user", "What is the pro plan?"),))
    written = json.loads(dump(LabeledSet((turn,))))
    assert written["queries"] == [] and written["conversations"] == [
        {"id": "c9", "turns": [{"user": "What is the pro plan?"}, {"user": "and its price?", "relevant": {"d1": 1}}]}]


@pytest.mark.parametrize("edit, field, message", [
    (lambda c: c.__setitem__("id", "c#1"), "conversations[0].id", "contains '#'"),
    (lambda c: c.__setitem__("id", "c 1"), "conversations[0].id", "whitespace"),
    (lambda c: c.__setitem__("turns", []), "conversations[0].turns", "non-empty list"),
    (lambda c: c["turns"][2].__setitem__("relevant", {}), "conversations[0].turns[2].relevant", "at least one doc"),
    (lambda c: c["turns"][2].__setitem__("relevant", {"d2": "1"}), "conversations[0].turns[2].relevant", "integer"),
    (lambda c: c["turns"][2].update(relevant={"d2": 0}, source={}), "conversations[0].turns[2].relevant", "grade >= 1"),
    (lambda c: c["turns"][1].__setitem__("user", " "), "conversations[0].turns[1].user", "non-empty"),
    (lambda c: c["turns"][2].__setitem__("depends", "yes"), "conversations[0].turns[2].depends", "true or false"),
    (lambda c: c["turns"][0].__setitem__("tags", ["a b"]), "conversations[0].turns[0].tags", "must be a word"),
])
def test_a_bad_conversation_is_refused_naming_file_line_and_field(tmp_path, edit, field, message):
    conversation = json.loads(json.dumps(CONVERSATION))
    edit(conversation)
    path = write_cache(tmp_path, conversations=[conversation])
    with pytest.raises(RetrievalEvalError, match=message) as caught:
        load_questions_cache(path)
    assert caught.value.field == field and caught.value.line is not None and caught.value.path == str(path)


def test_a_bad_turn_is_refused_on_its_own_line(tmp_path):
    conversation = json.loads(json.dumps(CONVERSATION))
    conversation["turns"][2]["relevant"] = {}
    path = write_cache(tmp_path, conversations=[conversation])
    with pytest.raises(RetrievalEvalError) as caught:
        load_questions_cache(path)
    assert '"does that cost anything?"' in path.read_text().splitlines()[caught.value.line - 1]


def test_a_question_holding_a_turns_id_and_a_repeated_conversation_are_refused(tmp_path):
    path = tmp_path / "q.json"
    path.write_text(json.dumps({**HEADER, "queries": [{"id": "c1#1", "question": "q", "relevant": {"d1": 1}}],
                                "conversations": [CONVERSATION]}, indent=2))
    with pytest.raises(RetrievalEvalError, match=r"turn 'c1#1' has the id of queries\[0\]"):
        load_questions_cache(path)
    with pytest.raises(RetrievalEvalError, match=r"duplicate conversation id 'c1'") as caught:
        load_questions_cache(write_cache(tmp_path, conversations=[CONVERSATION, CONVERSATION]))
    assert caught.value.field == "conversations[1].id"


def test_the_gold_documents_of_a_turn_must_exist(tmp_path):
    path = write_cache(tmp_path, conversations=[CONVERSATION])
    with pytest.raises(RetrievalEvalError, match=r"d3 not in the corpus") as caught:
        load_questions_cache(path, known_doc_ids=["d1", "d2"])
    assert caught.value.field == "conversations[0].turns[2].relevant"


# --- label import: JSONL and CSV ----------------------------------------------------------------------

def kb(tmp_path):
    return write_docs(tmp_path / "kb", [{"doc_id": d, "title": d, "content": f"{d} words about {d} " * 5}
                                        for d in ("d1", "d2", "d3", "d4")])


def test_a_jsonl_file_mixes_questions_and_conversations(tmp_path):
    path = tmp_path / "labels.jsonl"
    path.write_text(json.dumps({"question": "Where is the office?", "doc_id": "d1"}) + "\n"
                    + json.dumps({"conversation": "c1", "tags": "billing", "turns": [
                        {"user": "How do I upgrade?", "assistant": "On the billing page.", "relevant": {"d1": "2"}},
                        {"user": "and what does it cost?", "relevant": {"d2": 1}, "depends": True,
                         "evidence": "d2 words"}]}) + "\n")
    entries = read_labels(path)
    assert [q.query_id for q in entries][1:] == ["c1#1", "c1#2"]
    second = entries[2]
    assert second.history == (Turn("user", "How do I upgrade?"), Turn("assistant", "On the billing page."))
    assert (second.depends, second.tags, second.source["evidence"], second.source["_line"]) == (
        True, ("billing",), {"d2": ["d2 words"]}, 2)
    assert dict(entries[1].relevant) == {"d1": 2}


@pytest.mark.parametrize("line, field, message", [
    ({"conversation": "c#1", "turns": [{"user": "x", "relevant": {"d1": 1}}]}, "conversation", "contains '#'"),
    ({"conversation": "c1", "turns": "x"}, "turns", "non-empty list"),
    ({"conversation": "c1", "turns": [{"user": "x"}, {"relevant": {"d1": 1}}]}, "turns[1].user", "non-empty"),
])
def test_a_bad_jsonl_conversation_names_its_line_and_field(tmp_path, line, field, message):
    path = tmp_path / "labels.jsonl"
    path.write_text(json.dumps({"question": "q", "doc_id": "d1"}) + "\n" + json.dumps(line) + "\n")
    with pytest.raises(RetrievalEvalError, match=message) as caught:
        read_labels(path)
    assert (caught.value.line, caught.value.field) == (2, field)


THREE = """conversation,turn,user,assistant,doc_id,grade,depends,tags
c1,1,How do I upgrade my plan?,Open the billing page.,d1,2,no,billing
c2,1,How do I reset my password?,,d3,1,,
c1,2,and what does that cost?,,d2,1,yes,
c1,2,and what does that cost?,,d4,0,,
c3,2,what about the phone app?,,d4,1,,
c2,2,thanks,,,,,
c3,1,How do I export my data?,Use the export button.,,,,
c2,3,does it expire?,,d3,1,,
"""


def test_a_csv_of_three_conversations_imports_and_a_turn_whose_document_changed_is_named_stale(tmp_path, capsys):
    folder, labels, cache = kb(tmp_path), tmp_path / "labels.csv", tmp_path / "questions.cache.json"
    labels.write_text(THREE)
    assert cli(["label", "import", str(labels), "--corpus", str(folder), "--questions", str(cache)]) == 0
    assert "added 5" in capsys.readouterr().out
    labeled = load_questions_cache(cache)
    assert [q.query_id for q in labeled] == ["c1#1", "c1#2", "c2#1", "c2#3", "c3#2"]
    turn = labeled.by_id()["c1#2"]
    assert dict(turn.relevant) == {"d2": 1, "d4": 0} and turn.depends is True and labeled.by_id()["c1#1"].depends is False
    assert turn.history == (Turn("user", "How do I upgrade my plan?"), Turn("assistant", "Open the billing page."))
    assert labeled.by_id()["c2#3"].history == (Turn("user", "How do I reset my password?"), Turn("user", "thanks"))
    assert labeled.by_id()["c3#2"].history == (Turn("user", "How do I export my data?"),
                                               Turn("assistant", "Use the export button."))
    assert set(turn.source["judged_sha256"]) == {"d2", "d4"}
    assert [q.query_id for q in load_labels(labels)] == [q.query_id for q in labeled]  # read in place alike
    assert cli(["check", "--corpus", str(folder), "--questions", str(cache)]) == 0
    capsys.readouterr()
    (folder / "d2.json").write_text(json.dumps({"doc_id": "d2", "title": "d2", "content": "rewritten entirely"}))
    assert cli(["check", "--corpus", str(folder), "--questions", str(cache)]) == 1
    out = capsys.readouterr().out
    assert "changed: d2 (1 question: c1#2)" in out


def test_an_import_counts_conversations_and_their_turns_not_questions(tmp_path, capsys):
    folder, labels, cache = kb(tmp_path), tmp_path / "labels.csv", tmp_path / "questions.cache.json"
    labels.write_text(THREE)
    assert cli(["label", "import", str(labels), "--corpus", str(folder), "--questions", str(cache)]) == 0
    assert f"imported 3 conversations, 5 turns from {labels}: added 5" in capsys.readouterr().out
    mixed = tmp_path / "mixed.csv"
    mixed.write_text("conversation,turn,question,doc_id\nc1,1,How do I upgrade?,d1\nc1,2,and the price?,d2\n"
                     ",,Where is the office?,d1\n")
    assert cli(["label", "import", str(mixed), "--corpus", str(folder), "--questions", str(tmp_path / "m.json")]) == 0
    assert f"imported 1 question, 1 conversation, 2 turns from {mixed}: added 3" in capsys.readouterr().out


def test_editing_an_earlier_turn_replaces_the_later_turns_whose_history_it_is(tmp_path, capsys):
    folder, labels, cache = kb(tmp_path), tmp_path / "labels.csv", tmp_path / "questions.cache.json"
    labels.write_text(THREE)
    assert cli(["label", "import", str(labels), "--corpus", str(folder), "--questions", str(cache)]) == 0
    labels.write_text(THREE.replace("How do I reset my password?", "How do I reset my PIN?"))
    assert cli(["label", "import", str(labels), "--corpus", str(folder), "--questions", str(cache)]) == 0
    assert "added 0, replaced 2, unchanged 3" in capsys.readouterr().out
    assert load_questions_cache(cache).by_id()["c2#3"].history[0] == Turn("user", "How do I reset my PIN?")


@pytest.mark.parametrize("rows, line, field, message", [
    ("c1,1,a question,d1\nc1,3,another,d2\n", 3, "turn", "turn 2 is missing"),  # the row after the gap
    ("c1,1,a question,d1\nc1,2,and it?,d2\nc1,4,and then?,d1\n", 4, "turn", r"has turns 1, 2, 4: turn 3 is missing"),
    ("c1,4,and then?,d1\nc1,2,and it?,d2\nc1,1,a question,d1\n", 2, "turn", "turn 3 is missing"),  # rows in any order
    ("c1,2,and it?,d2\nc1,3,and then?,d1\n", 2, "turn", "turns 2, 3: turn 1 is missing"),
    ("c1,1,a question,d1\nc1,1,another text,d2\n", 3, "turn", "appears twice with two texts"),
    ("c1,x,a question,d1\n", 2, "turn", "1-based position"),
    ("c1,0,a question,d1\n", 2, "turn", "1-based position"),
    ("c#1,1,a question,d1\n", 2, "conversation", "contains '#'"),
    ("c1,1,,d1\n", 2, "user", "empty question"),
])
def test_a_bad_turn_row_is_refused_naming_file_line_and_field(tmp_path, rows, line, field, message):
    path = tmp_path / "labels.csv"
    path.write_text("conversation,turn,user,doc_id\n" + rows)
    with pytest.raises(RetrievalEvalError, match=message) as caught:
        read_labels(path)
    assert (caught.value.path, caught.value.line, caught.value.field) == (str(path), line, field)


def test_a_table_mixes_questions_and_turns_and_checks_the_depends_cell(tmp_path):
    path = tmp_path / "labels.tsv"
    path.write_text("question\tdoc_id\tconversation\tturn\tdepends\nWhere is the office?\td1\t\t\t\n"
                    "How do I upgrade?\td1\tc1\t1\t\nand the price?\td2\tc1\t2\tTRUE\n")
    entries = read_labels(path)
    assert [(q.query_id, q.conversation, q.depends) for q in entries][1:] == [("c1#1", "c1", None), ("c1#2", "c1", True)]
    path.write_text("question\tdoc_id\tconversation\tturn\tdepends\nHow do I upgrade?\td1\tc1\t1\tmaybe\n")
    with pytest.raises(RetrievalEvalError, match="yes, no, true, false") as caught:
        read_labels(path)
    assert (caught.value.line, caught.value.field) == (2, "depends")


@pytest.mark.parametrize("column, first, second", [("depends", "no", "yes"), ("assistant", "Open Billing.", "Ask us.")])
def test_two_values_of_one_turn_are_refused_quoting_both_and_the_earlier_line(tmp_path, column, first, second):
    path = tmp_path / "labels.csv"
    path.write_text(f"conversation,turn,user,doc_id,{column}\nc1,1,a question,d1,\nc1,1,a question,d2,{first}\n"
                    f"c1,1,a question,d3,{first}\nc1,1,a question,d4,{second}\n")
    with pytest.raises(RetrievalEvalError) as caught:
        read_labels(path)
    assert (caught.value.line, caught.value.field) == (5, column)
    assert f"turn 'c1#1': '{second}' here, '{first}' on line 3: give one" in caught.value.detail


def test_the_rows_of_a_turn_list_its_documents_with_no_repeat_note_as_a_questions_rows_have(tmp_path, capsys):
    folder, labels, cache = kb(tmp_path), tmp_path / "labels.csv", tmp_path / "questions.cache.json"
    labels.write_text("conversation,turn,question,doc_id\nc1,1,How do I upgrade?,d1\nc1,2,and the price?,d2\n"
                      "c1,2,and the price?,d3\n,,Where is the office?,d1\n,,Where is the office?,d4\n")
    assert cli(["label", "import", str(labels), "--corpus", str(folder), "--questions", str(cache)]) == 0
    out = capsys.readouterr().out
    assert "c1#2" not in out and out.count("note:") == 1
    assert "line 6 repeats the question of line 5: its judgments merged (d4 added)" in out
    assert dict(load_questions_cache(cache).by_id()["c1#2"].relevant) == {"d2": 1, "d3": 1}


@pytest.mark.parametrize("name, text, line, field", [
    ("labels.csv", "conversation,turn,user,Doc_ID\nc1,1,a question,d1\nc1,2,and it?,d-2\n", 3, "Doc_ID"),
    ("labels.csv", "Question,Gold\na question,d1\nanother question,d-2\n", 3, "Gold"),  # a question alike
    ("labels.jsonl", json.dumps({"conversation": "c1", "turns": [{"user": "a question", "relevant": {"d1": 1}},
                                                                 {"user": "and it?", "relevant": {"d-2": 1}}]}),
     1, "turns[1].relevant"),
    ("labels.jsonl", json.dumps({"question": "q", "doc_id": "d1"}) + "\n" + json.dumps({"question": "r", "doc_id": "d-2"}),
     2, "doc_id"),
])
def test_an_unknown_document_id_names_the_line_and_the_field_that_holds_it(tmp_path, capsys, name, text, line, field):
    folder, labels = kb(tmp_path), tmp_path / name
    labels.write_text(text + "\n")
    assert cli(["label", "import", str(labels), "--corpus", str(folder), "--questions", str(tmp_path / "q.json")]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"error: {labels}:{line}: field '{field}': query '") and "unknown document id 'd-2'" in err
    assert "(did you mean 'd2'?)" in err and not (tmp_path / "q.json").exists()


def test_a_turns_evidence_that_its_document_lacks_names_the_turn(tmp_path, capsys):
    folder, labels = kb(tmp_path), tmp_path / "conv.jsonl"
    labels.write_text(json.dumps({"conversation": "c1", "turns": [
        {"user": "a question", "relevant": {"d1": 1}, "evidence": "d1 words"},
        {"user": "and it?", "relevant": {"d2": 1}, "evidence": "not in there at all"}]}) + "\n")
    assert cli(["label", "import", str(labels), "--corpus", str(folder), "--questions", str(tmp_path / "q.json")]) == 2
    assert capsys.readouterr().err.startswith(f"error: {labels}:1: field 'turns[1].evidence': query 'c1#2': evidence "
                                              "'not in there at all' does not occur in document 'd2'")


def test_label_stamp_counts_and_names_the_turns_it_restamped_as_changed(tmp_path, capsys):
    folder, labels, cache = kb(tmp_path), tmp_path / "labels.csv", tmp_path / "questions.cache.json"
    labels.write_text(THREE)
    assert cli(["label", "import", str(labels), "--corpus", str(folder), "--questions", str(cache)]) == 0
    assert cli(["label", "stamp", "--corpus", str(folder), "--questions", str(cache)]) == 0
    assert capsys.readouterr().out.endswith(": fingerprints recorded (0 question(s) were unchecked)\n")
    (folder / "d2.json").write_text(json.dumps({"doc_id": "d2", "title": "d2", "content": "rewritten entirely"}))
    (folder / "d3.json").write_text(json.dumps({"doc_id": "d3", "title": "d3", "content": "rewritten entirely"}))
    assert cli(["label", "stamp", "--corpus", str(folder), "--questions", str(cache)]) == 0
    assert "fingerprints recorded (0 question(s) were unchecked, 3 re-stamped as changed: c1#2, c2#1, c2#3)" in (
        capsys.readouterr().out)
    assert cli(["check", "--corpus", str(folder), "--questions", str(cache)]) == 0  # current again
    capsys.readouterr()
    assert cli(["label", "stamp", "--corpus", str(folder), "--questions", str(cache)]) == 0
    assert "re-stamped" not in capsys.readouterr().out


def test_a_conversation_column_without_a_turn_column_is_refused(tmp_path):
    path = tmp_path / "labels.csv"
    path.write_text("conversation,user,doc_id\nc1,a question,d1\n")
    with pytest.raises(RetrievalEvalError, match="needs a 'turn' column"):
        read_labels(path)


def test_stamping_keeps_a_turns_conversation(tmp_path, capsys):
    folder = kb(tmp_path)
    path = write_cache(tmp_path, conversations=[{**CONVERSATION, "turns": [
        {**t, "source": {}} if "relevant" in t else t for t in CONVERSATION["turns"]]}])
    assert cli(["label", "stamp", "--corpus", str(folder), "--questions", str(path)]) == 0
    labeled = load_questions_cache(path)
    assert labeled.by_id()["c1#3"].history[1] == Turn("assistant", "Open the billing page.")
    assert set(labeled.by_id()["c1#3"].source["judged_sha256"]) == {"d2", "d3"}


def test_a_cache_with_conversations_meets_the_schema_and_a_turn_named_id_does_not(tmp_path):
    import importlib.resources

    jsonschema = pytest.importorskip("jsonschema")  # a failure under CI
    schema = json.loads(importlib.resources.files("pytest_retrieval_eval.data").joinpath("questions.schema.json")
                        .read_text())
    written = json.loads(dump(load_questions_cache(write_cache(tmp_path, conversations=[CONVERSATION]))))
    jsonschema.validate(written, schema)
    written["conversations"][0]["id"] = "c#1"
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(written, schema)


def test_a_conversation_imported_again_comes_whole_its_unlabeled_turns_gone_and_the_new_history_kept(tmp_path, capsys):
    folder, labels, cache = kb(tmp_path), tmp_path / "labels.csv", tmp_path / "questions.cache.json"
    first = ("conversation,turn,user,assistant,doc_id\nc1,1,How do I upgrade my plan?,old reply,d1\n"
             "c1,2,and what does that cost?,,d2\nc1,3,does it expire?,,d3\n")
    labels.write_text(first)
    assert cli(["label", "import", str(labels), "--corpus", str(folder), "--questions", str(cache)]) == 0
    labels.write_text(first.replace("old reply", "new reply").replace("does it expire?,,d3", "does it expire?,,"))
    assert cli(["label", "import", str(labels), "--corpus", str(folder), "--questions", str(cache)]) == 0
    assert "removed 1" in capsys.readouterr().out
    kept = load_questions_cache(cache).by_id()
    assert sorted(kept) == ["c1#1", "c1#2"]
    assert kept["c1#2"].history == (Turn("user", "How do I upgrade my plan?"), Turn("assistant", "new reply"))


def test_one_conversation_on_two_jsonl_lines_is_refused_naming_both(tmp_path):
    path = tmp_path / "labels.jsonl"
    path.write_text(json.dumps({"conversation": "c1", "turns": [{"user": "How do I upgrade?", "relevant": {"d1": 1}}]})
                    + "\n" + json.dumps({"conversation": "c1", "turns": [{"user": "x"}, {"user": "and then?",
                                                                                      "relevant": {"d2": 1}}]}) + "\n")
    with pytest.raises(RetrievalEvalError, match=r"labels.jsonl:2: field 'conversation': conversation 'c1' is on "
                                                 r"line 1 already"):
        read_labels(path)


def test_two_turns_of_one_id_that_disagree_on_what_was_said_are_not_written_as_one_conversation():
    a = LabeledQuery("c1#2", "and then?", {"d1": 1}, conversation="c1", turn=2, history=(Turn("user", "one"),))
    b = LabeledQuery("c1#3", "and now?", {"d2": 1}, conversation="c1", turn=3,
                     history=(Turn("user", "another"), Turn("user", "and then?")))
    with pytest.raises(RetrievalEvalError, match="disagree on what was said before"):
        dump(LabeledSet((a, b), name="s"))


def test_a_question_whose_id_is_a_conversations_is_refused():
    turn = LabeledQuery("c1#1", "How do I upgrade?", {"d1": 1}, conversation="c1", turn=1)
    with pytest.raises(RetrievalEvalError, match="'c1' is both a question's id and a conversation's"):
        LabeledSet((LabeledQuery("c1", "Where is the office?", {"d1": 1}), turn), name="s")


def test_a_share_or_slice_without_turns_answers_for_its_whole_sets_conversations():
    turns = tuple(LabeledQuery(f"c{i}#1", f"question {i}", {"d1": 1}, conversation=f"c{i}", turn=1) for i in range(3))
    questions = tuple(LabeledQuery(f"q{i}", f"question q{i}", {"d1": 1}) for i in range(40))
    whole = LabeledSet((*turns, *questions), name="s")
    shares = [whole.shard(k, 8) for k in range(8)]
    slices = [whole.slice(i, 20) for i in range(1, 21)]
    assert any(not any(q.conversation for q in part) for part in (*shares, *slices))
    assert all(part.has_conversations for part in (*shares, *slices))
    assert not LabeledSet(questions, name="s").shard(0, 2).has_conversations


def test_an_evidence_table_naming_a_turn_adds_its_quotes_to_that_turn_and_keeps_it_in_its_conversation(tmp_path,
                                                                                                      capsys):
    folder, labels, cache = kb(tmp_path), tmp_path / "labels.csv", tmp_path / "questions.cache.json"
    labels.write_text(THREE)
    assert cli(["label", "import", str(labels), "--corpus", str(folder), "--questions", str(cache)]) == 0
    before = load_questions_cache(cache).by_id()
    evidence = tmp_path / "evidence.csv"
    evidence.write_text("id,question,doc_id,evidence\nc1#2,and what does that cost?,d2,d2 words about d2\n"
                        "faq#1,Where is the office?,d1,d1 words\n")
    assert cli(["label", "import", str(evidence), "--corpus", str(folder), "--questions", str(cache)]) == 0
    assert "added 1, replaced 0, unchanged 0, updated 1 (evidence added;" in capsys.readouterr().out
    after = load_questions_cache(cache).by_id()
    turn, was = after["c1#2"], before["c1#2"]
    assert (turn.conversation, turn.turn, turn.history, turn.depends) == (was.conversation, was.turn, was.history, True)
    assert dict(turn.relevant) == {"d2": 1, "d4": 0} and turn.source["evidence"] == {"d2": ["d2 words about d2"]}
    assert set(after) == {*before, "faq#1"} and after["faq#1"].conversation is None  # no conversation 'faq': a question
    written = json.loads(cache.read_text())
    assert [t["user"] for t in written["conversations"][0]["turns"]] == ["How do I upgrade my plan?",
                                                                         "and what does that cost?"]


@pytest.mark.parametrize("row, field, said", [
    ("c1#3,does it expire?,d3,d3 words", "id", ("'c1#3' names turn 3 of conversation 'c1', which "
                                                "questions.cache.json holds without a labeled turn 3 (its labeled "
                                                "turns: c1#1, c1#2)")),
    ("c1#2,and what does the pro plan cost?,d2,d2 words", "question",
     "turn 'c1#2' reads 'and what does that cost?' in questions.cache.json, not 'and what does the pro plan cost?'"),
])
def test_an_evidence_row_naming_a_turn_the_cache_cannot_take_is_refused_in_one_line(tmp_path, capsys, row, field, said):
    folder, labels, cache = kb(tmp_path), tmp_path / "labels.csv", tmp_path / "questions.cache.json"
    labels.write_text(THREE)
    assert cli(["label", "import", str(labels), "--corpus", str(folder), "--questions", str(cache)]) == 0
    capsys.readouterr()
    written = cache.read_bytes()
    evidence = tmp_path / "evidence.csv"
    evidence.write_text(f"id,question,doc_id,evidence\n{row}\n")
    assert cli(["label", "import", str(evidence), "--corpus", str(folder), "--questions", str(cache)]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"error: {evidence}:2: field '{field}': {said}; a conversation's turns are imported with it")
    assert len(err.strip().splitlines()) == 1 and cache.read_bytes() == written
