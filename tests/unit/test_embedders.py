"""Embedders and the embedding cache; the OpenAI-compatible path against a real local server."""

from __future__ import annotations


import numpy as np
import pytest

from conftest import FAKE_KEY, requires_hybrid
from fake_api import Reply, embeddings_reply
from pytest_retrieval_eval import RetrievalEvalError
from pytest_retrieval_eval.hybrid.embedders import MINILM_SHA256, Embedder, OpenAIBackend, SentenceTransformersBackend, backend_for
from pytest_retrieval_eval.hybrid.embedding_cache import EmbeddingCache


pytestmark = requires_hybrid  # chunking and the embedders run Haystack

class Counting:
    def __init__(self, identity="count:v1", dim=4):
        self.identity, self.calls, self.texts, self.dim = identity, 0, [], dim

    def embed(self, texts):
        self.calls += 1
        self.texts += list(texts)
        return np.array([[len(t), 1, 0, 0] for t in texts], dtype=np.float32)


def test_cache_means_a_rerun_computes_nothing(tmp_path):
    cache = tmp_path / "c.sqlite3"
    first = Counting()
    e = Embedder(first, EmbeddingCache(cache), batch_size=2)
    v1 = e.embed(["a", "bb", "a", "ccc"])
    assert first.texts == ["a", "bb", "ccc"]  # duplicates embedded once
    assert e.stats.computed == 3
    second = Counting()
    e2 = Embedder(second, EmbeddingCache(cache))
    v2 = e2.embed(["ccc", "a", "bb", "a"])
    assert second.calls == 0 and e2.stats.cached == 4
    assert np.array_equal(v2, v1[[3, 0, 1, 0]])
    other_model = Counting(identity="count:v2")
    Embedder(other_model, EmbeddingCache(cache)).embed(["a"])
    assert other_model.calls == 1  # keyed by model identity too


def test_dimension_probe_is_cached(tmp_path):
    b = Counting()
    b.dim = None  # unknown until asked
    del b.dim
    assert Embedder(b, EmbeddingCache(tmp_path / "c")).dim == 4
    b2 = Counting()
    del b2.dim
    assert Embedder(b2, EmbeddingCache(tmp_path / "c")).dim == 4 and b2.calls == 0


def test_weights_that_do_not_match_the_expected_hash_are_refused(tmp_path):
    (tmp_path / "model.safetensors").write_bytes(b"not the weights")
    backend = SentenceTransformersBackend(str(tmp_path), expect_sha256=MINILM_SHA256)
    with pytest.raises(RetrievalEvalError, match="model weights do not match the expected sha256"):
        backend.embed(["x"])


def test_the_built_in_minilm_names_its_runtime():
    """``minilm:onnx`` and ``minilm:torch`` choose; their vectors differ in the seventh decimal,
    so neither's cache, table or snapshot is the other's. Nothing loads to know the identity."""
    from pytest_retrieval_eval.hybrid.embedders import MINILM_IDENTITY
    from pytest_retrieval_eval.hybrid.onnx_embedder import OnnxMiniLMBackend

    torch_path, onnx_path = backend_for("minilm:torch"), backend_for("minilm:onnx")
    assert isinstance(torch_path, SentenceTransformersBackend) and torch_path.identity == MINILM_IDENTITY
    assert isinstance(onnx_path, OnnxMiniLMBackend) and onnx_path.identity == MINILM_IDENTITY + "+onnx-O2"
    assert onnx_path.loads == 0 and torch_path.loads == 0
    assert backend_for("minilm").identity == onnx_path.identity  # the hybrid extra brings onnxruntime and optimum


@pytest.mark.parametrize("spec", ["", "nope", "openai", "sentence-transformers", "hashing:x", "hashing:2", "minilm:gpu"])
def test_bad_embedder_settings(spec):
    if spec == "":
        assert backend_for(spec).identity.startswith("sentence-transformers/all-MiniLM-L6-v2")
        return
    with pytest.raises(RetrievalEvalError):
        backend_for(spec)


# --- OpenAI-compatible endpoint through Haystack's OpenAI component, against a real server ---

def no_key_anywhere(*texts):
    for text in texts:
        assert FAKE_KEY not in text
        assert "c0ffee" not in text


def test_openai_embeddings_through_haystack(fake_api, tmp_path):
    fake_api.script("/embeddings", Reply(200, embeddings_reply(8)))
    e = Embedder(backend_for("openai:test-embed"), EmbeddingCache(tmp_path / "c"))
    v = e.embed(["one", "three"])
    assert v.shape == (2, 8)
    [seen] = fake_api.hits("/embeddings")
    assert seen.headers["authorization"] == f"Bearer {FAKE_KEY}"
    assert seen.body["model"] == "test-embed" and seen.body["input"] == ["one", "three"]
    e.embed(["one"])
    assert len(fake_api.hits("/embeddings")) == 1  # cached


def test_openai_429_is_retried_honouring_retry_after(fake_api):
    fake_api.script("/embeddings", Reply(429, {"error": {"message": "slow down"}}, {"retry-after": "0"}),
                    Reply(200, embeddings_reply(8)))
    assert Embedder(OpenAIBackend("m", max_retries=2), None).embed(["x"]).shape == (1, 8)
    assert len(fake_api.hits("/embeddings")) == 2


def test_the_openai_embedder_closes_its_connections_and_opens_new_ones_when_used_again(fake_api):
    fake_api.script("/embeddings", Reply(200, embeddings_reply(8)), Reply(200, embeddings_reply(8)))
    backend = OpenAIBackend("m", max_retries=0)
    backend.embed(["x"])
    client = backend._client
    backend.close()
    assert client.is_closed and backend._client is None
    assert backend.embed(["y"]).shape == (1, 8) and not backend._client.is_closed
    backend.close()
    backend.close()  # twice: nothing to close


def test_openai_401_fails_loud_without_the_key(fake_api, capsys, caplog, retrieval_session):
    # retrieval_session: the plugin awake, as in every run that embeds (log records are masked then)
    echo = {"error": {"message": f"Incorrect API key provided: {FAKE_KEY}", "type": "invalid_request_error"}}
    fake_api.script("/embeddings", Reply(401, echo))
    with pytest.raises(RetrievalEvalError) as info:
        Embedder(OpenAIBackend("m", max_retries=0), None).embed(["x"])
    message = str(info.value)
    assert "/embeddings failed: HTTP 401: " in message and "(check the API key variable)" in message
    out = capsys.readouterr()
    no_key_anywhere(message, out.out, out.err, caplog.text, "\n".join(r.getMessage() for r in caplog.records))


def test_openai_500_gives_up_after_retries(fake_api):
    fake_api.script("/embeddings", Reply(500, {"error": {"message": "boom"}}, {"retry-after": "0"}))
    with pytest.raises(RetrievalEvalError, match="/embeddings failed after 3 attempts: HTTP 500: "):
        Embedder(OpenAIBackend("m", max_retries=2), None).embed(["x"])
    assert len(fake_api.hits("/embeddings")) == 3


def test_openai_timeout(fake_api):
    fake_api.script("/embeddings", Reply(200, embeddings_reply(8), delay=2.0))
    with pytest.raises(RetrievalEvalError, match="Timeout"):
        Embedder(OpenAIBackend("m", timeout=0.3, max_retries=0), None).embed(["x"])


def test_openai_without_a_key_names_the_variable_for_a_hosted_endpoint(monkeypatch):
    monkeypatch.delenv("RETRIEVAL_EVAL_API_KEY", raising=False)
    monkeypatch.delenv("OPENROUTER_API_KEY", raising=False)
    monkeypatch.delenv("RETRIEVAL_EVAL_BASE_URL", raising=False)  # the hosted default
    with pytest.raises(RetrievalEvalError, match="needs an API key: set RETRIEVAL_EVAL_API_KEY \\(or OPENROUTER_API_KEY\\)"):
        Embedder(OpenAIBackend("m"), None).embed(["x"])


def test_a_local_embeddings_server_needs_no_key(fake_api, monkeypatch):
    monkeypatch.delenv("RETRIEVAL_EVAL_API_KEY")
    fake_api.script("/embeddings", Reply(200, embeddings_reply(8)))
    assert Embedder(OpenAIBackend("m"), None).embed(["x", "y"]).shape == (2, 8)
    assert FAKE_KEY not in fake_api.hits("/embeddings")[0].headers.get("authorization", "")


def test_the_openai_embedder_sends_batches_side_by_side_and_gets_the_serial_vectors():
    """A team's embedding server answering each batch in 50 ms: concurrency 8 keeps 8 batches in
    flight, with the same vectors in the same order as one at a time (the time saved is
    ``python bench/run.py --only http``'s, not a test's)."""
    from fake_api import FakeApi, Reply, embeddings_reply

    texts = [f"passage {i} " + "word " * (i % 13) for i in range(64 * 16)]  # 16 batches of 64
    vectors, peak = {}, {}
    with FakeApi() as api:
        api.script("/embeddings", Reply(200, embeddings_reply(8), delay=0.05))
        for width in (1, 8):
            embedder = Embedder(OpenAIBackend("m", url=api.url, concurrency=width), None)
            embedder.embed(["warm"])  # the client is made once
            api.max_in_flight = 0
            vectors[width] = embedder.embed(texts)
            peak[width] = api.max_in_flight
    assert peak == {1: 1, 8: 8}, peak
    assert (vectors[1] == vectors[8]).all() and vectors[8].shape == (len(texts), 8)


def test_a_rate_limit_paces_the_embedders_requests():
    import time

    from fake_api import FakeApi, Reply, embeddings_reply

    with FakeApi() as api:
        api.script("/embeddings", Reply(200, embeddings_reply(8)))
        embedder = Embedder(OpenAIBackend("m", url=api.url, concurrency=4, rate=20), None)
        start = time.perf_counter()
        embedder.embed([f"t{i}" for i in range(64 * 6)])  # 6 requests at 20 a second: 0.25 s at least
        assert time.perf_counter() - start >= 0.24


def _hashing_v1(text: str, dim: int) -> np.ndarray:
    """``hashing:v1`` as first written, feature by feature: the oracle the vectorised backend must
    equal bit for bit (its vectors are in teams' embedding caches and snapshot keys)."""
    import re
    import zlib

    v = np.zeros(dim, dtype=np.float32)
    words = re.findall(r"\w+", text.lower())
    for f in words + [f"#{w[i:i + 3]}" for w in words for i in range(max(1, len(w) - 2))]:
        h = zlib.crc32(f.encode("utf-8"))
        v[h % dim] += 1.0 if (h >> 31) & 1 else -1.0
    norm = float(np.linalg.norm(v))
    return v / norm if norm else v


def test_hashing_backend_equals_v1_bit_for_bit():
    from pytest_retrieval_eval.hybrid.embedders import HashingBackend

    rng = np.random.default_rng(3)
    alphabet = list("abcdefghij  ÄéßΩ漢字-_.,0123456789\n\t") + ["the ", "battery ", "a ", "über "]
    texts = ["", " ", "a", "ab", "abc", "Fixing a flat tyre", "x" * 5000, "ß" * 3, "İstanbul ǅ ﬁ",
             *("".join(rng.choice(alphabet, size=int(rng.integers(0, 400)))) for _ in range(300))]
    for dim in (8, 64, 384):
        got = HashingBackend(dim).embed(texts)
        want = np.stack([_hashing_v1(t, dim) for t in texts])
        assert got.dtype == np.float32 and got.shape == (len(texts), dim)
        assert got.tobytes() == want.tobytes()
    big = " ".join(["word"] * 40_000)  # a bucket counted 40,000 times, a long text in one row
    assert HashingBackend(64).embed([big]).tobytes() == _hashing_v1(big, 64).tobytes()


def test_a_key_written_twice_in_one_batch_keeps_its_last_vector(tmp_path):
    """``put_many`` writes in key order (neighbouring leaves); a repeated key's last still wins."""
    cache = EmbeddingCache(tmp_path / "c.sqlite3")
    cache.put_many("m", [("b", np.ones(4)), ("a", np.zeros(4)), ("b", np.full(4, 2.0)), ("c", np.ones(4))])
    assert cache.get_many("m", ["b"])["b"].tolist() == [2.0] * 4 and cache.count("m") == 3


def token_vectors(request):
    """llama.cpp's server started with ``--embedding`` and no pooling: a vector per token."""
    texts = request["input"] if isinstance(request["input"], list) else [request["input"]]
    data = [{"object": "embedding", "index": i,
             "embedding": [[0.1 * (j + 1)] * 8 for j in range(len(t.split()) + 1)]} for i, t in enumerate(texts)]
    return {"object": "list", "data": data, "model": request.get("model"), "usage": {"prompt_tokens": 3}}


@pytest.mark.parametrize("texts", [["x"], ["one two", "three four five six"]])
def test_a_server_sending_token_vectors_is_told_how_to_pool(fake_api, texts):
    fake_api.script("/embeddings", Reply(200, token_vectors))
    with pytest.raises(RetrievalEvalError) as info:
        Embedder(OpenAIBackend("m", max_retries=0), None).embed(texts)
    message = str(info.value)
    assert "token vectors" in message and "one per token" in message and "not one pooled vector per text" in message
    assert "--pooling mean" in message and "no vector for some texts" not in message
    assert FAKE_KEY not in message


@pytest.mark.parametrize("body, said", [
    ({"data": []}, "returned no vector for some texts (0 'data' rows for 2 texts)"),
    ({"error": "x"}, "returned no vector for some texts (no 'data' rows for 2 texts)"),
    ({"data": [{"index": 0, "embedding": "AAAAAA=="}, {"index": 1, "embedding": "AAAAAA=="}]},
     "sent text 1's vector as text (base64?), not numbers"),
    ({"data": [{"index": 0, "embedding": [0.1, 0.2]}, {"index": 1, "embedding": [0.1, 0.2, 0.3]}]},
     "returned vectors of different lengths in one batch (2, 3 numbers)"),
    ({"data": [{"index": 0, "embedding": [0.1, 0.2]}, {"index": 1, "embedding": []}]},
     "returned no vector for text 2"),
    ({"data": [{"index": 1, "embedding": [0.1, 0.2]}, {"index": 0, "embedding": [[0.1, 0.2], [0.3, 0.4]]}]},
     "sent token vectors (one per token: 2 vectors of 2 numbers for text 1)"),
])
def test_each_wrong_shape_of_an_embeddings_answer_is_named(fake_api, body, said):
    fake_api.script("/embeddings", Reply(200, body))
    with pytest.raises(RetrievalEvalError) as info:
        Embedder(OpenAIBackend("m", max_retries=0), None).embed(["a", "b"])
    assert said in str(info.value)
