"""The session's inputs (``plugin/inputs.py``): the labeled set is read once per file as it is,
whether collection (which names the engines) or the session asks first."""

from __future__ import annotations

import os
import shutil

from conftest import QUESTIONS
from pytest_retrieval_eval.plugin.inputs import load_labels_once


def test_a_questions_file_is_read_once_until_it_changes(tmp_path):
    path = tmp_path / "questions.cache.json"
    shutil.copy(QUESTIONS, path)
    first = load_labels_once(path)
    assert load_labels_once(path) is first and len(first) == 68
    text = path.read_text()
    path.write_text(text.replace('"queries": [', '"queries": [\n    ', 1))  # the same questions, another file
    st = os.stat(path)
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns + 1_000_000))
    again = load_labels_once(path)
    assert again is not first and again.fingerprint == first.fingerprint
