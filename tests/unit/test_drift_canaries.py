"""Drift canaries: a model that changes behind an unchanged name is caught before its cached
vectors are reused (``hybrid/canaries.py``); the OpenAI-compatible path against a real local server."""

from __future__ import annotations

import numpy as np
import pytest

from fake_api import FakeApi, Reply, embeddings_reply
from pytest_retrieval_eval import RetrievalEvalError
from pytest_retrieval_eval.hybrid.canaries import CANARY_TEXTS, DRIFT_FLOOR, keyed, min_cosine
from pytest_retrieval_eval.hybrid.embedders import Embedder, HashingBackend, OpenAIBackend
from pytest_retrieval_eval.hybrid.embedding_cache import EmbeddingCache

TEXTS = ["a flat tyre", "the warranty period", "how to reset the router"]


class Model:
    """A model whose numbers can be changed under the same identity: each text's vector is fixed by
    its length, ``turn`` rotates every vector in its first two dimensions (cosine cos(turn) with the
    old), ``noise`` adds that much to each number, ``dim`` is its width."""

    def __init__(self, turn: float = 0.0, noise: float = 0.0, dim: int = 4, stamp: str | None = None,
                 identity: str = "model:v1") -> None:
        self.identity, self.turn, self.noise, self.dim, self.canary_stamp = identity, turn, noise, dim, stamp
        self.texts: list[str] = []

    def embed(self, texts):
        self.texts += list(texts)
        c, s = np.cos(self.turn), np.sin(self.turn)
        rows = []
        for t in texts:
            base = np.array([1.0, 0.0] + [((len(t) * (j + 3)) % 5) / 5.0 for j in range(self.dim - 2)])
            base[:2] = [c * base[0] - s * base[1], s * base[0] + c * base[1]]
            rows.append(base + self.noise)
        return np.asarray(rows, dtype=np.float32)


def session(folder, model) -> Embedder:
    """An embedder as a new session's stack makes it: its own cache connection, canaries on."""
    return Embedder(model, EmbeddingCache(folder / "embeddings.sqlite3"), canaries=True)


def test_the_first_run_stores_the_canaries_and_a_run_of_the_same_model_reuses_every_vector(tmp_path):
    first = session(tmp_path, Model())
    first.embed(TEXTS)
    check = first.canary
    assert (check.generation, check.drifted, check.cosine) == (0, False, None)  # nothing to compare with yet
    assert first.identity == "model:v1"  # a cache filled before the canaries keeps its keys
    again = Model()
    second = session(tmp_path, again)
    second.embed(TEXTS)
    assert second.canary.cosine == 1.0 and not second.canary.drifted
    assert second.canary.fingerprint == check.fingerprint
    assert (second.stats.cached, second.stats.computed) == (3, 0)
    assert again.texts == list(CANARY_TEXTS)  # the one call: the canaries
    assert second.canary.warning() is None


def test_a_model_changed_under_its_name_is_named_drifted_and_none_of_its_cached_vectors_is_used(tmp_path):
    session(tmp_path, Model()).embed(TEXTS)
    changed = Model(turn=0.3)  # every canary at cosine cos(0.3) = 0.9553 to its stored vector
    second = session(tmp_path, changed)
    second.embed(TEXTS)
    check = second.canary
    assert check.drifted and check.generation == 1 and check.dropped == 3
    assert check.cosine == pytest.approx(np.cos(0.3), abs=1e-6)
    assert second.identity == keyed("model:v1", 1) == "model:v1#canary-1"
    assert (second.stats.cached, second.stats.computed) == (0, 3)
    assert changed.texts == [*CANARY_TEXTS, *TEXTS]
    assert second.cache.count("model:v1") == 0  # the old vectors are gone, not merely skipped
    assert check.warning() == (
        "embedder model:v1 drifted: its canary texts embed at a lowest cosine of 0.9553 to the vectors stored for it "
        f"(floor {DRIFT_FLOOR}), so the model changed under the same name; its 3 cached vector(s) and its snapshots "
        "are not reused (canary generation 1)")
    third = session(tmp_path, Model(turn=0.3))  # the new model is the reference now
    third.embed(TEXTS)
    assert not third.canary.drifted and third.canary.generation == 1 and third.stats.cached == 3


def test_the_floor_separates_a_runtimes_rounding_from_a_new_model(tmp_path):
    """ONNX against torch differ by about 2e-7 a number; a turn of 0.05 radians is cosine 0.99875,
    just under the floor of 0.999; 0.04 (0.9992) is just over it."""
    session(tmp_path, Model()).embed(TEXTS)
    assert not session(tmp_path, Model(noise=2e-7)).canary.drifted
    assert not session(tmp_path, Model(turn=0.04)).canary.drifted
    assert session(tmp_path, Model(turn=0.05)).canary.drifted


def test_the_lowest_cosine_of_the_canaries_is_the_one_judged():
    stored = np.array([[1.0, 0.0], [0.0, 1.0]], dtype=np.float32)
    now = np.array([[1.0, 0.0], [np.sin(0.1), np.cos(0.1)]], dtype=np.float32)
    assert min_cosine(now, stored) == pytest.approx(np.cos(0.1), abs=1e-7)
    assert min_cosine(stored, stored) == 1.0
    assert min_cosine(np.ones((2, 3), dtype=np.float32), stored) == -1.0  # another width: another model


def test_a_model_that_changed_width_is_drifted(tmp_path):
    session(tmp_path, Model(dim=4)).embed(TEXTS)
    wider = session(tmp_path, Model(dim=6))
    assert wider.canary.drifted and "a lowest cosine of another dimension" in wider.canary.warning()


def test_a_local_model_on_the_same_libraries_is_not_run_for_its_canaries(tmp_path):
    """Weights pinned by the identity and the same library versions: the same numbers, so a warm
    run loads no model. New library versions: the canaries are embedded and compared; the same
    numbers keep the reference and note the new versions."""
    session(tmp_path, Model(stamp="torch=2.1")).embed(TEXTS)
    warm = Model(stamp="torch=2.1")
    check = session(tmp_path, warm).canary
    assert warm.texts == [] and check.cosine is None and not check.drifted
    upgraded = Model(noise=1e-7, stamp="torch=2.2")
    after = session(tmp_path, upgraded).canary
    assert upgraded.texts == list(CANARY_TEXTS) and not after.drifted and after.fingerprint == check.fingerprint
    again = Model(stamp="torch=2.2")
    assert session(tmp_path, again).canary.cosine is None and again.texts == []
    changed = Model(turn=0.5, stamp="torch=3.0")
    assert session(tmp_path, changed).canary.drifted


def test_one_check_per_session_whatever_asks(tmp_path):
    model = Model()
    cache = EmbeddingCache(tmp_path / "embeddings.sqlite3")
    for _ in range(3):  # the stack's embedder, a YAML pipeline's, the dimension probe
        Embedder(model, cache, canaries=True).embed(TEXTS[:1])
    assert model.texts.count(CANARY_TEXTS[0]) == 1


def test_workers_checking_one_cache_agree_on_one_generation(tmp_path):
    """Two xdist workers of one run, each with its own connection: the first to see the drift
    moves the generation, the second matches the new reference and says nothing."""
    session(tmp_path, Model()).embed(TEXTS)
    one, two = session(tmp_path, Model(turn=0.4)), session(tmp_path, Model(turn=0.4))
    assert one.canary.drifted and not two.canary.drifted
    assert one.identity == two.identity == "model:v1#canary-1"
    assert one.canary.fingerprint == two.canary.fingerprint


def test_a_model_that_cannot_embed_its_canaries_is_used_unchecked_and_said_so(tmp_path):
    session(tmp_path, Model()).embed(TEXTS)

    class Down(Model):
        def embed(self, texts):
            raise RetrievalEvalError("embedding endpoint http://127.0.0.1:9/v1/embeddings failed: connection refused")

    down = session(tmp_path, Down())
    assert down.identity == "model:v1" and down.canary.fingerprint is None
    assert down.canary.warning() == ("embedder model:v1: drift not checked, its canary texts could not be embedded "
                                     "(embedding endpoint http://127.0.0.1:9/v1/embeddings failed: connection "
                                     "refused); its cached vectors were used unchecked")


def test_a_server_answering_token_vectors_to_an_empty_cache_is_said_as_such_not_as_unreachable(tmp_path):
    """llama.cpp's server with a chat model answers /embeddings with a vector per token: it is
    there, and the cache held nothing of it, so no cached vector was "used unchecked"."""
    def per_token(request):
        return {"object": "list", "model": request["model"], "data": [
            {"object": "embedding", "index": i, "embedding": [[0.1, 0.2, 0.3]] * 4} for i, _ in enumerate(request["input"])]}

    with FakeApi() as api:
        api.script("/embeddings", Reply(200, per_token))
        fresh = session(tmp_path, OpenAIBackend("SmolLM2", url=api.url))
        check = fresh.canary
    warning = check.warning()
    assert warning.startswith(f"embedder openai:{api.url}:SmolLM2: drift not checked, its server answered the canary "
                              f"texts with no usable vector (embedding endpoint {api.url}/embeddings sent token "
                              "vectors (one per token: 4 vectors of 3 numbers for text 1), not one pooled vector")
    assert warning.endswith("; the cache holds no vector of it, so none was used unchecked")
    assert "could not be embedded" not in warning and "cached vectors were used" not in warning
    assert "--pooling mean" in warning  # the fix, whole


def test_without_canaries_asked_an_embedder_is_keyed_by_its_backend_alone(tmp_path):
    model = Model()
    plain = Embedder(model, EmbeddingCache(tmp_path / "c.sqlite3"))
    plain.embed(TEXTS)
    assert plain.canary is None and plain.identity == "model:v1" and model.texts == TEXTS


def test_the_hashing_embedder_is_its_own_code_and_never_drifts(tmp_path):
    first = session(tmp_path, HashingBackend(16))
    first.embed(TEXTS)
    second = session(tmp_path, HashingBackend(16))
    assert second.canary.cosine is None and second.canary.fingerprint == first.canary.fingerprint


def test_a_damaged_canary_row_is_stored_again(tmp_path):
    session(tmp_path, Model()).embed(TEXTS)
    cache = EmbeddingCache(tmp_path / "embeddings.sqlite3")
    [(blob,)] = cache._conn.execute("SELECT vecs FROM canaries").fetchall()
    cache._conn.execute("UPDATE canaries SET vecs = ?", (bytes([blob[0] ^ 1]) + blob[1:],))  # one bit flipped
    assert cache.canaries("model:v1") is None
    check = Embedder(Model(), cache, canaries=True).canary
    assert not check.drifted and cache.canaries("model:v1") is not None


# --- an OpenAI-compatible embedding server, real and local ----------------------------------------

def turned(dim: int = 8, turn: float = 0.0):
    """``embeddings_reply``'s vectors, rotated by ``turn`` in their first two dimensions: the same
    server upgraded in place when ``turn`` is not 0."""
    plain = embeddings_reply(dim)

    def answer(request: dict) -> dict:
        body = plain(request)
        c, s = np.cos(turn), np.sin(turn)
        for row in body["data"]:
            x, y = row["embedding"][:2]
            row["embedding"][:2] = [c * x - s * y, s * x + c * y]
        return body

    return answer


def test_an_embedding_server_returning_other_vectors_under_the_same_model_is_caught(tmp_path):
    with FakeApi() as api:
        api.script("/embeddings", Reply(200, turned()))
        first = session(tmp_path, OpenAIBackend("text-embed", url=api.url))
        first.embed(TEXTS)
        assert first.identity == f"openai:{api.url}:text-embed"
        api.script("/embeddings", Reply(200, turned(turn=0.2)))  # upgraded in place: same URL, same name
        before = len(api.hits("/embeddings"))
        second = session(tmp_path, OpenAIBackend("text-embed", url=api.url))
        second.embed(TEXTS)
        sent = [h.body["input"] for h in api.hits("/embeddings")[before:]]
    check = second.canary
    assert check.drifted and check.generation == 1 and check.dropped == 3
    assert f"embedder openai:{api.url}:text-embed drifted: " in check.warning()
    assert (second.stats.cached, second.stats.computed) == (0, 3)  # no cached vector of it is used
    assert sent == [list(CANARY_TEXTS), TEXTS]


def test_an_unchanged_embedding_server_costs_one_request_of_the_canaries(tmp_path):
    with FakeApi() as api:
        api.script("/embeddings", Reply(200, turned()))
        session(tmp_path, OpenAIBackend("text-embed", url=api.url)).embed(TEXTS)
        before = len(api.hits("/embeddings"))
        warm = session(tmp_path, OpenAIBackend("text-embed", url=api.url))
        warm.embed(TEXTS)
        sent = [h.body["input"] for h in api.hits("/embeddings")[before:]]
    assert warm.canary.cosine == 1.0 and not warm.canary.drifted
    assert (warm.stats.cached, warm.stats.computed) == (3, 0)
    assert sent == [list(CANARY_TEXTS)]
