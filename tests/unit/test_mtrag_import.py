"""``label import`` takes benchmarks' files as they are: MTRAG's retrieval tasks (a collection's
``*_questions.jsonl`` / ``*_lastturn.jsonl`` / ``*_rewrite.jsonl`` and ``qrels/dev.tsv``, ids
``conversation<::>turn``), its conversation files (``input``, ``contexts``, ``answerability``,
``Question Type``, ``Multi-Turn``), ``corpus from-mtrag`` for the passages they quote, and TREC
CAsT / iKAT topic files with their qrels. Small synthetic files of each format here; the real
MTRAG files where the shared datasets are (``@pytest.mark.dataset("mtrag")``)."""

from __future__ import annotations

import json

import pytest

from shared_datasets import dataset_path
from pytest_retrieval_eval import RetrievalEvalError
from pytest_retrieval_eval.cli import main as cli
from pytest_retrieval_eval.data.labeled import load_questions_cache
from pytest_retrieval_eval.data.label_files import read_labels
from pytest_retrieval_eval.types import Turn

A, B = "aaaa1111", "bbbb2222"  # conversation ids as MTRAG's (hex)


def lines(path, records):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    return path


def tasks_folder(tmp_path):
    """One collection of retrieval tasks: conversation A labels turns 2 and 3, B turn 1."""
    c = tmp_path / "retrieval_tasks" / "govt"
    lines(c / "govt_questions.jsonl", [
        {"_id": f"{A}<::>2", "text": "|user|: How do I renew my  passport?\n|user|: and how long does it take?"},
        {"_id": f"{A}<::>3", "text": "|user|: How do I renew my  passport?\n|user|: and how long does it take?\n"
                                     "|user|: what does it cost?"},
        {"_id": f"{B}<::>1", "text": "|user|: Where is the tax office?"}])
    lines(c / "govt_lastturn.jsonl", [{"_id": f"{A}<::>2", "text": "|user|: and how long does it take?"},
                                      {"_id": f"{A}<::>3", "text": "|user|: what does it cost?"},
                                      {"_id": f"{B}<::>1", "text": "|user|: Where is the tax office?"}])
    lines(c / "govt_rewrite.jsonl", [{"_id": f"{A}<::>2", "text": "|user|: How long does a passport renewal take?"},
                                     {"_id": f"{A}<::>3", "text": "|user|: What does a passport renewal cost?"},
                                     {"_id": f"{B}<::>1", "text": "|user|: Where is the tax office?"}])
    (c / "qrels").mkdir()
    (c / "qrels" / "dev.tsv").write_text(f"query-id\tcorpus-id\tscore\n{A}<::>2\tp1-0-10\t1\n{A}<::>2\tp2-0-10\t1\n"
                                         f"{A}<::>3\tp3-0-10\t1\n{B}<::>1\tp4-0-10\t1\n")
    return tmp_path / "retrieval_tasks"


def test_a_folder_of_retrieval_tasks_reads_as_conversations_with_their_rewrites(tmp_path):
    entries = read_labels(tasks_folder(tmp_path))
    assert [q.query_id for q in entries] == [f"{A}#2", f"{A}#3", f"{B}#1"]
    second, third, other = entries
    assert second.question == "and how long does it take?" and second.history == (
        Turn("user", "How do I renew my  passport?"),)  # as written: two spaces kept
    assert second.rewrite == "How long does a passport renewal take?" and dict(second.relevant) == {
        "p1-0-10": 1, "p2-0-10": 1}
    assert third.history == (Turn("user", "How do I renew my  passport?"), Turn("user", "and how long does it take?"))
    assert second.tags == ("collection:govt",) and other.turn == 1 and other.source["task"] == f"{B}<::>1"


@pytest.mark.parametrize("edit, file, line, field, message", [
    (lambda c: lines(c / "govt_questions.jsonl", [{"_id": f"{A}::2", "text": "|user|: x"}]),
     "govt_questions.jsonl", 1, "_id", "must be a task id 'conversation<::>turn'"),
    (lambda c: lines(c / "govt_questions.jsonl", [{"_id": f"{A}<::>2", "text": "|user|: only one turn"},
                                                  {"_id": f"{A}<::>3", "text": "|user|: a\n|user|: b\n|user|: c"},
                                                  {"_id": f"{B}<::>1", "text": "|user|: Where is the tax office?"}]),
     "govt_questions.jsonl", 1, "text", "holds 1 user turn, but its id names turn 2"),
    (lambda c: lines(c / "govt_lastturn.jsonl", [{"_id": f"{A}<::>2", "text": "|user|: and how long?"}]),
     "govt_lastturn.jsonl", 1, "text", "its last turn reads 'and how long?' here"),
    (lambda c: lines(c / "govt_questions.jsonl", [{"_id": f"{A}<::>1", "text": "no prefix"}]),
     "govt_questions.jsonl", 1, "text", "starting with '|user|: '"),
    (lambda c: (c / "qrels" / "dev.tsv").write_text(f"query-id\tcorpus-id\tscore\n{A}<::>9\tp1\t1\n"),
     "dev.tsv", 2, "query-id", f"judges task '{A}<::>9', which govt_questions.jsonl does not hold"),
])
def test_a_bad_retrieval_task_is_refused_naming_file_line_and_field(tmp_path, edit, file, line, field, message):
    folder = tasks_folder(tmp_path)
    if file != "govt_lastturn.jsonl":
        (folder / "govt" / "govt_lastturn.jsonl").unlink()
    (folder / "govt" / "govt_rewrite.jsonl").unlink()
    edit(folder / "govt")
    with pytest.raises(RetrievalEvalError) as err:
        read_labels(folder)
    said = str(err.value)
    assert f"{file}:{line}: field '{field}': " in said and message in said and "\n" not in said


def conversation_file(tmp_path):
    """MTRAG-UN's layout: a task a line, contexts with their text; A's turn 2 unanswerable, B's one
    task conversational (no labeled turn)."""
    def task(cid, turn, messages, contexts, answerability, **extra):
        return {"conversation_id": cid, "task_id": f"{cid}<::>{turn}", "turn": str(turn),
                "input": [{"speaker": s, "text": t} for s, t in messages], "contexts": contexts,
                "targets": [{"speaker": "agent", "text": "The answer."}], "answerability": [answerability],
                "Question Type": ["Factoid", "How-To"], "Multi-Turn": extra.get("multi", ["N/A"]), "Collection": "govt"}

    first = [("user", "How do I renew my passport?")]
    return lines(tmp_path / "reference.jsonl", [
        task(A, 1, first, [{"document_id": "p1-0-10", "text": "Renew a passport by mail.", "title": "Passports"}],
             "ANSWERABLE"),
        task(A, 2, first + [("agent", "By mail."), ("user", "can I pay in bitcoin?")], [], "UNANSWERABLE",
             multi=["Follow-up"]),
        task(A, 3, first + [("agent", "By mail."), ("user", "can I pay in bitcoin?"), ("agent", "No."),
                            ("user", "and by card?")],
             [{"document_id": "p2-0-10", "text": "Fees are paid by card or check."}], "PARTIAL", multi=["Follow-up"]),
        task(B, 1, [("user", "thanks!")], [], "CONVERSATIONAL"),
    ])


def test_a_conversation_file_keeps_question_types_and_answerability_as_tags_and_unanswerable_turns(tmp_path):
    entries = read_labels(conversation_file(tmp_path))
    assert [(q.query_id, q.answerable) for q in entries] == [(f"{A}#1", True), (f"{A}#2", False), (f"{A}#3", True)]
    assert entries.left_out == [B]
    first, lost, third = entries
    assert first.tags == ("answerability:answerable", "collection:govt", "question-type:factoid",
                          "question-type:how-to")
    assert "multi-turn:follow-up" in third.tags and "answerability:partial" in third.tags
    assert third.history == (Turn("user", "How do I renew my passport?"), Turn("assistant", "By mail."),
                             Turn("user", "can I pay in bitcoin?"), Turn("assistant", "No."))
    assert third.source["reference_answer"] == "The answer." and lost.relevant == {}


def test_corpus_from_mtrag_and_label_import_say_what_they_made_and_left_out(tmp_path, capsys):
    path = conversation_file(tmp_path)
    corpus, cache = tmp_path / "corpus", tmp_path / "q.json"
    assert cli(["corpus", "from-mtrag", str(path), "--out", str(corpus)]) == 0
    assert "2 passages quoted by 1 file (a subset of MTRAG's corpus" in capsys.readouterr().out
    assert "not the benchmark's corpus" in (corpus / "README.md").read_text()
    assert cli(["label", "import", str(path), "--corpus", str(corpus), "--questions", str(cache)]) == 0
    out = capsys.readouterr().out
    assert (f"imported 1 conversation, 3 turns (1 unanswerable) from {path}: added 3, replaced 0, unchanged 0; "
            f"1 conversation had no labeled turn (left out: {B})") in out
    labeled = load_questions_cache(cache)
    assert [q.query_id for q in labeled] == [f"{A}#1", f"{A}#3"] and len(labeled.unanswerable) == 1


def test_rewrites_join_a_conversation_files_turns_by_task_id(tmp_path, capsys):
    folder, path = tasks_folder(tmp_path), conversation_file(tmp_path)
    with open(folder / "govt" / "govt_rewrite.jsonl", "a") as fh:
        fh.write(json.dumps({"_id": "cccc3333<::>1", "text": "|user|: Who else?"}) + "\n")
    entries = read_labels(path, rewrites=folder)
    assert entries[2].rewrite == "What does a passport renewal cost?" and entries[0].rewrite is None
    assert entries.notes == ["1 rewrite of tasks the file does not hold: not used"]
    with pytest.raises(RetrievalEvalError, match="--rewrites adds MTRAG's rewrites to an MTRAG conversation file"):
        read_labels(folder, rewrites=folder)


def test_a_conversation_file_whose_tasks_disagree_on_the_conversation_is_refused(tmp_path):
    path = conversation_file(tmp_path)
    first, second, third, fourth = path.read_text().splitlines()
    path.write_text("\n".join([first, second.replace('"By mail."', '"By post."'), third, fourth]) + "\n")
    with pytest.raises(RetrievalEvalError) as err:
        read_labels(path)
    assert f"{path}:2: field 'input': task '{A}<::>2': its conversation so far differs from that of task '{A}<::>3'" \
        in str(err.value)


def test_jsonl_and_csv_conversations_without_a_labeled_turn_are_counted(tmp_path, capsys):
    from conftest import write_docs

    folder = write_docs(tmp_path / "kb", [{"doc_id": "d1", "title": "d1", "content": "d1 words " * 5}])
    csv = tmp_path / "conv.csv"
    csv.write_text("conversation,turn,user,doc_id\nc1,1,How do I upgrade?,d1\nc2,1,hello,\nc2,2,thanks,\n")
    assert cli(["label", "import", str(csv), "--corpus", str(folder), "--questions", str(tmp_path / "q.json")]) == 0
    assert "added 1, replaced 0, unchanged 0; 1 conversation had no labeled turn (left out: c2)" in capsys.readouterr().out
    jsonl = tmp_path / "conv.jsonl"
    lines(jsonl, [{"conversation": "c1", "turns": [{"user": "How?", "relevant": {"d1": 1}}]},
                  {"conversation": "c3", "turns": [{"user": "hi"}]}])
    assert read_labels(jsonl).left_out == ["c3"]


# --- TREC CAsT / iKAT topic files ----------------------------------------------------------------

CAST = [{"number": 81, "turn": [
    {"number": 1, "raw_utterance": "How do you know when your garage door opener is going bad?",
     "manual_rewritten_utterance": "How do you know when your garage door opener is going bad?"},
    {"number": 2, "raw_utterance": "Now it stopped working. Why?",
     "manual_rewritten_utterance": "Now my garage door opener stopped working. Why?",
     "passage": "Openers fail when the gears wear out."},
    {"number": 3, "raw_utterance": "How much does it cost to fix it?",
     "manual_rewritten_utterance": "How much does it cost to repair a garage door opener?"}]}]
IKAT = [{"number": "9-1", "title": "Finding a diet", "ptkb": {"1": "I'm vegetarian."}, "turns": [
    {"turn_id": 1, "utterance": "Can you help me find a diet?", "resolved_utterance": "Can you help me find a diet?",
     "response": "Try the Mediterranean diet.", "response_provenance": ["doc-1"]},
    {"turn_id": 2, "utterance": "Can I eat fish in it?",
     "resolved_utterance": "Can I eat fish in the Mediterranean diet?", "response": "Yes."}]}]


def test_a_cast_topic_file_with_its_qrels_imports_turns_rewrites_and_unanswerable_turns(tmp_path):
    topics, qrels = tmp_path / "topics.json", tmp_path / "qrels.txt"
    topics.write_text(json.dumps(CAST, indent=2))
    qrels.write_text("81_2 0 MARCO_1 2\n81_2 0 MARCO_2 0\n81_3 0 MARCO_3 0\n99_1 0 MARCO_4 1\n")
    entries = read_labels(topics, qrels=qrels)
    assert [(q.query_id, q.answerable) for q in entries] == [("81#2", True), ("81#3", False)]
    second, third = entries
    assert second.rewrite == "Now my garage door opener stopped working. Why?" and dict(second.relevant) == {
        "MARCO_1": 2, "MARCO_2": 0}
    assert third.history[-2:] == (Turn("user", "Now it stopped working. Why?"),
                                  Turn("assistant", "Openers fail when the gears wear out."))
    assert entries.notes == [f"{qrels} judges 1 turn the topic file does not hold, not imported (e.g. 99_1)"]


def test_an_ikat_topic_file_reads_utterance_resolved_utterance_and_response(tmp_path):
    topics, qrels = tmp_path / "ikat.json", tmp_path / "qrels.txt"
    topics.write_text(json.dumps(IKAT))
    qrels.write_text("9-1_2 Q0 doc-7 3\n")
    (turn,) = read_labels(topics, qrels=qrels)
    assert (turn.query_id, turn.question, turn.rewrite) == ("9-1#2", "Can I eat fish in it?",
                                                            "Can I eat fish in the Mediterranean diet?")
    assert turn.history == (Turn("user", "Can you help me find a diet?"),
                            Turn("assistant", "Try the Mediterranean diet."))


def test_a_topic_file_needs_its_qrels_and_numbered_turns(tmp_path):
    topics = tmp_path / "topics.json"
    topics.write_text(json.dumps(CAST, indent=2))
    with pytest.raises(RetrievalEvalError, match="give it with --qrels FILE"):
        read_labels(topics)
    bad = json.loads(json.dumps(CAST))
    bad[0]["turn"][1]["number"] = 5
    topics.write_text(json.dumps(bad, indent=2))
    (tmp_path / "q.txt").write_text("81_2 0 MARCO_1 1\n")
    with pytest.raises(RetrievalEvalError) as err:
        read_labels(topics, qrels=tmp_path / "q.txt")
    assert f"{topics}:3: field '[0].turn[1].number': must be the turn's position, 2, got 5" in str(err.value)


# --- the real files ----------------------------------------------------------------------------------

@pytest.mark.dataset("mtrag")
def test_mtrags_retrieval_tasks_read_as_they_are():
    entries = read_labels(dataset_path("mtrag") / "mtrag-human" / "retrieval_tasks")
    assert len(entries) == 777 and len({q.conversation for q in entries}) == 110 and not entries.left_out
    assert all(q.rewrite for q in entries)


@pytest.mark.dataset("mtrag")
def test_mtrags_human_evaluation_subset_imports_with_its_passages_and_rewrites(tmp_path, capsys):
    root = dataset_path("mtrag") / "mtrag-human"
    subset = root / "evaluations" / "reference_subset_with_human_evaluations.json"
    corpus, cache = tmp_path / "corpus", tmp_path / "q.json"
    assert cli(["corpus", "from-mtrag", str(subset), "--out", str(corpus)]) == 0
    assert cli(["label", "import", str(subset), "--rewrites", str(root / "retrieval_tasks"), "--corpus", str(corpus),
                "--questions", str(cache)]) == 0
    out = capsys.readouterr().out
    assert "350 passages" in out and "imported 20 conversations, 157 turns (7 unanswerable)" in out
    labeled = load_questions_cache(cache)
    assert len(labeled) == 150 and all(q.rewrite for q in labeled) and len(labeled.unanswerable) == 7


@pytest.mark.dataset("mtrag")
def test_mtrag_un_imports_and_says_which_conversations_had_no_labeled_turn(tmp_path, capsys):
    reference = dataset_path("mtrag") / "mtragun-human" / "generation_tasks" / "reference.jsonl"
    corpus, cache = tmp_path / "corpus", tmp_path / "q.json"
    assert cli(["corpus", "from-mtrag", str(reference), "--out", str(corpus)]) == 0
    assert cli(["label", "import", str(reference), "--corpus", str(corpus), "--questions", str(cache)]) == 0
    out = capsys.readouterr().out
    assert "imported 474 conversations, 474 turns (97 unanswerable)" in out
    assert "added 474, replaced 0, unchanged 0; 33 conversations had no labeled turn (left out: " in out
