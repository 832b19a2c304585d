"""Putting one evaluation back together from its parts (CI slices, xdist shares, workers): parts
that were not evaluated alike (another corpus, engine setting, depth, trial count) are refused
in one line naming the part and the field, never merged under the first part's description."""

from __future__ import annotations

import json

import pytest

from pytest_retrieval_eval.data.labeled import LabeledSet
from pytest_retrieval_eval.archive.results_json import load
from pytest_retrieval_eval.errors import RetrievalEvalError
from pytest_retrieval_eval.plugin.roles import Controller, Shipped
from pytest_retrieval_eval.archive.combine import combine
from conftest import evaluate_engine
from pytest_retrieval_eval.evaluation.results import RunResults
from pytest_retrieval_eval.types import LabeledQuery
from conftest import results_text

LABELED = LabeledSet(tuple(LabeledQuery(f"q{i}", f"question number {i}", {f"d{i % 4}": 1}) for i in range(9)),
                     name="set")


class Engine:
    name = "kw"

    def __init__(self, **info):
        self.info = {"engine": "kw", "top_k": 10, **info}

    def describe(self):
        return dict(self.info)

    def retrieve(self, query, k):
        return [f"d{int(query.split()[-1]) % 4}", "d9"][:k]


def evaluation(part, *, corpus="c" * 64, engine=None, depth=100):
    return evaluate_engine(engine or Engine(), part, depth=depth,
                           context={"corpus": "corpus", "corpus_fingerprint": corpus})


def slice_file(tmp_path, i, n=3, *, trials=1, **kw):
    e = evaluation(LABELED.slice(i, n), **kw)
    e.trial_results = (e.results,) * (trials - 1)  # --retrieval-trials: the same rankings again
    path = tmp_path / f"s{i}.json"
    path.write_text(results_text(RunResults([e])))
    return str(path)


def test_slices_evaluated_alike_merge_into_the_whole_set_with_its_corpus(tmp_path):
    merged = combine([slice_file(tmp_path, i) for i in (1, 2, 3)]).run
    [e] = merged.evaluations
    assert [r.query_id for r in e.results] == [q.query_id for q in LABELED.queries]
    assert e.labeled.fingerprint == LABELED.fingerprint and e.corpus_fingerprint == "c" * 64


@pytest.mark.parametrize("changed, field, said", [
    ({"corpus": "d" * 64}, "corpus", "kw searched corpus corpus (fingerprint dddddddddddd), {first}'s corpus "
                                     "corpus (fingerprint cccccccccccc)"),
    ({"engine": Engine(top_k=20)}, "engine_info.top_k", "kw is described with top_k 20, {first}'s with top_k 10"),
    ({"depth": 20}, "depth", "kw was asked for 20 results a question, {first}'s 100 results a question"),
])
def test_a_slice_evaluated_otherwise_is_refused_naming_its_file_and_the_field(tmp_path, changed, field, said):
    paths = [slice_file(tmp_path, 1), slice_file(tmp_path, 2, **changed), slice_file(tmp_path, 3)]
    with pytest.raises(RetrievalEvalError) as exc:
        combine(paths)
    assert str(exc.value) == (f"{paths[1]}: field '{field}': slice 2 of 3 of set: {said.format(first=paths[0])}: "
                              "every CI job must evaluate the same corpus with the same engines and options")


def test_what_a_slice_met_on_its_own_questions_does_not_stop_a_merge(tmp_path):
    """Counts like 3/3 add up; an observation one slice made (ids not in the corpus) is kept."""
    paths = [slice_file(tmp_path, 1, engine=Engine(keyword_empty="1/3")),
             slice_file(tmp_path, 2, engine=Engine(keyword_empty="2/3", unknown_ids="1 returned ids are not ...")),
             slice_file(tmp_path, 3, engine=Engine(keyword_empty="0/3"))]
    [e] = combine(paths).run.evaluations
    assert e.engine_info["keyword_empty"] == "3/9"
    assert "1 returned ids are not ..." in e.engine_info["unknown_ids"]


def test_slices_with_another_number_of_trials_are_refused(tmp_path):
    paths = [slice_file(tmp_path, 1, trials=2), slice_file(tmp_path, 2, trials=2), slice_file(tmp_path, 3)]
    with pytest.raises(RetrievalEvalError, match="field 'trial_rankings': .*kw was run 1 time, "):
        combine(paths)


def shares(**changed):
    """Each share as a worker ships it: its evaluation, and where its questions sit in the whole set."""
    parts = []
    for k in range(2):
        share = LABELED.shard(k, 2)
        positions = [i for i, q in enumerate(LABELED.queries) if q.query_id in share.by_id()]
        parts.append({**evaluation(share, **(changed if k == 1 else {})).to_dict(timing=True),
                      "share": {"of": LABELED.fingerprint, "k": k, "n": 2, "positions": positions}})
    return parts


def test_shares_of_another_corpus_are_refused_by_the_same_check():
    with pytest.raises(RetrievalEvalError, match=r"^field 'corpus': share 2 of 2 of set: kw searched corpus corpus "
                                                 r"\(fingerprint dddddddddddd\), share 1 of 2's corpus"):
        combine([{"evaluations": [part]} for part in shares(corpus="d" * 64)])
    [whole] = combine([{"evaluations": [part]} for part in shares()]).run.evaluations
    assert whole.n == 9


class Node:
    def __init__(self, wid, shipped):
        self.gateway = type("Gateway", (), {"id": wid})()
        self.workeroutput = shipped.output()


def test_an_xdist_worker_whose_evaluation_does_not_fit_anothers_fails_the_gate_naming_the_field():
    parts = shares()
    whole = [evaluation(LABELED).to_dict(timing=True), evaluation(LABELED, corpus="d" * 64).to_dict(timing=True)]
    controller = Controller()
    controller.node_down(Node("gw0", Shipped({"evaluations": [whole[0]]})), None)
    controller.node_down(Node("gw1", Shipped({"evaluations": [whole[1]]})), None)
    gathered = controller.gather()
    assert [wid for wid, _ in gathered.shipped] == ["gw0"]
    [missing] = gathered.missing_workers
    assert missing.startswith("gw1 (its kw on set does not fit gw0's: field 'corpus': ")

    controller = Controller()  # shares: the same check
    first = parts[0]
    other = {**evaluation(LABELED.shard(1, 2), depth=5).to_dict(timing=True),
             "share": {"of": LABELED.fingerprint, "k": 1, "n": 2, "positions": []}}
    controller.node_down(Node("gw0", Shipped({"evaluations": [first]})), None)
    controller.node_down(Node("gw1", Shipped({"evaluations": [other]})), None)
    [missing] = controller.gather().missing_workers
    assert "field 'depth'" in missing


def test_a_slice_is_judged_like_its_whole_set_so_every_jobs_table_has_the_same_columns(tmp_path):
    multi = LabeledSet((*LABELED.queries[:8], LabeledQuery("q8", "question number 8", {"d0": 1, "d1": 2})), name="set")
    assert [multi.slice(i, 3).multi_judged for i in (1, 2, 3)] == [True, True, True]
    path = tmp_path / "s1.json"
    path.write_text(results_text(RunResults([evaluation(multi.slice(1, 3))])))
    assert load(path).evaluations[0].labeled.multi_judged  # read back as its whole set


def test_slices_judged_with_one_judgments_file_merge_into_the_unsliced_runs_judged_labels(tmp_path):
    """What each slice used of the file (holes of its own questions) adds up; the file, the judge
    and the calibration are the same for every job."""
    from pytest_retrieval_eval.data.judges import Judge
    from pytest_retrieval_eval.data.judgments import Judgment, Judgments
    from pytest_retrieval_eval.evaluation.judging import with_judgments

    judge = Judge("model-a", "p" * 64, 0.0, 1, "127.0.0.1")
    judgments = Judgments([Judgment(q, "d9", 3, (3,), "s" * 64, judge) for q in ("q0", "q1", "q4")])
    paths = []
    for i in (1, 2, 3):
        run = RunResults([evaluation(LABELED.slice(i, 3))])
        run, _ = with_judgments(run, judgments, shown_path="j.jsonl")
        paths.append(tmp_path / f"s{i}.json")
        paths[-1].write_text(results_text(run))
    whole = RunResults([evaluation(LABELED)])
    whole, _ = with_judgments(whole, judgments, shown_path="j.jsonl")
    merged = combine([str(p) for p in paths]).run
    assert merged.judgments == whole.judgments and merged.judgments["used"] == 3
    assert merged.evaluations[0].judged == whole.evaluations[0].judged


class Other(Engine):
    def retrieve(self, query, k):
        return ["d9", *super().retrieve(query, k)][:k]


def test_workers_that_evaluated_the_same_set_keep_the_first_and_note_that_they_ranked_differently():
    first, other = evaluation(LABELED).to_dict(timing=True), evaluation(LABELED, engine=Other()).to_dict(timing=True)
    combined = combine([{"evaluations": [first]}, {"evaluations": [other]}, {"evaluations": [first]}],
                       names=["gw0", "gw1", "gw2"])
    [kept] = combined.run.evaluations
    assert [r.doc_ids for r in kept.results] == [tuple(q["ranked"]) for q in first["queries"]]
    assert combined.notes == ["engine 'kw' ranked differently on gw1; kept the first worker's run"]


def test_a_share_that_never_arrived_is_a_failure_of_the_run_not_a_refusal():
    combined = combine([{"evaluations": [shares()[1]]}], names=["gw1"])
    assert combined.run.evaluations == [] and combined.missing == ["engine 'kw': share(s) 1 of 2 never arrived"]


def test_shares_of_a_ci_jobs_slice_join_into_the_slice_that_report_merge_reads(tmp_path):
    part = LABELED.slice(2, 3)
    shipped = [{"evaluations": [{**evaluation(part.shard(k, 2)).to_dict(timing=True),
                                 "share": {"of": part.fingerprint, "k": k, "n": 2, "positions": [
                                     i for i, q in enumerate(part.queries) if q.query_id in part.shard(k, 2).by_id()]}}]}
               for k in range(2)]
    [joined] = combine(shipped).run.evaluations
    assert [r.query_id for r in joined.results] == [q.query_id for q in part.queries]
    assert joined.labeled.provenance["slice"]["index"] == 2  # still slice 2 of 3 of the whole set
    path = tmp_path / "s2.json"
    path.write_text(results_text(RunResults([joined])))
    [e] = combine([slice_file(tmp_path, 1), str(path), slice_file(tmp_path, 3)]).run.evaluations
    assert [r.query_id for r in e.results] == [q.query_id for q in LABELED.queries]


def test_a_workers_evaluation_of_another_corpus_is_refused_by_the_same_check_naming_the_worker():
    parts = [{"evaluations": [evaluation(LABELED, corpus=c * 64).to_dict(timing=True)]} for c in "cd"]
    with pytest.raises(RetrievalEvalError) as exc:
        combine(parts, names=["gw0", "gw1"])
    assert str(exc.value) == ("gw1: field 'corpus': evaluation 2 of 2 of set: kw searched corpus corpus (fingerprint "
                              "dddddddddddd), gw0's corpus corpus (fingerprint cccccccccccc): every xdist worker must "
                              "evaluate the same corpus with the same engines and options")
