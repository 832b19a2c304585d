"""Secrets: text is masked BEFORE it is cut (half a key escapes every mask), and
credentials written into a URL (``user:password@``, ``?api_key=``) never reach a file the
plugin writes or a line it prints; a model's megabyte answer is logged capped."""

from __future__ import annotations

import json
import logging

import httpx
import pytest

from conftest import FAKE_KEY, requires_hybrid, write_docs
from fake_api import FakeApi, Reply, chat_reply
from pytest_retrieval_eval import RetrievalEvalError
from pytest_retrieval_eval._http import api_key_for, post_json, request_json
from pytest_retrieval_eval.cli import main as cli

PASSWORD = "pa55-w0rd-zz81"
QUERY_KEY = "qs-SECRET-77aa11bb"


def pieces(secret: str, n: int = 8) -> list[str]:
    """Every n-character window of ``secret``: a cut key shows one of these."""
    return [secret[i:i + n] for i in range(len(secret) - n + 1)]


def leaks(text: str, secret: str) -> list[str]:
    return [p for p in pieces(secret) if p in text]


def test_mask_and_cap_masks_first_so_a_key_across_the_cut_is_still_masked():
    from pytest_retrieval_eval._secrets import mask_and_cap

    for pad in range(250, 300):
        shown = mask_and_cap("x" * pad + f" Bearer {FAKE_KEY} tail", 300, [FAKE_KEY])
        assert not leaks(shown, FAKE_KEY), pad
    shown = mask_and_cap(f"GET https://team:{PASSWORD}@api.example.com/v1?q=1&api_key={QUERY_KEY}&token=abc123xyz")
    assert shown == "GET https://team:***@api.example.com/v1?q=1&api_key=***&token=***"
    assert mask_and_cap("y" * 5000, 100).endswith("... (5000 characters)") and len(mask_and_cap("y" * 5000, 100)) < 130


def test_a_proxy_page_echoing_the_authorization_header_never_shows_any_part_of_the_key():
    """A proxy answers 403 with an HTML page that repeats the request's headers, the key among
    them, wherever the 300-character cut of the body falls."""
    with FakeApi() as api, httpx.Client(timeout=5) as client:
        messages = []
        for pad in range(0, 320, 4):
            api.script("/chat/completions", Reply(403, "<html><body>denied " + "." * pad + "<pre>", echo_headers=True))
            with pytest.raises(RetrievalEvalError) as info:
                post_json(client, api.url + "/chat/completions", {"model": "m"}, api_key=FAKE_KEY, retries=0)
            messages.append(str(info.value))
    assert all(not leaks(m, FAKE_KEY) for m in messages), [leaks(m, FAKE_KEY) for m in messages]
    assert any("Bearer ***" in m for m in messages) and all("HTTP 403" in m for m in messages)
    assert all(len(m) < 500 for m in messages)


def test_credentials_in_a_url_are_masked_in_every_http_error():
    with FakeApi() as api, httpx.Client(timeout=5) as client:
        api.script("/search", Reply(404, {"error": "no such index"}))
        url = api.url.replace("http://", f"http://team:{PASSWORD}@") + f"/search?q=x&api_key={QUERY_KEY}"
        with pytest.raises(RetrievalEvalError) as info:
            request_json(client, "GET", url, retries=0)
    message = str(info.value)
    assert "HTTP 404" in message and "team:***@" in message and "api_key=***" in message
    assert PASSWORD not in message and QUERY_KEY not in message
    with pytest.raises(RetrievalEvalError) as info:
        api_key_for(f"https://team:{PASSWORD}@api.example.com/v1", "question generation")
    assert PASSWORD not in str(info.value) and "https://team:***@api.example.com/v1" in str(info.value)


@requires_hybrid
def test_a_base_url_with_user_and_password_stays_out_of_the_questions_cache(fake_api, monkeypatch, tmp_path, capsys):
    fake_api.script("/chat/completions", Reply(200, chat_reply()))
    base = fake_api.url.replace("http://", f"http://team:{PASSWORD}@")
    monkeypatch.setenv("RETRIEVAL_EVAL_BASE_URL", base)
    folder = write_docs(tmp_path / "corpus", [{"doc_id": "alpha", "title": "Alpha", "content": "a b c d e f g h i j"}])
    cache = tmp_path / "q.json"
    assert cli(["generate", "--corpus", str(folder), "--questions", str(cache)]) == 0
    printed = capsys.readouterr()
    written = cache.read_text()
    assert json.loads(written)["generator"]["endpoint"] == fake_api.url.replace("http://", "http://team:***@")
    assert PASSWORD not in written + printed.out + printed.err
    assert fake_api.hits("/chat/completions")  # the endpoint was reached with the URL as given


@requires_hybrid
def test_a_local_endpoint_without_a_key_still_masks_url_credentials_in_logs(fake_api, monkeypatch, tmp_path, capsys,
                                                                            caplog):
    """No API key is set (a private server needs none), so no secret is registered: the password
    in the base URL must be masked by its shape, also in httpx's per-request log lines."""
    monkeypatch.delenv("RETRIEVAL_EVAL_API_KEY")
    fake_api.script("/chat/completions", Reply(200, chat_reply()))
    monkeypatch.setenv("RETRIEVAL_EVAL_BASE_URL", fake_api.url.replace("http://", f"http://team:{PASSWORD}@"))
    folder = write_docs(tmp_path / "corpus", [{"doc_id": "alpha", "content": "a b c d e f g h i j"}])
    with caplog.at_level(logging.INFO):
        assert cli(["generate", "--corpus", str(folder), "--questions", str(tmp_path / "q.json")]) == 0
    assert "HTTP Request: POST http://team:***@" in caplog.text
    printed = capsys.readouterr()
    assert PASSWORD not in caplog.text + printed.out + printed.err + (tmp_path / "q.json").read_text()
    assert "authorization" in fake_api.hits("/chat/completions")[0].headers  # httpx sent them as Basic auth


@requires_hybrid
def test_a_megabyte_answer_is_logged_capped(fake_api, tmp_path, caplog):
    huge = "How " + "much " * 200_000 + "?"
    fake_api.script("/chat/completions", Reply(200, chat_reply(lambda passage: huge)))
    folder = write_docs(tmp_path / "corpus", [{"doc_id": f"d{i}", "content": f"w{i} " * 10} for i in range(3)])
    with caplog.at_level(logging.WARNING):
        assert cli(["generate", "--corpus", str(folder), "--questions", str(tmp_path / "q.json")]) == 0
    dropped = [r.getMessage() for r in caplog.records if "dropped (too_long)" in r.getMessage()]
    assert len(dropped) == 3 and all(len(m) < 400 for m in dropped), [len(m) for m in dropped]
    assert all(f"({len(huge)} characters)" in m for m in dropped)
