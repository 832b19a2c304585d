"""The names people type for a measure, in trec_eval's, ir_measures' and ranx's spellings: each
parses to one canonical measure, means there what it means here, or is refused with the spelling
that says what is meant. Values are checked against ranx and ir_measures live, and against
their own hand-computed test values."""

from __future__ import annotations


import pytest

from pytest_retrieval_eval import evaluate


def test_err_and_exponential_ndcg_match_gdeval_as_ir_measures_runs_it():
    ir_measures = pytest.importorskip("ir_measures")
    import random

    rng = random.Random(5)
    qrels, run = {}, {}
    for q in range(1, 30):  # gdeval wants numeric topics and grades 0..4
        docs = [f"d{i}" for i in range(40)]
        qrels[str(q)] = {d: rng.choice([0, 1, 2, 3, 4]) for d in rng.sample(docs, rng.randint(1, 12))}
        run[str(q)] = {d: float(rng.randint(0, 20)) for d in rng.sample(docs, rng.randint(1, 30))}
    measures = [ir_measures.ERR @ 10, ir_measures.ERR @ 3, ir_measures.nDCG(dcg="exp-log2") @ 10]
    theirs = {(str(m.measure), m.query_id): m.value for m in ir_measures.gdeval.iter_calc(measures, qrels, run)}
    ours = evaluate(qrels, run, measures, per_query=True)
    for measure, name in zip(measures, ours):
        for q in qrels:
            assert ours[name][q] == pytest.approx(theirs[(str(measure), q)], abs=1e-5), (name, q)  # gdeval prints 5 decimals


# --- through the plugin: tabled and gated like the others -----------------------------------------

def test_new_measures_are_tabled_and_gated_like_the_others(bundled_project):
    bundled_project.makepyfile("""
        import pytest

        @pytest.mark.retrieval
        def test_quality(retrieval_results):
            assert retrieval_results["r-precision"] >= 0.0
    """)
    measures = "--retrieval-measures=hit@5,bpref,judged@5,r-precision,hit_rate@5"
    result = bundled_project.runpytest("-m", "retrieval", "--retrieval-report", measures,
                                       "--retrieval-threshold=keyword:bpref>=0.01")
    assert result.ret == 0, result.stdout.str()
    header = next(line for line in result.stdout.str().splitlines() if line.startswith("engine"))
    assert header.split()[:5] == ["engine", "hit@5", "bpref", "judged@5", "rprec"]
    failing = bundled_project.runpytest("-m", "retrieval", measures, "--retrieval-threshold=keyword:bpref>=0.999")
    assert failing.ret != 0
    assert "keyword: bpref = " in failing.stdout.str() and "required >= 0.999" in failing.stdout.str()
    refused = bundled_project.runpytest("-m", "retrieval", "--retrieval-threshold=keyword:hits@5>=0.5")
    assert refused.ret != 0 and "write hit@5" in refused.stdout.str() + refused.stderr.str()
