"""Unusable caches. A corrupt embedding cache is set aside with a warning and
rebuilt; a location that cannot hold one (a file where the folder should be, a read-only
filesystem) is one clear error naming it, in the library and in a pytest run."""

from __future__ import annotations

import subprocess

import pytest

from conftest import CORPUS, QUESTIONS
from pytest_retrieval_eval import RetrievalEvalError
from pytest_retrieval_eval.hybrid.embedding_cache import EmbeddingCache


@pytest.fixture
def read_only_dir(tmp_path):
    target = tmp_path / "ro"
    target.mkdir()
    (target / "seed").write_text("x")
    done = subprocess.run(["mount", "-t", "tmpfs", "-o", "ro,size=1m", "tmpfs", str(target)], capture_output=True)
    if done.returncode != 0:
        pytest.skip(f"not applicable: cannot mount a read-only tmpfs here ({done.stderr.decode().strip()})")
    yield target
    subprocess.run(["umount", str(target)], capture_output=True)


def test_a_read_only_location_is_one_clear_error(read_only_dir):
    with pytest.raises(RetrievalEvalError) as info:
        EmbeddingCache(read_only_dir / "sub" / "embeddings.sqlite3")
    assert str(read_only_dir / "sub") in str(info.value) and "Read-only file system" in str(info.value)
    with pytest.raises(RetrievalEvalError, match=r"embedding cache cannot be used: .*--retrieval-cache-dir"):
        EmbeddingCache(read_only_dir / "embeddings.sqlite3")


def test_in_a_pytest_run_the_error_names_the_path_without_a_traceback(pytester, tmp_path):
    blocker = tmp_path / "blocked"
    blocker.write_text("file")
    pytester.makeini(f"[pytest]\nretrieval_corpus = {CORPUS}\nretrieval_questions = {QUESTIONS}\n"
                     f"retrieval_cache_dir = {blocker}\nretrieval_embedder = hashing:32\n")
    pytester.makepyfile("def test_x(retrieval_embedder):\n    pass\n")
    result = pytester.runpytest()
    # one usage error before anything starts, naming the option and the path
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines([f"*--retrieval-cache-dir / retrieval_cache_dir names a folder, and {blocker} is a file*"])
    text = result.stdout.str() + result.stderr.str()
    assert "Traceback" not in text and "sqlite3." not in text
