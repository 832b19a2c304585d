"""Staleness of the questions cache against the corpus, BEIR folders as labeled sets, and
regeneration from inside a session."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from conftest import QUESTIONS, requires_hybrid, write_docs
from fake_api import Reply, chat_reply
from pytest_retrieval_eval.data.labeled import load_questions_cache
from projects import make_beir

TESTS = """
    import pytest

    pytestmark = pytest.mark.retrieval

    def test_quality(retrieval_results):
        assert retrieval_results.hit_at(20) >= 0.05
"""


@pytest.fixture
def project(make_project):
    """A project with its own copy of the bundled corpus and questions, keyword engine only."""
    return make_project(copy=("corpus", "questions"), tests=TESTS)


def edit(path, **fields):
    doc = json.loads(path.read_text())
    doc.update(fields)
    path.write_text(json.dumps(doc))


def test_an_edited_document_fails_the_run_by_name_and_leaves_the_cache_alone(project):
    edit(project.path / "corpus" / "battery-care.json", content="Charge it whenever you like; batteries are immortal.")
    before = (project.path / "questions.cache.json").read_bytes()
    result = project.runpytest("-m", "retrieval", "--retrieval-report", "--retrieval-stale=error")
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    out = result.stdout.str()
    assert "questions.cache.json is stale against the corpus corpus:" in out
    assert "changed: battery-care (2 questions: battery-care.q1, battery-care.q2)" in out
    assert "Regenerate the questions of what changed: python -m pytest_retrieval_eval generate --corpus corpus --questions questions.cache.json" in out
    assert (project.path / "questions.cache.json").read_bytes() == before


def test_a_quoted_price_edited_from_5_to_15_euros_blocks_the_run_naming_the_quote(make_project, capsys):
    from pytest_retrieval_eval.cli import main as cli

    p = make_project(corpus=Path("kb"), questions=Path("questions.cache.json"))
    text = "Lockers are on the ground floor. A locker costs 5 euros a month, paid at the desk."
    kb = write_docs(p.path / "kb", [{"doc_id": "lockers", "title": "Lockers", "content": text}])
    (p.path / "labels.csv").write_text("id,question,doc_id,evidence\nlocker,what does a locker cost,lockers,"
                                       "5 euros a month\nfloor,where are the lockers,lockers,on the ground floor\n")
    assert cli(["label", "import", str(p.path / "labels.csv"), "--corpus", str(kb),
                "--questions", str(p.path / "questions.cache.json")]) == 0
    capsys.readouterr()
    edit(kb / "lockers.json", content=text.replace("5 euros", "15 euros"))  # "5 euros a month" is still a substring
    result = p.runpytest("-m", "retrieval", "--retrieval-report", "--retrieval-stale=error")
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    out = result.stdout.str()
    assert "changed: lockers (1 question: locker)" in out
    assert "locker: its evidence '5 euros a month' is no longer in lockers" in out
    assert "floor:" not in out  # its quote is still there: fresh


def test_warn_mode_evaluates_every_question_and_a_deleted_gold_misses_not_in_the_corpus(project):
    (project.path / "corpus" / "lost-keys.json").unlink()
    edit(project.path / "corpus" / "battery-care.json", content="Charge it whenever you like.")
    result = project.runpytest("-m", "retrieval", "--retrieval-report", "--retrieval-stale=warn", "-W", "default",
                               f"--retrieval-report-dir={project.path / 'report'}")
    assert result.ret == 0
    result.stdout.fnmatch_lines(["*StaleQuestionsWarning*", "keyword *68*0", "keyword missed 46 of 68 at hit@5: 2 not in the corpus*"])
    page = json.loads((project.path / "report" / "results.json").read_text())
    causes = {q["id"]: q["why"] for q in page["misses"][0]["queries"]}
    assert causes["lost-keys.q1"] == causes["lost-keys.q2"] == "not in the corpus: lost-keys"


@requires_hybrid
def test_regenerate_in_session_fills_what_changed(project, fake_api):
    fake_api.script("/chat/completions", Reply(200, chat_reply(lambda passage: "How should I look after the power pack?")))
    edit(project.path / "corpus" / "battery-care.json", content="Store the pack half charged in a cool dry room.")
    result = project.runpytest("-m", "retrieval", "--retrieval-report", "--retrieval-regenerate")
    assert result.ret == 0, result.stdout.str()
    assert len(fake_api.hits("/chat/completions")) == 1
    labeled = load_questions_cache(project.path / "questions.cache.json")
    assert labeled.by_id()["battery-care:0#1"].question == "How should I look after the power pack?"
    assert "battery-care.q1" not in labeled.by_id() and len(labeled) == 67
    assert "generated 1, kept 66, dropped 2 stale, failed 0" in result.stdout.str()


def test_a_beir_folder_is_its_own_labeled_set(pytester, tmp_path):
    beir = make_beir(tmp_path / "beir")
    (beir / "qrels" / "train.tsv").write_text("query-id\tcorpus-id\tscore\nq3\td2\t1\n")
    # the ini names a questions cache (as this repo's does): a BEIR corpus brings its own queries
    pytester.makeini(f"[pytest]\nretrieval_questions = {QUESTIONS}\nretrieval_engines = keyword\n")
    pytester.makepyfile(TESTS.replace("hit_at(20) >= 0.05", "n >= 1"))
    # --opt=PATH, not --opt PATH: pytest picks its rootdir before plugin options are known, and
    # would take a separate PATH argument for a test path
    result = pytester.runpytest("-m", "retrieval", "--retrieval-report", f"--retrieval-corpus={beir}")
    assert result.ret == 0, result.stdout.str()
    result.stdout.fnmatch_lines(["engine *hit@1*mrr*ndcg@10*n*errored", "keyword * 2 *0"])
    result = pytester.runpytest("-m", "retrieval", "--retrieval-report", f"--retrieval-corpus={beir}",
                                "--retrieval-split", "train")
    result.stdout.fnmatch_lines(["keyword * 1 *0"])


@requires_hybrid
def test_by_default_a_stale_question_is_listed_and_left_out_not_blocking(project):
    path = project.path / "corpus" / "damage-assessment.json"
    edit(path, content=json.loads(path.read_text())["content"] + " Photos may also be sent by post.")
    result = project.runpytest("-m", "retrieval", "--retrieval-report", "-v")
    assert result.ret == 0, result.stdout.str()
    out = result.stdout.str()
    assert "questions.cache.json: n 67, 1 stale left out of the numbers and the gates" in out
    assert "  damage-assessment.q4 '" in out and "': changed: damage-assessment" in out
    assert "damage-assessment.q1 '" not in out
    result.stdout.fnmatch_lines(["keyword *67*0"])
