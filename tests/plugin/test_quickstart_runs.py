"""The quickstart's CI job in an eval repository that is no Python package: a corpus, labels, a
conftest.py with the team's search and its tests, no pyproject.toml. The job's install step names
the plugin, not the repository (nothing is installed here: the plugin already is), and its pytest
step runs as printed and writes the report folder and the page the upload step publishes."""

from __future__ import annotations

import re
import shlex
import shutil
import textwrap

from conftest import CORPUS, QUESTIONS, REPO
from projects import installs_the_repository, run_in

#: the team's own search, over its corpus folder: the words a question shares with each document
CONFTEST = """
    import json
    from pathlib import Path

    from pytest_retrieval_eval import adapters

    DOCS = {d["doc_id"]: set(d["content"].lower().split())
            for d in (json.loads(p.read_text()) for p in (Path(__file__).parent / "kb").glob("*.json"))}

    def overlap(query, k):
        words = set(query.lower().split())
        return sorted(DOCS, key=lambda d: (-len(words & DOCS[d]), d))[:k]

    def pytest_retrieval_engines(registry, config):
        registry.register("overlap", lambda request: adapters.function(overlap))
"""


def quickstart_job_steps() -> list[str]:
    """The ``run:`` steps of the quickstart's workflow, comments left out."""
    text = (REPO / "docs" / "quickstart.md").read_text(encoding="utf-8")
    block = re.search(r"(?ms)^```yaml\n# \.github/workflows/retrieval\.yml\n(.*?)^```$", text)
    assert block, "the quickstart's workflow block"
    return [line.split("- run:", 1)[1].split(" #", 1)[0].strip() for line in block.group(1).splitlines()
            if "- run:" in line]


def test_the_quickstarts_ci_steps_run_in_an_eval_repository_that_is_no_python_package(tmp_path):
    repo = tmp_path / "eval"
    shutil.copytree(CORPUS, repo / "kb")
    shutil.copy(QUESTIONS, repo / "labels.json")
    (repo / "conftest.py").write_text(textwrap.dedent(CONFTEST))
    (repo / "tests").mkdir()
    (repo / "tests" / "test_retrieval.py").write_text(textwrap.dedent("""
        import pytest

        @pytest.mark.retrieval
        def test_no_errors(retrieval_results):
            assert retrieval_results.n_errored == 0
    """))
    (repo / "pytest.ini").write_text("[pytest]\nretrieval_corpus = kb\nretrieval_questions = labels.json\n")
    install, test = quickstart_job_steps()
    words = shlex.split(install)
    assert words[:2] == ["pip", "install"] and "pytest-retrieval-eval" in words[2:], install
    assert not installs_the_repository(words[2:]), install
    assert not any((repo / name).exists() for name in ("pyproject.toml", "setup.py", "setup.cfg"))
    command = shlex.split(test)
    assert command[0] == "pytest", test
    done = run_in(repo, *command[1:])
    assert done.returncode == 0, done.stdout + done.stderr
    assert "overlap" in done.stdout
    assert (repo / "retrieval-report" / "results.json").is_file() and (repo / "retrieval-report" / "page.html").is_file()
