"""Drift canaries end to end: a team's OpenAI-compatible embedding server upgraded in place
between two runs of the plugin with the hybrid engine (real store, real local server)."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys

import numpy as np
import pytest

from conftest import CORPUS, QUESTIONS, leftovers, requires_hybrid
from fake_api import FakeApi, Reply, embeddings_reply
from pytest_retrieval_eval.hybrid.canaries import CANARY_TEXTS, min_cosine

pytestmark = [requires_hybrid, pytest.mark.postgres]  # found, not imported: importing Haystack here cost every worker 4.6 s of collection

TESTS = """
    import pytest

    pytestmark = pytest.mark.retrieval

    def test_hit_at_5(retrieval_results):
        assert retrieval_results.hit_at(5) >= 0.0
"""


def run_inner(pytester, tmp, *args: str, env: dict):
    outer = {k: v for k, v in os.environ.items() if not k.startswith("PYTEST_XDIST")}  # this run may be a worker
    return subprocess.run([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", *args], cwd=pytester.path,
                          env={**outer, "TMPDIR": str(tmp), **env}, capture_output=True, text=True, timeout=600)


def served(turn: float = 0.0):
    """``embeddings_reply``'s vectors, rotated by ``turn`` in their first two dimensions: another
    model version behind the same name when ``turn`` is not 0."""
    plain = embeddings_reply(8)

    def answer(request: dict) -> dict:
        body = plain(request)
        c, s = np.cos(turn), np.sin(turn)
        for row in body["data"]:
            x, y = row["embedding"][:2]
            row["embedding"][:2] = [c * x - s * y, s * x + c * y]
        return body

    return answer


def test_an_embedding_server_upgraded_in_place_is_named_drifted_and_nothing_of_it_is_reused(pytester, sandbox_tmp,
                                                                                             tmp_path):
    cache = tmp_path / "cache"
    pytester.makeini(f"[pytest]\nretrieval_corpus = {CORPUS}\nretrieval_questions = {QUESTIONS}\n"
                     f"retrieval_cache_dir = {cache}\nretrieval_embedder = openai:text-embed\n"
                     "retrieval_engines = hybrid\n")
    pytester.makepyfile(TESTS)
    args = ("-m", "retrieval", "--retrieval-report-dir=out", "-p", "no:randomly")

    def run(api):
        before = len(api.hits("/embeddings"))
        done = run_inner(pytester, sandbox_tmp, *args,
                            env={"RETRIEVAL_EVAL_BASE_URL": api.url, "RETRIEVAL_EVAL_API_KEY": "sk-test-drift"})
        assert done.returncode == 0, done.stdout + done.stderr
        texts = sum(len(h.body["input"]) for h in api.hits("/embeddings")[before:])
        return done.stdout, json.loads((pytester.path / "out" / "results.json").read_text()), texts

    with FakeApi() as api:
        api.script("/embeddings", Reply(200, served()))
        _, first, cold = run(api)
        _, warm, warm_texts = run(api)  # the same server: the canaries alone are sent
        api.script("/embeddings", Reply(200, served(turn=0.3)))  # upgraded in place: same URL, same model name
        out, drifted, after = run(api)
        _, settled, settled_texts = run(api)
    name = f"openai:{api.url}:text-embed"
    [hybrid] = first["evaluations"]
    assert hybrid["engine_info"]["embedder"] == name and hybrid["engine_info"]["embedder_canary"]
    assert first["fingerprints"]["canaries"]["hybrid"] == hybrid["engine_info"]["embedder_canary"]
    assert warm_texts == 5 and warm["verdict"]["warnings"] == first["verdict"]["warnings"] == []
    assert warm["evaluations"][0]["engine_info"] == hybrid["engine_info"]
    request = {"input": list(CANARY_TEXTS), "model": "text-embed"}
    vectors = [np.array([r["embedding"] for r in served(t)(request)["data"]], dtype=np.float32) for t in (0.0, 0.3)]
    lowest = min_cosine(vectors[1], vectors[0])
    assert lowest < 0.99  # well under the floor
    said = f"embedder {name} drifted: its canary texts embed at a lowest cosine of {lowest:.4f}"
    assert any(w.startswith(said) for w in drifted["verdict"]["warnings"]), drifted["verdict"]["warnings"]
    unwrapped = out.replace("\n    ", " ")  # the terminal summary wraps a long warning
    assert re.search(r"^warning: " + re.escape(said), unwrapped, re.M), out
    info = drifted["evaluations"][0]["engine_info"]
    assert info["embedder"] == f"{name}#canary-1" and info["embedder_canary"] != hybrid["engine_info"]["embedder_canary"]
    assert after == cold  # every chunk and question embedded again, as in the first run
    assert re.search(r"chunks_\w+: ingested", out), out  # no snapshot of the old vectors restored
    assert settled_texts == 5 and settled["verdict"]["warnings"] == []  # the new model is the reference now
    assert settled["evaluations"][0]["engine_info"] == info
    assert leftovers(sandbox_tmp) == ([], [])


def test_xdist_workers_of_a_drifted_run_agree_on_the_new_reference_and_warn_once(pytester, sandbox_tmp, tmp_path):
    cache = tmp_path / "cache"
    pytester.makeini(f"[pytest]\nretrieval_corpus = {CORPUS}\nretrieval_questions = {QUESTIONS}\n"
                     f"retrieval_cache_dir = {cache}\nretrieval_embedder = openai:text-embed\n"
                     "retrieval_engines = hybrid\n")
    pytester.makepyfile(TESTS + """
    def test_mrr(retrieval_results):
        assert retrieval_results.mrr() >= 0.0

    def test_no_errors(retrieval_results):
        assert retrieval_results.n_errored == 0
""")
    with FakeApi() as api:
        env = {"RETRIEVAL_EVAL_BASE_URL": api.url, "RETRIEVAL_EVAL_API_KEY": "sk-test-drift"}
        api.script("/embeddings", Reply(200, served()))
        assert run_inner(pytester, sandbox_tmp, "-m", "retrieval", env=env).returncode == 0
        api.script("/embeddings", Reply(200, served(turn=0.3)))
        before = len(api.hits("/embeddings"))
        done = run_inner(pytester, sandbox_tmp, "-n", "2", "-m", "retrieval", "--retrieval-report-dir=out",
                         "-p", "no:randomly", env=env)
        canaries = [h for h in api.hits("/embeddings")[before:] if h.body["input"] == list(CANARY_TEXTS)]
    assert done.returncode == 0, done.stdout + done.stderr  # the workers' evaluations fit: one reference
    assert "2 workers" in done.stdout and len(canaries) == 2  # each worker checked once
    doc = json.loads((pytester.path / "out" / "results.json").read_text())
    drifted = [w for w in doc["verdict"]["warnings"] if " drifted: " in w]
    assert len(drifted) == 1 and drifted[0].startswith(f"embedder openai:{api.url}:text-embed drifted: ")
    assert doc["evaluations"][0]["engine_info"]["embedder"].endswith("#canary-1")
    assert leftovers(sandbox_tmp) == ([], [])
