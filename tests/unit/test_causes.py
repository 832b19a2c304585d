"""Why a question missed (issue 30): one cause per engine, question and cutoff."""

from __future__ import annotations

import pytest

from pytest_retrieval_eval import Stages
from pytest_retrieval_eval.data.freshness import Freshness
from pytest_retrieval_eval.data.labeled import LabeledSet
from pytest_retrieval_eval.data.lint import Finding, LintReport
from pytest_retrieval_eval.analysis.causes import cause_of
from pytest_retrieval_eval.evaluation.known import Evidence, gather
from conftest import evaluate_engine
from pytest_retrieval_eval.analysis.result import EvaluationResult
from pytest_retrieval_eval.types import Chunk, LabeledQuery, QueryResult, Stage

Q = LabeledQuery("q1", "how do I reset it", {"gold": 1})


def why(result: QueryResult, k: int = 5, **kw) -> str | None:
    c = cause_of(Q, result, k, **kw)
    return None if c is None else f"{c.kind}: {c.text}"


def test_a_hit_has_no_cause_and_a_deeper_one_is_ranked():
    assert why(QueryResult("q1", ("a", "gold"))) is None
    assert why(QueryResult("q1", ("a", "b", "c", "d", "e", "f", "gold"))) == "ranked: ranked 7"


def test_errors_and_documents_the_engine_could_never_return():
    assert why(QueryResult("q1", (), "TimeoutError: slow")) == "error: engine error: TimeoutError: slow"
    assert why(QueryResult("q1", ("a",)), evidence=Evidence(missing=("gold",))) == "not-in-corpus: not in the corpus: gold"
    assert why(QueryResult("q1", ("a",)), evidence=Evidence(not_ingested=("gold",))) == (
        "not-ingested: not ingested: gold has no chunk in the store")
    assert why(QueryResult("q1", ("a",))) == "absent: not retrieved (not among the 1 returned)"
    assert why(QueryResult("q1", ())) == "absent: not retrieved (the engine returned nothing)"


def test_outranked_by_a_hole_a_stale_version_or_a_near_duplicate():
    top = QueryResult("q1", ("old", "twin", "gold"))
    assert why(top, 2, judged={"twin": 3}) == "judged: a hole, not a miss: twin (rank 2) judged relevant (grade 3)"
    assert why(top, 2, judged={"twin": 1}) == "ranked: ranked 3"  # grade 1: judged not relevant
    fresh = Freshness("2026-01-01", {"old": "superseded by gold"}, {})
    assert why(top, 2, freshness=fresh).startswith("stale-version: beaten by a stale version of itself: old (rank 1")
    keyed = Freshness("2026-01-01", {"old": "expired 2025-12-31"}, {"old": "prices", "gold": "prices"})
    assert why(top, 2, freshness=keyed).startswith("stale-version:")
    other = Freshness("2026-01-01", {"old": "expired 2025-12-31"}, {"old": "prices", "gold": "hours"})
    assert why(top, 2, freshness=other) == "ranked: ranked 3"  # stale, but not a version of the gold
    assert why(top, 2, evidence=Evidence(duplicates={"gold": ("twin",)})) == (
        "near-duplicate: outranked by a near-duplicate of gold: twin (rank 2)")


def test_stages_tell_a_fusion_cut_from_a_document_no_leg_had():
    cut = QueryResult("q1", ("a", "b"), stages=(Stage("keyword", "leg", 0), Stage("vector", "leg", 50, {"gold": 4}),
                                               Stage("fusion", "step", 2)))
    assert why(cut) == "cut: cut by fusion (vector leg had it at rank 4)"
    reranked = QueryResult("q1", ("a",), stages=(Stage("vector", "leg", 50, {"gold": 9}),
                                                Stage("fusion", "step", 50, {"gold": 12}),
                                                Stage("rerank window", "step", 20), Stage("rerank", "step", 20)))
    assert why(reranked) == "cut: cut by rerank window (vector leg had it at rank 9; fusion had it at rank 12)"
    never = QueryResult("q1", ("a",), stages=(Stage("keyword", "leg", 0), Stage("vector", "leg", 50),
                                             Stage("fusion", "step", 50)))
    c = cause_of(Q, never, 5)
    assert (c.kind, c.text, c.group) == ("never-candidate", "never a candidate (keyword leg empty; vector leg: 50 others)",
                                         "never a candidate (keyword leg empty)")
    window = Evidence(truncated={"gold": "gold:2: 300 tokens > 256"})
    assert why(never, evidence=window) == ("window: answer past the embedder window (gold:2: 300 tokens > 256); "
                                           "never a candidate (keyword leg empty; vector leg: 50 others)")
    assert why(QueryResult("q1", ("a",)), evidence=window) == "window: answer past the embedder window (gold:2: 300 tokens > 256)"


def test_multi_gold_is_told_by_the_document_that_got_furthest():
    q = LabeledQuery("q2", "x", {"g1": 1, "g2": 2, "gone": 1})
    r = QueryResult("q2", ("a",), stages=(Stage("bm25", "leg", 10, {"g1": 3, "g2": 1}), Stage("rrf", "step", 5, {"g2": 2}),
                                          Stage("rerank", "step", 1)))
    assert cause_of(q, r, 1, evidence=Evidence(missing=("gone",))).text == (
        "cut by rerank (bm25 leg had it at rank 1; rrf had it at rank 2)")


def test_evidence_comes_from_the_corpus_the_chunks_and_their_lint():
    queries = [LabeledQuery("q", "x", {"a": 1, "b": 1, "c": 1, "d": 0})]
    lint = LintReport("kb", 3, 256, [Finding("truncated", "a:1", "300 tokens > 256: the embedder ignores 44"),
                                     Finding("near_duplicate", "z:0", "~0.8+ similar to a:0, y:3"),
                                     Finding("duplicate", "b:0", "same text as w:0")])
    ev = gather(queries, {"a", "b", "z", "w", "y"}, [Chunk("a", 0, "t"), Chunk("a", 1, "t"), Chunk("z", 0, "t")], lint)
    assert ev.missing == ("c",) and ev.not_ingested == ("b",)  # d is judged not relevant: no concern
    assert ev.truncated == {"a": "a:1: 300 tokens > 256"}
    assert ev.duplicates == {"a": ("z",), "b": ("w",)}
    assert Evidence.from_dict(ev.to_dict()) == ev
    assert Evidence.merged([ev, Evidence(missing=("e",)), None]).missing == ("c", "e")


class Staged:
    name = "staged"

    def retrieve_stages(self, query, k):
        return {"ranked": ["x", "y"], "legs": {"dense": ["y", "doc:0", "x"], "sparse": []},
                "steps": {"fuse": ["x", "y"]}}

    def retrieve(self, query, k):  # pragma: no cover - the plugin asks retrieve_stages
        raise AssertionError("retrieve_stages is asked instead")


def test_an_engine_of_a_teams_own_reports_its_stages_and_they_survive_results_json():
    labeled = LabeledSet((LabeledQuery("q", "x", {"doc": 1}),))
    e = evaluate_engine(Staged(), labeled, known_ids={"doc", "x", "y"})
    assert e.results[0].doc_ids == ("x", "y")
    assert [s.to_list() for s in e.results[0].stages] == [["dense", "leg", 3, {"doc": 2}], ["sparse", "leg", 0, {}],
                                                          ["fuse", "step", 2, {}]]
    assert e.misses(5).line() == "staged missed 1 of 1 at hit@5: 1 cut by fuse"
    back = EvaluationResult.from_dict(e.to_dict())
    assert back.results[0].stages == e.results[0].stages
    assert back.causes(5)["q"].text == "cut by fuse (dense leg had it at rank 2)"


def test_stages_come_as_the_type_or_a_mapping_of_its_fields():
    typed = Stages(["x"], {"dense": ["x"]}, {"fuse": ["x"]})
    assert Stages.of(typed) is typed
    assert Stages.of({"ranked": ["x"], "legs": {"dense": ["x"]}, "steps": {"fuse": ["x"]}}) == typed
    assert Stages.of({"ranked": ["x"]}) == Stages(["x"])


@pytest.mark.parametrize("answer, said", [
    (["x"], "retrieve_stages() returned list; expected Stages(ranked, legs, steps)"),
    ({"ranked": ["x"], "leg": {}}, "retrieve_stages() returned unknown key(s) 'leg'; expected 'ranked', 'legs', 'steps' and 'seconds'"),
    ({"ranked": ["x"], "legs": [["x"]]}, "retrieve_stages(): legs must map each stage's name to its doc ids, got list"),
    ({"ranked": ["x"], "legs": {"bm25": "x"}}, "retrieve_stages(): leg 'bm25': it holds a single str 'x'"),
    ({"ranked": ["x"], "steps": {"rrf": [1]}}, "retrieve_stages(): step 'rrf': it holds a list whose item 0 is a int"),
    ({"ranked": ["x"], "seconds": {"rrf": "1ms"}}, "retrieve_stages(): seconds of stage 'rrf' must be a number >= 0, got '1ms'"),
])
def test_a_malformed_stages_answer_is_an_error_of_that_query_naming_the_stage(answer, said):
    class Bad(Staged):
        def retrieve_stages(self, query, k):
            return answer

    e = evaluate_engine(Bad(), LabeledSet((LabeledQuery("q", "x", {"doc": 1}),)))
    assert said in e.results[0].error
    assert e.causes(5)["q"].kind == "error"


def test_the_summary_line_counts_by_cause_and_folds_ranks_into_a_range():
    queries = tuple(LabeledQuery(f"q{i}", "x", {"g": 1}) for i in range(5))
    deep = ("a", "b", "c", "d", "e", "f")
    results = (QueryResult("q0", ("g",)), QueryResult("q1", deep + ("g",)), QueryResult("q2", deep + ("x", "y", "g")),
               QueryResult("q3", (), "boom"), QueryResult("q4", ("a",), stages=(Stage("kw", "leg", 0),)))
    e = EvaluationResult("hybrid", LabeledSet(queries), results)
    assert e.misses(5).line() == ("hybrid missed 4 of 5 at hit@5: 1 engine error, 2 ranked 7-9, "
                                  "1 never a candidate (kw leg empty)")
    assert e.misses(10).line() == "hybrid missed 2 of 5 at hit@10: 1 engine error, 1 never a candidate (kw leg empty)"


@pytest.mark.parametrize("raw", [["a", "other", 1, {}], ["a", "leg", "1", {}], ["a", "leg", 1, {"d": 0}]])
def test_a_hand_edited_stage_is_refused(raw):
    with pytest.raises(ValueError, match="expected \\[name, 'leg' or 'step', size"):
        Stage.from_list(raw)


def test_a_miss_another_trial_found_is_flaky_not_a_miss_of_the_engine():
    """With repeated trials, a question missed in the first but found within k in another flips:
    its cause says so (how many trials found it, and the first's reason); one no trial found keeps
    its own cause."""
    from pytest_retrieval_eval.analysis.scores import Scores

    labeled = LabeledSet((Q, LabeledQuery("q2", "where is the printer", {"p": 1})), name="set")
    first = (QueryResult("q1", ("a", "b", "c", "d", "e", "f", "gold")), QueryResult("q2", ("a",)))
    found = (QueryResult("q1", ("gold",)), QueryResult("q2", ("a",)))
    e = EvaluationResult("e", labeled, first, trial_results=(found, first, found, first))
    misses = Scores.of(e).misses(5)
    assert {c.query_id: (c.kind, c.text) for c in misses.causes} == {
        "q1": ("flaky", "flaky: found in 2 of 5 trials (the first: ranked 7)"),
        "q2": ("absent", "not retrieved (not among the 1 returned)")}
    assert misses.line() == "e missed 2 of 2 at hit@5: 1 flaky (found in other trials), 1 not retrieved"
    once = EvaluationResult("e", labeled, first)
    assert [c.kind for c in Scores.of(once).misses(5).causes] == ["ranked", "absent"]
