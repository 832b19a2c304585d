"""A labeled set that tests itself, in a project's own run: ``check --labels --results`` names a
near-duplicate pair, a question copying its document and the questions every engine answers at
rank 1; the run's reports hold the same section; a sharp subset of 20 is written by ``subset``,
selected by ``--retrieval-subset=NAME`` (a baseline of the full set compared over its questions),
and the report says the smallest drop it can detect against the full set's."""

from __future__ import annotations

import json
import re
import subprocess
import sys
import textwrap

import pytest

from conftest import CORPUS, QUESTIONS
from projects import ORACLE_CONFTEST
from pytest_retrieval_eval.cli import main as cli
from pytest_retrieval_eval.archive.saved import load_saved
from pytest_retrieval_eval.ir.stats import detectable_drop

TESTS = "import pytest\n\n@pytest.mark.retrieval\ndef test_q(retrieval_results):\n    pass\n"


def pytest_in(folder, *flags):
    done = subprocess.run([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-p", "no:randomly",
                           "--retrieval-report", "--retrieval-report-dir=out", *flags], cwd=folder,
                          capture_output=True, text=True)
    assert done.returncode == 0, done.stdout + done.stderr
    return done.stdout


@pytest.fixture(scope="module")
def project(tmp_path_factory):
    """The bundled set plus a repeat of its first question and a question copying its second
    question's document, run with the keyword engine and the oracle (always right at rank 1)."""
    folder = tmp_path_factory.mktemp("labeled_set")
    cache = json.loads(QUESTIONS.read_text())
    first, second = cache["queries"][0], cache["queries"][1]
    gold = next(iter(second["relevant"]))
    content = json.loads((CORPUS / f"{gold}.json").read_text())["content"]
    copied = " ".join(content.split()[:16]).rstrip(".,;:") + "?"
    cache["queries"] += [{**first, "id": "repeat", "question": first["question"].upper()},
                         {**second, "id": "copy", "question": copied}]
    (folder / "questions.json").write_text(json.dumps(cache))
    (folder / "tox.ini").write_text(f"[pytest]\nretrieval_corpus = {CORPUS}\nretrieval_questions = questions.json\n"
                                    "retrieval_engines = keyword oracle\n")
    (folder / "conftest.py").write_text(textwrap.dedent(ORACLE_CONFTEST))
    (folder / "test_q.py").write_text(TESTS)
    printed = pytest_in(folder, "--retrieval-save-baseline=base.json")
    return folder, first["id"], printed


def rank_one(results, engine):
    e = next(x for x in json.loads(results.read_text())["evaluations"] if x["engine"] == engine)
    return [q["id"] for q in e["queries"] if q["ranked"] and q["relevant"].get(q["ranked"][0], 0) >= 1]


def test_check_names_the_repeat_the_copy_and_the_questions_every_engine_ranks_first(project, capsys):
    folder, first, _ = project
    code = cli(["check", f"--corpus={CORPUS}", f"--questions={folder / 'questions.json'}",
                f"--results={folder / 'out' / 'results.json'}"])
    out = capsys.readouterr().out.splitlines()
    assert code == 1
    found = {line.split(":")[0].strip(): line for line in out if line.startswith("  ")}
    assert f"near_duplicate: {first}, repeat: 2 questions, the same question" in found["near_duplicate"]
    assert found["leaks_passage"].startswith("  leaks_passage: copy: ")
    everyone = rank_one(folder / "out" / "results.json", "keyword")  # the oracle ranks every gold first
    assert len(everyone) > 3
    assert found["no_signal"].startswith(f"  no_signal: {', '.join(everyone)}: {len(everyone)} of 70 questions")
    assert re.search(r"70 questions checked against .* and the rankings in .*results\.json \(hit@5\): "
                     r"3 finding\(s\)", "\n".join(out))


def test_the_runs_reports_hold_the_same_section_and_report_prints_it_again(project, capsys):
    folder, first, printed = project
    assert "labeled set findings" in printed  # behind -v, named
    md = (folder / "out" / "results.md").read_text()
    section = md.split("## Labeled set", 1)[1].split("\n## ", 1)[0]
    assert f"- near_duplicate: {first}, repeat: " in section and "- leaks_passage: copy: " in section
    assert "- no_signal: " in section
    assert cli(["report", str(folder / "out" / "results.json"), "-v"]) == 0
    again = capsys.readouterr().out
    assert "labeled set: near duplicate 2, leaks passage 1, no signal " in again
    assert "no_signal: " in again


def test_a_subset_of_20_is_written_selected_and_priced_against_the_full_set(project, capsys):
    folder, _, _ = project
    assert cli(["subset", str(folder / "out" / "results.json"), "--size=20", "--name=pr",
                f"--dir={folder / 'subsets'}"]) == 0
    said = capsys.readouterr().out
    chosen = json.loads((folder / "subsets" / "pr.json").read_text())
    assert len(chosen["ids"]) == 20 and chosen["measure"] == "hit@5"
    assert "select it in a run with --retrieval-subset=pr" in said
    printed = pytest_in(folder, "--retrieval-subset=pr", "--retrieval-report-dir=sub", "--retrieval-baseline=base.json")
    run = load_saved(folder / "sub" / "results.json").run
    assert [sorted(q.query_id for q in e.labeled.queries) for e in run.evaluations] == [sorted(chosen["ids"])] * 2
    line = " ".join(printed.split("subset pr: ", 1)[1].split("\n")[:2])
    for e in run.evaluations:
        mine = detectable_drop(e.values("hit@5"))
        full = chosen["detectable_drop"][e.engine]["full"]
        assert f"{e.engine} {mine:.3f} (all 70: {full:.3f})" in " ".join(line.split())
    assert printed.count("subset pr: 20 of 70 questions") == 1
    assert "refused" not in printed  # the full set's baseline, compared over the subset's questions
    assert printed.count("compared over the 20 questions both hold; 50 only in the baseline") == 2
    assert "## Labeled set\n\n- subset pr: 20 of 70 questions" in (folder / "sub" / "results.md").read_text()


def test_a_subset_run_names_a_missing_subset_file_with_the_command_that_writes_it(project):
    folder, _, _ = project
    done = subprocess.run([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "--retrieval-subset=nightly"],
                          cwd=folder, capture_output=True, text=True)
    assert done.returncode != 0
    assert "subsets/nightly.json: no such subset file; write one with python -m pytest_retrieval_eval subset " \
           "results.json --size=20 --name=nightly" in done.stdout + done.stderr
