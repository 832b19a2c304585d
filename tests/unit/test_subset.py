"""A sharp subset for pull requests: the questions that best separate the engines, by the
documented rule (spread of the measure, then of the reciprocal rank, then id), written, read back,
selected, and what it can still detect against the full set."""

from __future__ import annotations

import json
import re

import pytest

from conftest import QUESTIONS
from pytest_retrieval_eval.data.labeled import load_questions_cache
from conftest import evaluate_engine
from pytest_retrieval_eval.evaluation.results import RunResults
from pytest_retrieval_eval.analysis.subset import (choose, drops, read_subset, restrict, subset_drops, subset_path,
                                                     write_subset)
from pytest_retrieval_eval.errors import RetrievalEvalError
from pytest_retrieval_eval.ir.stats import detectable_drop

LABELED = load_questions_cache(QUESTIONS)
IDS = [q.query_id for q in LABELED]
BY_TEXT = {q.question: q for q in LABELED}
FILLER = [f"filler-{i}" for i in range(30)]


class Ranked:
    """Puts each question's gold document at the rank ``ranks`` gives (by id; default 1)."""

    def __init__(self, name, ranks):
        self.name, self.ranks = name, ranks

    def retrieve(self, query, k):
        q = BY_TEXT[query]
        r = self.ranks.get(q.query_id, 1)
        return [*FILLER[:r - 1], q.gold[0], *FILLER[r - 1:]][:k]


def run_of(*engines, labeled=LABELED):
    return RunResults([evaluate_engine(e, labeled) for e in engines])


def test_questions_are_taken_by_spread_then_by_the_spread_of_their_rank_then_by_id():
    a = Ranked("a", {})  # every gold at rank 1
    b = Ranked("b", {IDS[3]: 9, IDS[1]: 2, IDS[2]: 7, IDS[0]: 7})  # hit@1 misses the four, deepest 9
    chosen, spread = choose([run_of(a, b)], "hit@1", 4)
    # all four have the same hit@1 spread; rank 9 (rr 0.11) is further from 1 than 7 (0.14), then 2 (0.5)
    assert chosen == [IDS[3], IDS[0], IDS[2], IDS[1]]
    assert spread == 4
    chosen, spread = choose([run_of(a, b)], "hit@1", 6)
    assert chosen[4:] == sorted(set(IDS) - set(IDS[:4]))[:2] and spread == 4  # no spread left: by id, and said


def test_past_runs_are_columns_too_and_one_column_separates_nothing():
    one = run_of(Ranked("a", {}))
    with pytest.raises(RetrievalEvalError, match="two engines or runs"):
        choose([one], "hit@1", 5)
    later = run_of(Ranked("a", {IDS[7]: 3}))
    assert choose([one, later], "hit@1", 1) == ([IDS[7]], 1)


def test_the_file_round_trips_and_a_run_keeps_only_its_questions(tmp_path):
    run = run_of(Ranked("a", {}), Ranked("b", {i: 3 for i in IDS[::3]}))
    chosen, spread = choose([run], "hit@1", 20)
    figures = drops([run], "hit@1", chosen, 0.05)
    path = subset_path(tmp_path / "pr")
    assert path == tmp_path / "subsets" / "pr.json"
    write_subset(path, name="pr", ids=chosen, measure="hit@1", labeled=LABELED, sources=["r.json"], spread=spread,
                 alpha=0.05, by_engine=figures)
    doc = read_subset(path)
    assert doc["ids"] == chosen and doc["of_n"] == 68 and "reciprocal rank" in doc["rule"]
    b = run.evaluations[1]
    assert figures["b"]["full"] == detectable_drop(b.values("hit@1"))
    small = restrict(LABELED, doc, path)
    assert [q.query_id for q in small] == [i for i in IDS if i in set(chosen)] and len(small) == 20
    sub = run_of(Ranked("a", {}), Ranked("b", {i: 3 for i in IDS[::3]}), labeled=small)
    found = {d.engine: d for d in subset_drops(sub, 0.05)}
    assert found["b"].subset == detectable_drop(sub.evaluations[1].values("hit@1"))
    assert found["b"].full == pytest.approx(figures["b"]["full"]) and (found["b"].n, found["b"].of_n) == (20, 68)
    assert found["b"].subset > found["b"].full  # fewer questions: a larger drop before it is seen


@pytest.mark.parametrize("content, message", [
    ("not json", r"pr\.json:1: not JSON"),
    (json.dumps({"format": "other"}), r"pr\.json.*field 'format'"),
    (json.dumps({"format": "pytest-retrieval-eval/subset", "ids": []}), r"pr\.json.*field 'ids'"),
])
def test_a_bad_subset_file_is_one_line_naming_the_file_and_field(tmp_path, content, message):
    (tmp_path / "pr.json").write_text(content)
    with pytest.raises(RetrievalEvalError, match=message):
        read_subset(tmp_path / "pr.json")


def test_a_missing_subset_file_says_the_command_that_writes_one(tmp_path):
    with pytest.raises(RetrievalEvalError, match="python -m pytest_retrieval_eval subset results.json"):
        read_subset(tmp_path / "subsets" / "pr.json")


def test_a_subset_of_another_set_is_refused_naming_a_question(tmp_path):
    doc = {"format": "pytest-retrieval-eval/subset", "ids": ["nope-1", "nope-2"]}
    with pytest.raises(RetrievalEvalError, match=r"pr\.json: field 'ids': none of its 2 questions .*nope-1"):
        restrict(LABELED, doc, tmp_path / "pr.json")


def test_a_baseline_of_the_full_set_is_compared_over_the_subsets_questions_unless_one_changed(tmp_path):
    from pytest_retrieval_eval.data.labeled import LabeledSet
    from pytest_retrieval_eval.analysis.baseline import compare
    from pytest_retrieval_eval.types import LabeledQuery

    full = run_of(Ranked("a", {}), Ranked("b", {i: 3 for i in IDS[::3]}))
    doc = {"format": "pytest-retrieval-eval/subset", "ids": IDS[:20], "measure": "hit@1", "of_n": 68}
    small = restrict(LABELED, doc, tmp_path / "pr.json")
    now = run_of(Ranked("a", {}), labeled=small)
    said = compare(now, full, ["hit@1"])
    assert said.refusals == [] and [d.engine for d in said.diffs] == ["a"]
    assert "compared over the 20 questions both hold; 48 only in the baseline" in " ".join(said.notes)
    reworded = LabeledSet((LabeledQuery(IDS[0], "another question entirely", dict(LABELED.queries[0].relevant)),
                           *small.queries[1:]), name=small.name, provenance=small.provenance)
    BY_TEXT["another question entirely"] = LABELED.queries[0]
    try:
        assert compare(run_of(Ranked("a", {}), labeled=reworded), full, ["hit@1"]).refusals
    finally:
        del BY_TEXT["another question entirely"]
    plain = LabeledSet(small.queries, name=small.name)  # the same questions, not a subset run: refused as before
    assert compare(run_of(Ranked("a", {}), labeled=plain), full, ["hit@1"]).refusals



def test_a_subset_run_after_a_quote_edit_is_refused_against_the_full_sets_baseline_as_a_full_run_is(tmp_path):
    from dataclasses import replace

    from pytest_retrieval_eval.data.labeled import LabeledSet
    from pytest_retrieval_eval.analysis.baseline import compare

    first = LABELED.queries[0]
    quoted = replace(first, source={**first.source, "evidence": {first.gold[0]: ["a quote"]}})
    full_set = LabeledSet((quoted, *LABELED.queries[1:]), name=LABELED.name)
    full = run_of(Ranked("a", {}), Ranked("b", {}), labeled=full_set)
    doc = {"format": "pytest-retrieval-eval/subset", "ids": IDS[:20], "measure": "hit@1", "of_n": 68}
    small = restrict(full_set, doc, tmp_path / "pr.json")
    assert compare(run_of(Ranked("a", {}), labeled=small), full, ["hit@1"]).refusals == []  # unchanged: compared
    edited = replace(quoted, source={**quoted.source, "evidence": {first.gold[0]: ["another quote"]}})
    part = LabeledSet((edited, *small.queries[1:]), name=small.name, provenance=small.provenance)
    whole = LabeledSet((edited, *full_set.queries[1:]), name=full_set.name)
    for labeled in (part, whole):
        [refusal] = compare(run_of(Ranked("a", {}), labeled=labeled), full, ["hit@1"]).refusals
        assert f"1 changed ({first.query_id} (evidence changed))" in refusal
        assert "removed" not in refusal  # the questions a subset leaves out by design are none removed


def test_a_question_a_past_run_read_or_quoted_otherwise_is_no_column_of_its_spread():
    from dataclasses import replace

    from pytest_retrieval_eval.data.labeled import LabeledSet

    first = LABELED.queries[0]
    a, b = Ranked("a", {}), Ranked("b", {first.query_id: 9})  # only the first question separates the engines
    assert choose([run_of(a, b)], "hit@1", 1) == ([first.query_id], 1)
    quoted = replace(first, source={**first.source, "evidence": {first.gold[0]: ["an older quote"]}})
    past = run_of(a, b, labeled=LabeledSet((quoted, *LABELED.queries[1:]), name=LABELED.name))
    chosen, spread = choose([run_of(a, b), past], "hit@1", 1)
    assert first.query_id not in chosen and spread == 0


def test_the_subset_command_says_how_many_questions_it_could_not_choose_from(tmp_path, capsys):
    from dataclasses import replace

    from conftest import results_text
    from pytest_retrieval_eval.cli import main as cli
    from pytest_retrieval_eval.data.labeled import LabeledSet

    first = LABELED.queries[0]
    a, b = Ranked("a", {}), Ranked("b", {first.query_id: 9})
    quoted = replace(first, source={**first.source, "evidence": {first.gold[0]: ["an older quote"]}})
    now, past = tmp_path / "now.json", tmp_path / "past.json"
    now.write_text(results_text(run_of(a, b)))
    past.write_text(results_text(run_of(a, b, labeled=LabeledSet((quoted, *LABELED.queries[1:]), name=LABELED.name))))
    assert cli(["subset", str(now), str(past), "--size=5", "--measure=hit@1", f"--dir={tmp_path}"]) == 0
    out = capsys.readouterr().out
    assert (f"note: 1 question(s) of {LABELED.name} not chosen from: missing from a run given, or read, labeled or "
            "quoted otherwise in one") in out
    assert first.query_id not in json.loads((tmp_path / "pr.json").read_text())["ids"]

def test_a_rule_failed_on_a_subset_says_it_was_judged_on_the_subset(tmp_path):
    from pytest_retrieval_eval.rules.drops import parse_max_drops
    from pytest_retrieval_eval.rules.thresholds import parse_thresholds
    from pytest_retrieval_eval.gate.verdict import verdict_of

    doc = {"format": "pytest-retrieval-eval/subset", "name": "pr", "ids": IDS[:20], "measure": "hit@1", "of_n": 68}
    small = restrict(LABELED, doc, tmp_path / "pr.json")
    full = run_of(Ranked("a", {}))
    now = run_of(Ranked("a", {i: 3 for i in IDS[:10]}), labeled=small)  # half the subset falls to rank 3
    verdict = verdict_of(now, baseline=full, thresholds=tuple(parse_thresholds([("a:hit@1>=0.8", "ini")])),
                         max_drops=tuple(parse_max_drops([("a:hit@1=0.1", "ini")])))
    rule, drop = verdict.of_kind("rule"), verdict.of_kind("drop")
    assert [f.brief for f in rule] == ["hit@1 = 0.5000, required >= 0.8, on subset 'pr' (20 of 68 questions)"]
    assert [f.brief for f in drop] == ["hit@1 dropped 0.5000 (1.0000 -> 0.5000), more than 0.1, "
                                       "on subset 'pr' (20 of 68 questions)"]
    assert rule[0].startswith("a: hit@1 = 0.5000, required >= 0.8, on subset 'pr' (20 of 68 questions) (from ini;")
    assert drop[0].startswith("a: hit@1 dropped 0.5000 (1.0000 -> 0.5000), more than 0.1, on subset 'pr' (20 of 68")
    whole = verdict_of(run_of(Ranked("a", {i: 3 for i in IDS[:34]})),
                       thresholds=tuple(parse_thresholds([("a:hit@1>=0.8", "ini")])))
    assert "subset" not in whole.of_kind("rule")[0]  # a full run says nothing of subsets


@pytest.mark.parametrize("measure", ["hit@1+evidence", "hit@5~ppi"])
def test_a_measure_with_no_value_is_refused_and_no_file_is_written(tmp_path, capsys, measure):
    from conftest import results_text
    from pytest_retrieval_eval.cli import main as cli

    run = run_of(Ranked("a", {}), Ranked("b", {i: 3 for i in IDS[::3]}))  # ids only: no passage, no judge
    with pytest.raises(RetrievalEvalError, match=rf"{re.escape(measure)} has no value for a, b on "):
        choose([run], measure, 5)
    (tmp_path / "results.json").write_text(results_text(run))
    code = cli(["subset", str(tmp_path / "results.json"), f"--measure={measure}", f"--dir={tmp_path / 'subsets'}"])
    err = capsys.readouterr().err
    assert code == 2 and not (tmp_path / "subsets").exists()
    assert err.startswith(f"error: {measure} has no value for a, b") and err.count("\n") == 1, err
    assert "--measure=hit@" in err  # a measure that has one
