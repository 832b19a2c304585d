"""A team's sentence-transformers and OpenAI embedders are wrapped, not patched: the YAML's
component becomes the plugin's CachedDocumentEmbedder/CachedTextEmbedder around it before the
pipeline is built (no instance's ``run`` replaced), the pipeline serialises as the team wrote it,
and the wrapped component is neither warmed up nor called until the cache lacks a text (with
sentence-transformers, tests/system/test_user_pipelines.py)."""

from __future__ import annotations

import numpy as np
import pytest

from conftest import requires_hybrid

pytestmark = requires_hybrid


@pytest.fixture
def yaml_file(tmp_path, monkeypatch):
    from haystack import Pipeline
    from haystack.components.embedders import OpenAITextEmbedder

    from pytest_retrieval_eval.data.pipeline_files import PipelineFile

    monkeypatch.setenv("OPENAI_API_KEY", "sk-not-used")  # nothing listens at the URL: a call would fail
    query = Pipeline()  # the embedder alone: what a store would add is tested in tests/system
    query.add_component("embed", OpenAITextEmbedder(
        model="text-embedding-3-small", api_base_url="http://127.0.0.1:9/v1", timeout=2, max_retries=0))
    (tmp_path / "query.yaml").write_text(query.dumps())
    return PipelineFile.read(tmp_path / "query.yaml")


class Cache:
    """The embedding cache's two calls, in memory."""

    def __init__(self):
        self.rows: dict[tuple[str, str], np.ndarray] = {}

    def get_many(self, model, keys):
        return {k: self.rows[(model, k)] for k in keys if (model, k) in self.rows}

    def put_many(self, model, items):
        self.rows.update({(model, k): v for k, v in items})


def test_the_embedder_is_wrapped_before_the_build_and_serialises_as_written(yaml_file):
    from pytest_retrieval_eval.hybrid.components import CachedTextEmbedder
    from pytest_retrieval_eval.hybrid.user_pipelines import cache_embedders, load

    pipeline = load(yaml_file)
    embed = pipeline.get_component("embed")
    assert isinstance(embed, CachedTextEmbedder) and "run" not in vars(embed)  # the class's run, not a patch
    assert type(embed.inner).__name__ == "OpenAITextEmbedder"
    assert pipeline.to_dict()["components"] == yaml_file.data()["components"]
    assert cache_embedders(pipeline, Cache()) == (["embed"], [])


def test_a_cached_text_is_answered_without_the_embedder(yaml_file):
    from pytest_retrieval_eval.hybrid.user_pipelines import EmbedCounts, cache_embedders, load

    pipeline = load(yaml_file)
    embed = pipeline.get_component("embed")
    cache, counts = Cache(), EmbedCounts()
    cache.put_many(embed.identity, [(__import__("hashlib").sha256(b"a question").hexdigest(), np.ones(384, np.float32))])
    cache_embedders(pipeline, cache, counts)
    embed.warm_up()  # what the pipeline calls before running: nothing loads, nothing is called
    assert embed.run(text="a question")["embedding"] == [1.0] * 384
    assert (counts.computed, counts.cached) == (0, 1) and embed._warm is False
    with pytest.raises(Exception):  # a text the cache lacks goes to the embedder (here: nobody listens)
        embed.run(text="another question")
    assert embed._warm is True and counts.computed == 1
