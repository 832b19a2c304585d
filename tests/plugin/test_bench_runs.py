"""The benchmark's sections that need no PostgreSQL and no model, each run once at its tiny sizes
(``bench/run.py``'s ``set_mode("tiny")``) so a change that breaks one fails the suite. Their
figures mean nothing here; what is checked is that each runs to the end, records its rows and
its part of the summary, and that each comparison with a peer library times the same inputs to
the same outputs. The bench itself is ``python bench/run.py`` (``--quick``: every section at
small sizes), never part of a test run; the sections that start PostgreSQL or load the model are
tests/system/test_bench.py."""

from __future__ import annotations

import importlib.util

import pytest

from projects import bench_in_tiny_mode, bench_section_ran


@pytest.fixture
def bench(tmp_path):
    return bench_in_tiny_mode(tmp_path)


def test_the_dormant_section_times_plain_projects_with_the_plugin_on_and_off(bench):
    bench.bench_dormant(1)
    rows = bench_section_ran(bench, "dormant")
    ratios = [r for r in rows if "ratio" in r]
    assert len(ratios) == 3 * 2 and all(r["ratio"] > 0 for r in ratios)  # wall medians, wall minima, CPU; 2 cases


def test_the_http_section_gives_the_same_results_json_serial_and_concurrent(bench):
    bench.bench_http_concurrency(1)
    rows = {r["name"]: r for r in bench_section_ran(bench, "http")}
    assert rows["results.json identical"]["value"] is True
    assert {"serial / concurrent", "embedder serial / 8 in flight"} <= set(rows)


def test_the_judge_section_grades_every_pair_and_asks_none_twice(bench):
    bench.bench_judging(1)
    rows = {r["name"]: r for r in bench_section_ran(bench, "judge")}
    assert {"serial / 8 at a time", "first judging / again from the file"} <= set(rows)


def test_the_memory_section_measures_growth_per_query(bench):
    bench.bench_memory()
    [row] = bench_section_ran(bench, "memory")
    assert set(row["peaks"]) == {50, 500} and row["unit"] == "B"


def test_the_evaluate_section_compares_the_same_inputs_and_outputs_with_each_peer(bench):
    """A ratio against pytrec-eval-terrier or ranx divides two timings of the same inputs to the
    same outputs, both warm, and its label says which; ranx is timed from dicts (its Qrels and Run
    built inside the timed region), not only from prebuilt objects."""
    bench.bench_evaluate(1)
    rows = bench_section_ran(bench, "evaluate")
    timed = {r["name"]: r for r in rows if "median" in r}
    ratios = [r for r in rows if "ratio" in r]
    assert ratios
    peers = set()
    for r in ratios:
        theirs, ours = (timed[name] for name in r["of"])
        assert ours["peer"] == "ours" and theirs["peer"] != "ours", r["name"]
        for key in ("inputs", "outputs", "state", "size"):
            assert theirs[key] == ours[key], (r["name"], key, theirs[key], ours[key])
            assert theirs[key] in r["name"], (r["name"], key)
        assert r["name"].startswith(f"{theirs['peer']} / ours, "), r["name"]
        assert theirs["agree"] or theirs["differs"], (r["name"], "outputs differ from ours unexplained")
        peers.add((theirs["peer"], theirs["inputs"]))
    assert "pytrec-eval-terrier" in {p for p, _ in peers}
    if importlib.util.find_spec("ranx"):
        assert any(p == "ranx" and i.startswith("dicts") for p, i in peers), sorted(peers)
