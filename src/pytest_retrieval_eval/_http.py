"""The OpenAI-compatible endpoint (embeddings, rerank, generation) and JSON-over-HTTP with the
retry rules every remote call here follows.

The endpoint's settings come from the environment: ``RETRIEVAL_EVAL_BASE_URL`` (OpenRouter by
default) and the first API key of ``API_KEY_ENVS`` that is set.

Retries 429, 5xx and timeouts with exponential backoff, honouring ``Retry-After``; fails at once
on other 4xx. Error messages never contain the API key.
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass
from typing import Any, Mapping

from ._secrets import API_KEY_ENVS, mask_and_cap, redact
from .errors import RetrievalEvalError

DEFAULT_BASE_URL = "https://openrouter.ai/api/v1"
DEFAULT_CHAT_MODEL = "openai/gpt-4o-mini"  # question generation


def api_key_env() -> str | None:
    """The first of ``API_KEY_ENVS`` that is set, or None."""
    return next((name for name in API_KEY_ENVS if os.environ.get(name)), None)


def base_url(url: str | None = None) -> str:
    """``url``, else ``RETRIEVAL_EVAL_BASE_URL``, else OpenRouter; without a trailing slash."""
    return (url or os.environ.get("RETRIEVAL_EVAL_BASE_URL") or DEFAULT_BASE_URL).rstrip("/")


#: host names that only resolve inside a machine or a private network
_PRIVATE_SUFFIXES = (".localhost", ".local", ".internal", ".lan", ".home.arpa")


def is_private(url: str) -> bool:
    """Is ``url`` on this machine or a private network (Ollama, vLLM, llama.cpp, LM Studio on a
    laptop or inside a compose network)? Judged from the URL alone, without a DNS lookup:
    loopback, private and link-local addresses, ``localhost``, single-label names (``ollama``)
    and the private suffixes. Such a server needs no API key unless it says so."""
    import ipaddress
    from urllib.parse import urlsplit

    host = (urlsplit(url).hostname or "").lower().rstrip(".")
    if not host:
        return False
    try:
        address = ipaddress.ip_address(host)
    except ValueError:
        return host == "localhost" or "." not in host or host.endswith(_PRIVATE_SUFFIXES)
    return address.is_loopback or address.is_private or address.is_link_local


def api_key_for(url: str, what: str) -> str | None:
    """The API key to send to ``url``: the first of ``API_KEY_ENVS`` that is set; None for a
    private endpoint without one; for a hosted endpoint without one, an error naming the variable."""
    env = api_key_env()
    if env is not None:
        return os.environ[env]
    if is_private(url):
        return None
    raise RetrievalEvalError(
        f"{what} calls {redact(url)}, which needs an API key: set {API_KEY_ENVS[0]} (or {API_KEY_ENVS[1]}); "
        "a local or private server (RETRIEVAL_EVAL_BASE_URL=http://localhost:11434/v1 for Ollama) needs none")


@dataclass(frozen=True)
class ChatEndpoint:
    """An OpenAI-compatible chat endpoint and how it is called: question generation and the
    judge take the same settings (their defaults differ where their work does)."""

    model: str = DEFAULT_CHAT_MODEL
    url: str | None = None  # default: RETRIEVAL_EVAL_BASE_URL, else OpenRouter
    temperature: float = 0.0
    concurrency: int = 4
    retries: int = 4
    timeout: float = 60.0

    @property
    def base(self) -> str:
        return base_url(self.url)


#: batches an OpenAI-compatible embedder has in flight by default: a TEI or vLLM server takes several
EMBED_CONCURRENCY = 4
RETRY_STATUS = {408, 409, 425, 429, 500, 502, 503, 504}


class Pace:
    """At most ``rate`` calls a second across threads (None: no pacing): a client-side rate
    limit for endpoints that publish one (the server's own 429 and Retry-After are honoured
    by the retries besides)."""

    def __init__(self, rate: float | None) -> None:
        import threading

        self.interval = 1.0 / rate if rate else 0.0
        self.next = 0.0
        self.lock = threading.Lock()

    def wait(self) -> None:
        if not self.interval:
            return
        with self.lock:
            now = time.monotonic()
            start = max(now, self.next)
            self.next = start + self.interval
        if start > now:
            time.sleep(start - now)


def _retry_after(value: str | None) -> float | None:
    if not value:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        import email.utils  # an HTTP date: rare, and email's import costs a dormant plugin 8 ms

        parsed = email.utils.parsedate_to_datetime(value) if value else None
        return max(0.0, parsed.timestamp() - time.time()) if parsed else None


def post_json(client: Any, url: str, payload: Mapping[str, Any], *, api_key: str | None, retries: int = 3,
              backoff: float = 0.5, max_wait: float = 30.0, sleep=time.sleep) -> Any:
    """POST ``payload`` with a bearer key and return the decoded JSON answer (see ``request_json``)."""
    return request_json(client, "POST", url, json=payload,
                        headers={"Authorization": f"Bearer {api_key}"} if api_key else {},
                        secrets=[api_key] if api_key else [], retries=retries, backoff=backoff, max_wait=max_wait,
                        sleep=sleep, key_hint=True)


def request_json(client: Any, method: str, url: str, *, params: Mapping[str, Any] | None = None, json: Any = None,
                 headers: Mapping[str, str] | None = None, secrets: Any = (), retries: int = 3, backoff: float = 0.5,
                 max_wait: float = 30.0, sleep=time.sleep, key_hint: bool = False) -> Any:
    """Send one request and return the decoded JSON answer, retrying 429, 5xx and timeouts;
    raise ``RetrievalEvalError`` naming the URL, with ``secrets`` (and credentials written into
    the URL) masked before any text is cut (``mask_and_cap``)."""
    import httpx

    from ._usage import record_call

    secrets = [s for s in secrets if s]
    shown = f"{method} {redact(url, secrets)}"
    for attempt in range(retries + 1):
        wait = min(max_wait, backoff * (2 ** attempt))
        try:
            response = client.request(method, url, params=params, json=json, headers=dict(headers or {}))
        except httpx.TimeoutException as exc:
            record_call(json)
            problem = f"timed out ({type(exc).__name__})"
        except httpx.HTTPError as exc:
            problem = f"{type(exc).__name__}: {mask_and_cap(exc, secrets=secrets)}"
        else:
            if response.status_code < 400:
                try:
                    answer = response.json()
                except ValueError:
                    record_call(json)
                    raise RetrievalEvalError(f"{shown}: the answer is not JSON (HTTP {response.status_code})") from None
                record_call(json, answer)  # with the tokens its usage reports
                return answer
            record_call(json)
            problem = f"HTTP {response.status_code}: {mask_and_cap(response.text, secrets=secrets)}"
            if response.status_code not in RETRY_STATUS:
                hint = " (check the API key variable)" if key_hint and response.status_code in (401, 403) else ""
                error = RetrievalEvalError(f"{shown} failed: {problem}{hint}")
                error.status = response.status_code  # type: ignore[attr-defined]
                raise error
            wait = min(max_wait, _retry_after(response.headers.get("retry-after")) or wait)
        if attempt < retries:
            sleep(wait)
    raise RetrievalEvalError(f"{shown} failed after {retries + 1} attempts: {problem}")
