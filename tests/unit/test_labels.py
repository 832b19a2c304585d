"""Bringing your own labels: the shipped schema, importers (CSV, JSONL, rig-style qrels.jsonl,
BEIR), fingerprints stamped without an LLM, unchecked entries said out loud, unknown ids with a
suggestion, and the filters that keep generated questions worth keeping."""

from __future__ import annotations

import importlib.resources
import json
import shlex
import shutil

import pytest

from conftest import CORPUS, QUESTIONS, REPO, requires_hybrid
from shared_datasets import dataset_path
from fake_api import Reply
from pytest_retrieval_eval import RetrievalEvalError
from pytest_retrieval_eval.cli import main as cli
from pytest_retrieval_eval.data.corpus import JsonFolder
from pytest_retrieval_eval.data.labeled import load_questions_cache
from pytest_retrieval_eval.data.label_files import read_labels
from pytest_retrieval_eval.data.label_tables import Columns
from pytest_retrieval_eval.data.question_filters import QuestionFilter


def test_the_corpus_fingerprint_of_the_cache_is_compared(capsys, tmp_path):
    kb = shutil.copytree(CORPUS, tmp_path / "corpus")
    (kb / "extra.json").write_text(json.dumps({"doc_id": "extra", "content": "a new article nobody asked about"}))
    assert cli(["check", "--corpus", str(kb), "--questions", str(QUESTIONS)]) == 0
    out = capsys.readouterr().out
    assert "note: the corpus changed since" in out and "68 of 68 questions checked, up to date" in out


# --- the schema ----------------------------------------------------------------------------------

def schema() -> dict:
    text = importlib.resources.files("pytest_retrieval_eval.data").joinpath("questions.schema.json").read_text()
    return json.loads(text)


@pytest.mark.parametrize("edit", [
    lambda q: q.__setitem__("relevant", {}),
    lambda q: q.__setitem__("relevant", {"a": "1"}),
    lambda q: q.__setitem__("question", ""),
    lambda q: q.pop("id"),
])
def test_what_the_schema_rejects_the_loader_rejects_naming_the_field(tmp_path, edit):
    jsonschema = pytest.importorskip("jsonschema")  # a failure under CI
    doc = json.loads(QUESTIONS.read_text())
    edit(doc["queries"][3])
    path = tmp_path / "q.json"
    path.write_text(json.dumps(doc, indent=2))
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(doc, schema())
    with pytest.raises(RetrievalEvalError, match=r"q.json.*field 'queries\[3\]\.(relevant|question|id)'"):
        load_questions_cache(path)


# --- readers ---------------------------------------------------------------------------------------

def test_a_tsv_with_chosen_columns_grades_and_ids(tmp_path):
    path = tmp_path / "judged.tsv"
    path.write_text("qid\tasked\tdocs\tgrade\nt1\tguest wifi\tguest-wifi\t2\nt1\tguest wifi\tvpn-setup\t1\n"
                    "t2\tprinting\tprinter-queue|shared-drives\t1\n")
    from pytest_retrieval_eval.data.label_tables import Columns

    entries = read_labels(path, columns=Columns(question="asked", doc="docs", grade="grade", id="qid"))
    assert [(q.query_id, q.question, dict(q.relevant)) for q in entries] == [
        ("t1", "guest wifi", {"guest-wifi": 2, "vpn-setup": 1}),
        ("t2", "printing", {"printer-queue": 1, "shared-drives": 1}),
    ]
    with pytest.raises(RetrievalEvalError, match=r"judged.tsv:1: no column 'question' for the question"):
        read_labels(path)


#: grade spellings in text files: trec_eval reads whole numbers (a negative one is in the pool but
#: unjudged); an integral float, as pandas writes qrels, is that number; anything else is refused
TEXT_GRADES = {"1": 1, "0": 0, "3": 3, "-1": -1, "+2": 2, "1.0": 1, "2.00": 2, "1e0": 1, "1.5": None, "0.5": None,
               "nan": None, "inf": None, "-inf": None, "x": None, "1_0": None, "\u0663": None, "0x1": None,
               "true": None}


@pytest.mark.parametrize("spelling", TEXT_GRADES)
def test_label_import_and_the_qrels_loaders_accept_and_refuse_the_same_grade_spellings(tmp_path, spelling):
    from pytest_retrieval_eval import Qrels

    files = {"q.trec": (f"q1 0 d1 1\nq1 0 d2 {spelling}\n", 2, "grade", Qrels.from_trec),
             "q.tsv": (f"query-id\tcorpus-id\tscore\nq1\td1\t1\nq1\td2\t{spelling}\n", 3, "score",
                       Qrels.from_beir_tsv),
             "labels.csv": (f"id,question,doc_id,grade\nq1,guest wifi,d1,1\nq1,guest wifi,d2,{spelling}\n", 3,
                            "grade", lambda p: {"q1": read_labels(p, columns=Columns(grade="grade"))[0].relevant}),
             "labels.tsv": (f"id\tquestion\tdoc_id\tgrade\nq1\tguest wifi\td1\t1\nq1\tguest wifi\td2\t{spelling}\n",
                            3, "grade", lambda p: {"q1": read_labels(p, columns=Columns(grade="grade"))[0].relevant})}
    for name, (text, line, field, read) in files.items():
        (tmp_path / name).write_text(text, encoding="utf-8")
        if TEXT_GRADES[spelling] is None:
            with pytest.raises(RetrievalEvalError) as caught:
                read(tmp_path / name)
            assert f"{name}:{line}: field '{field}': relevance grade must be an integer, got {spelling!r}" in str(
                caught.value), name
        else:
            assert read(tmp_path / name)["q1"]["d2"] == TEXT_GRADES[spelling], name


def test_a_document_judged_twice_with_two_grades_is_refused_by_label_import_as_by_the_qrels_loaders(tmp_path):
    from pytest_retrieval_eval import Qrels

    trec = tmp_path / "q.trec"
    trec.write_text("q1 0 d1 1\nq1 0 d2 1\nq1 0 d2 2\n")
    table = tmp_path / "labels.csv"
    table.write_text("question,doc_id,grade\nguest wifi,d1,1\nguest wifi,d2,1\nguest wifi,d2|d3,2\n")
    rig = tmp_path / "qrels.jsonl"
    rig.write_text(json.dumps({"query_id": "q1", "query": "guest wifi",
                               "relevant_docs": ["d1", "d2", {"doc_id": "d2", "relevance": 2}]}) + "\n")
    for read, where in ((lambda: Qrels.from_trec(trec), "q.trec:3: query 'q1'"),
                        (lambda: read_labels(table, columns=Columns(grade="grade")),
                         "labels.csv:4: field 'grade': question 'guest wifi'"),
                        (lambda: read_labels(rig, fmt="qrels-jsonl"), "qrels.jsonl:1: field 'relevant_docs': query 'q1'")):
        with pytest.raises(RetrievalEvalError) as caught:
            read()
        assert str(caught.value).startswith(f"{tmp_path}/{where} judges document 'd2' twice with different grades "
                                            "(1 and 2)"), str(caught.value)
    table.write_text("question,doc_id,grade\nguest wifi,d1,1\nguest wifi,d1|d2,1\n")  # the same grade: one judgment
    assert read_labels(table, columns=Columns(grade="grade"))[0].relevant == {"d1": 1, "d2": 1}


def _team_corpus(tmp_path):
    from conftest import write_docs

    return write_docs(tmp_path / "kb", [{"doc_id": d, "title": d, "content": f"{d} words " * 5} for d in ("d1", "d2", "d3")])


@pytest.mark.parametrize("name, sep", [("labels.csv", ","), ("labels.tsv", "\t")])
def test_a_column_named_grade_is_the_grade_for_label_import_and_the_run_time_loader_alike(tmp_path, capsys, name, sep):
    from pytest_retrieval_eval.data.label_files import load_labels

    kb, labels, cache = _team_corpus(tmp_path), tmp_path / name, tmp_path / "questions.cache.json"
    labels.write_text(sep.join(["question", "doc_id", "Grade"]) + "\n" + "".join(
        sep.join(row) + "\n" for row in [("guest wifi", "d1", "2"), ("guest wifi", "d2", "0"),
                                         ("printing", "d3", "1.0"), ("printing", "d2", "")]))
    assert cli(["label", "import", str(labels), "--corpus", str(kb), "--questions", str(cache)]) == 0, capsys.readouterr()
    imported = {q.question: dict(q.relevant) for q in load_questions_cache(cache)}
    loaded = {q.question: dict(q.relevant) for q in load_labels(labels)}
    assert imported == loaded == {"guest wifi": {"d1": 2, "d2": 0}, "printing": {"d3": 1, "d2": 1}}
    assert [q.query_id for q in load_labels(labels)] == [q.query_id for q in load_questions_cache(cache)]


@pytest.mark.parametrize("cell", ["1.5", "x", "nan"])
def test_a_bad_grade_is_refused_alike_by_label_import_and_the_run_time_loader_in_one_line(tmp_path, capsys, cell):
    from pytest_retrieval_eval.data.label_files import load_labels

    kb, labels, cache = _team_corpus(tmp_path), tmp_path / "labels.csv", tmp_path / "questions.cache.json"
    labels.write_text(f"question,doc_id,grade\nguest wifi,d1,1\nguest wifi,d2,{cell}\n")
    expected = f"{labels}:3: field 'grade': relevance grade must be an integer, got {cell!r}"
    assert cli(["label", "import", str(labels), "--corpus", str(kb), "--questions", str(cache)]) == 2
    err = capsys.readouterr().err
    assert err == f"error: {expected}\n" and not cache.exists()
    with pytest.raises(RetrievalEvalError) as caught:
        load_labels(labels)
    assert str(caught.value) == expected


def test_a_labels_csv_read_at_run_time_is_the_teams_own_file_never_rewritten(tmp_path, capsys):
    kb, labels = _team_corpus(tmp_path), tmp_path / "labels.csv"
    labels.write_text("question,doc_id,grade\nguest wifi,d1,2\n")
    before = labels.read_bytes()
    assert cli(["check", "--corpus", str(kb), "--questions", str(labels)]) == 1
    out = capsys.readouterr().out
    assert "1 of 1 questions unchecked" in out
    assert f"label import {labels} --corpus {kb} --questions {tmp_path / 'questions.cache.json'}" in out
    assert cli(["label", "stamp", "--corpus", str(kb), "--questions", str(labels)]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"error: {labels}: ") and "never rewritten" in err and len(err.splitlines()) == 1
    assert labels.read_bytes() == before


#: grade values in JSON files: a JSON number with a whole value is that grade (``2.0`` is 2)
JSON_GRADES = [(1, 1), (0, 0), (-1, -1), (2.0, 2), (1.5, None), (float("nan"), None), (True, None), (None, None),
               ([1], None)]


@pytest.mark.parametrize("value, grade", JSON_GRADES)
def test_label_import_the_questions_cache_and_qrels_accept_and_refuse_the_same_json_grades(tmp_path, value, grade):
    from pytest_retrieval_eval import Qrels

    rig = tmp_path / "qrels.jsonl"
    rig.write_text(json.dumps({"query_id": "q1", "query": "guest wifi", "relevant_docs": {"d1": 1, "d2": value}}) + "\n")
    own = tmp_path / "labels.jsonl"
    own.write_text(json.dumps({"id": "q1", "question": "guest wifi", "relevant": {"d1": 1, "d2": value}}) + "\n")
    doc = json.loads(QUESTIONS.read_text())
    doc["queries"][0]["relevant"]["d2"] = value
    cache = tmp_path / "questions.cache.json"
    cache.write_text(json.dumps(doc, indent=2))
    paths = {"qrels.jsonl": lambda: read_labels(rig, fmt="qrels-jsonl")[0].relevant,
             "labels.jsonl": lambda: read_labels(own)[0].relevant,
             "questions.cache.json": lambda: load_questions_cache(cache).queries[0].relevant,
             "Qrels": lambda: Qrels.from_dict({"q1": {"d1": 1, "d2": value}})["q1"]}
    for name, read in paths.items():
        if grade is None:
            with pytest.raises(RetrievalEvalError, match="must be an integer"):
                read()
        else:
            got = read()["d2"]
            assert got == grade and type(got) is int, name


@pytest.mark.dataset("scifact")
def test_beir_queries_and_qrels_import(tmp_path, capsys):
    scifact = dataset_path("scifact")
    entries = read_labels(scifact, fmt="beir")
    assert len(entries) == 300 and all(q.relevant for q in entries)


# --- generated questions worth keeping --------------------------------------------------------------

PASSAGE = ("Visitors connect to the guest network. Reception prints a voucher valid for one day; for events, "
           "the organiser can order a batch of vouchers a week ahead.")


@pytest.mark.parametrize("question, reason", [
    ("Here is a question: how do guests get online?", "preamble"),
    ("Question: how do guests get online?", "preamble"),
    ("How do guests get online? And for how long?", "several_questions"),
    ("Wifi?", "too_short"),
    ("How " + "very " * 45 + "long?", "too_long"),
    ("Guests and the internet in the office.", "not_a_question"),
    ("Can the organiser order a batch of vouchers a week ahead?", "copies_passage"),
    ("How can visitors to our office get onto the internet?", None),
])
def test_the_filters_name_each_kind_of_bad_question(question, reason):
    assert QuestionFilter().reject(question, PASSAGE) == reason


def test_a_near_duplicate_of_a_kept_question_is_dropped():
    kept = ["How can visitors to our office get onto the internet?"]
    assert QuestionFilter().reject("How can office visitors get onto the internet?", PASSAGE, kept) == "near_duplicate"


@requires_hybrid
def test_generation_drops_and_counts_bad_canned_answers(fake_api, tmp_path):
    from fake_api import chat_reply
    from pytest_retrieval_eval.data.chunking import Chunking, chunk_corpus
    from pytest_retrieval_eval.data.generate import GeneratorConfig, generate_questions
    from conftest import write_docs

    docs = [{"doc_id": f"d{i}", "title": f"Doc {i}", "content": " ".join(f"w{i}x{j}" for j in range(40))}
            for i in range(5)]
    corpus = JsonFolder(write_docs(tmp_path / "kb", docs)).load()
    bad = {"d0": "Here is a question: what is w0x3 about?", "d1": "What is w1x3? Why w1x4?", "d2": "Why so?",
           "d3": "w3x3 w3x4 w3x5 w3x6 w3x7."}

    good = {"d4": "How should a beginner approach the topic covered here in practice?"}

    def answer(passage: str) -> str:
        doc = f"d{passage.split()[3]}"  # "Passage: <<< Doc N ..."
        return bad.get(doc) or good[doc]

    fake_api.script("/chat/completions", Reply(200, chat_reply(answer)))
    split = Chunking(split_length=60, split_overlap=5)
    path = tmp_path / "q.json"
    report = generate_questions(corpus, chunk_corpus(corpus, split), path,
                                config=GeneratorConfig(concurrency=1, retries=0), split=split)
    assert {r: len(c) for r, c in report.filtered.items()} == {"preamble": 1, "several_questions": 1, "too_short": 1,
                                                               "not_a_question": 1}
    assert len(report.generated) == 1 and "filtered 4 (not_a_question 1, preamble 1, several_questions 1, too_short 1)" in report.summary()
    written = json.loads(path.read_text())
    assert written["generator"]["filtered"] == {"not_a_question": 1, "preamble": 1, "several_questions": 1, "too_short": 1}


# --- the labels lifecycle: import --sync, stamp --drop-deleted, the locks -------------------------

HELPDESK = REPO / "examples" / "helpdesk" / "kb"
ROWS = [
    ("My internet tunnel to work keeps dropping at the hotel", "vpn-setup"),
    ("I forgot my login as a contractor", "password-reset"),
    ("Someone took my work computer from the car", "laptop-replacement"),
    ("Where do print jobs wait before I pick them up", "printer-queue"),
]


@pytest.fixture
def desk(tmp_path, monkeypatch):
    """A team's folder: the helpdesk knowledge base, labels in it, commands typed from its root."""
    shutil.copytree(HELPDESK, tmp_path / "kb")
    monkeypatch.chdir(tmp_path)
    return tmp_path


def write_rows(path, rows):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("question,doc_id\n" + "".join(f'"{q}",{d}\n' for q, d in rows), encoding="utf-8")


def label(capsys, *argv: str) -> str:
    code = cli(["label", *argv, "--corpus", "kb", "--questions", "questions.cache.json"])
    out, err = capsys.readouterr()
    assert code == 0, err
    return out


def cached(path="questions.cache.json") -> dict[str, str]:
    """question -> id"""
    return {q.question: q.query_id for q in load_questions_cache(path)}


def test_sync_removes_only_what_that_very_file_brought_not_a_namesake_in_another_folder(desk, capsys):
    write_rows(desk / "team-a" / "labels.csv", ROWS[:2])
    write_rows(desk / "team-b" / "labels.csv", ROWS[2:])
    label(capsys, "import", "team-a/labels.csv")
    label(capsys, "import", "team-b/labels.csv")
    ids = cached()
    write_rows(desk / "team-b" / "labels.csv", ROWS[2:3])
    out = label(capsys, "import", "team-b/labels.csv", "--sync")
    assert set(cached()) == {q for q, _ in ROWS[:3]}  # team A's questions are all there
    assert f"removed (gone from team-b/labels.csv): {ids[ROWS[3][0]]}" in out and "removed 1" in out
    files = {q.query_id: q.source.get("file") for q in load_questions_cache("questions.cache.json")}
    assert files == {ids[ROWS[0][0]]: "team-a/labels.csv", ids[ROWS[1][0]]: "team-a/labels.csv",
                     ids[ROWS[2][0]]: "team-b/labels.csv"}


def test_the_recorded_file_is_relative_to_the_cache_whatever_folder_the_command_runs_in(desk, capsys, monkeypatch):
    write_rows(desk / "labels" / "labels.csv", ROWS[:2])
    (desk / "sub").mkdir()
    monkeypatch.chdir(desk / "sub")
    assert cli(["label", "import", "../labels/labels.csv", "--corpus", "../kb", "--questions", "../questions.cache.json"]) == 0
    monkeypatch.chdir(desk)
    assert {q.source["file"] for q in load_questions_cache("questions.cache.json")} == {"labels/labels.csv"}
    write_rows(desk / "labels" / "labels.csv", ROWS[:1])
    assert "removed 1" in label(capsys, "import", str(desk / "labels" / "labels.csv"), "--sync")  # an absolute path too


def test_sync_keeps_an_older_entry_that_recorded_only_the_file_name_and_names_it(desk, capsys):
    write_rows(desk / "team-a" / "labels.csv", ROWS[:2])
    label(capsys, "import", "team-a/labels.csv")
    raw = json.loads((desk / "questions.cache.json").read_text())
    for entry in raw["queries"]:  # as an older version wrote it: the base name only
        del entry["source"]["file"]
        assert entry["source"]["by"] == "imported:labels.csv"
    (desk / "questions.cache.json").write_text(json.dumps(raw))
    ids = cached()
    write_rows(desk / "team-b" / "labels.csv", ROWS[2:])
    out = label(capsys, "import", "team-b/labels.csv", "--sync")
    assert "removed" not in out.split("note:")[0] and len(cached()) == 4  # not provably team-b's: kept
    assert ids[ROWS[0][0]] in out and ids[ROWS[1][0]] in out  # and said, with a way to remove them
    (offered,) = [line.rsplit("with: ", 1)[1] for line in out.splitlines() if "label remove" in line]
    argv = shlex.split(offered)
    assert argv[:3] == ["python", "-m", "pytest_retrieval_eval"]
    assert cli(argv[3:]) == 0 and set(cached()) == {q for q, _ in ROWS[2:]}


def test_import_leaves_no_lock_file_beside_the_cache(desk, capsys):
    write_rows(desk / "labels.csv", ROWS)
    label(capsys, "import", "labels.csv")
    label(capsys, "stamp")
    assert [p.name for p in desk.rglob("*.lock")] == []


def test_stamp_drop_deleted_names_every_question_it_removes_and_every_judgment_it_drops(desk, capsys):
    (desk / "labels.jsonl").write_text("\n".join(json.dumps(r) for r in [
        {"id": "wifi", "question": "A customer visiting tomorrow needs internet",
         "relevant": {"guest-wifi": 1, "vpn-setup": 0}},
        {"id": "both", "question": "Guests and printing", "relevant": {"guest-wifi": 1, "printer-queue": 1}},
        {"id": "print", "question": "Where do print jobs wait", "relevant": {"printer-queue": 1}},
    ]) + "\n")
    label(capsys, "import", "labels.jsonl")
    (desk / "kb" / "guest-wifi.json").unlink()
    out = label(capsys, "stamp", "--drop-deleted")
    assert "deleted guest-wifi: its judgment dropped from wifi, both" in out
    removed = [line for line in out.splitlines() if line.startswith("removed")]
    assert len(removed) == 1 and "wifi" in removed[0] and "vpn-setup" in removed[0]  # and its grade-0 judgment
    assert "both" not in removed[0] and "print" not in removed[0]
    assert "1 question removed (wifi)" in out
    assert {q.query_id: dict(q.relevant) for q in load_questions_cache("questions.cache.json")} == {
        "both": {"printer-queue": 1}, "print": {"printer-queue": 1}}
