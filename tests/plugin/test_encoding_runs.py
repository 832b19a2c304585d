"""Text that cannot be encoded (a lone surrogate from a JSON \\ud800 escape) in a
document or a question is an error naming file, line and field, never a traceback from the
fingerprinting."""

from __future__ import annotations


import pytest

from conftest import QUESTIONS


def test_the_plugin_run_says_file_line_and_field(pytester, tmp_path):
    folder = tmp_path / "corpus"
    folder.mkdir()
    (folder / "a.json").write_text('{"doc_id": "a", "content": "bad \\ud800 text"}')
    pytester.makeini(f"[pytest]\nretrieval_corpus = {folder}\nretrieval_questions = {QUESTIONS}\nretrieval_engines = keyword\n")
    pytester.makepyfile("def test_x(retrieval_corpus):\n    pass\n")
    result = pytester.runpytest()  # a broken corpus file stops the run before any test
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*a.json:1: field 'content': document 'a': contains an unpaired surrogate*"])
    assert "Traceback" not in result.stdout.str() + result.stderr.str()
