"""The OpenAI-compatible endpoint (embeddings, rerank, generation) and JSON-over-HTTP with the
retry rules every remote call here follows.

The endpoint's settings come from the environment: ``RETRIEVAL_EVAL_BASE_URL`` (OpenRouter by
default), and the key that belongs to the URL called (``api_key_env``): the team's
``RETRIEVAL_EVAL_API_KEY`` for the team's base URL, a hosted API's own variable
(``OPENROUTER_API_KEY``, ``OPENAI_API_KEY``, ...) for that host over https, none elsewhere.
``RETRIEVAL_EVAL_TIMEOUT`` gives every such call longer (``request_timeout``).

Retries 429, 5xx and timeouts with exponential backoff, honouring a ``Retry-After`` it can read;
fails at once on other 4xx, and on a read timeout from a local server (it is still working on
the request: a second copy would only queue behind it). Error messages never contain the API key;
each error says what kind of failure it is (``kind``: ``FAILURE_KINDS``), so a caller counts them
by kind and stops on a server that is not there (``DeadServer``).
"""

from __future__ import annotations

import functools
import os
import time
from dataclasses import dataclass, field
from typing import Any, Mapping

from ._defaults import CHAT_MODEL, EMBED_CONCURRENCY
from ._secrets import HOST_KEY_ENVS, TEAM_KEY_ENV, mask_and_cap, redact
from .errors import RetrievalEvalError

DEFAULT_BASE_URL = "https://openrouter.ai/api/v1"
DEFAULT_CHAT_MODEL = CHAT_MODEL  # question generation
TIMEOUT_ENV = "RETRIEVAL_EVAL_TIMEOUT"


def base_url(url: str | None = None) -> str:
    """``url``, else ``RETRIEVAL_EVAL_BASE_URL``, else OpenRouter; without a trailing slash."""
    return (url or os.environ.get("RETRIEVAL_EVAL_BASE_URL") or DEFAULT_BASE_URL).rstrip("/")


def request_timeout(default: float, *, strict: bool = True) -> float:
    """Seconds a remote call may take: ``RETRIEVAL_EVAL_TIMEOUT`` where set (a local model on a
    CPU can take minutes), else ``default``. A value that is no number of seconds is an error,
    or ``default`` when not ``strict`` (a settings default made at import time must not raise:
    ``api_key_for``, which every remote caller asks first, reports it)."""
    text = os.environ.get(TIMEOUT_ENV, "").strip()
    if not text:
        return default
    try:
        seconds = float(text)
    except ValueError:
        seconds = float("nan")
    if not 0 < seconds < float("inf"):
        if not strict:
            return default
        raise RetrievalEvalError(f"{TIMEOUT_ENV} must be a number of seconds > 0, got {text!r}")
    return seconds


#: host names that only resolve inside a machine or a private network
_PRIVATE_SUFFIXES = (".localhost", ".local", ".internal", ".lan", ".home.arpa")


def _host(url: str) -> str:
    from urllib.parse import urlsplit

    return (urlsplit(url).hostname or "").lower().rstrip(".")


def is_private(url: str) -> bool:
    """Is ``url`` on this machine or a private network (Ollama, vLLM, llama.cpp, LM Studio on a
    laptop or inside a compose network)? Judged from the URL alone, without a DNS lookup:
    loopback, private and link-local addresses, ``localhost``, single-label names (``ollama``)
    and the private suffixes. Such a server needs no API key unless it says so."""
    import ipaddress

    host = _host(url)
    if not host:
        return False
    try:
        address = ipaddress.ip_address(host)
    except ValueError:
        return host == "localhost" or "." not in host or host.endswith(_PRIVATE_SUFFIXES)
    return address.is_loopback or address.is_private or address.is_link_local


def _origin(url: str) -> tuple[str, str, int | None]:
    """(scheme, host, port) of ``url``, the port filled in: what a key is set for (not the
    user name, password or path written into the URL)."""
    from urllib.parse import urlsplit

    parts = urlsplit(url)
    scheme = parts.scheme.lower()
    try:
        port = parts.port
    except ValueError:
        port = None
    return scheme, _host(url), port or {"https": 443, "http": 80}.get(scheme)


def _host_key_env(url: str) -> str | None:
    """The variable of the hosted API ``url`` is on (``openrouter.ai`` -> OPENROUTER_API_KEY), by host."""
    host = _host(url)
    return next((env for name, env in HOST_KEY_ENVS.items() if host == name or host.endswith("." + name)), None)


def api_key_env(url: str) -> str | None:
    """The variable whose key may be sent to ``url``, when it is set: the team's
    ``RETRIEVAL_EVAL_API_KEY`` for the team's base URL (``RETRIEVAL_EVAL_BASE_URL``, else the
    default, OpenRouter), compared by scheme, host and port; else the hosted API's own variable
    for its host, over https only. None anywhere else: a key set for one host never goes to
    another (a local server pointed at with ``--base-url`` gets no OpenRouter key)."""
    if os.environ.get(TEAM_KEY_ENV) and _origin(url) == _origin(base_url()):
        return TEAM_KEY_ENV
    env = _host_key_env(url)
    if env and os.environ.get(env) and _origin(url)[0] == "https":
        return env
    return None


def api_key_for(url: str, what: str) -> str | None:
    """The API key to send to ``url`` (``api_key_env``); None for a private endpoint without
    one; for a hosted endpoint without one, an error naming the variable to set. Every remote
    caller asks here before its first request, so a bad ``RETRIEVAL_EVAL_TIMEOUT`` stops it too."""
    request_timeout(1.0)
    env = api_key_env(url)
    if env is not None:
        return os.environ[env]
    if is_private(url):
        return None
    shown, own = redact(url), _host_key_env(url)
    if own and _origin(url)[0] != "https":
        raise RetrievalEvalError(f"{what} calls {shown} over plain HTTP: an API key for {_host(url)} is sent over "
                                 f"https:// only; use {shown.replace('http://', 'https://', 1)}")
    if _origin(url) == _origin(base_url()):
        todo = f"set {TEAM_KEY_ENV}" + (f" (or {own})" if own else "")
    elif own:
        todo = f"set {own} (or RETRIEVAL_EVAL_BASE_URL={shown} with {TEAM_KEY_ENV})"
    else:
        todo = (f"set RETRIEVAL_EVAL_BASE_URL={shown} and {TEAM_KEY_ENV} (a key goes only to the endpoint it was "
                "set for)")
    raise RetrievalEvalError(
        f"{what} calls {shown}, which needs an API key: {todo}; a local or private server "
        "(RETRIEVAL_EVAL_BASE_URL=http://localhost:11434/v1 for Ollama) needs none")


@dataclass(frozen=True)
class ChatEndpoint:
    """An OpenAI-compatible chat endpoint and how it is called: question generation and the
    judge take the same settings (their defaults differ where their work does)."""

    model: str = DEFAULT_CHAT_MODEL
    url: str | None = None  # default: RETRIEVAL_EVAL_BASE_URL, else OpenRouter
    temperature: float = 0.0
    #: calls in flight at once; None: as the server fits (``in_flight``)
    concurrency: int | None = None
    retries: int = 4
    timeout: float = field(default_factory=lambda: request_timeout(60.0, strict=False))  # RETRIEVAL_EVAL_TIMEOUT
    #: the answer's length cap, in tokens (None: the server's own); see ``GeneratorConfig``
    max_tokens: int | None = None

    @property
    def base(self) -> str:
        return base_url(self.url)

    def in_flight(self, hosted: int, option: str) -> tuple[int, str]:
        """(calls in flight at once, why, as a run says it): the ``concurrency`` asked for; else one
        at a local or private server, which answers one request at a time (llama.cpp's, Ollama's
        on a small machine: requests sent side by side wait in its queue past the timeout, and it
        goes on computing each one abandoned); else ``hosted``. ``option``: how to change it."""
        if self.concurrency is not None:
            return self.concurrency, f"as asked with {option}"
        if is_private(self.base):
            return 1, (f"{_host(self.base)} is a local or private server, which answers one request at a time: more "
                       f"would wait in its queue past the timeout; {option} to send more")
        return hosted, f"a hosted endpoint; {option} to change"


RETRY_STATUS = {408, 409, 425, 429, 500, 502, 503, 504}

#: what a failed call's error says it was (``RetrievalEvalError.kind``), as a summary counts it
FAILURE_KINDS = {"timeout": "timed out", "connect": "could not connect", "network": "lost the connection",
                 "status": "got an HTTP error", "answer": "answer not JSON"}
#: retries of a call a local or private server refused to connect: it is not running (or still
#: loading its model), and waiting out the whole backoff for each call only delays saying so
LOCAL_CONNECT_RETRIES = 2


def _error(message: str, kind: str, problem: str, status: int | None = None) -> RetrievalEvalError:
    """A failed call's error: ``kind`` (``FAILURE_KINDS``), ``problem`` (what went wrong, without
    the URL: how a summary names a dead server's refusal) and the HTTP ``status`` if one came."""
    error = RetrievalEvalError(message)
    error.kind = kind  # type: ignore[attr-defined]
    error.problem = problem  # type: ignore[attr-defined]
    if status is not None:
        error.status = status  # type: ignore[attr-defined]
    return error


def failure_kind(exc: BaseException) -> str | None:
    """The ``FAILURE_KINDS`` key of a failed call's error (None: not a call's failure)."""
    return getattr(exc, "kind", None)


class DeadServer:
    """Calls that could not connect, in a row: after ``limit`` of them the server is not there,
    and the caller stops with one line naming it rather than trying each remaining item in turn
    (178 pairs took 174 s to fail against a killed server). Any other outcome resets the count.
    Called from one thread (where results are collected)."""

    def __init__(self, url: str, who: str, limit: int = 3) -> None:
        self.url, self.who, self.limit = url, who, limit
        self.row = 0

    def saw(self, exc: BaseException | None) -> None:
        """Count one finished call (``exc``: its error, None when it succeeded); raise when the
        server is taken for dead."""
        if exc is None or failure_kind(exc) != "connect":
            self.row = 0
            return
        self.row += 1
        if self.row >= self.limit:
            raise RetrievalEvalError(
                f"{self.who}'s server {redact(self.url)} is not answering: {self.row} calls in a row could not connect "
                f"({getattr(exc, 'problem', exc)}); stopped. Start the server (or point --base-url or "
                "RETRIEVAL_EVAL_BASE_URL at one that runs) and run it again: what finished is kept")


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
    """Seconds a ``Retry-After`` asks for (a number or an HTTP date); None when it says nothing
    readable ("soon", a malformed date): the caller's own backoff applies then."""
    if not value or not value.strip():
        return None
    try:
        seconds = float(value)
    except ValueError:
        import email.utils  # an HTTP date: rare, and email's import costs a dormant plugin 8 ms

        try:
            parsed = email.utils.parsedate_to_datetime(value)
        except (TypeError, ValueError, IndexError, OverflowError):
            return None
        if parsed is None:
            return None
        if parsed.tzinfo is None:
            import datetime as dt

            parsed = parsed.replace(tzinfo=dt.timezone.utc)  # HTTP dates are GMT
        seconds = parsed.timestamp() - time.time()
    return max(0.0, seconds) if seconds == seconds else None  # NaN: nothing said


def new_client(**settings: Any) -> Any:
    """An ``httpx.Client`` with ``settings`` (timeout, limits), every one of them sharing this
    process's TLS context: httpx builds one per client, loading the CA bundle each time (about
    50 ms of CPU), which a run that makes a client per engine, embedder, reranker and judge paid
    again and again."""
    import httpx

    return httpx.Client(verify=_tls_context(), **settings)


@functools.cache
def _tls_context() -> Any:
    """httpx's own default context (certifi's CA bundle, or ``SSL_CERT_FILE``/``SSL_CERT_DIR``
    as set when the first client was made), built once."""
    import httpx

    return httpx.create_ssl_context()


#: how a timeout is raised, as a message says it (post_json's endpoints read the variable)
TIMEOUT_HINT = "export RETRIEVAL_EVAL_TIMEOUT={seconds} to wait longer"


def _timeout_seconds(client: Any, exc: Exception) -> float | None:
    """The limit that ran out, from the client's settings."""
    import httpx

    limits = getattr(client, "timeout", None)
    part = {httpx.ConnectTimeout: "connect", httpx.ReadTimeout: "read", httpx.WriteTimeout: "write",
            httpx.PoolTimeout: "pool"}.get(type(exc), "read")
    value = getattr(limits, part, None)
    return float(value) if isinstance(value, (int, float)) else None


def post_json(client: Any, url: str, payload: Mapping[str, Any], *, api_key: str | None, retries: int = 3,
              backoff: float = 0.5, max_wait: float = 30.0, sleep=time.sleep) -> Any:
    """POST ``payload`` (as it is: ``max_tokens`` and every other field reach the server) with a
    bearer key and return the decoded JSON answer (see ``request_json``)."""
    return request_json(client, "POST", url, json=payload,
                        headers={"Authorization": f"Bearer {api_key}"} if api_key else {},
                        secrets=[api_key] if api_key else [], retries=retries, backoff=backoff, max_wait=max_wait,
                        sleep=sleep, key_hint=True, timeout_hint=TIMEOUT_HINT)


def request_json(client: Any, method: str, url: str, *, params: Mapping[str, Any] | None = None, json: Any = None,
                 headers: Mapping[str, str] | None = None, secrets: Any = (), retries: int = 3, backoff: float = 0.5,
                 max_wait: float = 30.0, sleep=time.sleep, key_hint: bool = False,
                 timeout_hint: str = "raise the client's timeout") -> Any:
    """Send one request and return the decoded JSON answer, retrying 429, 5xx and timeouts;
    raise ``RetrievalEvalError`` naming the URL, with ``secrets`` (and credentials written into
    the URL) masked before any text is cut (``mask_and_cap``).

    Every attempt that reached the server is a call (``_usage.record_call``), failed or not. A
    read (or write) timeout from a local or private server is not retried: such a server (llama.cpp,
    Ollama on a laptop) works on one request at a time and still holds this one, so a copy
    would wait behind it and time out in turn. A hosted API's is retried; a connect timeout
    anywhere is (nothing reached the server). ``timeout_hint`` says how to give calls longer."""
    import httpx

    from ._usage import record_call

    secrets = [s for s in secrets if s]
    shown = f"{method} {redact(url, secrets)}"
    timed_out = None
    status = None
    for attempt in range(retries + 1):
        wait = min(max_wait, backoff * (2 ** attempt))
        timed_out = status = None
        try:
            response = client.request(method, url, params=params, json=json, headers=dict(headers or {}))
        except httpx.TimeoutException as exc:
            reached = not isinstance(exc, (httpx.ConnectTimeout, httpx.PoolTimeout))
            if reached:
                record_call(json)
            kind = "timeout" if reached or isinstance(exc, httpx.PoolTimeout) else "connect"
            timed_out = _timeout_seconds(client, exc)
            problem = (f"timed out after {timed_out:g} s" if timed_out is not None else "timed out") + \
                f" ({type(exc).__name__})"
            if reached and is_private(url):
                raise _error(
                    f"{shown} {problem}; {_raise_timeout(timeout_hint, timed_out)} (not sent again: a local server "
                    "answers one request at a time and still works on this one; a copy would wait behind it)",
                    kind, problem) from None
        except httpx.HTTPError as exc:
            refused = isinstance(exc, httpx.ConnectError)
            if not refused:
                record_call(json)  # the request may have reached the server
            kind = "connect" if refused else "network"
            problem = f"{type(exc).__name__}: {mask_and_cap(exc, secrets=secrets)}"
            if refused and is_private(url) and attempt >= min(retries, LOCAL_CONNECT_RETRIES):
                raise _error(f"{shown} failed after {attempt + 1} attempts: {problem}", kind, problem) from None
        else:
            if response.status_code < 400:
                try:
                    answer = response.json()
                except ValueError:
                    record_call(json)
                    raise _error(f"{shown}: the answer is not JSON (HTTP {response.status_code})", "answer",
                                 f"not JSON (HTTP {response.status_code})") from None
                record_call(json, answer)  # with the tokens its usage reports
                return answer
            record_call(json)
            kind, status = "status", response.status_code
            problem = f"HTTP {response.status_code}: {mask_and_cap(response.text, secrets=secrets)}"
            if response.status_code not in RETRY_STATUS:
                hint = " (check the API key variable)" if key_hint and response.status_code in (401, 403) else ""
                raise _error(f"{shown} failed: {problem}{hint}", kind, problem, response.status_code)
            asked = _retry_after(response.headers.get("retry-after"))
            wait = min(max_wait, asked) if asked is not None else wait
        if attempt < retries:
            sleep(wait)
    more = f"; {_raise_timeout(timeout_hint, timed_out)}" if timed_out is not None or "timed out" in problem else ""
    raise _error(f"{shown} failed after {retries + 1} attempts: {problem}{more}", kind, problem, status)


def timeout_hint(seconds: float | None) -> str:
    """How to give calls longer than the ``seconds`` that ran out (``TIMEOUT_HINT``), as a summary says it."""
    return _raise_timeout(TIMEOUT_HINT, seconds)


def _raise_timeout(hint: str, seconds: float | None) -> str:
    """``hint`` with a longer limit to try: four times the one that ran out, two minutes at least."""
    return hint.format(seconds=max(120, int(4 * (seconds or 0)))) if "{seconds}" in hint else hint
