"""A turn's human rewrite and a team's rewriter: ``oracle_rewrite`` searches the person's rewrite
the labels carry, ``rewritten(engine, fn)`` what a team's rewriter makes of the turns, keeping the
engine's stages (engines/turns.py); the analysis scores a rewriter against the person's
(ROUGE-1 recall, overlap of the top k) and splits each engine's gap to the oracle on follow-ups
into the candidate pool and the ranking (analysis/rewrites.py), which the by-turn block shows."""

from __future__ import annotations

import asyncio
import json
import re

import pytest

import pytest_retrieval_eval as pre
from conftest import evaluate_engine
from pytest_retrieval_eval import LabeledQuery, LabeledSet, Stages, Turn, TurnContext, oracle_rewrite, rewritten
from pytest_retrieval_eval.analysis.analyse import Analysis, analyse
from pytest_retrieval_eval.analysis.ceiling import ceiling_of
from pytest_retrieval_eval.analysis.result import EvaluationResult
from pytest_retrieval_eval.analysis.rewrites import oracle_gaps, oracle_of, rouge1_recall
from pytest_retrieval_eval.engines.base import GIVEN_HUMAN_REWRITE, converses, is_async
from pytest_retrieval_eval.evaluation.results import RunResults
from pytest_retrieval_eval.ir.stats import paired_difference_ci
from pytest_retrieval_eval.rules.settings import GateSettings
from pytest_retrieval_eval.types import QueryResult, Stage, turn_id

TOPICS = ("battery", "refund", "repair", "shipping", "warranty")
PRODUCTS = ("laptops", "phones", "tablets")
CORPUS = {f"{t}-{p}": {t, p} for t in TOPICS for p in PRODUCTS}


class Staged:
    """A staged question engine: a word-overlap leg (every document sharing a word with the
    question, best first, ties by id) and a fusion step that keeps its first two."""

    name = "staged"

    def __init__(self) -> None:
        self.asked: list[str] = []

    def retrieve(self, query, k):
        return list(self.retrieve_stages(query, k).ranked)

    def retrieve_stages(self, query, k):
        self.asked.append(query)
        said = set(re.findall(r"[a-z]+", query.lower()))
        found = [d for d, n in sorted(((d, len(said & w)) for d, w in CORPUS.items()), key=lambda x: (-x[1], x[0]))
                 if n]
        return Stages(found[:2], {"bm25": found}, {"fusion": found[:2]})


def chats() -> LabeledSet:
    """Five conversations: "what is the refund policy for laptops?" then "and for phones?", the
    follow-up rewritten by a person as "what is the refund policy for phones?"."""
    queries = []
    for t in TOPICS:
        first = f"what is the {t} policy for laptops?"
        queries.append(LabeledQuery(turn_id(t, 1), first, {f"{t}-laptops": 1}, conversation=t, turn=1))
        queries.append(LabeledQuery(turn_id(t, 2), "and for phones?", {f"{t}-phones": 1}, conversation=t, turn=2,
                                    history=(Turn("user", first), Turn("assistant", "Thirty days.")),
                                    rewrite=f"what is the {t} policy for phones?"))
    return LabeledSet(tuple(queries), name="chats")


def miss_groups(result: EvaluationResult, k: int) -> dict[str, int]:
    from pytest_retrieval_eval.analysis.scores import Scores

    return dict(Scores.of(result).misses(k).groups())


def test_the_oracle_searches_the_person_s_rewrite_else_the_last_turn_and_keeps_the_stages():
    inner = Staged()
    oracle = oracle_rewrite(inner)
    assert oracle.name == "staged-rewrite" and converses(oracle)
    result = evaluate_engine(oracle, chats())
    assert inner.asked == [q.rewrite or q.question for q in chats().queries]  # a first turn has none: as it is
    assert result.hit_at(1) == 1.0 and all(r.stages for r in result.results)
    assert result.engine_info["conversation"] == GIVEN_HUMAN_REWRITE
    assert result.engine_info["rewrite"].startswith("the person's rewrite of the turn")
    assert result.engine_info["over"] == "staged"
    assert not any(r.rewrite for r in result.results)  # the person's rewrite is a label, not the engine's
    assert oracle.retrieve_conversation((Turn("user", "refund phones"),), 5).ranked == ["refund-phones", "battery-phones"]


def rewrite_garbling_battery(turns, turn):
    """The last turn, except the battery follow-up, rewritten into words no document has."""
    return "nothing useful" if (turn.conversation, turn.turn) == ("battery", 2) else turns[-1].text


@pytest.mark.parametrize("kind", ["sync", "async"])
def test_a_team_s_rewriter_keeps_the_engine_s_miss_causes_and_recall_by_stage(kind):
    async def garbling(turns, turn):
        await asyncio.sleep(0)
        return rewrite_garbling_battery(turns, turn)

    fn = rewrite_garbling_battery if kind == "sync" else garbling
    engine = rewritten(Staged(), fn)
    assert engine.name == "staged-rewritten" and is_async(engine) == (kind == "async")
    result = evaluate_engine(engine, chats(), concurrency=3)
    assert result.n_errored == 0 and all(r.stages for r in result.results)
    # "and for phones?" alone: every phones document ties; the fusion keeps battery's and refund's
    assert miss_groups(result, 1) == {"ranked 2": 1, "cut by fusion": 3, "never a candidate (bm25 leg empty)": 1}
    assert {s.label for s in ceiling_of(result, 1).stages} == {"bm25 leg", "fusion", "final ranking"}
    assert {r.query_id: r.rewrite for r in result.results}["battery#2"] == "nothing useful"
    assert {r.query_id: r.rewrite for r in result.results}["refund#1"] == "what is the refund policy for laptops?"
    assert result.engine_info["over"] == "staged" and result.engine_info["conversation"] == "turns"
    assert "a team's rewrite: " in result.engine_info["rewrite"]


@pytest.mark.parametrize("wrap", [pre.last_turn, pre.concatenated, oracle_rewrite,
                                  lambda engine: rewritten(engine, rewrite_garbling_battery)])
def test_a_wrapped_engine_reads_its_engine_s_store_so_a_miss_past_the_embedder_window_keeps_its_cause(wrap):
    """The session reads what the engine's store knows of the relevant documents (not ingested,
    past the embedder window, duplicated) from ``engine.index``: a wrapper without it told the
    hybrid engine's "answer past the embedder window" as "never a candidate" on MTRAG."""
    from types import SimpleNamespace

    from pytest_retrieval_eval.analysis.causes import cause_of
    from pytest_retrieval_eval.data.lint import Finding, LintReport
    from pytest_retrieval_eval.evaluation.known import gather

    inner = Staged()
    inner.index = SimpleNamespace(chunks=[SimpleNamespace(doc_id=d) for d in CORPUS], lint=LintReport(
        "kb", len(CORPUS), 256, [Finding("truncated", "battery-phones:0", "383 tokens > 256: the rest unread")]))
    engine = wrap(inner)
    assert engine.index is inner.index
    assert not hasattr(wrap(Staged()), "index")  # an engine without a store of the plugin's: none
    labeled = chats()
    store = getattr(engine, "index", None)  # as the session reads it (plugin/session.py)
    known = gather(labeled.queries, CORPUS, store.chunks, store.lint)
    missed = QueryResult("battery#2", ("refund-laptops",), stages=(Stage("bm25", "leg", 1, {"refund-laptops": 1}),))
    cause = cause_of(labeled.by_id()["battery#2"], missed, 1, evidence=known)
    assert (cause.kind, cause.group) == ("window", "answer past the embedder window")


def test_a_rewriter_is_called_as_it_is_written_and_a_bad_rewrite_is_an_error_of_its_turn():
    told = []

    def by_keyword(turns, *, turn):
        told.append(turn)
        return turns[-1].text

    def alone(turns):
        return " ".join(t.text for t in turns if t.role == "user")

    labeled = chats()
    evaluate_engine(rewritten(Staged(), by_keyword), labeled)
    assert [t.query_id for t in told] == [q.query_id for q in labeled.queries]
    assert all(isinstance(t, TurnContext) for t in told) and told[1].rewrite == "what is the battery policy for phones?"
    inner = Staged()
    evaluate_engine(rewritten(inner, alone), labeled)
    assert inner.asked[1] == "what is the battery policy for laptops? and for phones?"
    broken = evaluate_engine(rewritten(Staged(), lambda turns: 3), labeled)
    assert broken.n_errored == broken.n
    assert broken.results[0].error == "TypeError: the rewrite returned int; expected the text to search"
    with pytest.raises(TypeError, match="rewrite_fn must be callable"):
        rewritten(Staged(), "not a function")


def test_the_oracle_the_rewriter_and_the_turn_context_are_public():
    assert {"oracle_rewrite", "rewritten", "TurnContext"} <= set(pre.__all__)
    turn = TurnContext("c#2", "c", 2, "the rewrite")
    assert (turn.query_id, turn.conversation, turn.turn, turn.rewrite) == ("c#2", "c", 2, "the rewrite")
    turn.record_rewrite("said")  # outside a run: recorded nowhere
    with pytest.raises(TypeError, match="takes the text searched"):
        turn.record_rewrite(None)


def test_the_built_in_hybrid_over_the_person_s_rewrite_is_registered_where_the_labels_have_rewrites(tmp_path):
    from types import SimpleNamespace

    from conftest import HYBRID
    from pytest_retrieval_eval import EngineRegistry
    from pytest_retrieval_eval.plugin.engines import has_rewrites, over_turns, register_builtin

    def names(conversations, rewrites):
        registry = EngineRegistry()
        register_builtin(registry, SimpleNamespace(hybrid=SimpleNamespace(variants=()), data=None), conversations,
                         rewrites)
        return registry.select()

    if HYBRID:
        assert names(lambda: True, lambda: True) == ["keyword", "hybrid", "hybrid-concat", "hybrid-rewrite"]
        assert names(lambda: True, lambda: False) == ["keyword", "hybrid", "hybrid-concat"]
    assert names(lambda: False, lambda: True)[-1] != "hybrid-rewrite"
    chats_file = tmp_path / "chats.csv"
    chats_file.write_text("conversation,turn,user,doc_id\nc1,1,How do I upgrade my plan?,d1\n")
    data = SimpleNamespace(questions=chats_file, regenerate=False, corpus=None, questions_explicit=True)
    assert not has_rewrites(data) and not has_rewrites(None)
    inner = Staged()
    built = over_turns(lambda request: inner, oracle_rewrite)(None)  # what the registry builds for hybrid-rewrite
    built.retrieve_conversation((Turn("user", "and for phones?"),), 5,
                                turn=TurnContext("refund#2", "refund", 2, "refund phones"))
    assert inner.asked == ["refund phones"]


# --- the analysis: fidelity and the gap to the oracle, split -----------------------------------------------------

N = 10
HUMAN = "what is the refund policy for phones"


def labeled_set() -> LabeledSet:
    """Ten conversations of two turns, each turn with a document of its own; the follow-ups carry
    a person's rewrite."""
    queries = []
    for c in range(N):
        first = f"question {c}"
        queries.append(LabeledQuery(turn_id(f"c{c}", 1), first, {f"d{c}-1": 1}, conversation=f"c{c}", turn=1))
        queries.append(LabeledQuery(turn_id(f"c{c}", 2), "and then?", {f"d{c}-2": 1}, conversation=f"c{c}", turn=2,
                                    history=(Turn("user", first),), rewrite=HUMAN))
    return LabeledSet(tuple(queries), name="chats")


def others(n: int) -> tuple[str, ...]:
    return tuple(f"x{i}" for i in range(n))


def built_run() -> RunResults:
    """The oracle finds every turn first; ``staged``'s follow-ups: c0-c3 never a candidate, c4-c6
    a candidate ranked 8th, c7-c9 first; ``plain`` (no stages, depth 100): c0-c4 ranked 30th, the
    rest not returned; ``mine`` finds every turn first among four others and recorded its rewrites."""
    labeled = labeled_set()

    def gold(q):
        return next(iter(q.relevant))

    oracle, staged, plain, mine = [], [], [], []
    for q in labeled.queries:
        c, d = int(q.conversation[1:]), gold(q)
        oracle.append(QueryResult(q.query_id, (d,), stages=(Stage("bm25", "leg", 10, {d: 1}),)))
        follow = q.turn == 2
        if not follow or c >= 7:
            staged.append(QueryResult(q.query_id, (d, *others(9)), stages=(Stage("bm25", "leg", 50, {d: 1}),)))
        elif c >= 4:
            staged.append(QueryResult(q.query_id, (*others(7), d, "y"), stages=(Stage("bm25", "leg", 50, {d: 8}),)))
        else:
            staged.append(QueryResult(q.query_id, others(10), stages=(Stage("bm25", "leg", 50, {}),)))
        plain.append(QueryResult(q.query_id, (d,) if not follow else (*others(29), d) if c < 5 else others(40)))
        said = ("refund policy phones" if c == 0 else HUMAN) if follow else q.question
        mine.append(QueryResult(q.query_id, (d, *others(4)), rewrite=said))
    info = {"conversation": GIVEN_HUMAN_REWRITE, "over": "search"}
    return RunResults([EvaluationResult("search-rewrite", labeled, tuple(oracle), info),
                       EvaluationResult("staged", labeled, tuple(staged), {"conversation": "turns"}),
                       EvaluationResult("plain", labeled, tuple(plain), {"conversation": "turns"}),
                       EvaluationResult("mine", labeled, tuple(mine), {"conversation": "turns", "over": "x"})])


def test_rouge1_recall_counts_the_person_s_words_found_in_the_rewrite_on_the_one_normalisation():
    assert rouge1_recall(HUMAN, "refund policy phones") == pytest.approx(3 / 7)
    assert rouge1_recall("Refund  POLICY", "refund policy") == 1.0  # case and whitespace folded, as quotes are
    assert rouge1_recall("the the refund", "the refund") == pytest.approx(2 / 3)  # a repeat counts as often as said
    assert rouge1_recall("...", "anything") is None


def test_each_engine_s_gap_to_the_oracle_on_follow_ups_is_split_into_pool_and_ranking():
    run = built_run()
    gaps = {x.engine: x for x in oracle_gaps(run, "hit@5")}
    assert set(gaps) == {"staged", "plain", "mine"}  # the oracle is not measured to itself
    s = gaps["staged"]
    assert (s.oracle, s.measure, s.n, s.conversations, s.pool_from) == ("search-rewrite", "hit@5", 10, 10, "stages")
    assert (s.gap, s.pool, s.ranking) == pytest.approx((0.7, 0.4, 0.3))
    assert (s.recall, s.oracle_recall) == pytest.approx((0.6, 1.0))
    p = gaps["plain"]
    assert (p.gap, p.pool, p.ranking) == pytest.approx((1.0, 0.5, 0.5)) and p.pool_from == "top 100"
    assert (gaps["mine"].gap, gaps["mine"].pool, gaps["mine"].ranking) == (0.0, 0.0, 0.0)
    # each part's interval: the paired bootstrap over conversations of the turns' differences
    clusters = [f"c{c}" for c in range(N)]
    oracle_pool, staged_pool = [1.0] * N, [0.0] * 4 + [1.0] * 6
    assert s.pool_ci == paired_difference_ci(oracle_pool, staged_pool, clusters=clusters)
    assert s.gap_ci[0] <= s.gap <= s.gap_ci[1] and s.ranking_ci[0] <= s.ranking <= s.ranking_ci[1]


def test_an_engine_is_measured_to_the_oracle_over_the_same_engine_else_the_only_one():
    run = built_run()
    by = {e.engine: e for e in run.evaluations}
    assert oracle_of(by["staged"], run).engine == "search-rewrite"
    two = RunResults([*run.evaluations, EvaluationResult("staged-rewrite", by["staged"].labeled, by["staged"].results,
                                                         {"conversation": GIVEN_HUMAN_REWRITE, "over": "staged"})])
    by = {e.engine: e for e in two.evaluations}
    assert oracle_of(by["staged"], two).engine == "staged-rewrite"  # the oracle over the same engine
    assert oracle_of(by["plain"], two) is None  # two oracles, neither over it: none


def test_the_analysis_holds_the_split_and_the_fidelity_and_reads_them_back():
    run = built_run()
    a = analyse(run, GateSettings())
    assert a.miss_k == 5
    assert [x.engine for x in a.oracle_gaps] == ["mine", "plain", "staged"]  # run order
    [fidelity] = a.rewrites
    assert (fidelity.engine, fidelity.oracle, fidelity.k) == ("mine", "search-rewrite", 5)
    assert len(fidelity.turns) == N  # the first turns carry no person's rewrite
    assert fidelity.turns[0].query_id == "c0#2" and fidelity.turns[0].rouge == pytest.approx(3 / 7)
    assert fidelity.rouge == pytest.approx((3 / 7 + 9) / 10)
    # the oracle returns one document, in the engine's top 5: all of what it returned is shared
    assert fidelity.overlap == pytest.approx(1.0) and fidelity.turns[0].overlap == pytest.approx(1.0)
    back = Analysis.from_dict(json.loads(json.dumps(a.to_dict())))
    assert back.oracle_gaps == a.oracle_gaps and back.rewrites == a.rewrites
    plain = RunResults([e for e in run.evaluations if e.engine != "search-rewrite"])
    a = analyse(plain, GateSettings())
    assert a.oracle_gaps == () and a.rewrites[0].oracle is None and a.rewrites[0].overlap is None


def test_the_split_and_the_fidelity_are_shown_under_the_by_turn_lines_and_in_results_md():
    from pytest_retrieval_eval.gate.verdict import decide, for_run
    from pytest_retrieval_eval.report import turns as shown
    from pytest_retrieval_eval.report.files import markdown

    run = built_run()
    s = for_run(run, GateSettings())
    v = decide(run, s, analyse(run, s))
    lines = shown.terminal_lines(v)
    at = lines.index("hit@5 on follow-ups: gap to the human rewrite (search-rewrite) = pool + ranking:")
    assert lines[0].startswith("hit@5 by turn") and at > 0
    assert lines[at + 1:at + 4] == [
        "  mine    0.00 [0.00, 0.00] = pool 0.00 [0.00, 0.00] + ranking 0.00 [0.00, 0.00]",
        lines[at + 2], lines[at + 3]]
    assert lines[at + 3].startswith("  staged  0.70 [") and "= pool 0.40 [" in lines[at + 3]
    assert "+ ranking 0.30 [" in lines[at + 3]
    assert lines[at + 4] == "rewrites against the person's (ROUGE-1 recall; top-5 overlap with the oracle's):"
    assert lines[at + 5] == "  mine  0.94 over 10 turns; overlap 1.00"
    assert all(len(line) <= 88 for line in lines)
    md = markdown(v, {})
    assert "### Against the human rewrite" in md
    assert "| staged | search-rewrite | 10 | 0.700 | [" in md
    assert "| mine | search-rewrite | 10 | 0.943 | 1.000 |" in md


def test_rows_too_wide_for_the_terminal_keep_every_part_s_interval_on_a_second_line():
    """On MTRAG the hybrid engine's row (negative parts, a longer name) ran past 88 columns and
    lost its parts' intervals while hybrid-concat's row kept them: every row now reads alike."""
    from dataclasses import replace

    from pytest_retrieval_eval.gate.verdict import decide, for_run
    from pytest_retrieval_eval.report import turns as shown

    built = built_run()
    named = {"staged": "staged-over-the-team-s-own-index", "plain": "plain-over-the-team-s-own-index"}
    run = RunResults([replace(e, engine=named.get(e.engine, e.engine)) for e in built.evaluations])
    s = for_run(run, GateSettings())
    lines = shown.oracle_lines(decide(run, s, analyse(run, s)))
    assert lines[0] == "hit@5 on follow-ups: gap to the human rewrite (search-rewrite) = pool + ranking:"
    rows = lines[1:]
    assert len(rows) == 6 and all(len(line) <= 88 for line in lines)
    assert all(re.search(r"= pool -?\d\.\d\d \[", r) for r in rows[0::2])
    assert all(re.fullmatch(r" +\+ ranking -?\d\.\d\d \[.*\]", r) for r in rows[1::2])
    assert len({r.index("=") for r in rows[0::2]} | {r.index("+") for r in rows[1::2]}) == 1  # one column
    assert rows[4].startswith("  staged-over-the-team-s-own-index  0.70 [")
