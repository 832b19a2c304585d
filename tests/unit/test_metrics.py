"""``evaluate`` against an independent oracle (pytrec-eval-terrier, i.e. trec_eval's C code).

pytrec_eval scores the queries that are in both the qrels and the run; trec_eval ``-c`` semantics
(what ``evaluate`` implements) also count judged queries the run leaves out, as 0. The oracle
helper adds those zeros itself so the comparison is of like with like.
"""

from __future__ import annotations

import math
import random

import pytest

# Test-only dependencies (the dev extra): a run with only the hybrid extra installed, such as
# the README's bundled eval, still collects this module and skips it.
pytrec_eval = pytest.importorskip("pytrec_eval")
pytest.importorskip("hypothesis")
from hypothesis import given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from conftest import examples  # noqa: E402

from pytest_retrieval_eval import Measure, Qrels, Run, evaluate  # noqa: E402
from pytest_retrieval_eval.ir.runs import rank_by_score  # noqa: E402

ALL_MEASURES = [
    "hit@1", "hit@3", "hit@5", "hit@10",
    "mrr", "mrr@3", "mrr@10",
    "recall@1", "recall@5", "recall@100",
    "precision@1", "precision@5", "precision@10",
    "ndcg", "ndcg@1", "ndcg@5", "ndcg@10",
    "map", "map@3", "map@10",
]


def _oracle_one(qrels: dict, run_scores: dict, measure: str) -> dict[str, float]:
    """Per-query values from pytrec_eval for one of our measure names, -c semantics."""
    parsed = Measure.parse(measure)
    family, k, level = parsed.family, parsed.k, parsed.rel or 1
    truncate = None
    if family == "hit":
        name, key = f"success.{k}", f"success_{k}"
    elif family == "mrr":
        name, key = "recip_rank", "recip_rank"
        truncate = k  # trec_eval has no recip_rank cutoff: cut the run
    elif family == "recall":
        name, key = f"recall.{k}", f"recall_{k}"
    elif family == "precision":
        name, key = f"P.{k}", f"P_{k}"
    elif family == "ndcg":
        name, key = (f"ndcg_cut.{k}", f"ndcg_cut_{k}") if k else ("ndcg", "ndcg")
    elif family == "map":
        name, key = (f"map_cut.{k}", f"map_cut_{k}") if k else ("map", "map")
    elif family in _TREC_NAMES:  # uncut in trec_eval: a cutoff cuts the run
        name = key = _TREC_NAMES[family]
        truncate = k
    else:
        raise AssertionError(measure)
    scores = run_scores
    if truncate is not None:
        scores = {
            q: {d: docs[d] for d in rank_by_score(docs)[:truncate]} for q, docs in run_scores.items()
        }
    # pytrec_eval leaves out queries absent from the run: give them an empty ranking.
    scores = {q: dict(scores.get(q, {})) for q in qrels}
    result = pytrec_eval.RelevanceEvaluator(qrels, {name}, relevance_level=level).evaluate(scores)
    # a query pytrec_eval leaves out scores 0, except its relevant documents, which trec_eval -c counts
    missing = {q: float(sum(g >= level for g in qrels[q].values())) if family == "num_rel" else 0.0 for q in qrels}
    return {q: result.get(q, {}).get(key, missing[q]) for q in qrels}


_TREC_NAMES = {"rprec": "Rprec", "bpref": "bpref", "num_ret": "num_ret", "num_rel": "num_rel",
               "num_rel_ret": "num_rel_ret", "set_precision": "set_P", "set_recall": "set_recall", "set_f": "set_F"}

#: the trec_eval 10 measures added for issue 28, with cutoffs and at relevance level 2
TREC_10_MEASURES = [
    "rprec", "bpref", "num_ret", "num_rel", "num_rel_ret", "num_ret@5", "num_rel_ret@3",
    "set_precision", "set_recall", "set_f",
    "P(rel=2)@5", "recall(rel=2)@10", "map(rel=2)", "mrr(rel=2)", "hit(rel=2)@3", "rprec(rel=2)", "bpref(rel=2)",
    "num_rel(rel=2)", "num_rel_ret(rel=2)", "set_f(rel=2)", "map(rel=3)@5",
]


def assert_matches_oracle(qrels: dict, run_scores: dict, measures=ALL_MEASURES) -> None:
    assert_scores_apart(run_scores)
    ours = evaluate(Qrels.from_dict(qrels), Run.from_dict(run_scores), measures, per_query=True)
    means = evaluate(Qrels.from_dict(qrels), Run.from_dict(run_scores), measures)
    for m in measures:
        name = Measure.parse(m).name
        expected = _oracle_one(qrels, run_scores, m)
        assert set(ours[name]) == set(qrels), m
        for q in qrels:
            assert ours[name][q] == pytest.approx(expected[q], abs=1e-9), (m, q, ours[name][q], expected[q])
        total = sum(expected.values())
        summary = total if Measure.parse(m).count else total / len(expected)  # trec_eval sums counts
        assert means[name] == pytest.approx(summary, abs=1e-9), m


def assert_scores_apart(run_scores: dict) -> None:
    """pytrec_eval rounds scores to float32 (its trec_eval predates double scores): two scores
    that differ but round to one float32 tie there and not in trec_eval 10 or here. An oracle
    case must not draw such scores, or it would compare against the old rule."""
    import numpy as np

    for q, docs in run_scores.items():
        values = sorted(set(docs.values()))
        rounded = np.asarray(values, dtype=np.float32)
        assert len(set(rounded.tolist())) == len(values), f"query {q}: scores closer than float32 resolution"


# --- random runs ---------------------------------------------------------------------------

doc_ids = st.sampled_from([f"d{i}" for i in range(25)])


@st.composite
def qrels_and_run(draw):
    n_queries = draw(st.integers(1, 8))
    qrels, run = {}, {}
    for q in range(n_queries):
        qid = f"q{q}"
        judged = draw(st.dictionaries(doc_ids, st.integers(0, 3), min_size=1, max_size=8))
        qrels[qid] = judged
        if draw(st.booleans()) or q == 0:
            # coarse scores on purpose: many ties, some across cutoffs
            run[qid] = draw(
                st.dictionaries(doc_ids, st.integers(0, 4).map(float), min_size=0, max_size=20)
            )
    if draw(st.booleans()):
        run["unjudged-query"] = {"d1": 1.0}
    return qrels, run


@settings(max_examples=examples(300), deadline=None)
@given(qrels_and_run())
def test_random_runs_match_trec_eval(data):
    qrels, run = data
    assert_matches_oracle(qrels, run)


@settings(max_examples=examples(200), deadline=None)
@given(qrels_and_run())
def test_random_runs_match_trec_eval_on_the_trec_eval_10_measures(data):
    qrels, run = data
    assert_matches_oracle(qrels, run, TREC_10_MEASURES)


def test_larger_random_run_with_graded_qrels_and_ties():
    rng = random.Random(20261130)
    qrels, run = {}, {}
    for q in range(200):
        docs = [f"doc{i}" for i in range(300)]
        judged = rng.sample(docs, rng.randint(1, 30))
        qrels[f"q{q}"] = {d: rng.choice([0, 1, 1, 2, 3]) for d in judged}
        if rng.random() < 0.9:
            retrieved = rng.sample(docs, rng.randint(0, 150))
            run[f"q{q}"] = {d: float(rng.randint(0, 40)) / 4 for d in retrieved}
    assert_matches_oracle(qrels, run, ALL_MEASURES + TREC_10_MEASURES + ["recall@1000", "precision@100", "hit@200"])


# --- hand-made edge cases ------------------------------------------------------------------

def test_ties_across_a_cutoff_follow_trec_eval_doc_id_descending():
    # Three docs tie at 1.0; trec_eval orders them z, b, a -> the relevant 'a' lands at rank 3.
    qrels = {"q": {"a": 1}}
    run = {"q": {"a": 1.0, "b": 1.0, "z": 1.0}}
    assert Run.from_dict(run)["q"] == ("z", "b", "a")
    assert evaluate(qrels, run, ["hit@2", "hit@3", "mrr"]) == {"hit@2": 0.0, "hit@3": 1.0, "mrr": pytest.approx(1 / 3)}
    assert_matches_oracle(qrels, run)


def test_duplicates_in_a_ranking_keep_the_first_rank():
    qrels = {"q": {"a": 1, "b": 1}}
    ranked = Run.from_ranked({"q": ["x", "a", "x", "a", "b"]})
    assert ranked["q"] == ("x", "a", "b")
    got = evaluate(qrels, ranked, ["precision@3", "recall@3", "mrr", "map"])
    assert got["precision@3"] == pytest.approx(2 / 3)
    assert got["recall@3"] == 1.0
    assert got["mrr"] == 0.5
    # Same as trec_eval on the de-duplicated ranking.
    assert_matches_oracle(qrels, {"q": {"x": 3.0, "a": 2.0, "b": 1.0}})


def test_empty_rankings_and_missing_queries_score_zero_and_count_in_the_mean():
    qrels = {"q1": {"a": 1}, "q2": {"b": 1}, "q3": {"c": 2}}
    run = {"q1": {"a": 1.0}, "q2": {}}  # q2 empty (e.g. an errored query), q3 missing
    got = evaluate(qrels, run, ["hit@1", "mrr", "ndcg@10"])
    assert got == {"hit@1": pytest.approx(1 / 3), "mrr": pytest.approx(1 / 3), "ndcg@10": pytest.approx(1 / 3)}
    assert_matches_oracle(qrels, run)


def test_query_with_no_relevant_document_counts_as_zero():
    qrels = {"q1": {"a": 1}, "q2": {"b": 0}}
    run = {"q1": {"a": 1.0}, "q2": {"b": 1.0}}
    assert evaluate(qrels, run, ["hit@1", "recall@5", "ndcg@5", "map"]) == {
        "hit@1": 0.5, "recall@5": 0.5, "ndcg@5": 0.5, "map": 0.5,
    }
    assert_matches_oracle(qrels, run)


def test_graded_ndcg_uses_linear_gain_like_trec_eval():
    qrels = {"q": {"a": 3, "b": 1, "c": 0, "d": 2}}
    run = {"q": {"b": 4.0, "c": 3.0, "a": 2.0, "e": 1.0}}
    dcg = 1 / math.log2(2) + 0 + 3 / math.log2(4)
    idcg = 3 / math.log2(2) + 2 / math.log2(3) + 1 / math.log2(4)
    assert evaluate(qrels, run, "ndcg@4")["ndcg@4"] == pytest.approx(dcg / idcg)
    assert_matches_oracle(qrels, run)


def test_k_larger_than_the_ranking():
    qrels = {"q": {"a": 1, "b": 1, "c": 1}}
    run = {"q": {"a": 2.0, "x": 1.0}}
    got = evaluate(qrels, run, ["precision@10", "recall@100", "map@50", "ndcg@1000", "hit@1000"])
    assert got["precision@10"] == pytest.approx(0.1)
    assert got["recall@100"] == pytest.approx(1 / 3)
    assert got["map@50"] == pytest.approx(1 / 3)
    assert_matches_oracle(qrels, run, ["precision@10", "recall@100", "map@50", "ndcg@1000", "hit@1000"])


def test_map_at_k_divides_by_all_relevant_documents():
    qrels = {"q": {"a": 1, "b": 1, "c": 1, "d": 1}}
    run = {"q": {"a": 3.0, "x": 2.0, "b": 1.0}}
    assert evaluate(qrels, run, "map@2")["map@2"] == pytest.approx((1 / 1) / 4)


def test_mrr_at_k_ignores_hits_below_the_cutoff():
    qrels = {"q": {"a": 1}}
    run = Run.from_ranked({"q": ["x", "y", "a"]})
    assert evaluate(qrels, run, ["mrr@2", "mrr@3"]) == {"mrr@2": 0.0, "mrr@3": pytest.approx(1 / 3)}


def test_no_judged_queries_gives_nan_not_a_pass():
    got = evaluate({}, {"q": {"a": 1.0}}, ["hit@5", "mrr"])
    assert math.isnan(got["hit@5"]) and math.isnan(got["mrr"])
    assert evaluate({}, {}, ["hit@5"], per_query=True) == {"hit@5": {}}


def test_ranked_dict_and_scored_dict_are_both_accepted():
    qrels = {"q": {"b": 1}}
    assert evaluate(qrels, {"q": ["a", "b"]}, "mrr") == {"mrr": 0.5}
    assert evaluate(qrels, {"q": {"a": 2.0, "b": 1.0}}, "mrr") == {"mrr": 0.5}


def test_measure_spellings_share_one_identity():
    qrels = {"q": {"a": 1}}
    got = evaluate(qrels, {"q": ["a"]}, ["nDCG@10", "ndcg_cut_10", "P@5", "success@1", "RR"])
    assert list(got) == ["ndcg@10", "precision@5", "hit@1", "mrr"]


def test_scores_closer_than_float32_are_ordered_as_trec_eval_10_orders_them():
    # trec_eval 10 compares double scores: 10.0000001 ranks above 10.0. pytrec_eval rounds both to
    # one float32, ties them and breaks the tie by doc id ('b' first). trec_eval 10 wins.
    qrels = {"q": {"a": 1}}
    run = {"q": {"a": 10.0000001, "b": 10.0}}
    assert Run.from_dict(run)["q"] == ("a", "b")
    assert evaluate(qrels, run, ["mrr", "hit@1"]) == {"mrr": 1.0, "hit@1": 1.0}
    assert pytrec_eval.RelevanceEvaluator(qrels, {"recip_rank"}).evaluate(run)["q"]["recip_rank"] == 0.5
    with pytest.raises(AssertionError, match="float32"):
        assert_scores_apart(run)  # so no oracle case draws such scores


def test_bpref_and_rprec_by_hand():
    # judged: a(1) b(0) c(1) d(0) e(1); ranking x a b c  -> R = 3, non-relevant judged N = 2
    qrels = {"q": {"a": 1, "b": 0, "c": 1, "d": 0, "e": 1}}
    run = {"q": ["x", "a", "b", "c"]}
    got = evaluate(qrels, run, ["bpref", "rprec"])
    assert got["bpref"] == pytest.approx((1 + (1 - 1 / 2)) / 3)  # x unjudged: skipped
    assert got["rprec"] == pytest.approx(1 / 3)  # one relevant in the top 3
    # no judged non-relevant document: each relevant one retrieved counts fully (trec_eval; ranx: NaN)
    assert evaluate({"q": {"a": 1, "c": 1}}, run, ["bpref"]) == {"bpref": 1.0}


def test_a_negative_grade_is_in_the_pool_but_unjudged_as_in_trec_eval():
    qrels = {"q": {"a": -1, "b": 0, "c": 1}}
    run = {"q": ["a", "b", "c"]}
    got = evaluate(qrels, run, ["judged@3", "bpref", "ndcg@3", "num_rel"])
    assert got == {"judged@3": pytest.approx(2 / 3), "bpref": 0.0, "ndcg@3": pytest.approx(0.5), "num_rel": 1.0}


EVERY_MEASURE = ALL_MEASURES + TREC_10_MEASURES + [
    "judged", "judged@3", "err", "err@5", "rbp(p=0.8)", "rbp(p=0.9,rel=2)@10", "ndcg(gain=exp)", "ndcg(gain=exp)@5",
    "set_f(beta=0.5)"]


@settings(max_examples=examples(150), deadline=None)
@given(qrels_and_run())
def test_a_ranked_run_scores_as_the_scored_run_it_came_from(data):
    # two code paths place the judged documents (from the scores; from the rankings, by scanning
    # the ranking or looking up each judged document): every measure must agree on them
    qrels, run = data
    scored = evaluate(qrels, Run.from_dict(run), EVERY_MEASURE, per_query=True)
    ranked = evaluate(qrels, Run.from_ranked({q: rank_by_score(d) for q, d in run.items()}), EVERY_MEASURE,
                      per_query=True)
    assert scored == ranked


def test_every_measure_over_no_judged_query_is_nan_and_over_empty_rankings_is_zero():
    assert all(math.isnan(v) for v in evaluate({}, {}, EVERY_MEASURE).values())
    got = evaluate({"q": {"a": 1, "b": 0}}, {"q": []}, EVERY_MEASURE, per_query=True)
    assert {name: v["q"] for name, v in got.items() if v["q"] != 0.0} == {"num_rel": 1.0}  # judged, not retrieved
