"""A run over a labeled set with unanswerable turns: engines are asked them, no measure reads them
(as trec_eval skips a query without a relevant document), the analysis lists what came back for
them and the reports say it: a line per engine under the table, each turn's top in results.md."""

from __future__ import annotations


from pytest_retrieval_eval.analysis.analyse import Analysis, analyse
from pytest_retrieval_eval.analysis.result import EvaluationResult
from pytest_retrieval_eval.data.labeled import LabeledSet
from pytest_retrieval_eval.evaluation.evaluate import evaluate_engine
from pytest_retrieval_eval.evaluation.results import RunResults
from pytest_retrieval_eval.gate.verdict import decide, for_run
from pytest_retrieval_eval.rules.settings import GateSettings
from pytest_retrieval_eval.types import LabeledQuery, Turn


def labeled() -> LabeledSet:
    first = LabeledQuery("c1#1", "How do I upgrade my plan?", {"plans": 1}, conversation="c1", turn=1)
    lost = LabeledQuery("c1#2", "and can I pay in bitcoin?", {}, conversation="c1", turn=2,
                        history=(Turn("user", first.question),), answerable=False)
    third = LabeledQuery("c1#3", "and by card?", {"cards": 1}, conversation="c1", turn=3,
                         history=(*lost.history, Turn("user", lost.question)))
    return LabeledSet((first, lost, third), name="chats")


class Keyword:
    """Answers by the words it knows; nothing for a turn it has no word for."""

    name = "keyword"

    def __init__(self) -> None:
        self.asked: list[str] = []

    def retrieve(self, query: str, k: int) -> list[str]:
        self.asked.append(query)
        return [d for w, d in (("plan", "plans"), ("card", "cards"), ("pay", "fees"), ("pay", "plans")) if w in query][:k]


def test_an_unanswerable_turn_is_asked_never_scored_and_listed():
    engine = Keyword()
    e = evaluate_engine(engine, labeled())
    assert engine.asked == ["How do I upgrade my plan?", "and by card?", "and can I pay in bitcoin?"]
    assert [r.query_id for r in e.results] == ["c1#1", "c1#3"] and e.n == 2
    assert [(r.query_id, r.doc_ids) for r in e.unanswerable] == [("c1#2", ("fees", "plans"))]
    result = EvaluationResult(**{f: getattr(e, f) for f in e.__dataclass_fields__})
    assert result.hit_at(1) == 1.0  # the unanswerable turn is no miss
    run = RunResults([e])
    s = for_run(run, GateSettings())
    a = analyse(run, s)
    (listed,) = a.unanswered
    assert (listed.engine, listed.n, listed.returned, listed.k) == ("keyword", 1, 1, a.miss_k)
    assert listed.turns[0].top == ("fees", "plans")
    assert Analysis.from_dict(a.to_dict()).unanswered == a.unanswered  # recorded in results.json, read back
    verdict = decide(run, s, a)
    from pytest_retrieval_eval.report import unanswerable as shown
    from pytest_retrieval_eval.report.files import markdown

    assert shown.terminal_lines(verdict) == [
        f"unanswerable turns (no relevant document exists: left out of every measure): 1, with documents at the "
        f"top {a.miss_k}:", "  keyword  1 of 1 (results.md lists them)"]
    md = markdown(verdict, {})
    assert "## Unanswerable turns" in md and "| c1#2 | and can I pay in bitcoin? | fees, plans |" in md


def test_a_set_without_unanswerable_turns_shows_nothing_of_them():
    plain = LabeledSet((LabeledQuery("q1", "How do I upgrade my plan?", {"plans": 1}),), name="s")
    run = RunResults([evaluate_engine(Keyword(), plain)])
    s = for_run(run, GateSettings())
    verdict = decide(run, s, analyse(run, s))
    from pytest_retrieval_eval.report import unanswerable as shown

    assert verdict.analysis.unanswered == () and shown.terminal_lines(verdict) == []


def test_slices_and_shares_list_each_unanswerable_turn_once():
    whole = labeled()
    assert [len(whole.slice(i, 2).unanswerable) for i in (1, 2)] == [1, 0]
    assert sum(len(whole.shard(k, 3).unanswerable) for k in range(3)) == 1


def test_the_unanswerable_answers_travel_in_the_results_document_whole_and_in_shares():
    from pytest_retrieval_eval.archive.combine import combine
    from pytest_retrieval_eval.archive.results_json import run_document

    whole = labeled()
    e = evaluate_engine(Keyword(), whole)
    (back,) = combine([run_document(RunResults([e]), timing=True)]).run.evaluations
    assert [(r.query_id, r.doc_ids) for r in back.unanswerable] == [("c1#2", ("fees", "plans"))]
    assert [q.query_id for q in back.labeled.unanswerable] == ["c1#2"]
    assert back.labeled.computed_fingerprint == whole.fingerprint
    shares = []
    for k in range(3):
        part = evaluate_engine(Keyword(), whole.shard(k, 3)).to_dict(timing=True)
        positions = {q.query_id: i for i, q in enumerate(whole.queries)}
        shares.append({**run_document(RunResults([]), timing=True), "evaluations": [{**part, "share": {
            "of": whole.fingerprint, "k": k, "n": 3, "positions": [positions[q["id"]] for q in part["queries"]]}}]})
    (joined,) = combine(shares).run.evaluations
    assert [r.query_id for r in joined.unanswerable] == ["c1#2"] and joined.n == 2


def test_the_derived_segments_keep_the_unanswerable_turns_beside_the_set():
    from pytest_retrieval_eval.data.segments import derive
    from pytest_retrieval_eval.types import Doc

    derived = derive(labeled(), [Doc("plans", "Plans and prices."), Doc("cards", "Cards we take.")])
    assert [q.query_id for q in derived.unanswerable] == ["c1#2"] and len(derived) == 2
