"""The engine contract, declared: required parts (Engine, AsyncEngine) and optional ones
(Prepares, Describes, Concurrent), exported from the package."""

from __future__ import annotations

import pytest_retrieval_eval as pre
from pytest_retrieval_eval import adapters
from pytest_retrieval_eval.engines.base import Concurrent, Describes, Prepares, concurrency_of, describe, is_async


def test_async_engine_is_exported_like_engine():
    assert "AsyncEngine" in pre.__all__
    assert pre.AsyncEngine.__module__ == "pytest_retrieval_eval.engines.base"


def test_an_async_function_adapts_to_a_class_declaring_async_retrieve():
    async def search(query, k):
        return ["a", "b"]

    engine = adapters.function(search)
    assert is_async(engine) and isinstance(engine, pre.AsyncEngine)
    assert "retrieve" not in vars(engine)  # the class declares it: nothing replaced on the instance
    assert not is_async(adapters.function(lambda q, k: ["a"]))


def test_optional_parts_are_protocols():
    class Bare:
        name = "bare"

        def retrieve(self, query, k):
            return []

    class Full(Bare):
        concurrency = 4

        def prepare(self, questions):
            pass

        def describe(self):
            return {"engine": "full"}

    assert not isinstance(Bare(), (Prepares, Describes, Concurrent))
    assert isinstance(Full(), Prepares) and isinstance(Full(), Describes) and isinstance(Full(), Concurrent)
    assert concurrency_of(Full(), 1) == 4 and concurrency_of(Bare(), 3) == 3
    assert describe(Bare()) == {"class": "test_optional_parts_are_protocols.<locals>.Bare"}
    assert describe(Full()) == {"engine": "full"}


def test_engine_names_run_together_with_commas_are_refused_with_the_spelling_that_works():
    import pytest

    from pytest_retrieval_eval import EngineRegistry, RetrievalEvalError

    registry = EngineRegistry()
    for name in ("keyword", "hybrid"):
        registry.register(name, lambda request: None)
    with pytest.raises(RetrievalEvalError) as caught:
        registry.select(["keyword,hybrid"])
    assert str(caught.value).endswith("(names are separated by spaces, not commas: retrieval_engines = keyword hybrid)")
    with pytest.raises(RetrievalEvalError) as other:
        registry.select(["keyword,nosuch"])  # a comma, but not two registered names: no such hint
    assert "not commas" not in str(other.value)
    assert registry.select(["hybrid", "keyword"]) == ["hybrid", "keyword"]
