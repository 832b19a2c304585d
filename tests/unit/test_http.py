"""The retry rules of every remote JSON call (rerank; generation later), against a real server."""

import pytest

httpx = pytest.importorskip("httpx")  # the hybrid extra

from conftest import CORPUS, FAKE_KEY
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


def test_the_payload_reaches_the_server_as_given_max_tokens_included(api):
    api.script("/x", Reply(200, {"ok": True}))
    with httpx.Client(timeout=5) as client:
        post_json(client, f"{api.url}/x", {"model": "m", "max_tokens": 64, "messages": []}, api_key=None)
    assert api.hits("/x")[0].body == {"model": "m", "max_tokens": 64, "messages": []}


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


def test_a_hosted_endpoints_timeouts_are_retried_then_reported(api):
    """A hosted API serves many requests side by side: a timed-out one is sent again. (Reached
    through the test's own server as an HTTP proxy, so the URL's host is a public name.)"""
    url = "http://api.example.com/v1/x"
    api.scripts[url] = [Reply(200, {"ok": 1}, delay=1.0)]
    with httpx.Client(timeout=0.2, proxy=api.url.removesuffix("/v1")) as client:
        with pytest.raises(RetrievalEvalError, match="failed after 2 attempts: timed out after 0.2 s") as info:
            post_json(client, url, {"q": 1}, api_key=None, retries=1, sleep=lambda s: None)
    assert len([r for r in api.requests if r.path == url]) == 2
    assert "RETRIEVAL_EVAL_TIMEOUT=" in str(info.value)


# --- which key goes where -------------------------------------------------------------------------

KEY_VARS = ("RETRIEVAL_EVAL_API_KEY", "RETRIEVAL_EVAL_BASE_URL", "OPENROUTER_API_KEY", "OPENAI_API_KEY")
OTHER_KEY = "sk-or-v1-PERSONAL-0ddba11-abcdef123456"


@pytest.fixture
def clean_env(monkeypatch):
    for name in KEY_VARS:
        monkeypatch.delenv(name, raising=False)
    return monkeypatch


@pytest.mark.parametrize("env", [
    {"OPENROUTER_API_KEY": OTHER_KEY},  # a personal key in the shell, for openrouter.ai
    {"OPENAI_API_KEY": OTHER_KEY},
    {"RETRIEVAL_EVAL_API_KEY": OTHER_KEY},  # set for the default endpoint (OpenRouter), no base URL beside it
    {"RETRIEVAL_EVAL_API_KEY": OTHER_KEY, "RETRIEVAL_EVAL_BASE_URL": "https://llm.example.com/v1"},
])
def test_a_key_set_for_another_host_is_never_sent_to_a_local_server(api, clean_env, tmp_path, env):
    """Generation, the judge and the embedder all choose their key in one place: none of them
    sends a key that belongs to another host to a keyless local server over plain HTTP."""
    from fake_api import chat_reply, embeddings_reply, judge_reply
    from pytest_retrieval_eval._http import api_key_for
    from pytest_retrieval_eval.data.corpus import open_corpus
    from pytest_retrieval_eval.data.judge import JudgeConfig, Pair, judge_pairs
    from pytest_retrieval_eval.hybrid.embedders import Embedder, OpenAIBackend

    for name, value in env.items():
        clean_env.setenv(name, value)
    assert api_key_for(api.url, "judging") is None
    api.script("/embeddings", Reply(200, embeddings_reply(8)))
    Embedder(OpenAIBackend("m", url=api.url), None).embed(["x"])
    api.script("/chat/completions", Reply(200, judge_reply()))
    doc = open_corpus(CORPUS).load().docs[0]
    report = judge_pairs([Pair("q1", "what about it?", doc.doc_id, doc.content, doc.fingerprint)],
                         tmp_path / "j.jsonl", JudgeConfig(model="m", url=api.url))
    assert report.failed == {}
    from pytest_retrieval_eval.data.chunking import chunk_corpus
    from pytest_retrieval_eval.data.generate import GeneratorConfig, generate_questions

    api.script("/chat/completions", Reply(200, chat_reply()))
    corpus = open_corpus(CORPUS).load()
    generate_questions(corpus, chunk_corpus(corpus)[:2], tmp_path / "q.json", config=GeneratorConfig(url=api.url))
    sent = [h for h in api.requests]
    assert len(sent) >= 3
    assert all("authorization" not in h.headers for h in sent), [h.headers.get("authorization") for h in sent]


def test_each_hosted_endpoint_gets_its_own_key(clean_env):
    from pytest_retrieval_eval._http import api_key_for

    clean_env.setenv("OPENROUTER_API_KEY", "sk-or-key-1234")
    clean_env.setenv("OPENAI_API_KEY", "sk-openai-key-5678")
    assert api_key_for("https://openrouter.ai/api/v1", "judging") == "sk-or-key-1234"
    assert api_key_for("https://api.openai.com/v1", "judging") == "sk-openai-key-5678"
    with pytest.raises(RetrievalEvalError, match="RETRIEVAL_EVAL_BASE_URL=https://llm.example.com/v1") as info:
        api_key_for("https://llm.example.com/v1", "judging")  # neither key belongs there
    assert "RETRIEVAL_EVAL_API_KEY" in str(info.value)
    with pytest.raises(RetrievalEvalError, match="https://"):
        api_key_for("http://openrouter.ai/api/v1", "judging")  # a key never travels over plain HTTP


def test_the_teams_key_goes_to_the_teams_base_url_only(clean_env):
    from pytest_retrieval_eval._http import api_key_for

    clean_env.setenv("RETRIEVAL_EVAL_BASE_URL", "https://llm.example.com/v1")
    clean_env.setenv("RETRIEVAL_EVAL_API_KEY", "team-key-9999")
    clean_env.setenv("OPENROUTER_API_KEY", "sk-or-key-1234")
    assert api_key_for("https://llm.example.com/v1", "judging") == "team-key-9999"
    assert api_key_for("https://llm.example.com/v1/", "judging") == "team-key-9999"
    assert api_key_for("https://openrouter.ai/api/v1", "judging") == "sk-or-key-1234"
    assert api_key_for("http://127.0.0.1:8080/v1", "judging") is None
    clean_env.delenv("RETRIEVAL_EVAL_BASE_URL")  # the team's key for the default endpoint, OpenRouter
    assert api_key_for("https://openrouter.ai/api/v1", "judging") == "team-key-9999"
    assert api_key_for("http://127.0.0.1:8080/v1", "judging") is None


def test_a_missing_key_names_the_variable_of_that_host(clean_env):
    from pytest_retrieval_eval._http import api_key_for

    clean_env.setenv("OPENROUTER_API_KEY", "sk-or-key-1234")
    with pytest.raises(RetrievalEvalError, match=r"needs an API key: set OPENAI_API_KEY"):
        api_key_for("https://api.openai.com/v1", "the openai embedder")


# --- Retry-After ----------------------------------------------------------------------------------

@pytest.mark.parametrize("value", ["soon", "Wed, 99 Foo 2026 25:61:00 GMT", "-", "1.5s"])
def test_an_unparsable_retry_after_falls_back_to_the_backoff(api, value):
    sleeps = []
    api.script("/x", Reply(429, {"e": 1}, {"retry-after": value}), Reply(429, {"e": 1}, {"retry-after": value}),
               Reply(200, {"ok": 1}))
    assert call(api, sleeps=sleeps) == {"ok": 1}
    assert sleeps == [0.5, 1.0] and len(api.hits("/x")) == 3


def test_a_retry_after_of_zero_is_honoured(api):
    sleeps = []
    api.script("/x", Reply(429, {"e": 1}, {"retry-after": "0"}), Reply(200, {"ok": 1}))
    assert call(api, sleeps=sleeps) == {"ok": 1}
    assert sleeps == [0.0]


# --- timeouts -------------------------------------------------------------------------------------

class OneAtATime:
    """A local server that answers one request at a time, as llama.cpp's and Ollama's do on a
    small machine: a request that arrives while it works waits in the listen queue."""

    def __init__(self, delay: float) -> None:
        import threading
        from http.server import BaseHTTPRequestHandler, HTTPServer

        self.seen = 0
        server_self = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def do_POST(self):
                import time

                self.rfile.read(int(self.headers.get("content-length") or 0))
                server_self.seen += 1
                time.sleep(delay)
                data = b'{"ok": 1}'
                try:
                    self.send_response(200)
                    self.send_header("content-length", str(len(data)))
                    self.end_headers()
                    self.wfile.write(data)
                except (BrokenPipeError, ConnectionResetError):
                    pass

        self.server = HTTPServer(("127.0.0.1", 0), Handler)
        self.thread = threading.Thread(target=self.server.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/v1"

    def __enter__(self):
        self.thread.start()
        return self

    def __exit__(self, *exc):
        self.server.shutdown()
        self.server.server_close()


def test_a_timed_out_request_is_not_sent_again_to_a_local_server_and_says_how_to_wait_longer():
    with OneAtATime(delay=0.8) as local, httpx.Client(timeout=0.3) as client:
        with pytest.raises(RetrievalEvalError) as info:
            post_json(client, f"{local.url}/chat/completions", {"q": 1}, api_key=None, retries=3,
                      sleep=lambda s: None)
        message = str(info.value)
        assert local.seen == 1  # the server still works on the first: a second would queue behind it
    assert "timed out after 0.3 s" in message
    assert "RETRIEVAL_EVAL_TIMEOUT=" in message and "not sent again" in message


def test_the_timeout_comes_from_the_environment(monkeypatch):
    from pytest_retrieval_eval._http import ChatEndpoint, api_key_for, request_timeout
    from pytest_retrieval_eval.hybrid.embedders import OpenAIBackend

    monkeypatch.setenv("RETRIEVAL_EVAL_TIMEOUT", "240")
    assert ChatEndpoint().timeout == 240.0 and OpenAIBackend("m", url="http://127.0.0.1:9/v1").timeout == 240.0
    assert ChatEndpoint(timeout=5).timeout == 5  # as the code asks
    monkeypatch.setenv("RETRIEVAL_EVAL_TIMEOUT", "two minutes")
    with pytest.raises(RetrievalEvalError, match="RETRIEVAL_EVAL_TIMEOUT must be a number of seconds > 0, got 'two"):
        request_timeout(60.0)
    assert ChatEndpoint().timeout == 60.0  # a default made at import time does not raise: the caller's first step does
    with pytest.raises(RetrievalEvalError, match="RETRIEVAL_EVAL_TIMEOUT must be"):
        api_key_for("http://127.0.0.1:8080/v1", "judging")
    monkeypatch.delenv("RETRIEVAL_EVAL_TIMEOUT")
    assert request_timeout(60.0) == 60.0


def test_every_client_the_plugin_makes_shares_one_tls_context():
    """Building httpx's TLS context loads the CA bundle (about 50 ms of CPU): made once, and no
    module of the plugin makes a client any other way."""
    from pathlib import Path

    import pytest_retrieval_eval
    from pytest_retrieval_eval._http import new_client

    with new_client(timeout=1.0) as a, new_client(timeout=2.0) as b:
        assert a._transport._pool._ssl_context is b._transport._pool._ssl_context
    package = Path(pytest_retrieval_eval.__file__).parent
    elsewhere = [p.relative_to(package).as_posix() for p in package.rglob("*.py")
                 if p.name != "_http.py" and "httpx.Client(" in p.read_text(encoding="utf-8")]
    assert elsewhere == []
