"""ranx, live: a run exported with ``to_ranx`` ranks ties as trec_eval does, and each ranx
measure name gives ranx's value. Pure, but out of the inner loop: ranx is an oracle, and its import
is heavy (tests/lanes.py). Its numba compile is switched off for the tests (tests/conftest.py):
ranx's own code, interpreted."""

from __future__ import annotations

import math
import warnings

import pytest

from pytest_retrieval_eval import Measure, Qrels, Run, evaluate


RANX_NAMES = {"hits@5": "num_rel_ret@5", "hit_rate@5": "hit_rate@5", "precision@5": "precision@5",
              "recall@10": "recall@10", "r-precision": "r-precision", "mrr": "mrr", "mrr@3": "mrr@3", "map": "map",
              "map@5": "map@5", "ndcg": "ndcg", "ndcg@10": "ndcg@10", "ndcg_burges@10": "ndcg_burges@10",
              "bpref": "bpref", "precision@5-l2": "precision@5-l2", "recall@10-l3": "recall@10-l3"}


def test_ranx_names_give_ranx_values_on_graded_labels():
    ranx = pytest.importorskip("ranx")
    import random

    rng = random.Random(3)
    qrels, run = {}, {}
    for q in range(60):
        docs = [f"d{i}" for i in range(40)]
        qrels[f"q{q}"] = {d: rng.choice([0, 1, 1, 2, 3]) for d in rng.sample(docs, rng.randint(1, 12))}
        run[f"q{q}"] = {d: rng.random() for d in rng.sample(docs, rng.randint(1, 30))}
    theirs = Run.from_dict(run).to_ranx()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # numba's type-safety warnings
        ranx.evaluate(Qrels.from_dict(qrels).to_ranx(), theirs, list(RANX_NAMES))
    for ranx_name, ours_name in RANX_NAMES.items():
        name = Measure.parse(ours_name).name
        ours = evaluate(qrels, run, [ours_name], per_query=True)[name]
        for q in qrels:
            value = float(theirs.scores[ranx_name][q])
            if ranx_name == "bpref" and math.isnan(value):
                # ranx divides 0 by 0 where no judged document is non-relevant; trec_eval 10 (and the
                # plugin) count each relevant document retrieved as fully preferred
                assert min(qrels[q].values()) >= 1
                continue
            assert ours[q] == pytest.approx(value, abs=1e-12), (ranx_name, q)


def test_to_ranx_keeps_the_ranking_ties_included():
    ranx = pytest.importorskip("ranx")
    run = Run.from_dict({"q": {"a": 1.0, "b": 1.0, "z": 1.0}}, name="bm25")
    qrels = Qrels.from_dict({"q": {"a": 1, "b": 0}})
    theirs_run, theirs_qrels = run.to_ranx(), qrels.to_ranx()
    assert isinstance(theirs_run, ranx.Run) and theirs_run.name == "bm25"
    assert dict(theirs_qrels.to_dict()) == {"q": {"a": 1, "b": 0}}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        # 'a' ties with two greater ids: third in trec_eval's order, and in ranx after the export
        assert float(ranx.evaluate(theirs_qrels, theirs_run, "mrr")) == pytest.approx(1 / 3)
