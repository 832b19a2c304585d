"""Engine errors in sight (issue 27): per engine, each distinct error with its count and up to three
question ids, in the terminal (with or without --retrieval-report), results.md and the page."""

from __future__ import annotations

import json

ENGINES = """
    class TwoBad:
        name = "twobad"
        def retrieve(self, query, k):
            if "winter" in query:
                raise ConnectionError("search backend refused the connection\\nsecond line of detail")
            return ["battery-care"]

    class Mixed:
        name = "mixed"
        def retrieve(self, query, k):
            if "bike" in query:
                raise TimeoutError("upstream timeout")
            if "battery" in query:
                raise KeyError("index shard 3")
            return ["battery-care"]

    def pytest_retrieval_engines(registry, config):
        registry.register("twobad", lambda request: TwoBad())
        registry.register("mixed", lambda request: Mixed())
"""


def project(make_project):
    return make_project(conftest=ENGINES)


def winter_ids() -> list[str]:
    from conftest import QUESTIONS

    queries = json.loads(QUESTIONS.read_text(encoding="utf-8"))["queries"]
    return [q["id"] for q in queries if "winter" in q["question"]]


def test_an_engine_raising_on_two_questions_shows_the_exception_and_both_ids(make_project):
    ids = winter_ids()
    assert len(ids) == 2  # the bundled set asks about winter twice
    p = project(make_project)
    result = p.runpytest("-m", "retrieval", "--retrieval-engine=twobad", "--retrieval-report-dir=out",
                         "--retrieval-html=out/page.html")
    out = result.stdout.str()
    line = f"twobad: 2 x ConnectionError: search backend refused the connection ({ids[0]}, {ids[1]})"
    assert "engine errors (counted as misses):" in out
    assert line in " ".join(out.split()), out  # wrapped at 80 columns
    assert "second line of detail" not in out
    md = (p.path / "out" / "results.md").read_text(encoding="utf-8")
    assert f"- {line}" in md
    page = (p.path / "out" / "page.html").read_text(encoding="utf-8")
    assert 'id="engine-errors"' in page and "search backend refused the connection" in page


def test_distinct_errors_are_grouped_most_frequent_first(make_project):
    import re

    p = project(make_project)
    out = " ".join(p.runpytest("-m", "retrieval", "--retrieval-engine=mixed").stdout.str().split())
    found = re.findall(r"mixed: (\d+) x (TimeoutError: upstream timeout|KeyError: 'index shard 3')", out)
    assert len(found) == 2, out
    counts = [int(n) for n, _ in found]
    assert counts == sorted(counts, reverse=True) and all(n >= 1 for n in counts)


def test_no_errors_no_lines(make_project):
    result = make_project().runpytest("-m", "retrieval", "--retrieval-report")
    assert result.ret == 0 and "keyword" in result.stdout.str()
    assert "engine errors" not in result.stdout.str()
