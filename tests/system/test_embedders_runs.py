"""Embedders and the embedding cache; the OpenAI-compatible path against a real local server."""

from __future__ import annotations

import json
import subprocess
import sys

import numpy as np
import pytest

from conftest import requires_hybrid
from pytest_retrieval_eval.hybrid.embedders import Embedder, HashingBackend, backend_for, packaged_minilm_path
from pytest_retrieval_eval.hybrid.embedding_cache import EmbeddingCache


pytestmark = requires_hybrid  # chunking and the embedders run Haystack


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


def test_packaged_minilm_embeds_offline(tmp_path, monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    e = Embedder(backend_for("minilm"), EmbeddingCache(tmp_path / "c"))
    q, tyre, privacy = e.embed(["my back wheel went soft", "Fixing a flat tyre puncture inner tube", "Privacy notice and data retention"])
    assert e.dim == 384
    assert q @ tyre > q @ privacy
    assert e.identity.startswith("sentence-transformers/all-MiniLM-L6-v2@53aa5117")
    assert (packaged_minilm_path() / "model.safetensors").is_file()
