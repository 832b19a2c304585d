"""Latency, calls, tokens and cost: the rules that judge them, the figures, and that a call is
credited to the question that made it even with calls side by side (threads, an event loop)."""

from __future__ import annotations

import asyncio
import json
import math
import time

import httpx
import numpy as np
import pytest

from fake_api import FakeApi, Reply
from pytest_retrieval_eval._http import request_json
from pytest_retrieval_eval.data.labeled import LabeledSet
from pytest_retrieval_eval.errors import RetrievalEvalError
from pytest_retrieval_eval.rules.thresholds import Threshold
from pytest_retrieval_eval.rules.settings import GateSettings
from pytest_retrieval_eval.archive.saved import load_saved, results_json
from pytest_retrieval_eval.gate.verdict import conclude, for_run, verdict_of as judge
from pytest_retrieval_eval.analysis.cost import latency_of, usage_of
from pytest_retrieval_eval.rules.prices import parse_prices
from conftest import evaluate_engine
from pytest_retrieval_eval.evaluation.results import RunResults
from pytest_retrieval_eval.evaluation.record_json import evaluation_from_dict
from pytest_retrieval_eval.types import LabeledQuery
from conftest import results_text

LABELED = LabeledSet(tuple(LabeledQuery(f"q{i}", "word " * (i + 1), {"d1": 1}) for i in range(12)), name="set")


@pytest.mark.parametrize("text, value, shown", [
    ("hybrid:latency.p95<=150ms", 150.0, "hybrid:latency.p95<=150ms"),
    ("latency.p50 < 0.2s", 200.0, "latency.p50<200ms"),
    ("remote:calls.per_query<=3", 3.0, "remote:calls.per_query<=3"),
    ("cost.per_query<=0.001", 0.001, "cost.per_query<=0.001"),
    ("tokens.total<=5e5", 5e5, "tokens.total<=500000"),
])
def test_cost_rules_parse_with_their_units_and_print_back_as_they_parse(text, value, shown):
    rule = Threshold.parse(text)
    assert rule.value == value and str(rule) == shown
    assert Threshold.parse(str(rule)) == rule  # results.json keeps str(rule): read back the same


@pytest.mark.parametrize("text, said", [
    ("latency.p95<=150", "say the unit of a latency, e.g. 'latency.p95<=150ms' or 'latency.p95<=150s'"),
    ("hit@5>=0.8s", "only a latency takes a unit; hit@5 is a plain number"),
    ("latency.p90<=1ms", "unknown latency statistic 'latency.p90'; known: latency.p50, latency.p95"),
    ("calls.per_call<=1", "unknown calls figure 'calls.per_call'; known: calls.per_query, calls.total"),
    ("latency.max<0ms", "can never pass: latency.max takes values in [0, inf)"),
    ("hybrid[body-only]:latency.p95<=1ms", "a segment rule judges a measure, not latency.p95"),
])
def test_a_cost_rule_that_cannot_mean_anything_is_refused_saying_why(text, said):
    with pytest.raises(RetrievalEvalError) as exc:
        Threshold.parse(text)
    assert said in str(exc.value)


class Sleeper:
    name = "slow"

    def __init__(self, seconds):
        self.seconds = seconds

    def retrieve(self, query, k):
        time.sleep(self.seconds[len(query.split()) - 1])
        return ["d1"]


def test_latency_figures_are_numpys_percentiles_of_each_call_and_a_rule_names_the_figure():
    pauses = [0.001 * (i + 1) for i in range(12)]
    e = evaluate_engine(Sleeper(pauses), LABELED)
    lat = latency_of(e)
    seconds = [r.seconds for r in e.results]
    assert all(s >= p for s, p in zip(seconds, pauses))  # a monotonic clock around the call
    assert lat.figures["p95"] == pytest.approx(float(np.percentile(seconds, 95)))
    assert lat.figures["max"] == max(seconds) and lat.concurrency == 1 and "CPUs" in lat.machine
    run = RunResults([e])
    settings = for_run(run, GateSettings(thresholds=(Threshold.parse("slow:latency.p95<=5ms", source="t"),)))
    verdict = judge(run, settings)
    [failure] = verdict.failures
    assert failure.startswith(f"slow: latency.p95 = {lat.ms('p95'):.1f} ms, required <= 5 ms (from t; n=12; "
                              "measured at concurrency 1, ")
    assert settings.latency  # a latency rule keeps the times in results.json


def test_a_latency_rule_on_a_run_that_kept_no_times_fails_saying_so():
    e = evaluate_engine(Sleeper([0.0] * 12), LABELED)
    e.measured = {}  # as a results.json saved without --retrieval-latency reads back
    run = RunResults([e])
    verdict = judge(run, GateSettings(thresholds=(Threshold.parse("latency.p50<=1s", source="t"),), latency=True))
    assert list(verdict.failures) == ["slow: latency.p50 = unknown, required <= 1000 ms (from t; n=12; the run did not time "
                                "its calls)"]


def test_results_json_holds_the_times_only_with_latency_on_and_rebuilds_byte_identical(tmp_path):
    e = evaluate_engine(Sleeper([0.001] * 12), LABELED)
    plain = json.loads(results_text(RunResults([e])))
    assert "seconds" not in plain["evaluations"][0]["queries"][0] and "latency" not in plain["evaluations"][0]
    run = RunResults([e])
    text = results_text(run, for_run(run, GateSettings(latency=True)))
    d = json.loads(text)["evaluations"][0]
    assert d["latency"]["seconds"]["p95"] == pytest.approx(latency_of(e).figures["p95"])
    assert d["measured"]["concurrency"] == 1
    (tmp_path / "r.json").write_text(text)
    again = load_saved(tmp_path / "r.json")
    assert results_json(conclude(again.run, again.settings, recorded=again.analysis)) == text


def _usage_server(api: FakeApi) -> None:
    """Answers a search with the question's words as tokens, under the question's own model name."""
    def answer(body):
        time.sleep(0.005)  # calls overlap
        return {"ids": ["d1"], "model": "m", "usage": {"prompt_tokens": len(body["q"].split()), "completion_tokens": 1}}

    api.script("/search", Reply(200, answer))


def test_each_question_is_credited_with_its_own_calls_and_tokens_when_asked_side_by_side():
    with FakeApi() as api:
        _usage_server(api)
        client = httpx.Client()

        class Remote:
            name = "remote"
            concurrency = 4

            def retrieve(self, query, k):
                request_json(client, "POST", api.url + "/search", json={"q": query}, retries=0)
                return ["d1"]

        e = evaluate_engine(Remote(), LABELED, timeout=5)  # a time limit: each call in a thread of its own
    assert [dict(r.usage) for r in e.results] == [{"m": (1, i + 1, 1)} for i in range(12)]
    used = usage_of(e, parse_prices("m=2/10"))
    assert (used.calls, used.tokens) == (12, sum(range(1, 13)) + 12)
    assert used.cost == pytest.approx((78 * 2 + 12 * 10) / 1e6)
    assert used.per_query("calls") == 1.0


def test_an_async_engine_credits_each_task_with_its_own_calls():
    with FakeApi() as api:
        _usage_server(api)
        client = httpx.Client()

        class Remote:
            name = "remote"
            concurrency = 6

            async def retrieve(self, query, k):
                await asyncio.to_thread(request_json, client, "POST", api.url + "/search",
                                        json={"q": query}, retries=0)
                return ["d1"]

        e = evaluate_engine(Remote(), LABELED)
    assert [dict(r.usage) for r in e.results] == [{"m": (1, i + 1, 1)} for i in range(12)]


def test_a_retry_is_a_call_and_an_unpriced_model_leaves_the_cost_unknown_naming_it():
    with FakeApi() as api:
        api.script("/search", Reply(503, {"error": "busy"}), Reply(200, {"ids": ["d1"], "usage": {"total_tokens": 7}}))
        client = httpx.Client()

        class Remote:
            name = "remote"

            def retrieve(self, query, k):
                request_json(client, "POST", api.url + "/search", json={"q": query, "model": "svc"}, retries=1,
                             backoff=0.0)
                return ["d1"]

        e = evaluate_engine(Remote(), LabeledSet(LABELED.queries[:2], name="two"))
    assert dict(e.results[0].usage) == {"svc": (2, 7, 0)}  # the retry counted; tokens from total_tokens
    assert dict(e.results[1].usage) == {"svc": (1, 7, 0)}
    used = usage_of(e, parse_prices("other=1"))
    assert math.isnan(used.cost) and used.unpriced == ("svc",)
    assert usage_of(e, parse_prices("*=1")).cost == pytest.approx(14 / 1e6)
    run = RunResults([e])
    [failure] = judge(run, for_run(run, GateSettings(thresholds=(Threshold.parse("cost.per_query<=1", source="t"),)))).failures
    assert "cost.per_query = unknown" in failure and "no price for svc (--retrieval-prices)" in failure


@pytest.mark.parametrize("text, said", [
    ("gpt=0.15/", "price 'gpt=0.15/' not understood; expected MODEL=INPUT[/OUTPUT]"),
    ("gpt", "price 'gpt' not understood"),
])
def test_a_malformed_price_is_refused_naming_it(text, said):
    with pytest.raises(RetrievalEvalError, match=said.replace("[", r"\[").replace("]", r"\]")):
        parse_prices(text)


def test_usage_and_times_survive_the_dict_form_xdist_ships():
    e = evaluate_engine(Sleeper([0.0] * 12), LABELED)
    e.results = tuple(r.__class__(r.query_id, r.doc_ids, r.error, r.seconds, r.stages, {"keyword": 0.5},
                                  {"m": (1, 2, 3)}) for r in e.results)
    back = evaluation_from_dict(e.to_dict(timing=True))
    assert [(r.seconds, dict(r.stage_seconds), dict(r.usage)) for r in back.results] == \
        [(r.seconds, {"keyword": 0.5}, {"m": (1, 2, 3)}) for r in e.results]
    assert back.measured == e.measured
    assert latency_of(back).stages == {"keyword": {"p50": 0.5, "p95": 0.5}}


def test_a_baseline_comparison_says_the_latency_and_whether_it_was_measured_alike():
    from pytest_retrieval_eval.analysis.baseline import latency_note

    now, base = evaluate_engine(Sleeper([0.002] * 12), LABELED), evaluate_engine(Sleeper([0.001] * 12), LABELED)
    assert latency_note(now, base).startswith(f"slow: latency p95 {latency_of(base).ms('p95'):.1f} ms -> "
                                              f"{latency_of(now).ms('p95'):.1f} ms (measured alike: concurrency 1, ")
    base.measured = {**base.measured, "concurrency": 8}
    assert ", not comparable: measured at concurrency 1, " in latency_note(now, base)
    assert "the baseline at concurrency 8, " in latency_note(now, base)
    base.measured = {}  # a baseline saved without latency: nothing to say
    assert latency_note(now, base) is None


def test_the_openai_embedder_counts_its_batches_and_tokens_and_unclaimed_calls_count_for_the_run():
    from fake_api import embeddings_reply
    from pytest_retrieval_eval._usage import OUTSIDE, Meter, metering, since
    from pytest_retrieval_eval.hybrid.embedders import Embedder, OpenAIBackend

    with FakeApi() as api:
        api.script("/embeddings", Reply(200, embeddings_reply(8)))
        backend = OpenAIBackend("embed-small", url=api.url)
        with metering(Meter()) as meter:  # batches of 64, sent side by side: two requests, each credited here
            Embedder(backend, None).embed([f"text {i}" for i in range(100)])
        before = OUTSIDE.to_dict()
        backend.embed(["one more"])  # claimed by no question: the run's own (an ingestion)
    assert meter.to_dict() == {"embed-small": [2, 2, 0]}
    assert since(OUTSIDE.to_dict(), before) == {"embed-small": [1, 1, 0]}


@pytest.mark.parametrize("text, said", [
    ("m=1,n=2", "separate models with spaces"),
    ("m=1 m=2", "m is priced twice; give each model one price"),
])
def test_prices_that_could_be_read_two_ways_are_refused(text, said):
    with pytest.raises(RetrievalEvalError, match=said):
        parse_prices(text)


@pytest.mark.parametrize("text, said", [
    ("slow:latency<=1ms", "latency needs a figure, e.g. 'latency.p95<=150ms' (latency.p50, latency.p95"),
    ("cost<=1", "cost needs a figure, e.g. 'cost.per_query<=3' (cost.per_query, cost.total)"),
])
def test_a_bare_cost_name_says_the_figures_it_takes(text, said):
    with pytest.raises(RetrievalEvalError) as exc:
        Threshold.parse(text)
    assert said in str(exc.value)


def test_shares_joined_keep_every_call_time_and_sum_what_their_engines_prepared():
    from pytest_retrieval_eval.archive.combine import combine

    from dataclasses import replace

    parts = []
    order = {q.query_id: i for i, q in enumerate(LABELED.queries)}
    for k in range(2):
        share = LABELED.shard(k, 2)
        e = evaluate_engine(Sleeper([0.0] * 12), share)
        # each call's time as measured, made exact (q_i took i ms): the join must keep it with its question
        e.results = tuple(replace(r, seconds=order[r.query_id] / 1000) for r in e.results)
        e.prepare_usage, e.trial_usage = {"m": (1, 10, 0)}, {"m": (2, 4, 4)}
        positions = [i for i, q in enumerate(LABELED.queries) if q.query_id in share.by_id()]
        parts.append({"evaluations": [{**e.to_dict(timing=True),
                                       "share": {"of": LABELED.fingerprint, "k": k, "n": 2, "positions": positions}}]})
    [whole] = combine(parts).run.evaluations
    assert [r.query_id for r in whole.results] == [q.query_id for q in LABELED.queries]
    assert [r.seconds for r in whole.results] == [i / 1000 for i in range(len(LABELED.queries))]
    assert whole.measured["concurrency"] == 1 and dict(whole.prepare_usage) == {"m": (2, 20, 0)}
    assert dict(whole.trial_usage) == {"m": (4, 8, 8)}
    assert latency_of(whole).n == 12


def _dated_server(api: FakeApi, answered: str) -> None:
    """An OpenAI-style server: it answers under a dated snapshot of the model asked for."""
    api.script("/chat", Reply(200, {"ids": ["d1"], "model": answered,
                                    "usage": {"prompt_tokens": 1000, "completion_tokens": 100}}))


def _asked(model: str, answered: str) -> "object":
    with FakeApi() as api:
        _dated_server(api, answered)
        client = httpx.Client()

        class Remote:
            name = "remote"

            def retrieve(self, query, k):
                request_json(client, "POST", api.url + "/chat", json={"model": model, "q": query}, retries=0)
                return ["d1"]

        return evaluate_engine(Remote(), LabeledSet(LABELED.queries[:2], name="two"))


def test_tokens_are_priced_under_the_model_asked_for_not_the_dated_name_the_answer_reports():
    e = _asked("gpt-4o-mini", "gpt-4o-mini-2024-07-18")
    used = usage_of(e, parse_prices("gpt-4o-mini=0.15/0.60 *=0.0125/0.05"))  # the default: a twelfth
    assert used.cost == pytest.approx(2 * (1000 * 0.15 + 100 * 0.60) / 1e6) and used.unpriced == ()
    [model] = used.by_model
    assert model.startswith("gpt-4o-mini") and "gpt-4o-mini-2024-07-18" in model  # both names kept
    assert used.priced_as == {model: "gpt-4o-mini"} and used.to_dict()["priced_as"] == {model: "gpt-4o-mini"}
    run = RunResults([e])
    [failure] = judge(run, for_run(run, GateSettings(prices=parse_prices("gpt-4o-mini=0.15/0.60 *=0.0125/0.05"),
                                                     thresholds=(Threshold.parse("cost.per_query<=0.0001",
                                                                                 source="t"),)))).failures  # 0.00021 a question: over the budget
    assert failure.startswith("remote: cost.per_query = 0.00021")


@pytest.mark.parametrize("asked, answered, prices, priced_as", [
    # a dated snapshot: its base's price
    ("gpt-4o-mini-2024-07-18", "gpt-4o-mini-2024-07-18", "gpt-4o-mini=0.15/0.60", "gpt-4o-mini"),
    ("claude-3-5-haiku-20241022", "claude-3-5-haiku-20241022", "claude-3-5-haiku=0.15/0.60", "claude-3-5-haiku"),
    ("prod-chat", "gpt-4o-mini-2024-07-18", "gpt-4o-mini=0.15/0.60", "gpt-4o-mini"),  # an alias: what answered
    ("gpt-4o-mini", "gpt-4o-mini-2024-07-18", "gpt-4o-mini-2024-07-18=0.15/0.60", "gpt-4o-mini-2024-07-18"),
    ("gpt-4o-mini", "gpt-4o-mini-2024-07-18", "gpt-4o=2.5/10 *=0.15/0.60", "*"),  # the default only then
])
def test_a_price_is_found_under_the_asked_name_its_base_then_the_answered_name(asked, answered, prices, priced_as):
    used = usage_of(_asked(asked, answered), parse_prices(prices))
    assert used.cost == pytest.approx(2 * (1000 * 0.15 + 100 * 0.60) / 1e6)
    assert list(used.priced_as.values()) == [priced_as]


def test_a_model_priced_under_no_name_it_went_by_is_named_as_asked():
    used = usage_of(_asked("prod-chat", "gpt-4o-mini-2024-07-18"), parse_prices("gpt-4o=2.5/10"))
    assert math.isnan(used.cost) and used.unpriced[0].startswith("prod-chat")
