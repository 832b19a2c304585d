"""``check`` (and ``check --labels``, ``--results``) in a team's own project: it reads the
corpus and questions the project's ini file names (pyproject.toml, as pytest finds it, from a
subfolder too), falls back to the corpus the saved run recorded, and when there is none to find
says how to name it."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import textwrap

import pytest

from conftest import REPO

KB = REPO / "examples" / "helpdesk" / "kb"
ROWS = [("My internet tunnel to work keeps dropping at the hotel", "vpn-setup"),
        ("I forgot my login as a contractor", "password-reset"),
        ("Where do print jobs wait before I pick them up", "printer-queue")]
ENGINE = """
    import json
    from pathlib import Path

    GOLD = dict(json.loads((Path(__file__).parent / "gold.json").read_text()))

    class Ours:
        name = "ours"

        def retrieve(self, query, k):
            return [GOLD[query]]

    def pytest_retrieval_engines(registry, config):
        registry.register("ours", lambda request: Ours())
"""
PYPROJECT = '[tool.pytest.ini_options]\nretrieval_corpus = "kb"\nretrieval_questions = "questions.cache.json"\n'


def run(cwd, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, *args], cwd=cwd, capture_output=True, text=True, timeout=120)


@pytest.fixture
def project(tmp_path):
    """The helpdesk kb, three imported questions, a saved run in out/results.json; the
    pyproject.toml names the corpus and the questions."""
    shutil.copytree(KB, tmp_path / "kb")
    (tmp_path / "labels.csv").write_text("question,doc_id\n" + "".join(f"{q},{d}\n" for q, d in ROWS))
    (tmp_path / "gold.json").write_text(json.dumps(ROWS))
    (tmp_path / "conftest.py").write_text(textwrap.dedent(ENGINE))
    (tmp_path / "test_x.py").write_text("import pytest\n\n@pytest.mark.retrieval\ndef test_x(retrieval_results):\n"
                                        "    pass\n")
    (tmp_path / "pyproject.toml").write_text(PYPROJECT + 'retrieval_engines = "ours"\n')
    done = run(tmp_path, "-m", "pytest_retrieval_eval", "label", "import", "labels.csv", "--corpus", "kb",
               "--questions", "questions.cache.json")
    assert done.returncode == 0, done.stderr
    done = run(tmp_path, "-m", "pytest", "-p", "no:cacheprovider", "-p", "no:randomly", "-m", "retrieval",
               "--retrieval-report-dir=out")
    assert done.returncode == 0, done.stdout + done.stderr
    return tmp_path


@pytest.mark.parametrize("flags", [(), ("--labels",), ("--labels", "--results=out/results.json")],
                         ids=["check", "labels", "results"])
def test_check_reads_the_corpus_and_questions_the_projects_pyproject_names(project, flags):
    done = run(project, "-m", "pytest_retrieval_eval", "check", *flags)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "questions.cache.json: 3 of 3 questions checked, up to date with kb" in done.stdout, done.stdout


def test_check_from_a_subfolder_finds_the_projects_ini_and_its_paths(project):
    (project / "tests").mkdir()
    done = run(project / "tests", "-m", "pytest_retrieval_eval", "check", "--labels")
    assert done.returncode == 0, done.stdout + done.stderr
    assert f"3 of 3 questions checked, up to date with {project / 'kb'}" in done.stdout, done.stdout


def test_check_given_a_saved_run_reads_the_corpus_it_recorded_when_the_ini_names_none(project):
    (project / "pyproject.toml").write_text('[tool.pytest.ini_options]\nretrieval_engines = "ours"\n')
    done = run(project, "-m", "pytest_retrieval_eval", "check", "--labels", "--questions=questions.cache.json",
               "--results=out/results.json")
    assert done.returncode == 0, done.stdout + done.stderr
    assert f"corpus: {project / 'kb'}, the one the run searched (kb)" in done.stdout, done.stdout
    assert "3 of 3 questions checked, up to date with " in done.stdout, done.stdout


def test_check_without_a_corpus_to_find_says_how_to_name_it(project):
    (project / "pyproject.toml").write_text('[tool.pytest.ini_options]\nretrieval_questions = "questions.cache.json"\n')
    done = run(project, "-m", "pytest_retrieval_eval", "check", "--labels")
    assert done.returncode == 2, done.stdout + done.stderr
    said = done.stderr
    assert "corpus folder not found" in said and "--corpus=PATH" in said and "retrieval_corpus" in said, said
    shown = run(project, "-m", "pytest_retrieval_eval", "check", "--labels", "--corpus=kb")  # as the message says
    assert shown.returncode == 0, shown.stdout + shown.stderr
