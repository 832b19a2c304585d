"""The retry rules of every remote JSON call (rerank; generation later), against a real server."""

import pytest

httpx = pytest.importorskip("httpx")  # the hybrid extra

from conftest import FAKE_KEY
from fake_api import FakeApi, Reply
from pytest_retrieval_eval import RetrievalEvalError
from pytest_retrieval_eval._http import post_json


@pytest.fixture
def api():
    with FakeApi() as a:
        yield a


def call(api, *, retries=3, timeout=5.0, sleeps=None):
    with httpx.Client(timeout=timeout) as client:
        return post_json(client, f"{api.url}/x", {"q": 1}, api_key=FAKE_KEY, retries=retries,
                         sleep=(sleeps.append if sleeps is not None else lambda s: None))


def test_success_sends_the_bearer_key(api):
    api.script("/x", Reply(200, {"ok": True}))
    assert call(api) == {"ok": True}
    assert api.hits("/x")[0].headers["authorization"] == f"Bearer {FAKE_KEY}"


def test_429_honours_retry_after_then_succeeds(api):
    sleeps = []
    api.script("/x", Reply(429, {"e": 1}, {"retry-after": "7"}), Reply(503, {"e": 2}), Reply(200, {"ok": 1}))
    assert call(api, sleeps=sleeps) == {"ok": 1}
    assert sleeps == [7.0, 1.0]  # the server's Retry-After, then exponential backoff (0.5 * 2**1)


def test_500_gives_up_after_the_retries_and_says_so(api):
    api.script("/x", Reply(500, {"error": "boom"}))
    with pytest.raises(RetrievalEvalError, match=r"failed after 3 attempts: HTTP 500"):
        call(api, retries=2)
    assert len(api.hits("/x")) == 3


def test_401_fails_at_once_without_echoing_the_key(api):
    api.script("/x", Reply(401, {"error": f"invalid key {FAKE_KEY}"}))
    with pytest.raises(RetrievalEvalError) as info:
        call(api)
    assert len(api.hits("/x")) == 1
    assert "HTTP 401" in str(info.value) and "check the API key" in str(info.value)
    assert FAKE_KEY not in str(info.value) and "***" in str(info.value)


def test_timeouts_are_retried_then_reported(api):
    api.script("/x", Reply(200, {"ok": 1}, delay=1.0))
    with pytest.raises(RetrievalEvalError, match="failed after 2 attempts: timed out"):
        call(api, retries=1, timeout=0.2)
