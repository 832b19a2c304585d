import json
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
CORPUS = REPO / "corpus"
QUESTIONS = REPO / "questions.cache.json"


@pytest.fixture
def bundled_project(pytester):
    """A pytester project wired to the repository's bundled corpus and questions; only the
    keyword engine unless a test asks for more (``--retrieval-engine`` overrides the ini)."""
    pytester.makeini(
        f"""
        [pytest]
        retrieval_corpus = {CORPUS}
        retrieval_questions = {QUESTIONS}
        retrieval_engines = keyword
        """
    )
    return pytester


def write_docs(folder: Path, docs: list[dict]) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    for d in docs:
        (folder / f"{d['doc_id']}.json").write_text(json.dumps(d), encoding="utf-8")
    return folder
