"""Latency, calls, tokens and cost in a team's run: an HTTP engine of the test's own (a real
local server answering in 100 ms, reporting usage) timed, priced and gated end to end."""

from __future__ import annotations

import json
import re

from fake_api import FakeApi, Reply
from pytest_retrieval_eval.cli import main as cli

CONFTEST = """
    from pytest_retrieval_eval import adapters

    def pytest_retrieval_engines(registry, config):
        registry.register("remote", lambda request: adapters.http({url!r}, method="POST", json={{"q": "{{query}}"}},
                                                                  ids="ids", concurrency=1))
"""


def answer(body):
    return {"ids": ["battery-care"], "model": "svc-model",
            "usage": {"prompt_tokens": len(body["q"].split()), "completion_tokens": 2}}


def test_an_http_engine_is_timed_priced_and_gated_on_its_p95(bundled_project, tmp_path, capsys):
    with FakeApi() as api:
        api.script("/search", Reply(200, answer, delay=0.1))
        bundled_project.makeconftest(CONFTEST.format(url=api.url + "/search"))
        bundled_project.makepyfile("def test_q(retrieval_results):\n    assert retrieval_results.n == 17\n")
        out = tmp_path / "out"
        result = bundled_project.runpytest(
            "--retrieval-engine", "remote", "--retrieval-slice", "1/4", f"--retrieval-report-dir={out}", "-v",
            "--retrieval-report", "--retrieval-prices", "svc-model=1.5/6", "--retrieval-threshold",
            "remote:latency.p95<=50ms", "--retrieval-threshold", "remote:cost.per_query<=0.001",
            "--retrieval-threshold", "remote:calls.per_query<=1")
    text = result.stdout.str()
    assert result.ret == 1, text
    d = json.loads((out / "results.json").read_text())["evaluations"][0]
    p95 = d["latency"]["seconds"]["p95"]
    calls = sorted(q["seconds"] for q in d["queries"])  # each call's own time: the server's 100 ms and more
    assert len(calls) == 17 and calls[0] >= 0.100 and calls[-2] <= p95 <= calls[-1], (calls, d["latency"])
    assert d["latency"]["concurrency"] == 1
    [failure] = [line for line in text.splitlines() if line.startswith("FAIL retrieval gate")]
    assert failure.startswith(f"FAIL retrieval gate: remote: latency.p95 = {p95 * 1000:.1f} ms, required <= 50 ms "
                              "(from --retrieval-threshold; n=17; measured at concurrency 1, ")
    questions = {q["id"]: q for q in d["queries"]}
    first = next(iter(questions.values()))
    assert first["usage"] == {"svc-model": [1, len(first["question"].split()), 2]}  # per query, as the server said
    tokens_in = sum(len(q["question"].split()) for q in questions.values())
    cost = (tokens_in * 1.5 + 17 * 2 * 6) / 1e6
    assert d["usage"]["cost"] == d["usage"]["cost"] and abs(d["usage"]["cost"] - cost) < 1e-12
    assert d["usage"]["per_query"]["calls"] == 1.0
    row = next(line for line in text.splitlines() if line.startswith("remote ") and "ms" not in line
               and len(line.split()) == 8)
    cells = row.split()
    assert float(cells[2]) == round(p95 * 1000, 1) and cells[5:7] == ["1.00", f"{(tokens_in + 34) / 17:.1f}"]
    assert "e" not in cells[7] and abs(float(cells[7]) - cost / 17) <= cost / 17 * 0.005  # dollars as a decimal
    assert re.search(r"^latency measured at concurrency 1, \S+ \S+, \d+ CPUs", text, re.M)
    total = re.search(rf"^the run's HTTP calls: 17, {tokens_in + 34:,} tokens, \$([\d.]+)$", text, re.M)
    assert total and abs(float(total[1]) - cost) <= cost * 0.005, text
    md = (out / "results.md").read_text()
    assert "## Cost" in md and "| remote | " in md
    # the report command prints the run's own summary, the run's HTTP calls in all included
    lines = result.stdout.lines
    start = next(i for i, line in enumerate(lines) if line.startswith("---") and "retrieval evaluation" in line)
    printed = [line for line in lines[start:-1] if not line.startswith("retrieval: ")]
    capsys.readouterr()
    assert cli(["report", str(out / "results.json"), "-v"]) == 1
    assert capsys.readouterr().out.splitlines() == printed and total[0] in printed


DATED = """
    from pytest_retrieval_eval import adapters

    def pytest_retrieval_engines(registry, config):
        registry.register("remote", lambda request: adapters.http(
            {url!r}, method="POST", json={{"model": "gpt-4o-mini", "q": "{{query}}"}}, ids="ids", concurrency=1))
"""


def test_tokens_are_priced_under_the_model_the_team_asked_for_when_the_answer_names_a_dated_snapshot(
        bundled_project, tmp_path):
    """The server answers as gpt-4o-mini-2024-07-18: the team's gpt-4o-mini price applies, not the
    default one (a twelfth of it), and the report says which name was priced."""
    with FakeApi() as api:
        api.script("/search", Reply(200, {"ids": ["battery-care"], "model": "gpt-4o-mini-2024-07-18",
                                          "usage": {"prompt_tokens": 1000, "completion_tokens": 100}}))
        bundled_project.makeconftest(DATED.format(url=api.url + "/search"))
        bundled_project.makepyfile("def test_q(retrieval_results):\n    pass\n")
        out = tmp_path / "out"
        result = bundled_project.runpytest(
            "--retrieval-engine=remote", "--retrieval-slice=1/4", f"--retrieval-report-dir={out}", "-v",
            "--retrieval-report", "--retrieval-prices=gpt-4o-mini=0.15/0.60 *=0.0125/0.05",
            "--retrieval-threshold=remote:cost.per_query<=0.0001")
    text = result.stdout.str()
    assert result.ret == 1, text
    per_query = (1000 * 0.15 + 100 * 0.60) / 1e6  # 0.00021 a question
    assert ("FAIL retrieval gate: remote: cost.per_query = 0.00021, required <= 0.0001 (from --retrieval-threshold; "
            "n=17; ") in text
    model = "gpt-4o-mini (answered as gpt-4o-mini-2024-07-18)"
    usage = json.loads((out / "results.json").read_text())["evaluations"][0]["usage"]
    assert abs(usage["per_query"]["cost"] - per_query) < 1e-12
    assert usage["priced_as"] == {model: "gpt-4o-mini"} and list(usage["by_model"]) == [model]
    unwrapped = text.replace("\n    ", " ")
    assert f"\nremote: {model} priced as gpt-4o-mini\n" in unwrapped
    assert f"the run's HTTP calls: 17, 18,700 tokens, $0.00357; {model} priced as gpt-4o-mini" in unwrapped
