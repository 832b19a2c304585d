"""Staleness of the questions cache against the corpus, BEIR folders as labeled sets, and
regeneration from inside a session."""

from __future__ import annotations

import json
import shutil


from conftest import CORPUS, QUESTIONS, requires_hybrid
from pytest_retrieval_eval.data.corpus import JsonFolder
from pytest_retrieval_eval.data.labeled import load_questions_cache
from pytest_retrieval_eval.data.staleness import check, chunk_fingerprints


def edit(path, **fields):
    doc = json.loads(path.read_text())
    doc.update(fields)
    path.write_text(json.dumps(doc))


def test_check_names_changed_and_deleted_documents(tmp_path):
    folder = tmp_path / "corpus"
    shutil.copytree(CORPUS, folder)
    labeled = load_questions_cache(QUESTIONS)
    assert not check(labeled, JsonFolder(folder).load())
    edit(folder / "battery-care.json", content="Completely different text about nothing.")
    (folder / "lost-keys.json").unlink()
    stale = check(labeled, JsonFolder(folder).load())
    assert stale.changed == {"battery-care": ["battery-care.q1", "battery-care.q2"]}
    assert stale.deleted == {"lost-keys": ["lost-keys.q1", "lost-keys.q2"]}


# --- the grain of staleness: a generated question's chunk, a hand label's document -----------------

@requires_hybrid
def test_an_edit_far_from_a_generated_question_leaves_it_fresh(tmp_path):
    folder = shutil.copytree(CORPUS, tmp_path / "corpus")
    doc = json.loads((folder / "damage-assessment.json").read_text())
    edit(folder / "damage-assessment.json", content=doc["content"] + " Photos may also be sent by post.")
    labeled, corpus = load_questions_cache(QUESTIONS), JsonFolder(folder).load()
    assert check(labeled, corpus).changed == {"damage-assessment": [f"damage-assessment.q{i}" for i in (1, 2, 3, 4)]}
    # only the last chunk holds the added words: the questions of chunks 0 and 1 stay fresh
    assert check(labeled, corpus, chunk_fingerprints(corpus, labeled)).changed == {
        "damage-assessment": ["damage-assessment.q4"]}


def test_the_unchecked_advice_says_unknown_ids_come_first_as_the_command_stops_at_one(tmp_path):
    from pytest_retrieval_eval.data.staleness import stamp_command

    doc = json.loads(QUESTIONS.read_text())
    for entry in doc["queries"]:
        entry["source"] = {}
    doc["queries"][0]["relevant"] = {"batery-care": 1}
    (tmp_path / "q.json").write_text(json.dumps(doc))
    labeled = load_questions_cache(tmp_path / "q.json")
    stale = check(labeled, JsonFolder(CORPUS).load())
    message = stale.unchecked_message("q.json", len(labeled), stamp_command("corpus", "q.json"))
    assert "record them (once the unknown document ids are fixed: it stops at one) with: python -m " in message
