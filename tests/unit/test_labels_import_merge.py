"""Importing evidence (or grades) over questions the cache already holds merges: what the file
does not carry (tags, who wrote the question, its chunk fingerprints) is kept, and a later
``--sync`` of that file removes only the questions it wrote, never one it only updated."""

from __future__ import annotations

import json
import shutil

import pytest

from conftest import REPO
from pytest_retrieval_eval.cli import main as cli
from pytest_retrieval_eval.data.labeled import load_questions_cache

HELPDESK = REPO / "examples" / "helpdesk"


@pytest.fixture
def desk(tmp_path, monkeypatch):
    """The helpdesk articles and its hand-written, tagged questions as they were before evidence."""
    shutil.copytree(HELPDESK / "kb", tmp_path / "kb")
    raw = json.loads((HELPDESK / "labels.json").read_text(encoding="utf-8"))
    for entry in raw["queries"]:
        entry["source"] = {"by": "handwritten", "chunk_id": f"{entry['id'].split('.')[0]}:0",
                           "chunk_sha256": "0" * 64, "judged_sha256": entry["source"]["judged_sha256"]}
    (tmp_path / "labels.json").write_text(json.dumps(raw), encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    return tmp_path


def evidence_rows(ids: list[str]) -> str:
    """``id,question,doc_id,evidence`` rows of the helpdesk's evidence.csv, without its tags."""
    import csv

    with open(HELPDESK / "evidence.csv", encoding="utf-8") as fh:
        rows = [r for r in csv.DictReader(fh) if r["id"] in ids]
    out = ["id,question,doc_id,evidence"]
    out += [",".join(json.dumps(r[k]) for k in ("id", "question", "doc_id", "evidence")) for r in rows]
    return "\n".join(out) + "\n"


def label(capsys, *argv: str, questions: str = "labels.json") -> str:
    code = cli(["label", *argv, "--corpus", "kb", "--questions", questions])
    out, err = capsys.readouterr()
    assert code == 0, err
    return out


def network(ids=None) -> list[str]:
    return [q.query_id for q in load_questions_cache("labels.json") if "area:network" in q.tags]


def test_evidence_imported_over_hand_written_questions_keeps_their_tags_author_and_sync_keeps_them(desk, capsys):
    before = {q.query_id: q for q in load_questions_cache("labels.json")}
    tagged = network()
    assert len(tagged) == 6
    six = tagged
    (desk / "ev.csv").write_text(evidence_rows(six), encoding="utf-8")
    out = label(capsys, "import", "ev.csv")
    assert "replaced 0" in out and "updated 6 (evidence added" in out and "tags" in out
    after = {q.query_id: q for q in load_questions_cache("labels.json")}
    assert network() == tagged  # the segment rule still runs on all six
    for i in six:
        q = after[i]
        assert q.tags == before[i].tags and q.source["evidence"]
        assert q.source["by"] == "handwritten" and q.source["chunk_sha256"] == "0" * 64  # who wrote it, kept
        assert q.source["chunk_id"] == before[i].source["chunk_id"] and "file" not in q.source
        assert q.source["updated_by"] == ["ev.csv"]  # the update recorded apart from the author
    (desk / "ev.csv").write_text(evidence_rows(six[:2]), encoding="utf-8")
    out = label(capsys, "import", "ev.csv", "--sync")
    assert "removed" not in out and set(six) <= {q.query_id for q in load_questions_cache("labels.json")}
    assert len(load_questions_cache("labels.json")) == len(before)
    assert "unchanged 2" in label(capsys, "import", "ev.csv")  # importing the same again changes nothing


def test_an_updated_question_keeps_the_grades_and_documents_the_file_does_not_mention(desk, capsys):
    raw = json.loads((desk / "labels.json").read_text())
    first = raw["queries"][0]
    first["relevant"] = {first["relevant"].popitem()[0]: 2, "guest-wifi": 1}
    first["source"]["judged_sha256"]["guest-wifi"] = "1" * 64  # as judged when it read otherwise
    (desk / "labels.json").write_text(json.dumps(raw))
    qid, doc = first["id"], next(iter(first["relevant"]))
    (desk / "ev.csv").write_text(evidence_rows([qid]), encoding="utf-8")
    label(capsys, "import", "ev.csv")
    q = load_questions_cache("labels.json").by_id()[qid]
    assert dict(q.relevant) == {doc: 2, "guest-wifi": 1}  # no grade column: the grade stays 2
    assert q.source["judged_sha256"]["guest-wifi"] == "1" * 64  # not judged again by the file: still stale


def test_a_tags_column_still_sets_the_tags_and_an_empty_cell_sets_none(desk, capsys):
    [vpn, *_] = network()
    text = load_questions_cache("labels.json").by_id()[vpn].question
    (desk / "t.csv").write_text(f'id,question,doc_id,tags\n{vpn},"{text}",vpn-setup,area:remote\n', encoding="utf-8")
    out = label(capsys, "import", "t.csv")
    assert "updated 1 (tags changed" in out
    assert load_questions_cache("labels.json").by_id()[vpn].tags == ("area:remote",)
    (desk / "t.csv").write_text(f'id,question,doc_id,tags\n{vpn},"{text}",vpn-setup,\n', encoding="utf-8")
    label(capsys, "import", "t.csv")
    assert load_questions_cache("labels.json").by_id()[vpn].tags == ()


def test_a_replaced_question_text_is_replaced_the_files_own_and_keeps_tags_the_file_lacks(desk, capsys):
    [vpn, *_] = network()
    (desk / "r.csv").write_text(f"id,question,doc_id\n{vpn},Why does my tunnel keep dropping?,vpn-setup\n",
                                encoding="utf-8")
    out = label(capsys, "import", "r.csv")
    assert "added 0, replaced 1, unchanged 0" in out
    q = load_questions_cache("labels.json").by_id()[vpn]
    assert q.question == "Why does my tunnel keep dropping?" and q.tags == ("area:network",)
    assert q.source["by"] == "imported:r.csv" and "chunk_id" not in q.source  # the text is the file's now


def test_the_helpdesk_evidence_csv_with_its_tags_column_sets_the_same_tags(desk, capsys):
    tags = {q.query_id: q.tags for q in load_questions_cache("labels.json")}
    shutil.copy(HELPDESK / "evidence.csv", desk / "evidence.csv")
    out = label(capsys, "import", "evidence.csv")
    assert "updated 16 (evidence added;" in out
    cache = load_questions_cache("labels.json")
    assert {q.query_id: q.tags for q in cache} == tags and all(q.source["by"] == "handwritten" for q in cache)


def test_sync_of_a_trimmed_file_removes_the_question_it_added_but_not_the_one_it_updated(desk, capsys):
    [vpn, *_] = network()
    rows = evidence_rows([vpn]) + '"","Who may borrow the spare projector?",vpn-setup,\n'
    (desk / "ev.csv").write_text(rows, encoding="utf-8")
    out = label(capsys, "import", "ev.csv")
    assert "added 1" in out and "updated 1 (evidence added" in out
    added = {q.question: q.query_id for q in load_questions_cache("labels.json")}["Who may borrow the spare projector?"]
    (desk / "ev.csv").write_text('id,question,doc_id,evidence\n"","Why is the sky blue?",vpn-setup,\n', encoding="utf-8")
    out = label(capsys, "import", "ev.csv", "--sync")
    assert f"removed (gone from ev.csv): {added}" in out and "removed 1" in out
    assert vpn in {q.query_id for q in load_questions_cache("labels.json")}  # only updated by ev.csv: kept


def test_a_jsonl_record_without_tags_or_grades_keeps_the_questions_tags_and_grade(desk, capsys):
    [vpn, *_] = network()
    raw = json.loads((desk / "labels.json").read_text())
    entry = next(e for e in raw["queries"] if e["id"] == vpn)
    entry["relevant"] = {"vpn-setup": 2}
    (desk / "labels.json").write_text(json.dumps(raw))
    (desk / "ev.jsonl").write_text(json.dumps({"id": vpn, "question": entry["question"], "doc_id": "vpn-setup",
                                               "evidence": "switch the profile to TCP mode"}) + "\n")
    assert "updated 1 (evidence added" in label(capsys, "import", "ev.jsonl")
    q = load_questions_cache("labels.json").by_id()[vpn]
    assert q.tags == ("area:network",) and dict(q.relevant) == {"vpn-setup": 2} and q.source["by"] == "handwritten"
