"""The model cache's ONNX export: verified before use wherever it is. A damaged export is never
run: it is made again in place, or, where the cache cannot be written (read-only), in the
user's private fallback folder, and the warning says which. A run killed during the export
leaves a temporary folder that a later run sweeps once its writer is gone."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import warnings

import numpy as np
import pytest

from conftest import copy_of_the_machines_export, requires_hybrid
from pytest_retrieval_eval.hybrid import onnx_embedder
from pytest_retrieval_eval.hybrid.embedders import MINILM_SHA256, backend_for, packaged_minilm_path

pytestmark = [requires_hybrid, pytest.mark.model]

NAME = onnx_embedder.export_folder(onnx_embedder.Path("."), MINILM_SHA256).name
TEXTS = ["a flat tyre", "my back wheel went soft", "privacy of data"]


@pytest.fixture(scope="module")
def intact(tmp_path_factory):
    """A model cache of the module's own holding one verified export (a copy of the machine's:
    the tests below make exports of their own where that is what they test), and its vectors."""
    cache = tmp_path_factory.mktemp("intact") / "models"
    assert copy_of_the_machines_export(cache).name == NAME
    return cache, backend_for("minilm:onnx", model_cache=cache).embed(TEXTS)


@pytest.fixture
def private(tmp_path, monkeypatch):
    """The temp dir, where the private fallback cache goes, inside this test's folder."""
    folder = tmp_path / "tmp"
    folder.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(folder))
    return folder / f"pytest-retrieval-eval-models-{os.getuid()}"


def copy_cache(intact, cache):
    shutil.copytree(intact[0], cache, ignore=shutil.ignore_patterns("*.lock"))
    return cache / NAME / "onnx" / onnx_embedder.ONNX_FILE


def damage(graph):
    """Flips the sign of every weight of one feed-forward matrix, in place: the graph keeps its
    size and still loads, and its vectors are others (only the hash can tell)."""
    import onnx

    model = onnx.load(str(graph), load_external_data=False)
    weights = max((t.raw_data for t in model.graph.initializer if "MatMul" in t.name), key=len)
    data = bytearray(graph.read_bytes())
    start = data.find(weights)
    assert start > 0 and len(weights) > 1_000_000
    signs = slice(start + 3, start + len(weights), 4)  # float32, little-endian: the sign is in the last byte
    data[signs] = bytes(b ^ 0x80 for b in data[signs])
    graph.write_bytes(bytes(data))


def test_a_damaged_export_in_a_read_only_cache_is_never_run_a_private_export_is(intact, tmp_path, private,
                                                                                 read_only):
    cache = tmp_path / "models"
    graph = copy_cache(intact, cache)
    damage(graph)
    damaged = graph.read_bytes()
    read_only(cache)
    with pytest.warns(UserWarning) as said:
        vectors = backend_for("minilm:onnx", model_cache=cache).embed(TEXTS)
    assert np.allclose(vectors, intact[1], atol=1e-6)  # the damaged graph's would not be
    [line] = [str(w.message) for w in said if issubclass(w.category, UserWarning)]  # not another test's garbage
    assert line == (f"{graph}: does not match the sha256 its export recorded, and the model cache {cache} cannot "
                    f"be written (Read-only file system): exported into {private} instead; choose a writable "
                    "folder with --retrieval-model-cache (env RETRIEVAL_EVAL_MODEL_CACHE)")
    assert graph.read_bytes() == damaged  # left as it was: read-only
    export = private / NAME
    manifest = json.loads((export / onnx_embedder.MANIFEST).read_text())
    assert manifest["sha256"] == onnx_embedder.sha256_file(export / "onnx" / onnx_embedder.ONNX_FILE)
    assert oct(private.stat().st_mode & 0o777) == "0o700"

    with pytest.warns(UserWarning, match=rf"cannot be written \(Read-only file system\): used the export in "
                                         rf"{private} instead"):
        again = backend_for("minilm:onnx", model_cache=cache).embed(TEXTS)
    assert np.allclose(again, intact[1], atol=1e-6)


def test_a_read_only_cache_without_an_export_uses_the_private_one(intact, tmp_path, private, read_only):
    (tmp_path / "models").mkdir()
    cache = read_only(tmp_path / "models")
    shutil.copytree(intact[0] / NAME, private / NAME)
    with pytest.warns(UserWarning) as said:
        vectors = backend_for("minilm:onnx", model_cache=cache).embed(TEXTS)
    assert np.allclose(vectors, intact[1], atol=1e-6)
    assert [str(w.message) for w in said if issubclass(w.category, UserWarning)] == [
        f"the model cache {cache} cannot be written (Read-only file system): used the export in {private} instead; "
        "choose a writable folder with --retrieval-model-cache (env RETRIEVAL_EVAL_MODEL_CACHE)"]


def test_an_intact_export_in_a_read_only_cache_is_run_where_it_is(intact, tmp_path, private, read_only):
    cache = tmp_path / "models"
    copy_cache(intact, cache)
    (cache / f".{NAME}-tmp-1-00000000").mkdir()  # a leftover it cannot sweep: no matter
    read_only(cache)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        vectors = backend_for("minilm:onnx", model_cache=cache).embed(TEXTS)
    assert np.allclose(vectors, intact[1], atol=1e-6)
    assert not private.exists()


def _dead_pid() -> int:
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait()
    return child.pid


HOLD_LOCK = """
import sys, time
from filelock import FileLock
with FileLock(sys.argv[1]):
    print("held", flush=True)
    time.sleep(120)
"""


def test_leftover_export_folders_are_swept_once_their_writer_is_gone(intact, tmp_path):
    """A dead writer's temporary folder (named with its pid, or an older plugin's random name),
    of this export or another weights hash's, is swept by a run that finds the export; one
    whose writer still holds the export's lock is left alone."""
    cache = tmp_path / "models"
    copy_cache(intact, cache)
    other = "all-MiniLM-L6-v2-0123456789abcdef-onnx-O2"
    writer = subprocess.Popen([sys.executable, "-c", HOLD_LOCK, str(cache / f".{NAME}.lock")],
                              stdout=subprocess.PIPE, text=True)
    try:
        assert writer.stdout.readline().strip() == "held"
        dead = _dead_pid()
        leftovers = [f".{NAME}-tmp-{dead}-1a2b3c4d", f".{NAME}-k3j9x0ab", f".{other}-tmp-{dead}-5e6f7a8b",
                     f".{NAME}-damaged-{dead}"]
        live = f".{NAME}-tmp-{writer.pid}-9c0d1e2f"
        for name in [*leftovers, live]:
            (cache / name / "onnx").mkdir(parents=True)
            (cache / name / "onnx" / "model.onnx").write_bytes(b"\0" * 1000)
        assert onnx_embedder.ensure_export(packaged_minilm_path(), MINILM_SHA256, cache) == cache / NAME
        left = sorted(p.name for p in cache.iterdir() if p.is_dir())
        assert left == sorted([NAME, live, *leftovers[:2], leftovers[3]])  # its lock is held: not swept
    finally:
        writer.kill()
        writer.wait()
        writer.stdout.close()
    onnx_embedder.ensure_export(packaged_minilm_path(), MINILM_SHA256, cache)
    assert sorted(p.name for p in cache.iterdir() if p.is_dir()) == [NAME]


EXPORT = """
import sys
from pathlib import Path
from pytest_retrieval_eval.hybrid import onnx_embedder
from pytest_retrieval_eval.hybrid.embedders import MINILM_SHA256, packaged_minilm_path
onnx_embedder.ensure_export(packaged_minilm_path(), MINILM_SHA256, Path(sys.argv[1]))
"""


def test_a_run_killed_during_the_export_leaves_a_folder_the_next_run_sweeps(intact, tmp_path):
    cache = tmp_path / "models"
    child = subprocess.Popen([sys.executable, "-c", EXPORT, str(cache)], stderr=subprocess.PIPE)
    deadline = time.monotonic() + 240
    while not any((p / "onnx").is_dir() for p in cache.glob(f".{NAME}-*")):
        assert child.poll() is None and time.monotonic() < deadline, "the export never began"
        time.sleep(0.2)
    time.sleep(1)
    os.kill(child.pid, signal.SIGKILL)
    child.wait()
    child.stderr.close()
    [leftover] = [p for p in cache.glob(f".{NAME}-*") if p.is_dir()]
    assert not (cache / NAME).exists()

    vectors = backend_for("minilm:onnx", model_cache=cache).embed(TEXTS)  # exports, and sweeps first
    assert np.allclose(vectors, intact[1], atol=1e-6)
    assert not leftover.exists()
    assert sorted(p.name for p in cache.iterdir() if not p.name.endswith(".lock")) == [NAME]


RETRIEVAL_TESTS = """
    import pytest

    @pytest.mark.retrieval
    def test_q(retrieval_results):
        assert retrieval_results.n > 0
"""


def test_a_run_on_a_damaged_read_only_cache_scores_as_one_on_an_intact_cache(intact, pytester, sandbox_tmp, tmp_path,
                                                                               read_only):
    """The whole plugin: the bundled eval's hybrid table on a read-only cache whose export is
    damaged is the intact cache's, and the run says where the export it used is."""
    from conftest import CORPUS, QUESTIONS, parse_table

    damaged = tmp_path / "damaged"
    damage(copy_cache(intact, damaged))
    read_only(damaged)
    private = sandbox_tmp / f"pytest-retrieval-eval-models-{os.getuid()}"
    shutil.copytree(intact[0] / NAME, private / NAME)  # exported by an earlier run: this one exports nothing
    pytester.makepyfile(RETRIEVAL_TESTS)
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTEST_XDIST")}
    tables = {}
    for name, cache in (("intact", intact[0]), ("damaged", damaged)):
        pytester.makeini(f"[pytest]\nretrieval_corpus = {CORPUS}\nretrieval_questions = {QUESTIONS}\n"
                         f"retrieval_engines = hybrid\nretrieval_embedder = minilm:onnx\n"
                         f"retrieval_cache_dir = {tmp_path / f'cache-{name}'}\nretrieval_model_cache = {cache}\n")
        done = subprocess.run([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "--retrieval-report",
                               "--retrieval-store-cache-mb=0"], cwd=pytester.path, capture_output=True, text=True,
                              env={**env, "TMPDIR": str(sandbox_tmp)}, timeout=600)
        assert done.returncode == 0, done.stdout + done.stderr
        tables[name] = parse_table(done.stdout)
        said = " ".join(done.stdout.split())
        assert ("cannot be written (Read-only file system): used the export in" in said) == (name == "damaged"), said
    assert tables["damaged"] == tables["intact"]
