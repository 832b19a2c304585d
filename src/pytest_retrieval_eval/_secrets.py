"""Keep secrets (API keys, DSN passwords) out of everything the plugin prints, logs or writes."""

from __future__ import annotations

import logging
import os
import re
import traceback
from typing import Any, Iterable, Mapping

_URI_PASSWORD = re.compile(r"(?P<head>[a-z][a-z0-9+.-]*://[^:/@\s]*:)(?P<pw>[^@\s]*)(?P<tail>@)", re.I)
_KV_PASSWORD = re.compile(r"(?P<head>\bpassword\s*=\s*)(?P<pw>'(?:[^'\\]|\\.)*'|\S+)", re.I)
#: ``https://TOKEN@host``: a user name alone in a web URL is a token more often than a name
_URL_TOKEN = re.compile(r"(?P<head>\bhttps?://)(?P<pw>[^:/@\s?#]+)(?P<tail>@)", re.I)
#: ``?api_key=...``, ``&token=...`` and their kin in a URL's query
_QUERY_SECRET = re.compile(
    r"(?P<head>[?&;](?:api[_-]?key|apikey|key|access[_-]?token|auth[_-]?token|token|auth|secret|client[_-]?secret|"
    r"password|passwd|pwd|sig|signature)=)(?P<pw>[^&#\s\"'<>]+)", re.I)
#: an ``Authorization`` header a proxy echoed back: ``Bearer sk-...``, ``Basic dXNlcjpw...``
_AUTH_HEADER = re.compile(r"(?P<head>\bbearer\s+|\bauthorization[\"']?\s*[:=]\s*[\"']?(?:(?:basic|token)\s+)?)"
                          r"(?P<pw>[A-Za-z0-9._~+/=-]{8,})", re.I)
MASK = "***"

#: The team's key, for the team's endpoint (``RETRIEVAL_EVAL_BASE_URL``, else the default) only.
TEAM_KEY_ENV = "RETRIEVAL_EVAL_API_KEY"
#: A hosted API's own key variable, by host (its subdomains too): such a key goes to that host
#: alone, over https (``_http.api_key_env``), never to another endpoint a run is pointed at.
HOST_KEY_ENVS = {
    "openrouter.ai": "OPENROUTER_API_KEY",
    "api.openai.com": "OPENAI_API_KEY",
    "api.together.xyz": "TOGETHER_API_KEY",
    "api.groq.com": "GROQ_API_KEY",
    "api.mistral.ai": "MISTRAL_API_KEY",
    "api.fireworks.ai": "FIREWORKS_API_KEY",
    "api.deepinfra.com": "DEEPINFRA_API_KEY",
}
#: Every variable that holds an API key: all are masked wherever text leaves the process.
API_KEY_ENVS = (TEAM_KEY_ENV, *dict.fromkeys(HOST_KEY_ENVS.values()))
_registered: set[str] = set()


def register_secret(value: str | None) -> None:
    """Remember a secret (a DSN password, say) so every redaction masks it from now on."""
    if value and len(value) >= 4:
        _registered.add(value)


def active_secrets() -> list[str]:
    return sorted({*_registered, *(os.environ[n] for n in API_KEY_ENVS if os.environ.get(n))}, key=len, reverse=True)


class SecretText(str):
    """A string that holds a secret (a DSN with its password): it works as the string it is, but
    its ``repr`` (what pytest's assertion introspection, ``-vv`` and dataclass reprs print) is
    masked, and its password is registered for masking everywhere else."""

    def __new__(cls, value: str) -> "SecretText":
        for password in dsn_passwords(value):
            register_secret(password)
        return super().__new__(cls, value)

    def __repr__(self) -> str:
        return repr(redact(str(self)))


def dsn_passwords(text: str) -> list[str]:
    """Passwords written in ``text`` as ``scheme://user:password@`` or ``password=...``, found
    by pattern alone: what is masked even in a DSN that does not parse."""
    found = [m["pw"] for m in _URI_PASSWORD.finditer(text)]
    found += [m["pw"].strip("'") for m in _KV_PASSWORD.finditer(text)]
    return [pw for pw in found if pw]


def redact_dsn(text: str) -> str:
    """Mask the credentials written into ``text``: the password of every ``scheme://user:password@``
    and ``password=...``, a web URL's ``https://token@``, secret query parameters (``?api_key=``,
    ``key=``, ``token=``, ...) and an echoed ``Bearer``/``Basic`` header value."""
    text = _URI_PASSWORD.sub(lambda m: m["head"] + MASK + m["tail"], text)
    text = _URL_TOKEN.sub(lambda m: m["head"] + MASK + m["tail"], text)
    text = _QUERY_SECRET.sub(lambda m: m["head"] + MASK, text)
    text = _AUTH_HEADER.sub(lambda m: m["head"] + MASK, text)
    return _KV_PASSWORD.sub(lambda m: m["head"] + MASK, text)


def redact(text: str, secrets: Iterable[str | None] | None = None) -> str:
    """Mask the given secrets (default: every known one) and DSN passwords in ``text``."""
    for secret in sorted((s for s in (active_secrets() if secrets is None else secrets) if s and len(s) >= 4),
                         key=len, reverse=True):
        text = text.replace(secret, MASK)
    return redact_dsn(text)


def mask_and_cap(text: object, limit: int = 300, secrets: Iterable[str | None] | None = None) -> str:
    """``text`` as it may leave the process: secrets masked FIRST (see ``redact``), then cut to
    ``limit`` characters on one line. Cutting first could split a key, and half a key escapes
    every mask. The one way a response body, an exception message or a model's answer is shown."""
    text = " ".join(redact(str(text), secrets).split())
    if len(text) <= limit:
        return text
    return f"{text[:limit]}... ({len(text)} characters)"


def redact_values(value: Any) -> Any:
    """A JSON-like value (an engine's description, settings) with every text in it redacted:
    what is written into result files and reports."""
    if isinstance(value, str):
        return redact(value)
    if isinstance(value, Mapping):
        return {k: redact_values(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [redact_values(v) for v in value]
    return value


def install_log_redaction():
    """Mask secrets in every log record, tracebacks included: libraries log request errors
    (Haystack logs failed embedding calls with the exception, httpx every request's URL), and
    pytest shows captured logs.
    Returns the function that puts the previous record factory back."""
    previous = logging.getLogRecordFactory()

    def factory(*args, **kwargs):
        record = previous(*args, **kwargs)
        secrets = active_secrets()  # none set: credentials in URLs (httpx logs each request's) are masked all the same
        try:
            message = record.getMessage()
        except Exception:  # a record whose args do not fit its message: logging reports it later
            return record
        clean = redact(message, secrets)
        if clean != message:
            record.msg, record.args = clean, ()
        if record.exc_info and record.exc_info[0] is not None:
            record.exc_text = redact("".join(traceback.format_exception(*record.exc_info)).rstrip(), secrets)
            record.exc_info = None
        return record

    logging.setLogRecordFactory(factory)

    def uninstall() -> None:
        if logging.getLogRecordFactory() is factory:
            logging.setLogRecordFactory(previous)

    return uninstall
