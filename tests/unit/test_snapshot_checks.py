"""A restored snapshot must never score the wrong store. A damaged, truncated or
unreadable snapshot, or one whose tables do not answer as its manifest says, is set aside with
one warning and the corpus is ingested afresh (the run scores as a fresh one); the key changes
with everything that reaches the store or the engine's filters (the corpus folder's name, the
document fields a YAML ingestion reads, a model folder's content); a killed writer's temp dir
is swept and counted; a damaged embedding cache never answers garbage; 3,072-dimension vectors
are indexed (halfvec); warnings are one capped line."""

from __future__ import annotations

import os
import shutil
import time
import warnings
from pathlib import Path

import numpy as np
import pytest

from conftest import requires_hybrid, write_docs

pytestmark = [requires_hybrid]


def test_document_fields_a_yaml_reads_and_the_corpus_name_are_in_its_table_key(tmp_path):
    from pytest_retrieval_eval.data.corpus import JsonFolder
    from pytest_retrieval_eval.data.pipeline_files import builtin
    from pytest_retrieval_eval.hybrid.user_pipelines import table_for

    docs = [{"doc_id": "a", "content": "alpha text", "team": "blue"}, {"doc_id": "b", "content": "beta text"}]
    base = JsonFolder(write_docs(tmp_path / "kb", docs)).load()
    docs[0]["team"] = "red"  # reaches the YAML's documents as meta, not the corpus fingerprint
    other_field = JsonFolder(write_docs(tmp_path / "kb2" / "kb", docs)).load()
    renamed = JsonFolder(shutil.copytree(tmp_path / "kb", tmp_path / "renamed")).load()
    assert other_field.fingerprint == base.fingerprint == renamed.fingerprint
    file = builtin("ingest.yaml")
    assert len({table_for(base, file), table_for(other_field, file), table_for(renamed, file)}) == 3


@pytest.fixture
def model_copy(tmp_path):
    from pytest_retrieval_eval.hybrid.embedders import packaged_minilm_path

    return Path(shutil.copytree(packaged_minilm_path(), tmp_path / "minilm"))


@pytest.mark.parametrize("edit", ["README.md", "model.safetensors"])
def test_changed_weights_behind_a_model_path_are_another_embedder_snapshot_and_cache_key(model_copy, tmp_path, edit):
    from pytest_retrieval_eval.data.corpus import JsonFolder
    from pytest_retrieval_eval.data.pipeline_files import PipelineFile, builtin
    from pytest_retrieval_eval.hybrid.embedders import Embedder, backend_for
    from pytest_retrieval_eval.hybrid.embedding_cache import EmbeddingCache, text_key
    from pytest_retrieval_eval.hybrid.ingest import IngestConfig, table_name
    from pytest_retrieval_eval.hybrid.user_pipelines import table_for

    spec = f"sentence-transformers:{model_copy}"
    corpus = JsonFolder(write_docs(tmp_path / "kb", [{"doc_id": "a", "content": "alpha"}])).load()
    yaml = tmp_path / "ingest.yaml"
    yaml.write_text(builtin("ingest.yaml").text.replace("spec: minilm", f"spec: {spec}"))
    cache = EmbeddingCache(tmp_path / "embeddings.sqlite3")
    before = Embedder(backend_for(spec), cache)
    cache.put_many(before.identity, [(text_key("alpha"), np.ones(384, dtype=np.float32))])
    table, yaml_table = table_name(corpus, IngestConfig(), before), table_for(corpus, PipelineFile.read(yaml))

    target = model_copy / edit
    data = bytearray(target.read_bytes())
    data[len(data) // 2] ^= 0x01  # one bit of one weight (or of the model card)
    target.write_bytes(bytes(data))
    after = Embedder(backend_for(spec), cache)
    assert after.identity != before.identity and after.identity.startswith(spec + "@")
    assert table_name(corpus, IngestConfig(), after) != table
    assert table_for(corpus, PipelineFile.read(yaml)) != yaml_table
    assert cache.get_many(after.identity, [text_key("alpha")]) == {}  # the old vectors are not reused
    assert text_key("alpha") in cache.get_many(before.identity, [text_key("alpha")])


def test_a_model_folder_is_hashed_once_per_process(model_copy, monkeypatch):
    from pytest_retrieval_eval.hybrid import embedders

    embedders.backend_for(f"sentence-transformers:{model_copy}").identity
    calls = []
    monkeypatch.setattr(embedders, "sha256_file", lambda path: calls.append(path) or "x")
    again = embedders.backend_for(f"sentence-transformers:{model_copy}").identity
    assert calls == [] and again.startswith(f"sentence-transformers:{model_copy}@")


def test_temp_dirs_count_against_the_bound(tmp_path):
    from pytest_retrieval_eval.hybrid.snapshots import Snapshots

    root = tmp_path / "snapshots"
    (root / "old" / "data").mkdir(parents=True)
    (root / "old" / "data" / "blob").write_bytes(b"x" * 600_000)
    os.utime(root / "old", (1_000_000, 1_000_000))
    (root / "new" / "data").mkdir(parents=True)
    (root / "new" / "data" / "blob").write_bytes(b"x" * 100_000)
    live = root / f".writing.{os.getpid()}.beef" / "data"
    live.mkdir(parents=True)
    (live / "blob").write_bytes(b"x" * 600_000)
    assert Snapshots(root, limit_mb=1.0).evict(keep="new") == ["old"]  # 1.3 MB with the temp dir counted
    assert (root / "new").is_dir() and live.is_dir()


def test_a_stale_temp_dir_of_a_live_pid_is_swept_after_the_grace_period(tmp_path):
    from pytest_retrieval_eval.hybrid.snapshots import STALE_TEMP_SECONDS, Snapshots

    root = tmp_path / "snapshots"
    young, old = root / f".a.{os.getpid()}.01", root / f".b.{os.getpid()}.02"
    young.mkdir(parents=True)
    old.mkdir()
    past = time.time() - STALE_TEMP_SECONDS - 60
    os.utime(old, (past, past))
    assert Snapshots(root, 2048).sweep() == [old.name] and young.is_dir()


# --- the embedding cache ----------------------------------------------------------------------------


def filled_cache(path: Path, n: int, dim: int) -> dict[str, np.ndarray]:
    from pytest_retrieval_eval.hybrid.embedding_cache import EmbeddingCache

    rng = np.random.default_rng(7)
    vectors = {f"{i:064x}": rng.random(dim, dtype=np.float32) for i in range(n)}
    cache = EmbeddingCache(path)
    cache.put_many("model", vectors.items())
    cache.close()
    return vectors


def page_of(path: Path, needle: bytes) -> tuple[int, int]:
    import sqlite3

    size = sqlite3.connect(path).execute("PRAGMA page_size").fetchone()[0]
    return path.read_bytes().index(needle) // size, size


@pytest.mark.parametrize("fill", ["zeros", "random"])
@pytest.mark.parametrize("dim", [384, 3072])
def test_an_overwritten_cache_page_never_answers_garbage_vectors(tmp_path, fill, dim):
    from pytest_retrieval_eval.hybrid.embedding_cache import EmbeddingCache, EmbeddingCacheWarning

    path = tmp_path / "embeddings.sqlite3"
    vectors = filled_cache(path, 300, dim)
    victim = list(vectors)[150]
    page, size = page_of(path, vectors[victim][-16:].tobytes())  # where the victim's last floats are
    with open(path, "r+b") as fh:
        fh.seek(page * size)
        fh.write(bytes(size) if fill == "zeros" else os.urandom(size))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        cache = EmbeddingCache(path)
        found = cache.get_many("model", list(vectors))
    assert victim not in found
    assert all(np.array_equal(v, vectors[k]) for k, v in found.items())  # what is answered is right
    [warning] = [w for w in caught if issubclass(w.category, EmbeddingCacheWarning)]
    assert "set aside as embeddings.sqlite3.corrupt-" in str(warning.message)
    assert len(str(warning.message)) <= 330 and "\n" not in str(warning.message)
    cache.put_many("model", [(victim, vectors[victim])])  # and the cache goes on, rebuilt
    assert np.array_equal(cache.get_many("model", [victim])[victim], vectors[victim])


def test_a_cache_written_before_checksums_keeps_its_vectors(tmp_path):
    import sqlite3

    from pytest_retrieval_eval.hybrid.embedding_cache import _SCHEMA, EmbeddingCache

    path = tmp_path / "embeddings.sqlite3"
    conn = sqlite3.connect(path)
    conn.execute(_SCHEMA)
    vector = np.arange(8, dtype=np.float32)
    conn.execute("INSERT INTO embeddings VALUES ('m', 'k', 8, ?)", (vector.tobytes(),))
    conn.commit()
    conn.close()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert np.array_equal(EmbeddingCache(path).get_many("m", ["k"])["k"], vector)
    conn = sqlite3.connect(path)  # the vector was given its checksum in place, once
    assert conn.execute("PRAGMA user_version").fetchone()[0] == 1
    assert conn.execute("SELECT length(vec) FROM embeddings").fetchone()[0] == 8 * 4 + 4


def test_a_teams_hnsw_store_over_2000_dimensions_must_say_halfvec(tmp_path):
    from haystack_integrations.document_stores.pgvector import PgvectorDocumentStore

    from pytest_retrieval_eval import RetrievalEvalError
    from pytest_retrieval_eval.data.pipeline_files import PipelineFile
    from pytest_retrieval_eval.hybrid.user_pipelines import _check_hnsw

    os.environ.setdefault("PG_CONN_STR", "postgresql://unused")
    file = PipelineFile(tmp_path / "query.yaml", "")
    for kind in ("vector", "halfvec"):
        _check_hnsw(PgvectorDocumentStore(embedding_dimension=2000, vector_type=kind, search_strategy="hnsw"), file, "r")
    _check_hnsw(PgvectorDocumentStore(embedding_dimension=3072, vector_type="halfvec", search_strategy="hnsw"), file, "r")
    with pytest.raises(RetrievalEvalError) as info:
        _check_hnsw(PgvectorDocumentStore(embedding_dimension=3072, search_strategy="hnsw"), file, "retriever")
    assert str(info.value) == (f"{file.path}: field 'embedding_dimension': component 'retriever': an HNSW index takes "
                               "vector columns of at most 2,000 dimensions, the store has 3,072 (set vector_type: "
                               "halfvec for up to 4,000)")
