"""Unusable caches. A corrupt embedding cache is set aside with a warning and
rebuilt; a location that cannot hold one (a file where the folder should be, a read-only
filesystem) is one clear error naming it, in the library and in a pytest run."""

from __future__ import annotations


import numpy as np
import pytest

from pytest_retrieval_eval import RetrievalEvalError
from pytest_retrieval_eval.hybrid.embedding_cache import EmbeddingCache, EmbeddingCacheWarning


def test_a_corrupt_cache_is_set_aside_and_rebuilt(tmp_path):
    path = tmp_path / "embeddings.sqlite3"
    path.write_bytes(b"this is no sqlite database, just bytes" * 100)
    with pytest.warns(EmbeddingCacheWarning, match="not a usable SQLite database.*set aside as embeddings.sqlite3.corrupt-"):
        cache = EmbeddingCache(path)
    cache.put_many("m", [("k", np.ones(4, dtype=np.float32))])
    assert cache.count("m") == 1
    aside = list(tmp_path.glob("embeddings.sqlite3.corrupt-*"))
    assert len(aside) == 1 and aside[0].read_bytes().startswith(b"this is no sqlite")  # kept, not destroyed


def test_a_cache_whose_table_is_gone_is_rebuilt(tmp_path):
    import sqlite3

    path = tmp_path / "embeddings.sqlite3"
    sqlite3.connect(path).execute("CREATE TABLE other (x)").connection.commit()
    cache = EmbeddingCache(path)  # an unrelated SQLite file: the table is created beside, nothing lost
    assert cache.count() == 0


def test_a_file_where_the_folder_should_be_is_one_clear_error(tmp_path):
    blocker = tmp_path / "cache"
    blocker.write_text("a file, not a folder")
    with pytest.raises(RetrievalEvalError) as info:
        EmbeddingCache(blocker / "embeddings.sqlite3")
    assert str(info.value).startswith(f"{blocker}: embedding cache folder cannot be created")
    assert "--retrieval-cache-dir" in str(info.value)
