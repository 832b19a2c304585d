"""Calls are counted where they are made (``_http.request_json``): every attempt sent, a retry
and a failed one too, and the summaries of generation and the judge read that count rather
than counting answers of their own."""

from __future__ import annotations

import pytest

httpx = pytest.importorskip("httpx")

from conftest import CORPUS, requires_hybrid
from fake_api import FakeApi, Reply
from pytest_retrieval_eval import RetrievalEvalError
from pytest_retrieval_eval._http import request_json
from pytest_retrieval_eval._usage import Meter, metering


@pytest.fixture
def api():
    with FakeApi() as a:
        yield a


def test_every_attempt_is_a_call_whatever_its_retry_after_says(api):
    api.script("/x", Reply(429, {"e": 1}, {"retry-after": "soon"}))
    with httpx.Client(timeout=5) as client, metering(Meter()) as meter:
        with pytest.raises(RetrievalEvalError, match="failed after 3 attempts: HTTP 429"):
            request_json(client, "POST", f"{api.url}/x", json={"model": "m"}, retries=2, sleep=lambda s: None)
    assert meter.to_dict() == {"m": [3, 0, 0]} and len(api.hits("/x")) == 3


def test_the_judges_summary_counts_every_call_made(fake_api, tmp_path):
    from pytest_retrieval_eval.data.corpus import open_corpus
    from pytest_retrieval_eval.data.judge import JudgeConfig, Pair, judge_pairs

    fake_api.script("/chat/completions", Reply(429, {"error": "busy"}, {"retry-after": "soon"}))
    doc = open_corpus(CORPUS).load().docs[0]
    report = judge_pairs([Pair("q1", "what about it?", doc.doc_id, doc.content, doc.fingerprint)],
                         tmp_path / "j.jsonl", JudgeConfig(model="m", retries=2))
    assert len(fake_api.hits("/chat/completions")) == 3
    assert len(report.failed) == 1 and "(3 call(s)," in report.summary()


@requires_hybrid
def test_the_generation_summary_counts_every_call_made(fake_api, tmp_path):
    from fake_api import chat_reply
    from pytest_retrieval_eval.data.chunking import chunk_corpus
    from pytest_retrieval_eval.data.corpus import open_corpus
    from pytest_retrieval_eval.data.generate import GeneratorConfig, generate_questions

    fake_api.script("/chat/completions", Reply(429, {"error": "busy"}, {"retry-after": "soon"}), Reply(200, chat_reply()))
    corpus = open_corpus(CORPUS).load()
    report = generate_questions(corpus, chunk_corpus(corpus)[:2], tmp_path / "q.json",
                                config=GeneratorConfig(model="m", concurrency=1, retries=2))
    assert len(report.generated) == 2 and len(fake_api.hits("/chat/completions")) == 3
    assert report.calls == 3 and report.summary().endswith("; 3 call(s)")
