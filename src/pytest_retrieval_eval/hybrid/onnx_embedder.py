"""The built-in MiniLM on ONNX Runtime: exported once by sentence-transformers, then run without torch.

The export is the library's own (``SentenceTransformer(folder, backend="onnx")``, which exports
through optimum, then ``export_optimized_onnx_model(..., "O2")``: transformer fusions, the same
numbers): it needs torch and optimum once per weights hash and is kept in the model cache
(``--retrieval-model-cache``), written to a temporary folder and renamed into place under a file
lock, so xdist workers and parallel projects export it once. A run that finds the export needs
neither: the graph runs in ``onnxruntime`` with the folder's own tokenizer (``tokenizers``), mean
pooling and L2 normalisation as the folder's ``modules.json`` declares them. Every vector's cosine
to the torch path's is at least 0.9999998 (tests/system/test_embedders_runs.py).

The model cache is the machine's, not the project's: the export depends on the weights alone,
so every project and test run on a machine shares it, as a hub cache would.
"""

from __future__ import annotations

import json
import os
import shutil
import sys
import tempfile
import threading
from pathlib import Path
from typing import Sequence

import numpy as np

from ..errors import RetrievalEvalError
from ..types import sha256_file

#: optimum's level: O2 is basic and extended graph optimisations plus transformer fusions (no
#: GELU approximation, which O3 adds and which moves the vectors)
LEVEL = "O2"
ONNX_FILE = f"model_{LEVEL}.onnx"
MANIFEST = "export.json"
BATCH = 32


def default_model_cache() -> Path:
    """``RETRIEVAL_EVAL_MODEL_CACHE``, else the user's cache folder (``XDG_CACHE_HOME``,
    ``LOCALAPPDATA`` on Windows, ``~/Library/Caches`` on macOS, ``~/.cache``)."""
    explicit = os.environ.get("RETRIEVAL_EVAL_MODEL_CACHE")
    if explicit:
        return Path(explicit)
    if os.name == "nt" and os.environ.get("LOCALAPPDATA"):
        base = Path(os.environ["LOCALAPPDATA"])
    elif os.environ.get("XDG_CACHE_HOME"):
        base = Path(os.environ["XDG_CACHE_HOME"])
    elif sys.platform == "darwin":
        base = Path.home() / "Library" / "Caches"
    else:
        base = Path.home() / ".cache"
    return base / "pytest-retrieval-eval" / "models"


def runtime_installed() -> bool:
    """onnxruntime and tokenizers, what running an export needs (found, not imported)."""
    import importlib.util

    return all(importlib.util.find_spec(name) is not None for name in ("onnxruntime", "tokenizers"))


def exporter_installed() -> bool:
    """optimum's ONNX exporter, what making an export needs (found, not imported)."""
    import importlib.util

    try:
        return importlib.util.find_spec("optimum.onnxruntime") is not None
    except ImportError:  # optimum itself absent
        return False


def export_folder(cache: Path, weights_sha256: str) -> Path:
    return cache / f"all-MiniLM-L6-v2-{weights_sha256[:16]}-onnx-{LEVEL}"


def find_export(folder: Path) -> Path | None:
    """``folder`` if it holds a complete export (its manifest, and a graph of the recorded size;
    the graph's sha256 is checked when it is loaded), else None."""
    try:
        manifest = json.loads((folder / MANIFEST).read_text(encoding="utf-8"))
        graph = folder / "onnx" / ONNX_FILE
        return folder if graph.is_file() and graph.stat().st_size == manifest["size"] else None
    except (OSError, ValueError, KeyError, TypeError):
        return None


def ensure_export(source: Path, weights_sha256: str, cache: Path) -> Path:
    """The export of ``source`` (the packaged MiniLM folder) in ``cache``: found, or made once.
    Made in a temporary folder beside it and renamed into place while holding a lock, so a
    worker that waited finds the other's; an interrupted export leaves no half folder behind."""
    target = export_folder(cache, weights_sha256)
    if find_export(target) is not None:
        return target
    try:
        cache.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise RetrievalEvalError(f"the model cache cannot be created: {exc.strerror or exc}; choose another folder "
                                 "with --retrieval-model-cache (env RETRIEVAL_EVAL_MODEL_CACHE)", path=cache) from None
    from filelock import FileLock

    with FileLock(str(cache / f".{target.name}.lock"), timeout=600):
        if find_export(target) is not None:  # another process exported it while this one waited
            return target
        work = Path(tempfile.mkdtemp(prefix=f".{target.name}-", dir=cache))
        work.chmod(0o755)
        try:
            _export(source, work)
            (work / "onnx" / "model.onnx").unlink(missing_ok=True)  # the unoptimised graph: never run
            graph = work / "onnx" / ONNX_FILE
            (work / MANIFEST).write_text(json.dumps({"weights_sha256": weights_sha256, "level": LEVEL,
                                                     "file": ONNX_FILE, "size": graph.stat().st_size,
                                                     "sha256": sha256_file(graph)}), encoding="utf-8")
            if target.exists():  # a damaged export: replaced
                shutil.rmtree(target, ignore_errors=True)
            os.replace(work, target)
        finally:
            shutil.rmtree(work, ignore_errors=True)
    return target


def _set_aside(folder: Path) -> None:
    """Move a damaged export out of the way (a rename: a process still reading it keeps its files)."""
    aside = folder.with_name(f".{folder.name}-damaged-{os.getpid()}")
    try:
        os.replace(folder, aside)
    except OSError:  # another process moved it first
        return
    shutil.rmtree(aside, ignore_errors=True)


def _export(source: Path, work: Path) -> None:
    """sentence-transformers' export (through optimum), then its O2 optimisation, saved in ``work``."""
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    from .._lazy_torch import enable_torch, import_haystack

    import_haystack()
    enable_torch()
    import logging

    try:
        from sentence_transformers import SentenceTransformer, export_optimized_onnx_model
        import optimum.onnxruntime  # noqa: F401
    except ImportError as exc:
        raise RetrievalEvalError(f"exporting the embedding model to ONNX needs sentence-transformers and optimum-onnx "
                                 f"({exc}): pip install sentence-transformers optimum-onnx, or choose --retrieval-embedder "
                                 "minilm:torch") from None

    import warnings

    quiet = logging.getLogger("sentence_transformers")
    level = quiet.level
    quiet.setLevel(logging.ERROR)  # "No 'model.onnx' found ... Exporting": that is what is asked
    try:
        # the exporter's own deprecation and tracer warnings are not the user's to act on (and
        # would fail a run that turns warnings into errors)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            model = SentenceTransformer(str(source), backend="onnx", device="cpu", local_files_only=True)
            model.save_pretrained(str(work))
            export_optimized_onnx_model(model, LEVEL, str(work))
    finally:
        quiet.setLevel(level)


#: the sessions this process has loaded, by graph (path, size, times) and tokenizer folder:
#: ``InferenceSession.run`` is thread-safe, and each load costs 0.3 s and 90 MB
_loaded: dict[tuple, tuple] = {}
_loaded_lock = threading.Lock()


class OnnxMiniLMBackend:
    """The packaged all-MiniLM-L6-v2 through its ONNX export, in onnxruntime, without torch."""

    def __init__(self, source: Path, weights_sha256: str, identity: str, cache: Path | None = None) -> None:
        self.source = Path(source)
        self.weights_sha256 = weights_sha256
        self.identity = identity
        self.cache = cache
        self.loads = 0
        self._session = None
        self._tokenizer = None
        self._inputs: list[str] = []

    def _load(self) -> None:
        cache = self.cache or default_model_cache()
        folder = ensure_export(self.source, self.weights_sha256, cache)
        graph = folder / "onnx" / ONNX_FILE
        with _loaded_lock:
            key = self._key(graph)
            if key in _loaded:  # a YAML's embedder beside the built-in engine: one session a process
                self._session, self._inputs, self._tokenizer = _loaded[key]
                self.loads += 1
                return
            graph = self._load_graph(folder, graph, cache)
            key = self._key(graph)  # a damaged graph was exported again: the new file's
            if key is not None:
                _loaded[key] = (self._session, self._inputs, self._tokenizer)

    def _key(self, graph: Path) -> tuple | None:
        try:
            stamp = os.stat(graph)
        except OSError:
            return None
        return (str(graph.resolve()), str(self.source.resolve()), stamp.st_size, stamp.st_mtime_ns, stamp.st_ctime_ns)

    def _load_graph(self, folder: Path, graph: Path, cache: Path) -> Path:
        if sha256_file(graph) != json.loads((folder / MANIFEST).read_text(encoding="utf-8"))["sha256"]:
            import warnings

            _set_aside(folder)  # a damaged export is only a cache: made again, once
            warnings.warn(f"{graph}: does not match the sha256 its export recorded; exported again", stacklevel=4)
            folder = ensure_export(self.source, self.weights_sha256, cache)
            graph = folder / "onnx" / ONNX_FILE
        _check_layout(self.source)  # tokenizer, window and pooling: the packaged folder's, as the torch path reads them
        import onnxruntime
        from tokenizers import Tokenizer

        options = onnxruntime.SessionOptions()
        options.log_severity_level = 3  # warnings about unused initializers are not the user's
        # ONNX Runtime's threads spin after each run waiting for the next: on a small machine that
        # takes the cores from whatever the session does next (another engine's calls, PostgreSQL)
        options.add_session_config_entry("session.intra_op.allow_spinning", "0")
        self._session = onnxruntime.InferenceSession(str(graph), options, providers=["CPUExecutionProvider"])
        self._inputs = [i.name for i in self._session.get_inputs()]
        window = int(json.loads((self.source / "sentence_bert_config.json").read_text())["max_seq_length"])
        tokenizer = Tokenizer.from_file(str(self.source / "tokenizer.json"))
        tokenizer.enable_truncation(max_length=window)  # sentence-transformers' max_seq_length, not the file's
        pad = tokenizer.token_to_id("[PAD]")
        tokenizer.enable_padding(pad_id=pad if pad is not None else 0, pad_token="[PAD]")  # to the batch's longest
        self._tokenizer = tokenizer
        self.loads += 1
        return graph

    def token_window(self):
        from .embedders import SentenceTransformersBackend

        return SentenceTransformersBackend(str(self.source)).token_window()

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        if self._session is None:
            self._load()
        out = np.zeros((len(texts), 0), dtype=np.float32)
        order = sorted(range(len(texts)), key=lambda i: -len(texts[i]))  # like lengths together: less padding
        for start in range(0, len(order), BATCH):
            part = order[start:start + BATCH]
            vectors = self._batch([texts[i] for i in part])
            if out.shape[1] == 0:
                out = np.zeros((len(texts), vectors.shape[1]), dtype=np.float32)
            out[part] = vectors
        return out

    def _batch(self, texts: list[str]) -> np.ndarray:
        encoded = self._tokenizer.encode_batch(texts)
        ids = np.asarray([e.ids for e in encoded], dtype=np.int64)
        mask = np.asarray([e.attention_mask for e in encoded], dtype=np.int64)
        feed = {"input_ids": ids, "attention_mask": mask}
        if "token_type_ids" in self._inputs:
            feed["token_type_ids"] = np.asarray([e.type_ids for e in encoded], dtype=np.int64)
        hidden = self._session.run(None, feed)[0]
        weights = mask[..., None].astype(np.float32)
        pooled = (hidden * weights).sum(axis=1) / np.clip(weights.sum(axis=1), 1e-9, None)  # mean over tokens
        norms = np.linalg.norm(pooled, axis=1, keepdims=True)
        return (pooled / np.clip(norms, 1e-12, None)).astype(np.float32)


def _check_layout(folder: Path) -> None:
    """The pooling this backend does is the one the folder declares: a transformer, mean
    pooling, normalisation (what all-MiniLM-L6-v2 is); anything else is refused, not guessed."""
    try:
        modules = [m["type"].rsplit(".", 1)[-1] for m in json.loads((folder / "modules.json").read_text())]
        pooling = json.loads((folder / "1_Pooling" / "config.json").read_text())
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise RetrievalEvalError(f"the model folder's sentence-transformers layout cannot be read ({exc})",
                                 path=folder) from None
    # sentence-transformers writes the mode as flags (``pooling_mode_mean_tokens``) or, since
    # 5.x, as one name (``pooling_mode``)
    means = [k for k, v in pooling.items() if k.startswith("pooling_mode_") and v is True]
    means += [f"pooling_mode_{pooling['pooling_mode']}_tokens"] if isinstance(pooling.get("pooling_mode"), str) else []
    if modules != ["Transformer", "Pooling", "Normalize"] or means != ["pooling_mode_mean_tokens"]:
        raise RetrievalEvalError(f"the model folder's layout is {modules} with {means}; the ONNX backend runs "
                                 "Transformer, mean Pooling, Normalize only", path=folder)
