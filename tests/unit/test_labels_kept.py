"""Labels a command of the plugin's own never destroys: ``generate`` keeps what a team imported
or wrote by hand, the importer refuses what the loader would refuse (duplicate columns, all-zero
grades, a question twice), and ids that differ only in Unicode normalisation are said so."""

from __future__ import annotations

import contextlib
import io
import json
import shlex
import shutil
import tempfile
import unicodedata
from pathlib import Path

import pytest

from conftest import CORPUS, QUESTIONS, examples, requires_hybrid, write_docs
from fake_api import Reply, chat_reply
from pytest_retrieval_eval.cli import main as cli
from pytest_retrieval_eval.data.corpus import JsonFolder
from pytest_retrieval_eval.data.labeled import load_questions_cache
from pytest_retrieval_eval.data.label_files import load_labels
from pytest_retrieval_eval.data.staleness import check

CAFE_NFC = unicodedata.normalize("NFC", "café")
CAFE_NFD = unicodedata.normalize("NFD", "café")


def words(n: int, seed: str) -> str:
    return " ".join(f"{seed}{i}" for i in range(n))


def make_corpus(folder: Path) -> Path:
    return write_docs(folder, [
        {"doc_id": "alpha", "title": "Alpha", "content": words(50, "a")},
        {"doc_id": "beta", "title": "Beta", "content": words(20, "b")},
        {"doc_id": CAFE_NFC, "title": "Cafe", "content": words(10, "c")},
    ])


@pytest.fixture
def corpus(tmp_path):
    return make_corpus(tmp_path / "corpus")


def run(*argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = cli([str(a) for a in argv])
    return code, out.getvalue(), err.getvalue()


def entries(path: Path) -> dict[str, dict]:
    return {q["id"]: q for q in json.loads(path.read_text(encoding="utf-8"))["queries"]}


# --- generate keeps the team's questions ---------------------------------------------------------

@requires_hybrid
def test_generate_keeps_every_imported_and_hand_written_question(fake_api, corpus, tmp_path):
    fake_api.script("/chat/completions", Reply(200, chat_reply()))
    cache = tmp_path / "q.json"
    labels = tmp_path / "labels.csv"
    labels.write_text("question,doc_id,id\nWhere do the a words start?,alpha,alpha:0#1\n"
                      "Which page lists the b words?,beta;alpha,t2\n", encoding="utf-8")
    assert run("label", "import", labels, "--corpus", corpus, "--questions", cache, "--id-column", "id")[0] == 0
    raw = json.loads(cache.read_text())
    raw["queries"].append({"id": "hand-1", "question": "Is there a page about coffee?", "relevant": {CAFE_NFC: 1},
                           "source": {}})
    cache.write_text(json.dumps(raw), encoding="utf-8")
    team = {k: v for k, v in entries(cache).items()}

    for flags in ((), ("--regenerate",)):
        code, out, err = run("generate", "--corpus", corpus, "--questions", cache, *flags)
        assert code == 0, err
        now = entries(cache)
        for qid, entry in team.items():  # byte for byte as the team left them
            assert now[qid] == entry, qid
        generated = [q for q in now.values() if q["source"].get("by") == "openai/gpt-4o-mini"]
        assert len(generated) == 3  # one per chunk at the default split; the imported id alpha:0#1 kept its owner
        assert "3 imported or hand-written question(s) left as they are" in out
    assert load_questions_cache(cache)  # and the loader reads it


@requires_hybrid
def test_generate_reports_a_stale_imported_question_but_leaves_it_and_check_says_what_to_do(fake_api, corpus, tmp_path):
    fake_api.script("/chat/completions", Reply(200, chat_reply()))
    cache, labels = tmp_path / "q.json", tmp_path / "labels.jsonl"
    labels.write_text(json.dumps({"id": "t1", "question": "Which page lists the b words?", "relevant": {"beta": 2}}) + "\n")
    assert run("label", "import", labels, "--corpus", corpus, "--questions", cache)[0] == 0
    (corpus / "beta.json").write_text(json.dumps({"doc_id": "beta", "title": "Beta", "content": words(20, "B")}))
    code, out, err = run("generate", "--corpus", corpus, "--questions", cache)
    assert code == 0, err
    assert "t1" in entries(cache) and "dropped 0 stale" in out
    note = next(line for line in out.splitlines() if line.startswith("note:"))
    assert "1 of them are stale against the corpus, named by: python -m pytest_retrieval_eval check" in note
    printed = shlex.split(note.split("named by: ")[1])
    code, out, _ = run(*printed[3:])  # the command works as printed
    assert code == 1 and "changed: beta (1 question: t1)" in out
    assert "Check the questions about what changed, then record the new fingerprints: python -m " \
           "pytest_retrieval_eval label stamp" in out
    assert "Regenerate the questions" not in out  # generate would not touch t1


@requires_hybrid
def test_generate_carries_the_notes_of_a_hand_written_cache(fake_api, tmp_path):
    fake_api.script("/chat/completions", Reply(200, chat_reply()))
    folder, cache = tmp_path / "corpus", tmp_path / "q.json"
    shutil.copytree(CORPUS, folder)
    shutil.copy(QUESTIONS, cache)
    (folder / "lost-keys.json").unlink()  # its two generated-shape questions are dropped: the file is rewritten
    code, out, err = run("generate", "--corpus", folder, "--questions", cache)
    assert code == 0 and "dropped 2 stale" in out, err
    notes = json.loads(cache.read_text())["generator"]["notes"]
    assert "Before generation (handwritten): Written by hand, not by the LLM generator" in notes


# --- what the importer accepts, the loader loads -------------------------------------------------

def test_a_csv_with_two_columns_of_one_name_is_refused_naming_file_and_column(corpus, tmp_path):
    labels, cache = tmp_path / "labels.csv", tmp_path / "q.json"
    labels.write_text("question,doc_id,doc_id\nWhere do the a words start?,alpha,beta\n")
    code, _, err = run("label", "import", labels, "--corpus", corpus, "--questions", cache)
    assert code == 2 and not cache.exists()
    assert err.strip() == (f"error: {labels}:1: field 'doc_id': column 'doc_id' appears 2 times in the header "
                           "(columns 2, 3): only one could be read; rename or remove the others")


def test_a_row_with_more_cells_than_the_header_is_refused_with_its_line(corpus, tmp_path):
    labels, cache = tmp_path / "labels.csv", tmp_path / "q.json"
    labels.write_text("question,doc_id\nWhere do the a words start?,alpha\nWhat, then, of b?,beta\n")
    code, _, err = run("label", "import", labels, "--corpus", corpus, "--questions", cache)
    assert code == 2 and not cache.exists()
    assert err.startswith(f"error: {labels}:3: 4 cells, but the header has 2: quote a cell that holds ','")


@pytest.mark.parametrize("name, text, line", [
    ("labels.csv", "question,doc_id,grade\nWhere do the a words start?,alpha,1\nNothing here?,alpha,0\nNothing here?,beta,0\n", 3),
    ("labels.jsonl", '{"question": "Where do the a words start?", "relevant": {"alpha": 1}}\n'
                     '{"question": "Nothing here?", "relevant": {"alpha": 0, "beta": "0"}}\n', 2),
])
def test_a_question_whose_grades_are_all_zero_is_refused_at_import_with_file_and_line(corpus, tmp_path, name, text, line):
    labels, cache = tmp_path / name, tmp_path / "q.json"
    labels.write_text(text)
    args = ("--grade-column", "grade") if name.endswith(".csv") else ()
    code, _, err = run("label", "import", labels, "--corpus", corpus, "--questions", cache, *args)
    assert code == 2 and not cache.exists(), err
    assert err.startswith(f"error: {labels}:{line}: ") and "grade" in err and ">= 1" in err and len(err.splitlines()) == 1


def test_beir_queries_whose_scores_are_all_zero_are_refused_with_the_qrels_line(tmp_path):
    beir = tmp_path / "beir"
    (beir / "qrels").mkdir(parents=True)
    (beir / "corpus.jsonl").write_text('{"_id": "d1", "text": "one"}\n{"_id": "d2", "text": "two"}\n')
    (beir / "queries.jsonl").write_text('{"_id": "q1", "text": "first?"}\n{"_id": "q2", "text": "second?"}\n')
    (beir / "qrels" / "test.tsv").write_text("query-id\tcorpus-id\tscore\nq1\td1\t1\nq2\td2\t0\n")
    cache = tmp_path / "q.json"
    code, _, err = run("label", "import", beir, "--corpus", beir, "--questions", cache)
    assert code == 2 and not cache.exists()
    assert err.startswith(f"error: {beir / 'qrels' / 'test.tsv'}:3: query 'q2': every score is below 1")


def test_the_same_question_on_two_jsonl_lines_names_the_file_and_both_lines(corpus, tmp_path):
    labels, cache = tmp_path / "labels.jsonl", tmp_path / "q.json"
    line = json.dumps({"question": "Where do the a words start?", "doc_id": "alpha"})
    labels.write_text(f"{line}\n{json.dumps({'question': 'b?', 'id': 'x', 'doc_id': 'beta'})}\n{line}\n")
    code, _, err = run("label", "import", labels, "--corpus", corpus, "--questions", cache)
    assert code == 2 and not cache.exists()
    assert err.startswith(f"error: {labels}:3: field 'question': duplicate question 'Where do the a words start?'")
    assert "first on line 1" in err and "q.json" not in err
    labels.write_text(f"{json.dumps({'id': 'x', 'question': 'a?', 'doc_id': 'alpha'})}\n"
                      f"{json.dumps({'id': 'x', 'question': 'b?', 'doc_id': 'beta'})}\n")
    code, _, err = run("label", "import", labels, "--corpus", corpus, "--questions", cache)
    assert code == 2 and err.startswith(f"error: {labels}:2: field 'id': duplicate query id 'x', first on line 1")


def test_a_jsonl_object_naming_one_key_twice_is_refused_with_its_line(corpus, tmp_path):
    labels, cache = tmp_path / "labels.jsonl", tmp_path / "q.json"
    labels.write_text('{"question": "Where do the a words start?", "doc_id": "alpha"}\n'
                      '{"question": "Which page lists b?", "relevant": {"beta": 2, "beta": 0}}\n')
    code, _, err = run("label", "import", labels, "--corpus", corpus, "--questions", cache)
    assert code == 2 and not cache.exists()
    assert err.strip() == f"error: {labels}:2: key 'beta' appears twice in one object: only one could be read"


CELLS = ["Where do the a words start?", "  spaced   out  ", "", "Ünïcode ✓ question", "quote \" inside",
         "comma, inside", "tab\tinside", "\u2028line sep", "x" * 500, "?", CAFE_NFD + " coffee"]
DOCS = ["alpha", "beta", CAFE_NFC, CAFE_NFD, "gamma", "", " alpha", "alpha;beta", "alpha|beta", "al pha"]
GRADES = ["1", "0", "2", "-1", " 3 ", "1.5", "true", "", "x"]
IDS = ["q1", "q1", "", " ", "with space", "naïve", "a:0#1", CAFE_NFD]


def _csv(rows) -> str:
    import csv

    buffer = io.StringIO()
    writer = csv.writer(buffer)
    writer.writerow(["question", "doc_id", "grade", "id"])
    writer.writerows(rows)
    return buffer.getvalue()


def _jsonl(rows, qrels: bool) -> str:
    lines = []
    for question, doc, grade, qid in rows:
        value = {"true": True, "": None, "x": "x"}.get(grade, grade.strip() if grade.strip().lstrip("-").isdigit() else grade)
        if qrels:
            lines.append({"query_id": qid, "query": question, "relevant_docs": {doc: value}})
        else:
            lines.append({"id": qid, "question": question, "relevant": {doc: value}} if qid else
                         {"question": question, "doc_id": doc})
    return "".join(json.dumps(line, ensure_ascii=bool(len(lines) % 2)) + "\n" for line in lines)


def test_whatever_label_import_accepts_the_loader_loads(tmp_path):
    """Property-style: many label files built from awkward cells (blank, spaced, Unicode in both
    normalisations, delimiters inside, zero/negative/odd grades, duplicate and empty ids). Each
    import either refuses with one ``error: FILE...`` line and leaves the cache as it was, or
    writes a cache that the loader, ``load_labels`` and the staleness check all read."""
    hypothesis = pytest.importorskip("hypothesis")
    st = hypothesis.strategies
    corpus = make_corpus(tmp_path / "corpus")
    loaded = JsonFolder(corpus).load()
    accepted = refused = 0

    @hypothesis.settings(max_examples=examples(120), deadline=None, database=None, derandomize=True,
                         suppress_health_check=list(hypothesis.HealthCheck))
    @hypothesis.given(rows=st.lists(st.tuples(st.sampled_from(CELLS), st.sampled_from(DOCS), st.sampled_from(GRADES),
                                              st.sampled_from(IDS)), min_size=1, max_size=4),
                      fmt=st.sampled_from(["csv", "csv-id", "tsv", "jsonl", "qrels-jsonl"]),
                      again=st.booleans())
    def check_one(rows, fmt, again):
        nonlocal accepted, refused
        with tempfile.TemporaryDirectory(dir=tmp_path) as tmp:
            folder = Path(tmp)
            cache = folder / "q.json"
            args = []
            if fmt.startswith("csv"):
                labels = folder / "labels.csv"
                labels.write_text(_csv(rows), encoding="utf-8")
                args = ["--grade-column", "grade"] + (["--id-column", "id"] if fmt == "csv-id" else [])
            elif fmt == "tsv":
                labels = folder / "labels.tsv"
                labels.write_text(_csv(rows).replace(",", "\t"), encoding="utf-8")
                args = ["--grade-column", "grade"]
            else:
                labels = folder / "labels.jsonl"
                labels.write_text(_jsonl(rows, fmt == "qrels-jsonl"), encoding="utf-8")
            for _ in range(2 if again else 1):  # importing twice merges into what the first wrote
                before = cache.read_bytes() if cache.exists() else None
                code, _, err = run("label", "import", labels, "--corpus", corpus, "--questions", cache, *args)
                if code == 0:
                    accepted += 1
                    labeled = load_questions_cache(cache, known_doc_ids=loaded.doc_ids)
                    assert len(labeled) >= 1 and len(load_labels(cache)) == len(labeled)
                    assert not check(labeled, loaded)  # just stamped: nothing stale
                else:
                    refused += 1
                    assert code == 2 and err.startswith(f"error: {labels}") and len(err.splitlines()) == 1, err
                    assert (cache.read_bytes() if cache.exists() else None) == before

    check_one()
    assert accepted and refused  # both sides of the property were exercised


# --- ids that print identically -------------------------------------------------------------------

def test_an_id_in_another_unicode_normalisation_is_said_so(corpus, tmp_path):
    labels, cache = tmp_path / "labels.jsonl", tmp_path / "q.json"
    labels.write_text(json.dumps({"id": "t1", "question": "Is there coffee?", "doc_id": CAFE_NFD}) + "\n")
    code, _, err = run("label", "import", labels, "--corpus", corpus, "--questions", cache)
    assert code == 2 and not cache.exists()
    expected = f"'{CAFE_NFD}' differs from the corpus id '{CAFE_NFC}' only in Unicode normalisation (NFD vs NFC)"
    assert expected in err and "did you mean" not in err
    cache.write_text(json.dumps({"format": "pytest-retrieval-eval/questions", "version": 1, "queries": [
        {"id": "t1", "question": "Is there coffee?", "relevant": {CAFE_NFD: 1}}]}), encoding="utf-8")
    code, out, _ = run("check", "--corpus", corpus, "--questions", cache)
    assert code == 1 and expected in out
