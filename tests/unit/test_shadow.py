"""Shadow comparisons: a candidate engine against the current one in the same run, the knowledge
gain, the queries and documents that moved, and the gate on them."""

from __future__ import annotations


import pytest

from pytest_retrieval_eval import QueryResult, RetrievalEvalError
from pytest_retrieval_eval.data.labeled import LabeledSet
from pytest_retrieval_eval.gate.checks import check_shadows
from pytest_retrieval_eval.rules.shadows import parse_pair, parse_weights
from pytest_retrieval_eval.rules.thresholds import Threshold
from pytest_retrieval_eval.analysis.result import EvaluationResult
from pytest_retrieval_eval.analysis.shadow import compare
from pytest_retrieval_eval.report.shadow import headline, movers, queries_text
from pytest_retrieval_eval.types import LabeledQuery

LABELED = LabeledSet(tuple(LabeledQuery(f"q{i}", f"question {i}", {f"d{i}": 1}) for i in range(4)), name="s")


def result(engine: str, rankings: list[tuple[str, ...]]) -> EvaluationResult:
    return EvaluationResult(engine, LABELED, tuple(QueryResult(f"q{i}", r) for i, r in enumerate(rankings)))


def test_the_gain_is_the_weighted_mean_of_the_deltas_and_the_queries_add_up_to_it():
    base = result("base", [("x", "d0"), ("d1",), ("d2",), ("x",)])
    cand = result("cand", [("d0",), ("d1",), ("x", "y", "z", "w", "v", "d2"), ("d3",)])
    weights = {"recall@5": 2.0, "mrr": 1.0}
    sh = compare(cand, base, weights, ["hit@1"])
    d_recall = cand.mean("recall@5") - base.mean("recall@5")
    d_mrr = cand.mean("mrr") - base.mean("mrr")
    assert sh.gain == pytest.approx((2 * d_recall + d_mrr) / 3)
    assert sh.delta("recall@5") == pytest.approx(d_recall) and sh.delta("hit@1") == pytest.approx(0.25)
    assert sum(m.contribution for m in sh.movers) == pytest.approx(sh.gain)  # every mover listed here
    assert (sh.better, sh.worse, sh.same) == (2, 1, 1)
    assert sh.movers[0].query_id == "q3" and sh.movers[0].changes == (("mrr", 0.0, 1.0), ("recall@5", 0.0, 1.0))
    assert sh.cutoff == 5 and sh.newly_hit == (("d3", 1),) and sh.newly_missed == (("d2", 1),)
    # the same engine against itself gains nothing, and says so
    same = compare(base, base, weights)
    assert same.gain == 0 and same.movers == () and same.better == same.worse == 0


@pytest.mark.parametrize("ids_side", ["baseline", "candidate"])
def test_a_weight_either_engine_has_no_value_of_is_skipped_and_the_gain_rests_on_the_others(ids_side):
    """An ids-only engine has no ``+evidence`` value: on either side of the pair that weight is
    left out and said, never a gain of NaN with a p-value of nothing and NaN movers."""
    passages = EvaluationResult("passages", LABELED, tuple(
        QueryResult(f"q{i}", (f"d{i}",), passages=1, passage_ranks={f"d{i}": 1}) for i in range(4)))
    ids = result("ids", [("x", "d0"), ("x", "d1"), ("d2",), ("x",)])
    assert not ids.has_value("hit@5+evidence") and passages.has_value("hit@5+evidence")
    cand, base = (passages, ids) if ids_side == "baseline" else (ids, passages)
    sh = compare(cand, base, {"hit@5+evidence": 1.0, "mrr": 1.0})
    assert sh.skipped == ("hit@5+evidence",)
    assert sh.gain == pytest.approx(cand.mean("mrr") - base.mean("mrr"))  # the gain of mrr alone
    assert all(m.changes and all(c[0] == "mrr" for c in m.changes) for m in sh.movers)
    assert (sh.better, sh.worse, sh.same) == ((3, 0, 1) if ids_side == "baseline" else (0, 3, 1))
    alone = compare(cand, base, {"hit@5+evidence": 1.0})  # nothing left to weigh: no gain, no p, no question moved
    assert alone.gain != alone.gain and alone.gain_p != alone.gain_p and alone.movers == () and alone.skipped
    assert (alone.better, alone.worse, alone.same) == (0, 0, 0)
    rules = [Threshold.parse(r, source="--retrieval-threshold") for r in ("shadow.gain>=0", "shadow.hit@5+evidence>=0")]
    said = check_shadows(rules, [alone])
    assert said == [f"shadow {cand.engine}:{base.engine}: knowledge gain has no value (not weighted, no value in this "
                    "run: hit@5+evidence), so the rule shadow.gain>=0 (from --retrieval-threshold) checked nothing",
                    f"shadow {cand.engine}:{base.engine}: hit@5+evidence delta has no value (an engine has none of "
                    "hit@5+evidence), so the rule shadow.hit@5+evidence>=0 (from --retrieval-threshold) checked nothing"]
    shown = [headline(alone), queries_text(alone), *movers(alone)]
    assert queries_text(alone) == "queries: not compared (no weight has a value in both engines)"
    assert not any("nan" in line for line in [*shown, *said]), shown


def test_weights_and_pairs_parse_or_say_what_is_expected():
    assert parse_weights("recall@5=2, NDCG@5=1") == {"ndcg@5": 1.0, "recall@5": 2.0}
    for bad in ("recall@5", "recall@5=0", "recall@5=-1", "recall@5=x", "", "bogus@5=1"):
        with pytest.raises(RetrievalEvalError):
            parse_weights(bad)
    assert parse_pair("hybrid-kw:hybrid") == ("hybrid-kw", "hybrid")
    for bad in ("hybrid", "a:a", ":b", "a:b:c"):
        with pytest.raises(RetrievalEvalError):
            parse_pair(bad)
    assert str(Threshold.parse("shadow.gain>=0")) == "shadow.gain>=0"
    assert Threshold.parse("cand:shadow.Recall@5>=-0.05").measure == "shadow.recall@5"
    with pytest.raises(RetrievalEvalError, match="can never fail"):
        Threshold.parse("shadow.gain>=-1")
