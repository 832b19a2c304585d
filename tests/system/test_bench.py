"""The benchmark's sections that start PostgreSQL or load the model, each run once at its tiny
sizes (``bench/run.py``'s ``set_mode("tiny")``) so a change that breaks one fails the suite. Their
figures mean nothing here; what is checked is that each runs to the end and records its rows and
its part of the summary. The bench itself is ``python bench/run.py`` (``--quick``: every section
at small sizes), never part of a test run; the sections that need neither are
tests/plugin/test_bench_runs.py."""

from __future__ import annotations

import pytest

from conftest import requires_hybrid
from projects import bench_in_tiny_mode, bench_section_ran
from shared_datasets import dataset_path

pytestmark = [requires_hybrid, pytest.mark.postgres]


@pytest.fixture
def bench(tmp_path, monkeypatch):
    bench = bench_in_tiny_mode(tmp_path / "results")
    monkeypatch.setattr(bench, "SCIFACT", dataset_path("scifact"))  # where the suite finds it (tests/shared_datasets.py)
    return bench


def test_the_ingestion_section_writes_through_the_plugin_and_against_bulk_copy(bench):
    bench.bench_ingestion(1)
    names = {r["name"] for r in bench_section_ran(bench, "ingestion")}
    assert "plugin's write step / bulk COPY floor (throughput)" in names


def test_the_scale_section_names_each_figures_growth(bench):
    bench.bench_scale([20, 40])
    rows = bench_section_ran(bench, "scale")
    figures = [r for r in rows if r["name"] != "table"]
    assert figures and all(r["sizes"] == [20, 40] and len(r["values"]) == 2 and r["growth"] for r in figures)


@pytest.mark.dataset("scifact")
def test_the_scaling_section_ingests_and_queries_scifact_subsets(bench):
    bench.bench_scaling(1)
    names = {r["name"] for r in bench_section_ran(bench, "scaling")}
    assert names == {"30 docs: ingest (30 chunks)", "30 docs: hybrid, 15 queries", "30 docs: keyword, 15 queries",
                     "60 docs: ingest (60 chunks)", "60 docs: hybrid, 15 queries", "60 docs: keyword, 15 queries"}


@pytest.mark.model
def test_the_bundled_section_then_a_teams_own_engine_and_the_queries_on_its_cache(bench, tmp_path):
    """As the whole bench runs them: the bundled eval cold, warm and against its floor leaves its
    cache filled, and the own-engine and queries sections read it."""
    cache = tmp_path / "cache"
    bench.bench_bundled(1, 1, cache)
    bench.bench_own_engine(1, cache)
    bench.bench_queries(1, cache)
    rows = {r["name"]: r for r in bench_section_ran(bench, "bundled", "own engine", "queries", "overhead")}
    assert rows["warm run imports"]["torch"] is False  # a warm run on the cached embeddings loads no model
    assert {"warm / floor", "cold / warm", "with the built-ins / alone", "one at a time / batched",
            "plugin share of evaluation time (scoring included)"} <= set(rows)


@pytest.mark.model
def test_the_embedding_section_compares_onnx_runtime_with_torch_vector_for_vector(bench):
    bench.bench_embedding(1)
    rows = bench_section_ran(bench, "embedding")
    [cosines] = [r for r in rows if r["name"].endswith("cosine of each ONNX vector to torch's")]
    assert cosines["min"] > 0.9999


@pytest.mark.model
def test_the_canary_section_checks_an_unchanged_server_in_a_small_share_of_a_warm_run(bench):
    bench.bench_canary(1)
    names = {r["name"] for r in bench_section_ran(bench, "canary")}
    assert "canary check / warm run (must-show: under 0.05)" in names


@pytest.mark.model
def test_the_scifact_section_runs_a_beir_folder_cold_warm_reingested_and_sharded(bench, tmp_path):
    """On a small synthetic BEIR folder, as ``--quick`` runs it (SciFact itself is the full bench's)."""
    folder = bench.synthetic_beir(tmp_path / "beir", 20, queries=8)
    bench.bench_scifact(1, 1, None, folder)
    names = {r["name"] for r in bench_section_ran(bench, "scifact")}
    assert {"re-ingesting / restoring (warm, end to end)", "hybrid setup / floor", "-n 0 / -n 2 sharded (warm)",
            "cold / warm"} <= names
