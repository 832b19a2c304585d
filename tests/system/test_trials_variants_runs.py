"""Repeated trials (spread, pass@k / pass^k) and engine variants side by side."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from conftest import CORPUS, QUESTIONS, parse_table

pytestmark = [pytest.mark.model]

STOCHASTIC = """
    import random

    class Coin:
        '''Right half the time, per trial: a stand-in for a flaky LLM-based engine.'''
        name = "coin"
        def __init__(self, labeled):
            self.gold = {q.question: q.gold[0] for q in labeled}
            self.rng = random.Random(4)
        def retrieve(self, query, k):
            return [self.gold[query]] if self.rng.random() < 0.5 else ["nothing"]

    def pytest_retrieval_engines(registry, config):
        registry.register("coin", lambda request: Coin(request.getfixturevalue("labeled_queries")))
"""


def test_trials_show_zero_spread_for_deterministic_engines_and_pass_at_k(bundled_project):
    bundled_project.makeconftest(STOCHASTIC)
    bundled_project.makepyfile("def test_x(retrieval_results):\n    pass\n")
    result = bundled_project.runpytest("-v", "--retrieval-engine", "keyword", "--retrieval-engine", "coin", "--retrieval-report",
                                       "--retrieval-trials", "4", "--retrieval-threshold", "hit@1>=0.5")
    out = result.stdout.str()
    assert "keyword: 4 trials: hit@1 0.118-0.118 (sd 0.000)" in out
    coin = next(l for l in result.stdout.lines if l.startswith("coin: 4 trials: hit@1"))
    low, high = coin.split("hit@1 ")[1].split(" ")[0].split("-")
    assert float(low) < float(high)  # a stochastic engine shows its spread
    # and how many of its answers moved between identical trials (at the cutoff the rule judges)
    assert "  top 1 changed between trials for 0 of 68 questions (0.0%): the engine answers\n    the same every time" in out
    changed = next(l for l in result.stdout.lines if l.startswith("  top 1 changed") and " 0 of 68" not in l)
    assert int(changed.split(" for ")[1].split(" of ")[0]) > 50  # right half the time: four alike is 1 in 8
    assert "keyword: passed 0/4" not in out
    assert "  hit@1>=0.5: passed 0/4 trials; pass@1 0.00" in out  # keyword never reaches 0.5
    lines = result.stdout.lines
    at = next(i for i, l in enumerate(lines) if "hit@1>=0.5: passed" in l and "0/4" not in l)
    wrapped = [lines[at]] + [l for l in lines[at + 1:at + 4] if l.startswith("    ")][:2]  # the rule's lines
    assert "pass@4" in " ".join(wrapped) and "pass^4" in " ".join(wrapped)


def test_a_conftest_variant_takes_its_registered_name(bundled_project):
    bundled_project.makeconftest(
        """
        class Named:
            name = "something-else"
            def retrieve(self, query, k):
                return ["battery-care"]

        def pytest_retrieval_engines(registry, config):
            registry.register("renamed", lambda request: Named())
        """
    )
    bundled_project.makepyfile("def test_x(retrieval_results):\n    assert retrieval_results.engine == 'renamed'\n")
    result = bundled_project.runpytest("--retrieval-engine", "renamed", "--retrieval-report")
    assert result.ret == 0
    assert "renamed" in parse_table(result.stdout.str())


def test_a_variant_and_a_sweep_are_rows_of_their_own_and_the_sweep_draws_its_front(pytester, sandbox_tmp,
                                                                                  shared_cache_dir, tmp_path):
    """A variant is an engine of its own (with significance marks against the base); a sweep
    evaluates its grid beside it, ingesting each chunking once, sorted, its front marked and drawn."""
    if __import__("importlib.util").util.find_spec("haystack") is None:
        pytest.skip("the hybrid extra is not installed")
    import json
    import re

    pytester.makeini(f"[pytest]\nretrieval_corpus = {CORPUS}\nretrieval_questions = {QUESTIONS}\n"
                     f"retrieval_cache_dir = {shared_cache_dir}\nretrieval_engines = hybrid hybrid-no-vector\n"
                     "retrieval_variants =\n    hybrid-no-vector: use_vector=false\n")
    pytester.makepyfile("def test_x(retrieval_results):\n    pass\n")
    out, page = tmp_path / "out", tmp_path / "page.html"
    done = subprocess.run([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "--retrieval-report", "-v",
                           "--retrieval-sweep", "hybrid: split_length=200,400 fusion_top_k=10,50",
                           f"--retrieval-report-dir={out}", f"--retrieval-html={page}"],
                          cwd=pytester.path, env={**os.environ, "TMPDIR": str(sandbox_tmp)},
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
    text = done.stdout
    names = ["hybrid-split_length200-fusion_top_k10", "hybrid-split_length200-fusion_top_k50",
             "hybrid-split_length400-fusion_top_k10", "hybrid"]
    assert all(f"test_x[{n}] PASSED" in text for n in [*names, "hybrid-no-vector"])  # the base among the 4
    table = parse_table(text)
    assert table["hybrid"]["hit@5"] > table["hybrid-no-vector"]["hit@5"]
    row = next(line for line in text.splitlines() if line.startswith("hybrid ᵃ"))
    assert "ᵇ" in row  # hybrid significantly beats b = hybrid-no-vector
    assert text.count("corpus lint, corpus:") == 2  # two ingestions: 400-word and 200-word chunks
    tables = set(re.findall(r"^retrieval: (chunks_\w+): (?:ingested|restored)", text, re.M))
    assert len(tables) == 2, text  # one ingestion per chunking; fusion_top_k reuses it
    sweep = text.split("sweep of hybrid on questions.cache.json", 1)[1].splitlines()
    header = next(line.split() for line in sweep if line.split()[:2] == ["split_length", "fusion_top_k"])
    assert header[2:] == ["ndcg@10", "±", "vs", "base", "p", "corr", "p95", "ms", "chunks", "tokens@10", "front"]
    rows = [line.split() for line in sweep[sweep.index(next(l for l in sweep if "split_length" in l)) + 1:][:4]]
    values = [float(r[2]) for r in rows]
    assert values == sorted(values, reverse=True) and len(rows) == 4
    assert sum(r[-1] != "-" for r in rows) >= 1 and any("base" in r for r in rows)
    d = json.loads((out / "results.json").read_text())
    [table] = d["sweeps"]
    assert [p["engine"] for p in table["points"]] == [p["engine"] for p in table["points"]] and \
        {p["engine"] for p in table["points"]} == set(names)
    assert {p["chunks"] for p in table["points"]} == {38, next(p["chunks"] for p in table["points"]
                                                               if p["settings"][0] == ["split_length", "200"])}
    assert any("latency" in p["front"] for p in table["points"]) and any("size" in p["front"] for p in table["points"])
    # what each chunking hands a generator (the hybrid engine returns passages): 400-word chunks more
    tokens = {p["settings"][0][1]: p["tokens"] for p in table["points"]}
    assert tokens["400"] > tokens["200"] > 0 and table["tokens_k"] == 10
    assert any("tokens" in p["front"] for p in table["points"])
    html = page.read_text()
    assert "<h2>Sweep</h2>" in html and html.count("against p95 latency (ms): sweep of hybrid") == 1 \
        and "against chunks: sweep of hybrid" in html and "against tokens of the top 10 passages: sweep of hybrid" in html
    rebuilt = tmp_path / "rebuilt"
    again = subprocess.run([sys.executable, "-m", "pytest_retrieval_eval", "report", str(out / "results.json"),
                            "--out", str(rebuilt)], capture_output=True, text=True, timeout=120)
    assert again.returncode == 0, again.stdout + again.stderr
    assert (rebuilt / "results.json").read_text() == (out / "results.json").read_text()
