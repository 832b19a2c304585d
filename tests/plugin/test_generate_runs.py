"""Question generation against a real local chat-completions server: answers, retries, failures,
fail-loud accounting, resumption, and the cache it keeps intact."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

import pytest

from conftest import FAKE_KEY, requires_hybrid
from fake_api import FakeApi, Reply, chat_reply
from projects import small_corpus
from pytest_retrieval_eval.data.labeled import load_questions_cache

pytestmark = requires_hybrid  # chunking and the embedders run Haystack


@pytest.fixture
def small(tmp_path):
    return small_corpus(tmp_path / "corpus")


def test_a_killed_run_leaves_a_valid_cache_and_the_rerun_fills_only_the_rest(small, tmp_path):
    path = tmp_path / "q.json"
    with FakeApi() as api:
        api.script("/chat/completions", Reply(200, chat_reply(), delay=0.5))
        env = {**os.environ, "RETRIEVAL_EVAL_BASE_URL": api.url, "RETRIEVAL_EVAL_API_KEY": FAKE_KEY}
        cmd = [sys.executable, "-m", "pytest_retrieval_eval", "generate", "--corpus", str(small), "--questions",
               str(path), "--split-length", "30", "--split-overlap", "5", "--concurrency", "1"]
        proc = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            if path.exists() and len(load_questions_cache(path)) >= 2:
                break
            time.sleep(0.05)
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        have = load_questions_cache(path)  # valid JSON, the right format
        assert 2 <= len(have) < 4
        asked_before = len(api.hits("/chat/completions"))
        done = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=60)
        assert done.returncode == 0, done.stderr
        assert f"generated {4 - len(have)}, kept {len(have)}" in done.stdout
        assert len(api.hits("/chat/completions")) - asked_before == 4 - len(have)
    assert len(load_questions_cache(path)) == 4
