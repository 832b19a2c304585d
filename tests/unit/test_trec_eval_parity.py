"""Parity with trec_eval 10 on its own regression files: every value of every measure the plugin
has, in every ``out.test*`` file of trec_eval's ``test/`` folder, at the 4 decimals it prints.

The files are read in place from the datasets folder (tests/shared_datasets.py: ``RETRIEVAL_TESTS_DATASETS``),
never copied into the repository. Each expected file is the output of one command of
trec_eval's Makefile ``quicktest`` target; ``CASES`` lists them with the options that matter here:
``-c`` is the plugin's only mode (a judged query the run leaves out scores 0), ``-M100`` keeps
each query's top 100, ``-l2`` reads every binary measure at relevance level 2.
"""

from __future__ import annotations

from collections import defaultdict

import pytest

from pytest_retrieval_eval import Qrels, Run, evaluate
from pytest_retrieval_eval.ir.measures import Measure

from shared_datasets import dataset_path

DATA = dataset_path("trec_eval_test")
pytestmark = pytest.mark.dataset("trec_eval_test")

#: expected output -> (qrels file, run file, -c given, -M, -l)
CASES = {
    "out.test": ("qrels.test", "results.test", False, None, 1),
    "out.test.a": ("qrels.test", "results.test", False, None, 1),
    "out.test.aq": ("qrels.test", "results.test", False, None, 1),
    "out.test.aqc": ("qrels.test", "results.trunc", True, None, 1),
    "out.test.aqcM": ("qrels.test", "results.trunc", True, 100, 1),
    "out.test.aql": ("qrels.rel_level", "results.test", False, None, 2),
    "out.test.meas_params": ("qrels.test", "results.test", False, None, 1),
    "out.comment.test": ("qrels.comment.test", "results.comment.test", False, None, 1),
}

#: trec_eval measures with the same value under the plugin's name, with their cutoffs
_PLAIN = {"num_ret": "num_ret", "num_rel": "num_rel", "num_rel_ret": "num_rel_ret", "map": "map", "Rprec": "rprec",
          "bpref": "bpref", "recip_rank": "mrr", "ndcg": "ndcg", "set_P": "set_precision",
          "set_recall": "set_recall", "set_F": "set_f", "rbp": "rbp(p=0.9)"}
_CUT = {"P": "precision", "recall": "recall", "ndcg_cut": "ndcg", "map_cut": "map", "success": "hit"}
#: measures without a relevance level in trec_eval (they read the grades, or none), so -l leaves them be
_NO_LEVEL = {"ndcg", "rbp", "num_ret"}


def ours(trec_name: str, level: int) -> Measure | None:
    """The plugin's measure for a trec_eval output name at relevance level ``level``, or None for
    a trec_eval measure the plugin does not have (gm_map, iprec_at_recall, infAP, utility ...)."""
    if trec_name in _PLAIN:
        m = Measure.parse(_PLAIN[trec_name])
    else:
        family, _, cut = trec_name.rpartition("_")
        if family not in _CUT or not cut.isdigit():
            return None
        m = Measure.parse(f"{_CUT[family]}@{cut}")
    if level != 1 and m.family not in _NO_LEVEL:
        m = Measure(m.family, m.k, rel=level, p=m.p, gain=m.gain, beta=m.beta)
    return m


def expected(out_file: str) -> dict[str, dict[str, float]]:
    """trec_eval's printed values: {trec_eval name: {qid or 'all': value}}."""
    table: dict[str, dict[str, float]] = defaultdict(dict)
    for line in (DATA / out_file).read_text().splitlines():
        name, qid, value = line.split()
        if name != "runid" and not name.startswith("relstring"):
            table[name][qid] = float(value)
    return table


def load(qrels_file: str, run_file: str, depth: int | None) -> tuple[Qrels, Run]:
    qrels, run = Qrels.from_trec(DATA / qrels_file), Run.from_trec(DATA / run_file)
    if depth is not None:  # trec_eval -M: each query's top documents only, after ranking
        run = Run.from_ranked({q: run[q][:depth] for q in run}, name=run.name)
    return qrels, run


def mismatches(out_file: str, qrels_file: str | None = None) -> tuple[list[str], int]:
    default_qrels, run_file, complete, depth, level = CASES[out_file]
    qrels, run = load(qrels_file or default_qrels, run_file, depth)
    table = expected(out_file)
    if not complete:  # without -c trec_eval averages over the queries in both files
        assert set(qrels) <= set(run), "a case without -c must have every judged query in the run"
    wrong, compared = [], 0
    for trec_name, values in sorted(table.items()):
        m = ours(trec_name, level)
        if m is None:
            continue
        per = evaluate(qrels, run, [m], per_query=True)[m.name]
        summary = evaluate(qrels, run, [m])[m.name]
        for qid, value in values.items():
            got = summary if qid == "all" else per[qid]
            compared += 1
            if f"{got:.4f}" != f"{value:.4f}":
                wrong.append(f"{out_file} {trec_name} ({m.name}) {qid}: trec_eval {value:.4f}, plugin {got:.4f}")
    return wrong, compared


@pytest.mark.parametrize("out_file", sorted(CASES))
def test_every_value_of_every_measure_matches_trec_eval_10(out_file):
    wrong, compared = mismatches(out_file)
    assert compared > 0
    assert wrong == [], f"{len(wrong)} of {compared} values differ:\n" + "\n".join(wrong[:30])


@pytest.mark.parametrize("out_file", ["out.test", "out.test.a", "out.test.aq", "out.test.aqc", "out.test.aqcM",
                                      "out.test.meas_params"])
def test_the_qrels_with_comment_lines_give_the_same_values(out_file):
    wrong, compared = mismatches(out_file, "qrels.test.with-comments")
    assert compared > 0 and wrong == [], "\n".join(wrong[:30])


def test_every_measure_with_a_trec_eval_counterpart_is_compared():
    """The measures the parity covers: a new plugin measure with a trec_eval name belongs here."""
    names = set()
    for out_file, case in CASES.items():
        names |= {ours(n, case[4]).family for n in expected(out_file) if ours(n, case[4]) is not None}
    assert names == {"num_ret", "num_rel", "num_rel_ret", "map", "rprec", "bpref", "mrr", "ndcg", "precision",
                     "recall", "hit", "set_precision", "set_recall", "set_f", "rbp"}
    total = sum(mismatches(f)[1] for f in CASES)
    assert total == 943, total  # every comparable value of the eight files, no fewer


def test_comment_lines_and_fields_after_the_tag_are_read_as_trec_eval_reads_them():
    with_comments = Qrels.from_trec(DATA / "qrels.test.with-comments").to_dict()
    plain = Qrels.from_trec(DATA / "qrels.test").to_dict()
    # '#' starts a comment only at the start of a line: inside a doc id it is part of the id
    assert with_comments["301"]["CR#93E-1860"] == 0 and "CR#93E-1860" not in plain["301"]
    del with_comments["301"]["CR#93E-1860"], plain["301"]["CR93E-1860"]
    assert with_comments == plain
    trunc = Run.from_trec(DATA / "results.trunc")  # "STANDARD more junk at" ...: the tag is STANDARD
    assert trunc.name == "STANDARD" and len(trunc["301"]) == 500 and len(trunc["303"]) == 84
