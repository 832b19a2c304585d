"""Repeated trials (spread, pass@k / pass^k) and engine variants side by side."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from conftest import CORPUS, QUESTIONS, parse_table

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
    result = bundled_project.runpytest("--retrieval-engine", "keyword", "--retrieval-engine", "coin", "--retrieval-report",
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


def test_two_hybrid_variants_are_two_rows_with_a_significance_marker(pytester, sandbox_tmp, shared_cache_dir):
    if __import__("importlib.util").util.find_spec("haystack") is None:
        pytest.skip("the hybrid extra is not installed")
    pytester.makeini(f"[pytest]\nretrieval_corpus = {CORPUS}\nretrieval_questions = {QUESTIONS}\n"
                     f"retrieval_cache_dir = {shared_cache_dir}\nretrieval_engines = hybrid hybrid-no-vector hybrid-200\n"
                     "retrieval_variants =\n    hybrid-no-vector: use_vector=false\n    hybrid-200: split_length=200 split_overlap=40\n")
    pytester.makepyfile("def test_x(retrieval_results):\n    pass\n")
    done = subprocess.run([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "--retrieval-report", "-v"],
                          cwd=pytester.path, env={**os.environ, "TMPDIR": str(sandbox_tmp)},
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
    out = done.stdout
    assert "test_x[hybrid-no-vector] PASSED" in out and "test_x[hybrid-200] PASSED" in out
    table = parse_table(out)
    assert table["hybrid"]["hit@5"] > table["hybrid-no-vector"]["hit@5"]
    row = next(l for l in out.splitlines() if l.startswith("hybrid ᵃ"))
    assert "ᶜ" in row  # hybrid significantly beats c = hybrid-no-vector
    assert out.count("corpus lint, corpus:") == 2  # two ingestions: 400-word and 200-word chunks


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
