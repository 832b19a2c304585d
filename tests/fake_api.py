"""A real local HTTP server that plays an OpenAI-compatible API from a script of responses.

Tests reach it through the real clients (Haystack's OpenAI components, httpx): nothing is
patched. Each path answers from its own queue of scripted responses; the last one repeats.
"""

from __future__ import annotations

import json
import threading
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, HTTPServer, ThreadingHTTPServer
from typing import Any, Callable
from urllib.parse import parse_qs


@dataclass
class Reply:
    status: Any = 200  # int; callable(request_json) -> int
    body: Any = None  # dict -> JSON; callable(request_json) -> dict
    headers: dict = field(default_factory=dict)
    delay: float = 0.0
    #: a misbehaving proxy: answer with ``body`` (text) followed by the request's headers as received
    echo_headers: bool = False


@dataclass
class Seen:
    path: str
    headers: dict
    body: Any


class FakeApi:
    def __init__(self, *, keep_alive: bool = False, serial: bool = False) -> None:
        """``keep_alive``: HTTP/1.1 connections kept open between requests, as a production
        embedding server keeps them (the default closes each, as http.server does). ``serial``:
        one request answered at a time, as llama.cpp's and Ollama's servers do on a small machine:
        a request that arrives while it works waits in the listen queue (its time counts against
        the client's timeout), and one the client gave up on is still worked through."""
        self.scripts: dict[str, list[Reply]] = {}
        self.requests: list[Seen] = []
        self.in_flight = 0
        self.max_in_flight = 0
        lock = threading.Lock()
        api = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1" if keep_alive else "HTTP/1.0"
            disable_nagle_algorithm = keep_alive  # headers and body go out at once, not 40 ms apart

            def log_message(self, *args):  # keep test output clean
                pass

            def do_GET(self):
                path, _, query = self.path.partition("?")
                self.answer(path, {k: v[0] for k, v in parse_qs(query).items()})

            def do_POST(self):
                length = int(self.headers.get("content-length") or 0)
                raw = self.rfile.read(length)
                try:
                    body = json.loads(raw) if raw else None
                except ValueError:
                    body = raw.decode(errors="replace")
                self.answer(self.path, body)

            def answer(self, path, body):
                with lock:
                    api.requests.append(Seen(path, {k.lower(): v for k, v in self.headers.items()}, body))
                    queue = api.scripts.get(path) or [Reply(404, {"error": "no script"})]
                    reply = queue.pop(0) if len(queue) > 1 else queue[0]
                    api.in_flight += 1
                    api.max_in_flight = max(api.max_in_flight, api.in_flight)
                if reply.delay:
                    time.sleep(reply.delay)
                with lock:
                    api.in_flight -= 1
                payload = reply.body(body) if callable(reply.body) else reply.body
                if reply.echo_headers:
                    payload = f"{payload or ''}{''.join(f'{k}: {v}' + chr(10) for k, v in self.headers.items())}"
                data = payload.encode() if isinstance(payload, str) else json.dumps(payload).encode()
                try:
                    self.send_response(reply.status(body) if callable(reply.status) else reply.status)
                    self.send_header("content-type", "text/html" if reply.echo_headers else "application/json")
                    self.send_header("content-length", str(len(data)))
                    for k, v in reply.headers.items():
                        self.send_header(k, v)
                    self.end_headers()
                    self.wfile.write(data)
                except (BrokenPipeError, ConnectionResetError):
                    pass

        class Server(ThreadingHTTPServer):
            daemon_threads = True
            request_queue_size = 128  # the default 5 drops connections that arrive together: 1 s retries

        class Serial(HTTPServer):
            request_queue_size = 128

        self.server = (Serial if serial else Server)(("127.0.0.1", 0), Handler)
        # polled every 20 ms, not the default 0.5 s: shutdown() waits for the next poll, half a second
        # per test otherwise
        self.thread = threading.Thread(target=self.server.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}/v1"

    def script(self, path: str, *replies: Reply) -> None:
        self.scripts[f"/v1{path}"] = list(replies)

    def hits(self, path: str) -> list[Seen]:
        return [r for r in self.requests if r.path == f"/v1{path}"]

    def __enter__(self) -> "FakeApi":
        self.thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self.server.shutdown()
        self.server.server_close()


def embeddings_reply(dim: int = 8) -> Callable[[dict], dict]:
    """An OpenAI ``/embeddings`` answer: a deterministic vector per input text."""

    def answer(request: dict) -> dict:
        texts = request["input"] if isinstance(request["input"], list) else [request["input"]]
        data = [
            {"object": "embedding", "index": i, "embedding": [((len(t) + j) % 7) / 7.0 + 0.01 for j in range(dim)]}
            for i, t in enumerate(texts)
        ]
        return {"object": "list", "data": data, "model": request.get("model"), "usage": {"prompt_tokens": 1, "total_tokens": 1}}

    return answer


def chat_reply(make_question: Callable[[str], str] | None = None) -> Callable[[dict], dict]:
    """A chat-completions answer whose content is ``{"question": ...}`` about the passage."""

    def answer(request: dict) -> dict:
        passage = request["messages"][-1]["content"]
        words = passage.split()
        question = make_question(passage) if make_question else f"How does {words[3]} relate to {words[4]}?"
        return {"id": "x", "object": "chat.completion", "model": request.get("model"),
                "choices": [{"index": 0, "message": {"role": "assistant", "content": json.dumps({"question": question})},
                             "finish_reason": "stop"}]}

    return answer


def _words(text: str) -> set[str]:
    return {w for w in "".join(c.lower() if c.isalnum() else " " for c in text).split() if len(w) > 3}


def umbrela_grade(query: str, passage: str) -> int:
    """A deterministic judge: the share of the question's words (over 3 letters) the passage holds,
    0.6 or more a 3, 0.4 a 2, 0.2 a 1, less a 0."""
    q = _words(query)
    share = len(q & _words(passage)) / max(1, len(q))
    return 3 if share >= 0.6 else 2 if share >= 0.4 else 1 if share >= 0.2 else 0


def judge_reply(grade: Callable[[str, str], int] = umbrela_grade) -> Callable[[dict], dict]:
    """A chat-completions answer in UMBRELA's format (``##final score: N``) for the plugin's
    judge prompt, graded by ``grade(query, passage)``."""

    def answer(request: dict) -> dict:
        content = request["messages"][-1]["content"]
        query = content.split("\nQuery: ", 1)[1].split("\nPassage: ", 1)[0]
        passage = content.split("\nPassage: ", 1)[1].split("\n\nSplit this problem", 1)[0]
        return {"id": "x", "object": "chat.completion", "model": request.get("model"),
                "choices": [{"index": 0, "message": {"role": "assistant",
                                                     "content": f"##final score: {grade(query, passage)}"},
                             "finish_reason": "stop"}]}

    return answer
