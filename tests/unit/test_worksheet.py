"""The human worksheet: picking (seeded, stratified by tags), the CSV a person fills, excerpts cut
on a word boundary, refusals naming file, line and field, the round trip into the judgments file,
and ``judge --worksheet=N`` / ``--import-worksheet=FILE`` end to end on a saved run."""

from __future__ import annotations

import csv
import importlib.resources
import io
import json
from collections import Counter

import pytest

from conftest import CORPUS, results_text
from pytest_retrieval_eval import QueryResult
from pytest_retrieval_eval.cli import main as cli
from pytest_retrieval_eval.data.corpus import Corpus, open_corpus
from pytest_retrieval_eval.data.judge import USER_PROMPT
from pytest_retrieval_eval.data.judgments import Judgments, question_sha256
from pytest_retrieval_eval.data.labeled import LabeledSet
from pytest_retrieval_eval.data.worksheet import (COLUMNS, GRADE_COLUMN, HUMAN, SCALE, excerpt, pick, read_worksheet,
                                                  worksheet_csv)
from pytest_retrieval_eval.errors import RetrievalEvalError
from pytest_retrieval_eval.evaluation.judging import pool, with_judgments
from pytest_retrieval_eval.analysis.result import EvaluationResult
from pytest_retrieval_eval.evaluation.results import RunResults
from pytest_retrieval_eval.evaluation.worksheet import checked, sheet_rows
from pytest_retrieval_eval.rules.settings import GateSettings
from pytest_retrieval_eval.ir.measures import DEFAULT_TABLE_MEASURES
from pytest_retrieval_eval.types import Doc, LabeledQuery

LABELED = LabeledSet((LabeledQuery("q1", "alpha?", {"a": 1}), LabeledQuery("q2", "beta?", {"b": 1, "x": 0})),
                     name="set")
CORPUS_ABC = Corpus(tuple(Doc(d, f"the text of {d} " * 3, title=f"Title {d}") for d in "abcdefgx"), "c")


def run_of(**rankings) -> RunResults:
    evals = [EvaluationResult(engine, LABELED, tuple(QueryResult(q, tuple(r)) for q, r in zip(("q1", "q2"), ranked)),
                              context={"corpus": "c", "corpus_fingerprint": "f"})
             for engine, ranked in rankings.items()]
    return RunResults(evals)


def parsed(text: str) -> list[dict]:
    return list(csv.DictReader(io.StringIO(text.removeprefix("\ufeff"))))


def filled(text: str, grade=lambda i, row: i % 4) -> str:
    rows = parsed(text)
    for i, row in enumerate(rows):
        row[GRADE_COLUMN] = grade(i, row)
    out = io.StringIO()
    writer = csv.DictWriter(out, COLUMNS, lineterminator="\n")
    writer.writeheader()
    writer.writerows(rows)
    return out.getvalue()


# --- picking -----------------------------------------------------------------------------------------

QUESTIONS = [(f"a{i}", ("product:bikes",)) for i in range(60)] + [(f"b{i}", ("product:app",)) for i in range(30)] \
    + [(f"c{i}", ("product:app", "length:long")) for i in range(10)]


def test_picking_is_seeded_deterministic_and_proportional_to_each_tag_combination():
    picked = pick(QUESTIONS, 20)
    assert picked == pick(list(reversed(QUESTIONS)), 20) == sorted(picked)  # input order does not matter
    assert len(set(picked)) == 20
    assert Counter(q[0] for q in picked) == {"a": 12, "b": 6, "c": 2}  # 60/30/10 of 100
    assert pick(QUESTIONS, 20, seed=1) != picked  # another seed, other questions in each stratum
    assert Counter(q[0] for q in pick(QUESTIONS, 20, seed=1)) == {"a": 12, "b": 6, "c": 2}
    assert pick(QUESTIONS, 500) == sorted(q for q, _ in QUESTIONS)  # more asked than there are: all


def test_a_remainder_goes_to_the_largest_share_never_past_n():
    few = [("x1", ("t",)), ("x2", ("t",)), ("y1", ()), ("z1", ("u",))]
    for n in range(1, 5):
        got = pick(few, n)
        assert len(got) == n and got == pick(few, n)
    assert pick(few, 1) in (["x1"], ["x2"])  # the stratum of half the questions takes the one place


# --- the sheet -----------------------------------------------------------------------------------------

def test_an_excerpt_is_cut_on_a_word_boundary_and_says_so():
    text = "word " * 100
    cut = excerpt(text, 42)
    assert cut.endswith(" …") and len(cut) <= 44 and not cut.removesuffix(" …").endswith(" ")
    assert cut.removesuffix(" …").split() == ["word"] * 8  # whole words only
    assert excerpt("short\n\ntext  here", 42) == "short text here"  # one line, nothing cut
    assert excerpt("x" * 50, 10) == "x" * 10 + " …"  # one long word: cut where it must


def test_the_sheet_has_the_columns_a_person_fills_every_pooled_document_and_the_labeled_ones():
    run = run_of(one=[["c", "a", "d"], ["x", "e", "b"]], two=[["d", "f", "a"], ["e", "g"]])
    rows, lacking = sheet_rows(run, CORPUS_ABC, 2)
    assert lacking == {}
    holes = {(h.query_id, h.doc_id) for h in pool(run, 2)}
    labeled = {("q1", "a"), ("q2", "b"), ("q2", "x")}
    assert {(r.query_id, r.doc_id) for rs in rows.values() for r in rs} == holes | labeled
    text = worksheet_csv([r for q in ("q1", "q2") for r in rows[q]], 2)
    assert text.startswith("\ufeff") and text.count("\n") == 1 + len(holes | labeled)  # one line per row
    got = parsed(text)
    assert tuple(got[0]) == COLUMNS == ("question_id", "question", "doc_id", "title", "excerpt", GRADE_COLUMN,
                                        "depth", "doc_sha256")
    assert all(r[GRADE_COLUMN] == "" and r["depth"] == "2" for r in got)  # labeled rows too: graded blind
    first = got[0]
    assert (first["question_id"], first["question"], first["doc_id"], first["title"]) == ("q1", "alpha?", "a", "Title a")
    assert first["excerpt"] == "the text of a the text of a the text of a"
    assert first["doc_sha256"] == CORPUS_ABC.get("a").fingerprint


def test_the_scale_is_the_judges_own_words_in_the_grade_column_and_the_readme():
    assert len(SCALE) == 4 and all(line in USER_PROMPT for line in SCALE)
    assert [line[0] for line in SCALE] == ["0", "1", "2", "3"]
    assert GRADE_COLUMN.startswith("grade 0-3")
    from pytest_retrieval_eval.data.worksheet import readme

    text = readme("w.csv", 3, 12, 10, "python -m pytest_retrieval_eval judge r.json --import-worksheet=w.csv")
    assert all(line in text for line in SCALE) and "top 10" in text and "--import-worksheet=w.csv" in text


def test_a_question_with_a_pooled_document_the_corpus_lacks_stays_off_the_sheet():
    run = run_of(one=[["c", "zz"], ["x", "e"]])
    rows, lacking = sheet_rows(run, CORPUS_ABC, 2)
    assert lacking == {"q1": "zz"} and list(rows) == ["q2"]


# --- reading it back --------------------------------------------------------------------------------

def sheet_file(tmp_path, run, grade=lambda i, row: i % 4, depth=2):
    rows, _ = sheet_rows(run, CORPUS_ABC, depth)
    path = tmp_path / "sheet.csv"
    path.write_text(filled(worksheet_csv([r for q in sorted(rows) for r in rows[q]], depth), grade))
    return path


@pytest.mark.parametrize("grade, said", [("", "grade is empty"), ("4", "'4', not a grade"), ("2.5", "'2.5'"),
                                         ("high", "'high'"), ("-1", "'-1'")])
def test_a_row_whose_grade_is_empty_or_not_0_to_3_is_refused_naming_file_line_and_field(tmp_path, grade, said):
    run = run_of(one=[["c", "a"], ["x", "e"]])
    path = sheet_file(tmp_path, run, lambda i, row: grade if i == 2 else 1)
    with pytest.raises(RetrievalEvalError) as caught:
        read_worksheet(path)
    message = str(caught.value)
    assert message.startswith(f"{path}:4: field 'grade': ") and said in message and "\n" not in message


def test_every_bad_row_is_counted_in_the_one_line(tmp_path):
    path = sheet_file(tmp_path, run_of(one=[["c", "a"], ["x", "e"]]), lambda i, row: "" if i else 2)
    with pytest.raises(RetrievalEvalError, match=r"sheet.csv:3: field 'grade': grade is empty.*3 more row\(s\) too, "
                                                 r"lines 4, 5, 6\); nothing recorded"):
        read_worksheet(path)


@pytest.mark.parametrize("edit, line, field", [
    (lambda rows: rows[1].update(doc_sha256="abc"), 3, "doc_sha256"),
    (lambda rows: rows[2].update(depth="ten"), 4, "depth"),
    (lambda rows: rows[3].update(depth="3"), 5, "depth"),
    (lambda rows: rows[1].update(doc_id=rows[0]["doc_id"]), 3, "doc_id"),
    (lambda rows: rows[0].update(question_id=""), 2, "question_id"),
])
def test_a_field_the_sheet_was_written_with_that_no_longer_reads_is_refused(tmp_path, edit, line, field):
    path = sheet_file(tmp_path, run_of(one=[["c", "a"], ["x", "e"]]))
    rows = parsed(path.read_text())
    edit(rows)
    out = io.StringIO()
    csv.DictWriter(out, COLUMNS, lineterminator="\n").writerows([dict(zip(COLUMNS, COLUMNS)), *rows])
    path.write_text(out.getvalue())
    with pytest.raises(RetrievalEvalError, match=rf"^{path}:{line}: field '{field}': "):
        read_worksheet(path)


def test_a_sheet_of_another_run_or_with_a_row_deleted_or_a_question_edited_is_refused(tmp_path):
    run = run_of(one=[["c", "a"], ["x", "e"]])
    path = sheet_file(tmp_path, run)
    lines = path.read_text().splitlines(keepends=True)
    (tmp_path / "cut.csv").write_text("".join(lines[:2] + lines[3:]))  # the second row deleted
    with pytest.raises(RetrievalEvalError, match=r"cut.csv: question q1 has no row for c of its top 2"):
        checked(read_worksheet(tmp_path / "cut.csv"), run)
    (tmp_path / "edited.csv").write_text(path.read_text().replace("alpha?", "gamma?", 1))
    with pytest.raises(RetrievalEvalError, match=r"edited.csv:2: field 'question': the question reads otherwise"):
        checked(read_worksheet(tmp_path / "edited.csv"), run)
    other = RunResults([EvaluationResult("one", LabeledSet((LabeledQuery("q7", "alpha?", {"a": 1}),), name="s"),
                                         (QueryResult("q7", ("a",)),))])
    with pytest.raises(RetrievalEvalError, match=r"sheet.csv:2: field 'question_id': no question 'q1' in the run"):
        checked(read_worksheet(path), other)


def test_a_row_whose_document_changed_since_the_sheet_was_written_is_refused_naming_file_line_and_field(tmp_path):
    from pytest_retrieval_eval.evaluation.worksheet import unchanged_documents

    run = run_of(one=[["c", "a"], ["x", "e"]])
    sheet = read_worksheet(sheet_file(tmp_path, run))
    unchanged_documents(sheet, CORPUS_ABC)  # as written: nothing to say
    edited = Corpus(tuple(Doc(d.doc_id, d.content + (" edited" if d.doc_id == "c" else ""), title=d.title)
                          for d in CORPUS_ABC.docs), "c")
    line = next(r.line for r in sheet.rows if r.doc_id == "c")
    with pytest.raises(RetrievalEvalError) as caught:
        unchanged_documents(sheet, edited)
    message = str(caught.value)
    assert message.startswith(f"{sheet.path}:{line}: field 'doc_sha256': document c reads otherwise than the "
                              "sheet's doc_sha256 says (corpus ") and "nothing recorded" in message and "\n" not in message
    gone = Corpus(tuple(d for d in CORPUS_ABC.docs if d.doc_id != "e"), "c")
    with pytest.raises(RetrievalEvalError, match=r"field 'doc_sha256': document e is not in the corpus"):
        unchanged_documents(sheet, gone)


def test_a_filled_sheet_round_trips_into_the_judgments_file_as_human_grades_keyed_by_what_was_read(tmp_path):
    run = run_of(one=[["c", "a", "d"], ["x", "e", "b"]], two=[["d", "f", "a"], ["e", "g"]])
    path = sheet_file(tmp_path, run, depth=3)
    # a spreadsheet saved it: ';' between cells, 2.0 for 2
    path.write_text(path.read_text().replace(",", ";").replace(";2;3;", ";2.0;3;"))
    sheet = read_worksheet(path)
    written = checked(sheet, run)
    assert sheet.depth == 3 and all(j.kind == "human" and j.judge == HUMAN and j.depth == 3 for j in written)
    from pytest_retrieval_eval._atomic import locked  # noqa: F401  (what the command writes under)
    from pytest_retrieval_eval.data.judgments import rewrite

    file = tmp_path / "judgments.jsonl"
    rewrite(file, Judgments(written))
    again = Judgments.load(file)
    asked = {"q1": {question_sha256("alpha?")}, "q2": {question_sha256("beta?")}}
    human = again.human_judged(asked)
    assert set(human) == {"q1", "q2"} and all(depth == 3 for depth, _ in human.values())
    expected = {(r.query_id, r.doc_id): r.grade for r in sheet.rows}
    assert {(q, d): g for q, (_, grades) in human.items() for d, g in grades.items()} == expected
    assert again.human_judged({"q1": {question_sha256("alpha, reworded?")}}) == {}  # another wording: not used
    jsonschema = pytest.importorskip("jsonschema")
    schema = json.loads(importlib.resources.files("pytest_retrieval_eval.data")
                        .joinpath("judgments.schema.json").read_text())
    for line in file.read_text().splitlines():
        jsonschema.validate(json.loads(line), schema)
    # a person's grades are no LLM judge: a run reading the file finds no judge to fill holes with
    judged, found = with_judgments(run, again, shown_path=str(file))
    assert found is None and judged is run


# --- the command --------------------------------------------------------------------------------------

def saved_run(tmp_path, n=40):
    """A results.json of two engines over the bundled corpus, its questions tagged in two products."""
    corpus = open_corpus(CORPUS).load()
    ids = [d.doc_id for d in corpus.docs]
    queries = [LabeledQuery(f"q{i:02d}", f"what about {corpus.docs[i % len(ids)].title} ({i})?",
                            {ids[i % len(ids)]: 1}, tags=("product:bikes" if i % 4 else "product:app",))
               for i in range(n)]
    labeled = LabeledSet(tuple(queries), name="set")
    context = {"corpus": corpus.name, "corpus_fingerprint": corpus.fingerprint}
    evals = [EvaluationResult(engine, labeled, tuple(QueryResult(q.query_id, tuple((ids * 2)[i + shift:i + shift + 4]))
                                                     for i, q in enumerate(queries)), context=context)
             for engine, shift in (("kw", 0), ("dense", 2))]
    run = RunResults(evals)
    path = tmp_path / "results.json"
    path.write_text(results_text(run, GateSettings().for_run(run, DEFAULT_TABLE_MEASURES)))
    return path


def test_judge_worksheet_writes_a_sheet_a_filled_copy_imports_and_an_empty_grade_is_refused(tmp_path, capsys,
                                                                                           monkeypatch):
    monkeypatch.chdir(tmp_path)
    results = saved_run(tmp_path)
    sheet, judgments = tmp_path / "sheet.csv", tmp_path / "judgments.jsonl"
    assert cli(["judge", str(results), "--worksheet=30", f"--corpus={CORPUS}", "--judge-depth=3",
                f"--worksheet-file={sheet}", f"--judgments={judgments}"]) == 0
    out = capsys.readouterr().out
    rows = parsed(sheet.read_text(encoding="utf-8"))
    assert len({r["question_id"] for r in rows}) == 30 and f"{sheet}: 30 question(s), {len(rows)} document(s)" in out
    app = Counter(int(q[1:]) % 4 == 0 for q in {r["question_id"] for r in rows})[True]
    assert app in (7, 8)  # 30 of 40 in proportion: 10 app questions make 7.5, the tie to the seed
    assert (tmp_path / "sheet.README.md").is_file() and SCALE[3] in (tmp_path / "sheet.README.md").read_text()
    command = next(line for line in out.splitlines() if line.startswith("when filled: "))
    argv = command.removeprefix("when filled: python -m pytest_retrieval_eval ").split()
    assert argv == ["judge", str(results), f"--import-worksheet={sheet}", f"--judgments={judgments}",
                    f"--corpus={CORPUS}"]  # the corpus the grades' documents are checked against

    copy = tmp_path / "filled.csv"
    copy.write_text(filled(sheet.read_text(encoding="utf-8"), lambda i, row: "" if i == 4 else i % 4))
    argv[2] = f"--import-worksheet={copy}"
    assert cli(argv) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"error: {copy}:6: field 'grade': grade is empty") and len(err.splitlines()) == 1
    assert not judgments.exists()  # nothing written

    copy.write_text(filled(sheet.read_text(encoding="utf-8")))
    assert cli(argv) == 0
    assert f"recorded {len(rows)} human grade(s) of 30 question(s)" in capsys.readouterr().out
    human = Judgments.load(judgments).human_judged()
    assert len(human) == 30 and {depth for depth, _ in human.values()} == {3}
    # a person's grades fill no hole: the judged numbers still need an LLM judge, and say so
    assert cli(["report", str(results), f"--judgments={judgments}"]) == 2
    assert "no judgment by an LLM judge in the file (a worksheet's human grades fill no hole" in \
        capsys.readouterr().err

    # the next worksheet picks among the questions not yet human-judged
    assert cli(["judge", str(results), "--worksheet=30", f"--corpus={CORPUS}", f"--worksheet-file={sheet}",
                f"--judgments={judgments}"]) == 0
    assert "note: 10 question(s) to pick from; 30 already human-judged" in capsys.readouterr().out
    assert not {r["question_id"] for r in parsed(sheet.read_text(encoding="utf-8"))} & set(human)


@pytest.mark.parametrize("edit, field", [
    (lambda d: d.pop("depth"), "depth"),
    (lambda d: d.update(depth=0), "depth"),
    (lambda d: d.update(kind="hole"), "depth"),  # only a human grade is judged to a depth
    (lambda d: d.pop("question_sha256"), "question_sha256"),
])
def test_a_human_line_without_its_depth_or_question_is_refused_by_loader_and_schema(tmp_path, edit, field):
    jsonschema = pytest.importorskip("jsonschema")
    schema = json.loads(importlib.resources.files("pytest_retrieval_eval.data")
                        .joinpath("judgments.schema.json").read_text())
    run = run_of(one=[["c", "a"], ["x", "e"]])
    good = checked(read_worksheet(sheet_file(tmp_path, run)), run)[0].to_dict()
    jsonschema.validate(good, schema)
    bad = json.loads(json.dumps(good))
    edit(bad)
    path = tmp_path / "judgments.jsonl"
    path.write_text(json.dumps(bad) + "\n")
    with pytest.raises(RetrievalEvalError, match=rf"^{path}:1: field '{field}'"):
        Judgments.load(path)
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(bad, schema)


def test_human_grades_beside_an_llm_judges_are_not_counted_as_another_judge_and_the_llm_judge_is_read(tmp_path):
    from pytest_retrieval_eval.data.judges import Judge
    from pytest_retrieval_eval.data.judgments import Judgment

    run = run_of(one=[["c", "a"], ["x", "e"]])
    llm = Judge("model-a", "p" * 64, 0.0, 1, "127.0.0.1")
    hole = Judgment("q1", "c", 3, (3,), CORPUS_ABC.get("c").fingerprint, llm, "hole", None, question_sha256("alpha?"))
    human = checked(read_worksheet(sheet_file(tmp_path, run)), run)
    judgments = Judgments([hole, *human])  # the worksheet imported last: still the LLM judge is read
    run, used = with_judgments(run, judgments, shown_path="j.jsonl")
    assert used.judge == llm and used.used == 1 and used.other_judges == 0


# --- a turn of a conversation -----------------------------------------------------------------------

def test_a_turns_row_carries_the_conversation_so_far_and_a_sheet_for_another_history_is_refused(tmp_path):
    from pytest_retrieval_eval.types import Turn

    def turns(reply: str) -> RunResults:
        first = "How do I connect to the VPN?"
        queries = (LabeledQuery("c1#1", first, {"a": 1}, conversation="c1", turn=1),
                   LabeledQuery("c1#2", "and does it need a code?", {"b": 1}, conversation="c1", turn=2,
                                history=(Turn("user", first), Turn("assistant", reply))))
        labeled = LabeledSet(queries, name="set")
        return RunResults([EvaluationResult("one", labeled, (QueryResult("c1#1", ("c", "a")),
                                                             QueryResult("c1#2", ("c", "b"))))])

    run = turns("Use the client.")
    path = sheet_file(tmp_path, run)
    rows = {(r["question_id"], r["doc_id"]): r["question"] for r in parsed(path.read_text())}
    assert rows[("c1#1", "a")] == "How do I connect to the VPN?"  # a first turn reads as a question
    assert rows[("c1#2", "c")] == ("and does it need a code? (earlier in the conversation: user: How do I connect to "
                                   "the VPN? / assistant: Use the client.)")
    [one] = [j for j in checked(read_worksheet(path), run) if (j.query_id, j.doc_id) == ("c1#2", "c")]
    assert one.question_sha256 == run.evaluations[0].labeled.by_id()["c1#2"].asked_sha256
    with pytest.raises(RetrievalEvalError, match=r"sheet.csv:4: field 'question': the question reads otherwise"):
        checked(read_worksheet(path), turns("Use the wifi app."))  # "it" is something else now


def test_a_sheet_that_holds_grades_is_never_written_over_and_the_refusal_says_what_to_run(tmp_path, capsys,
                                                                                       monkeypatch):
    import shlex

    monkeypatch.chdir(tmp_path)
    results = saved_run(tmp_path)
    sheet, judgments = tmp_path / "sheet.csv", tmp_path / "judgments.jsonl"
    write = ["judge", str(results), "--worksheet=5", f"--corpus={CORPUS}", "--judge-depth=2",
             f"--worksheet-file={sheet}", f"--judgments={judgments}"]
    assert cli(write) == 0
    assert cli(write) == 0  # a blank sheet: written over, nothing lost
    capsys.readouterr()
    sheet.write_text(filled(sheet.read_text(encoding="utf-8"), lambda i, row: "" if i else 2))  # one row graded
    work = sheet.read_text()

    def refused() -> str:
        assert cli(write) == 2
        err = capsys.readouterr().err
        assert err.startswith(f"error: {sheet}: holds 1 grade(s)") and len(err.strip().splitlines()) == 1
        assert sheet.read_text() == work and "1 of them not recorded in" in err  # the person's grades kept
        return err.split("`")[1]

    command = refused()
    assert shlex.split(command)[:3] == ["python", "-m", "pytest_retrieval_eval"]
    assert f"--import-worksheet={sheet}" in command
    sheet.write_text(filled(work))  # filled whole, as the person would before importing
    work = sheet.read_text()
    assert cli(shlex.split(command)[3:]) == 0  # the command as printed records them
    capsys.readouterr()
    assert cli(write) == 2  # recorded, and still not written over
    err = capsys.readouterr().err
    assert err.startswith(f"error: {sheet}: holds ") and "recorded in" in err and sheet.read_text() == work
    elsewhere = err.split("`")[1]
    assert cli(shlex.split(elsewhere)[3:]) == 0  # the command as printed writes the next sheet beside it
    assert (tmp_path / "sheet-2.csv").is_file() and sheet.read_text() == work


def test_judge_import_worksheet_refuses_a_row_whose_document_changed_and_records_nothing(tmp_path, capsys,
                                                                                       monkeypatch):
    import shutil

    monkeypatch.chdir(tmp_path)
    results = saved_run(tmp_path)
    sheet, judgments = tmp_path / "sheet.csv", tmp_path / "judgments.jsonl"
    assert cli(["judge", str(results), "--worksheet=5", f"--corpus={CORPUS}", "--judge-depth=2",
                f"--worksheet-file={sheet}", f"--judgments={judgments}"]) == 0
    sheet.write_text(filled(sheet.read_text(encoding="utf-8")))
    rows = parsed(sheet.read_text())
    corpus = tmp_path / "corpus"
    shutil.copytree(CORPUS, corpus)
    doc = rows[3]["doc_id"]
    edited = next(p for p in corpus.rglob("*.json") if json.loads(p.read_text()).get("doc_id") == doc)
    record = json.loads(edited.read_text())
    edited.write_text(json.dumps({**record, "content": record["content"] + " Edited since."}))
    capsys.readouterr()
    assert cli(["judge", str(results), f"--import-worksheet={sheet}", f"--judgments={judgments}",
                f"--corpus={corpus}"]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"error: {sheet}:5: field 'doc_sha256': document {doc} reads otherwise than the "
                          "sheet's doc_sha256 says (corpus ")
    assert len(err.strip().splitlines()) == 1 and not judgments.exists()
