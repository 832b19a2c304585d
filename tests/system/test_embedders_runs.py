"""Embedders and the embedding cache; the OpenAI-compatible path against a real local server."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from conftest import copy_of_the_machines_export, requires_hybrid
from pytest_retrieval_eval.hybrid.embedders import (MINILM_SHA256, Embedder, HashingBackend, backend_for,
                                                     packaged_minilm_path)
from pytest_retrieval_eval.hybrid.embedding_cache import EmbeddingCache


pytestmark = [requires_hybrid, pytest.mark.model]  # chunking and the embedders run Haystack


def test_hashing_embedder_is_stable_across_processes():
    code = ("from pytest_retrieval_eval.hybrid.embedders import HashingBackend; import json;"
            "print(json.dumps(HashingBackend(64).embed(['Fixing a flat tyre'])[0].tolist()))")
    other = json.loads(subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                                      env={"PYTHONHASHSEED": "123"}).stdout)
    ours = HashingBackend(64).embed(["Fixing a flat tyre"])[0]
    assert np.allclose(ours, other)
    assert np.linalg.norm(ours) == pytest.approx(1.0)
    a, b, c = HashingBackend(256).embed(["battery charging in winter", "charging the battery in cold winter", "privacy of data"])
    assert a @ b > a @ c


def test_concurrent_writers_share_one_cache(tmp_path):
    code = ("import sys, numpy as np; from pytest_retrieval_eval.hybrid.embedding_cache import EmbeddingCache;"
            "c = EmbeddingCache(sys.argv[1]); [c.put_many('m', [(f'{sys.argv[2]}-{i}', np.ones(4))]) for i in range(200)]")
    procs = [subprocess.Popen([sys.executable, "-c", code, str(tmp_path / "c"), str(n)]) for n in range(3)]
    assert [p.wait(60) for p in procs] == [0, 0, 0]
    assert EmbeddingCache(tmp_path / "c").count("m") == 600


def test_a_damaged_cache_in_a_read_only_folder_is_one_clear_error_never_reopened_as_it_was(tmp_path, read_only):
    """A cache whose vector fails its checksum, in a folder mounted read-only while a writer has
    it open (its WAL files there, so SQLite opens it read-only): it cannot be set aside, so it is
    not silently opened again as it was; the error names the file, the cause and the option."""
    from pytest_retrieval_eval import RetrievalEvalError

    path = tmp_path / "cache" / "embeddings.sqlite3"
    writer = EmbeddingCache(path)
    writer.put_many("m", [("k", np.ones(4, dtype=np.float32)), ("j", np.ones(4, dtype=np.float32))])
    [blob] = writer._conn.execute("SELECT vec FROM embeddings WHERE key = 'k'").fetchone()
    writer._conn.execute("UPDATE embeddings SET vec = ? WHERE key = 'k'", (bytes([blob[0] ^ 0xFF]) + blob[1:],))
    read_only(path.parent)
    reader = EmbeddingCache(path)
    try:
        with pytest.raises(RetrievalEvalError) as info:
            reader.get_many("m", ["k", "j"])
    finally:
        writer.close()
        if reader._conn is not None:
            reader.close()
    assert str(info.value) == (f"{path}: embedding cache cannot be set aside (Read-only file system) and cannot be "
                               "used: damaged (a stored vector does not match its checksum (m, k…)); choose another "
                               "folder with --retrieval-cache-dir (ini retrieval_cache_dir)")

def test_packaged_minilm_embeds_offline(tmp_path, monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    e = Embedder(backend_for("minilm"), EmbeddingCache(tmp_path / "c"))
    q, tyre, privacy = e.embed(["my back wheel went soft", "Fixing a flat tyre puncture inner tube", "Privacy notice and data retention"])
    assert e.dim == 384
    assert q @ tyre > q @ privacy
    assert e.identity.startswith("sentence-transformers/all-MiniLM-L6-v2@53aa5117")
    assert (packaged_minilm_path() / "model.safetensors").is_file()


ONNX_CHILD = """
import json, sys
import numpy as np
from pathlib import Path
from pytest_retrieval_eval.hybrid.embedders import backend_for
backend = backend_for(sys.argv[1], model_cache=Path(sys.argv[2]))
np.save(sys.argv[3], backend.embed(json.loads(sys.argv[4])))
print(json.dumps({"identity": backend.identity, "torch": "torch" in sys.modules}))
"""


def _bundled_texts() -> list[str]:
    from pytest_retrieval_eval.data.chunking import chunk_corpus
    from pytest_retrieval_eval.data.corpus import JsonFolder

    return [c.text for c in chunk_corpus(JsonFolder(Path(__file__).resolve().parents[2] / "corpus").load())]


def test_onnx_minilm_is_exported_once_for_workers_at_once_runs_without_torch_and_matches_torch(tmp_path):
    """Two processes ask a fresh model cache at once: one exports (through sentence-transformers
    and optimum), the other waits and reads it; no temporary folder is left. A third finds it and
    never imports torch. Every bundled chunk's vector is the torch path's, to a cosine of
    0.9999998, and the identity names the runtime."""
    texts = _bundled_texts() + ["my back wheel went soft", "", "a " * 600]  # empty and over-long too
    cache = tmp_path / "models"

    def start(name: str) -> subprocess.Popen:
        return subprocess.Popen([sys.executable, "-c", ONNX_CHILD, "minilm", str(cache), str(tmp_path / f"{name}.npy"),
                                 json.dumps(texts)], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)

    racing = [start("a"), start("b")]
    answers = [p.communicate(timeout=300) for p in racing]
    assert [p.returncode for p in racing] == [0, 0], [err[-2000:] for _, err in answers]
    assert sorted(p.name for p in cache.iterdir() if not p.name.endswith(".lock")) == [
        "all-MiniLM-L6-v2-53aa51172d142c89-onnx-O2"]  # one export, no temporary folder left
    third = start("c")
    out, err = third.communicate(timeout=120)
    assert third.returncode == 0, err[-2000:]
    found = json.loads(out)
    assert found == {"identity": "sentence-transformers/all-MiniLM-L6-v2@53aa51172d14+onnx-O2", "torch": False}

    torch_vectors = backend_for("minilm:torch").embed(texts)
    for name in ("a", "b", "c"):
        onnx_vectors = np.load(tmp_path / f"{name}.npy")
        assert onnx_vectors.shape == torch_vectors.shape == (len(texts), 384)
        cosines = (onnx_vectors * torch_vectors).sum(axis=1)
        assert cosines.min() >= 0.9999998, cosines.min()


def test_a_damaged_onnx_export_is_made_again(tmp_path):
    """A graph that no longer matches its recorded hash is set aside and exported again, with a warning."""
    from pytest_retrieval_eval.hybrid import onnx_embedder

    cache = tmp_path / "models"
    copy_of_the_machines_export(cache)  # an intact export to start from
    backend = backend_for("minilm:onnx", model_cache=cache)
    first = backend.embed(["a flat tyre"])
    graph = onnx_embedder.export_folder(cache, MINILM_SHA256) / "onnx" / onnx_embedder.ONNX_FILE
    data = bytearray(graph.read_bytes())
    data[len(data) // 2] ^= 0xFF  # same size: only the hash can tell
    graph.write_bytes(bytes(data))
    again = backend_for("minilm:onnx", model_cache=cache)
    with pytest.warns(UserWarning, match="does not match the sha256 its export recorded; exported again"):
        vector = again.embed(["a flat tyre"])
    assert np.allclose(vector, first, atol=1e-6)
    assert [p.name for p in cache.iterdir() if not p.name.endswith(".lock")] == [graph.parents[1].name]


def test_onnx_backends_in_one_process_share_one_session(tmp_path):
    """The built-in engine's embedder and a team YAML's PluginTextEmbedder in one process: one
    ONNX Runtime session, the same vectors."""
    from pytest_retrieval_eval.hybrid.components import PluginTextEmbedder

    cache = tmp_path / "models"
    copy_of_the_machines_export(cache)
    built_in = backend_for("minilm:onnx", model_cache=cache)
    first = built_in.embed(["a flat tyre"])
    yaml_step = PluginTextEmbedder(spec="minilm:onnx")
    yaml_step.model_cache = cache
    vector = np.asarray(yaml_step.run(text="a flat tyre")["embedding"], dtype=np.float32)
    assert vector.tobytes() == first[0].tobytes()
    from pytest_retrieval_eval.hybrid import onnx_embedder

    sessions = {id(v[0]) for k, v in onnx_embedder._loaded.items() if k[0].startswith(str(cache.resolve()))}
    assert len(sessions) == 1


SERVER = """
import sys
sys.path.insert(0, {tests!r})
from fake_api import FakeApi, Reply, embeddings_reply
with FakeApi(keep_alive=True) as api:
    api.script("/embeddings", Reply(200, embeddings_reply(8), delay=0.05))
    print(api.url, flush=True)
    for line in sys.stdin:  # each line asks for the most requests in flight at once since the last
        print(api.max_in_flight, flush=True)
        api.max_in_flight = 0
"""


def test_the_openai_embedder_keeps_its_concurrency_in_flight_against_a_server_of_its_own():
    """A team's embedding server in its own process (50 ms a batch): concurrency 8 keeps exactly 8
    batches in flight, one at a time keeps one, and both give the same vectors. The time it saves
    is measured by ``python bench/run.py --only http`` (no timed tests)."""
    from pytest_retrieval_eval.hybrid.embedders import OpenAIBackend

    server = subprocess.Popen([sys.executable, "-c", SERVER.format(tests=str(Path(__file__).parents[1]))],
                              stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        url = server.stdout.readline().strip()
        texts = [f"passage {i} " + "word " * (i % 13) for i in range(64 * 40)]  # 40 batches of 64: 5 rounds of 8
        peak, vectors = {}, {}
        for width in (1, 8):
            embedder = Embedder(OpenAIBackend("m", url=url, concurrency=width), None)
            embedder.embed(["warm"])  # the client is made once
            server.stdin.write("peak\n")
            server.stdin.flush()
            server.stdout.readline()  # the warm-up's peak, cleared
            vectors[width] = embedder.embed(texts)
            server.stdin.write("peak\n")
            server.stdin.flush()
            peak[width] = int(server.stdout.readline())
            embedder.backend.close()
    finally:
        server.stdin.close()
        server.wait(10)
        server.stdout.close()
    assert (vectors[1] == vectors[8]).all() and vectors[1].shape == (len(texts), 8)
    assert peak == {1: 1, 8: 8}, peak
