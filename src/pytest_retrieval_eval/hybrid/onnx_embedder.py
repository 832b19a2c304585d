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
so every project and test run on a machine shares it, as a hub cache would. An export is
checked (its graph's size and sha256 against its manifest) before it is run, wherever it is;
one that fails is exported again, or, where the cache cannot be written (a read-only mount),
exported into the user's private fallback folder: never run. A run killed during the export
leaves its temporary folder, which a later run sweeps under the export's lock.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import shutil
import sys
import tempfile
import threading
import time
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


def private_model_cache() -> Path:
    """Where the export goes when the model cache cannot be written (a read-only mount, a file in
    the way): the user's own folder in the temp dir, which only they can write."""
    user = str(os.getuid()) if hasattr(os, "getuid") else "user"  # Windows: the temp dir is the user's
    return Path(tempfile.gettempdir()) / f"pytest-retrieval-eval-models-{user}"


class ModelCacheWarning(UserWarning):
    """The model cache's export failed its check or could not be written; what was done instead."""


#: an export that is absent (not damaged: nothing to warn about)
MISSING = "missing"
#: a temporary export folder whose writer seems alive (its pid reused?) is swept once this old
STALE_TEMP_SECONDS = 3600
#: ``.{export}-tmp-{pid}-{hex}`` (a writer's), ``.{export}-damaged-{pid}-{hex}`` (set aside), or an
#: older plugin's ``.{export}-{mkdtemp's 8 characters}``
_TEMP = re.compile(r"^\.(?P<export>.+-onnx-O\d)-(?:(?:tmp|damaged)-(?P<pid>\d+)(?:-[0-9a-f]+)?|[a-z0-9_]{8})$")
#: sha256 of a graph by (path, inode, size, times): a process checks each file once
_hashes: dict[tuple, str] = {}


def check_export(folder: Path) -> str | None:
    """None if ``folder`` holds an export whose graph matches its manifest (size and sha256),
    ``MISSING`` if it holds none, else what is wrong, naming the file."""
    graph = folder / "onnx" / ONNX_FILE
    try:
        manifest = json.loads((folder / MANIFEST).read_text(encoding="utf-8"))
        size, digest = manifest["size"], manifest["sha256"]
    except FileNotFoundError:
        return MISSING if not graph.exists() else f"{folder / MANIFEST}: is missing"
    except (OSError, ValueError, KeyError, TypeError) as exc:
        return f"{folder / MANIFEST}: cannot be read ({type(exc).__name__})"
    try:
        stamp = os.stat(graph)
    except OSError as exc:
        return f"{graph}: cannot be read ({exc.strerror})"
    if stamp.st_size != size:
        return f"{graph}: is {stamp.st_size} bytes, its export recorded {size}"
    key = (str(graph), stamp.st_ino, stamp.st_size, stamp.st_mtime_ns, stamp.st_ctime_ns)
    if key not in _hashes:
        try:
            _hashes[key] = sha256_file(graph)
        except OSError as exc:
            return f"{graph}: cannot be read ({exc.strerror})"
    return None if _hashes[key] == digest else f"{graph}: does not match the sha256 its export recorded"


def _why(exc: OSError) -> str:
    return exc.strerror or str(exc) or type(exc).__name__


class _Unwritable(Exception):
    """The cache needs writing (no export, or a damaged one) and cannot be written."""

    def __init__(self, problem: str, error: OSError) -> None:
        super().__init__(problem)
        self.problem, self.error = problem, error


def ensure_export(source: Path, weights_sha256: str, cache: Path) -> Path:
    """The folder of a verified export of ``source`` (the packaged MiniLM folder): in ``cache``,
    found or made once; where ``cache`` would need writing and cannot be (read-only, a file in
    the way, full), in the private fallback folder, with one warning saying so. An export that
    fails its check is never returned."""
    try:
        return _ensure(source, weights_sha256, cache)
    except _Unwritable as first:
        private = private_model_cache()
        hint = "choose a writable folder with --retrieval-model-cache (env RETRIEVAL_EVAL_MODEL_CACHE)"
        said = f"{first.problem}, and the model cache" if first.problem != MISSING else "the model cache"
        said = f"{said} {cache} cannot be written ({_why(first.error)})"
        try:
            if private.resolve() == Path(cache).resolve():
                raise first.error
            _private_folder(private)
            had = check_export(export_folder(private, weights_sha256)) is None
            folder = _ensure(source, weights_sha256, private)
        except (_Unwritable, OSError) as exc:
            error = exc.error if isinstance(exc, _Unwritable) else exc
            raise RetrievalEvalError(f"{said}, nor the private fallback {private} ({_why(error)}); {hint}",
                                     path=cache) from None
        import warnings

        done = f"used the export in {private}" if had else f"exported into {private}"
        warnings.warn(ModelCacheWarning(f"{said}: {done} instead; {hint}"), stacklevel=3)
        return folder


def _private_folder(private: Path) -> None:
    """The fallback folder, made 0700; one that another user owns (planted in a shared temp dir)
    or that is a link is refused."""
    private.mkdir(mode=0o700, parents=True, exist_ok=True)
    stat = os.lstat(private)
    if hasattr(os, "getuid") and (stat.st_uid != os.getuid() or not private.is_dir() or private.is_symlink()):
        raise PermissionError(13, "owned by another user, or not a folder", str(private))


def _ensure(source: Path, weights_sha256: str, cache: Path) -> Path:
    target = export_folder(cache, weights_sha256)
    problem = check_export(target)
    if problem is None:
        sweep(cache)
        return target
    try:
        made = _export_into(source, weights_sha256, cache, target)
    except OSError as exc:  # read-only, not a folder, full; filelock's Timeout too
        raise _Unwritable(problem, exc) from None
    if problem != MISSING:
        import warnings

        warnings.warn(ModelCacheWarning(f"{problem}; exported again"), stacklevel=4)
    return made


def _export_into(source: Path, weights_sha256: str, cache: Path, target: Path) -> Path:
    """Export into a temporary folder beside ``target`` and rename it into place while holding the
    export's lock, so a worker that waited finds the other's; a damaged export is set aside
    first, and dead writers' temporary folders are swept."""
    cache.mkdir(parents=True, exist_ok=True)
    from filelock import FileLock

    with FileLock(str(_lock(cache, target.name)), timeout=600):
        sweep(cache, holding=target.name)
        problem = check_export(target)
        if problem is None:  # another process exported it while this one waited
            return target
        work = cache / f".{target.name}-tmp-{os.getpid()}-{os.urandom(4).hex()}"
        work.mkdir(mode=0o755)
        try:
            _export(source, work)
            (work / "onnx" / "model.onnx").unlink(missing_ok=True)  # the unoptimised graph: never run
            graph = work / "onnx" / ONNX_FILE
            (work / MANIFEST).write_text(json.dumps({"weights_sha256": weights_sha256, "level": LEVEL,
                                                     "file": ONNX_FILE, "size": graph.stat().st_size,
                                                     "sha256": sha256_file(graph)}), encoding="utf-8")
            if problem != MISSING or target.exists():  # a damaged or partial export: out of the way first
                _set_aside(target)
            os.replace(work, target)
        finally:
            shutil.rmtree(work, ignore_errors=True)
    return target


def _lock(cache: Path, export: str) -> Path:
    return cache / f".{export}.lock"


def _set_aside(folder: Path) -> None:
    """Move a damaged export out of the way (a rename: a process still reading it keeps its
    files), then remove it; a rename that fails raises (the export must not be used)."""
    aside = folder.with_name(f".{folder.name}-damaged-{os.getpid()}-{os.urandom(4).hex()}")
    try:
        os.replace(folder, aside)
    except FileNotFoundError:
        return
    shutil.rmtree(aside, ignore_errors=True)


def sweep(cache: Path, holding: str | None = None) -> list[str]:
    """Remove the temporary folders of export writers that are gone (a run killed during the
    export leaves 60-90 MB), each under its export's lock: ``holding`` names the export whose
    lock this process holds; any other is taken without waiting and skipped while a writer holds
    it (or where the cache cannot be written). Under the lock, a folder is stale when the pid in
    its name is dead, when it is over an hour old, or when it has no pid (an older plugin's)."""
    from filelock import FileLock

    from .store.platform import alive

    found: dict[str, list[tuple[Path, str | None]]] = {}
    try:
        for path in cache.iterdir():
            match = _TEMP.match(path.name)
            if match and path.is_dir() and not path.is_symlink():
                found.setdefault(match["export"], []).append((path, match["pid"]))
    except OSError:
        return []
    removed: list[str] = []

    def stale(path: Path, pid: str | None) -> bool:
        try:
            old = time.time() - path.lstat().st_mtime > STALE_TEMP_SECONDS
        except OSError:
            return False
        return pid is None or old or not alive(int(pid))

    for export, paths in found.items():
        try:
            with contextlib.nullcontext() if export == holding else FileLock(str(_lock(cache, export)), timeout=0):
                for path, pid in paths:
                    if stale(path, pid):
                        shutil.rmtree(path, ignore_errors=True)
                        removed += [] if path.exists() else [path.name]
        except OSError:  # its writer holds the lock (filelock's Timeout), or the cache is read-only
            continue
    return removed


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
        self._stamp: str | None = None
        self._session = None
        self._tokenizer = None
        self._inputs: list[str] = []

    @property
    def canary_stamp(self) -> str:
        """The libraries that export and run it (the weights are pinned by the identity)."""
        if self._stamp is None:
            from .embedders import runtime_stamp

            self._stamp = runtime_stamp("onnx")
        return self._stamp

    def _load(self) -> None:
        folder = ensure_export(self.source, self.weights_sha256, self.cache or default_model_cache())  # verified
        graph = folder / "onnx" / ONNX_FILE
        with _loaded_lock:
            key = self._key(graph)
            if key in _loaded:  # a YAML's embedder beside the built-in engine: one session a process
                self._session, self._inputs, self._tokenizer = _loaded[key]
                self.loads += 1
                return
            self._load_graph(graph)
            if key is not None:
                _loaded[key] = (self._session, self._inputs, self._tokenizer)

    def _key(self, graph: Path) -> tuple | None:
        try:
            stamp = os.stat(graph)
        except OSError:
            return None
        return (str(graph.resolve()), str(self.source.resolve()), stamp.st_size, stamp.st_mtime_ns, stamp.st_ctime_ns)

    def _load_graph(self, graph: Path) -> None:
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
