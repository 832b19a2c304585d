"""The evidence-level twins: their names, when a table shows them, the engines that return
passages (an HTTP service through its texts, a Haystack retriever), and results.json keeping
what they read."""

from __future__ import annotations

import json

import pytest

from fake_api import FakeApi, Reply
from pytest_retrieval_eval import LabeledQuery, LabeledSet, Measure, Passage, RetrievalEvalError, adapters
from conftest import evaluate_engine
from pytest_retrieval_eval.analysis.comparisons import comparisons
from pytest_retrieval_eval.analysis.result import EvaluationResult
from pytest_retrieval_eval.analysis.scores import Scores
from pytest_retrieval_eval.evaluation.results import RunResults
from pytest_retrieval_eval.rules.settings import table_measures
from pytest_retrieval_eval.ir.measures import DEFAULT_TABLE_MEASURES

TEXTS = {"wifi": ["Visitors connect to the guest network.", "Reception prints a voucher valid for one day."],
         "print": ["Printers are on every floor.", "Badge in; jobs wait for twelve hours."]}
EVIDENCE = LabeledSet((LabeledQuery("wifi", "guest wifi?", {"wifi": 1}, {"evidence": {"wifi": ["a voucher valid for one day"]}}),
                       LabeledQuery("print", "print jobs?", {"print": 1}, {"evidence": {"print": ["jobs wait for twelve hours"]}})))
PLAIN = LabeledSet(tuple(LabeledQuery(q.query_id, q.question, dict(q.relevant)) for q in EVIDENCE))


def passages(query, k):
    doc = "wifi" if "wifi" in query else "print"
    return [Passage(doc, TEXTS[doc][0]), Passage(doc, TEXTS[doc][1])]


@pytest.mark.parametrize("name, canonical", [("hit@5+evidence", "hit@5+evidence"), ("nDCG@10+evidence", "ndcg@10+evidence"),
                                             ("P(rel=2)@5+evidence", "precision(rel=2)@5+evidence"), ("MRR+evidence", "mrr+evidence")])
def test_every_measure_on_relevance_labels_has_an_evidence_twin_spelled_with_a_suffix(name, canonical):
    m = Measure.parse(name)
    assert m.name == canonical and m.evidence and Measure.parse(canonical) == m
    assert m.on_documents.with_evidence() == m and not m.on_documents.evidence


@pytest.mark.parametrize("name, said", [
    ("hit@5+evidence+judged", "'+judged' and '+evidence' do not combine"),
    ("hit@5+judged+evidence", "not a count, judged@k, freshness, +judged or ~ppi"),
    ("hit@5+evidence~ppi", "'~ppi' applies once"),
    ("num_ret+evidence", "not a count"),
    ("freshness.stale_free@5+evidence", "freshness"),
    ("hit@5+evidence+evidence", "'+evidence' applies once"),
])
def test_an_evidence_twin_of_what_has_none_is_refused_saying_why(name, said):
    with pytest.raises(RetrievalEvalError) as caught:
        Measure.parse(name)
    assert said in str(caught.value) and name in str(caught.value)


def test_the_judged_and_ppi_suffixes_still_parse_beside_it():
    assert Measure.parse("ndcg@10+judged").judged and Measure.parse("ndcg@10~ppi").ppi
    assert not Measure.parse("ndcg@10+judged").evidence


def test_a_table_shows_the_twins_only_with_evidence_and_an_engine_that_returns_passages():
    ids = adapters.function(lambda q, k: ["wifi" if "wifi" in q else "print"], name="ids")
    chunks = adapters.function(passages, name="chunks")
    plain = table_measures(RunResults([evaluate_engine(chunks, PLAIN)]), DEFAULT_TABLE_MEASURES)
    assert plain == [m.name for m in DEFAULT_TABLE_MEASURES]  # no evidence: the table as it was
    assert table_measures(RunResults([evaluate_engine(ids, EVIDENCE)]), DEFAULT_TABLE_MEASURES) == plain
    both = table_measures(RunResults([evaluate_engine(ids, EVIDENCE), evaluate_engine(chunks, EVIDENCE)]),
                          DEFAULT_TABLE_MEASURES)
    assert both == [x for m in plain for x in (m, m + "+evidence")]


@pytest.mark.parametrize("asked, shown", [
    (["ndcg@10+judged"], ["ndcg@10+judged"]),
    (["ndcg@10~ppi"], ["ndcg@10~ppi"]),
    (["hit@5", "ndcg@10+judged"], ["hit@5", "hit@5+evidence", "ndcg@10+judged"]),
])
def test_a_judged_or_ppi_measure_asked_for_on_a_set_with_evidence_shows_without_a_twin(asked, shown):
    chunks = adapters.function(passages, name="chunks")
    run = RunResults([evaluate_engine(chunks, EVIDENCE)])
    assert table_measures(run, [Measure.parse(m) for m in asked]) == shown  # +judged and ~ppi take no +evidence


def test_an_ids_only_engine_is_compared_on_documents_only_never_on_twins_it_has_no_value_of():
    ids = adapters.function(lambda q, k: ["wifi" if "wifi" in q else "print"], name="ids")
    chunks = adapters.function(passages, name="chunks")
    more = adapters.function(lambda q, k: passages(q, k)[::-1], name="more")
    run = RunResults([evaluate_engine(ids, EVIDENCE), evaluate_engine(chunks, EVIDENCE), evaluate_engine(more, EVIDENCE)])
    compared = [({c.a, c.b}, c.measure) for c in comparisons(run, ["hit@1", "hit@1+evidence"])]
    # no "nan*" row marked significant, and no phantom comparison in the correction's count
    assert len(compared) == 4 and [pair for pair, m in compared if m == "hit@1+evidence"] == [{"chunks", "more"}]


def test_a_failed_evidence_rule_names_the_misses_among_the_passages_as_its_cause():
    from pytest_retrieval_eval.rules.thresholds import Threshold
    from pytest_retrieval_eval.rules.settings import GateSettings
    from pytest_retrieval_eval.gate.verdict import verdict_of

    chunks = adapters.function(passages, name="chunks")  # the right document first, its answer second
    run = RunResults([evaluate_engine(chunks, EVIDENCE)])
    rule = Threshold.parse("chunks:hit@1+evidence>=0.9", source="t")
    [failed] = verdict_of(run, GateSettings(thresholds=(rule,))).of_kind("rule")
    assert failed.startswith("chunks: hit@1+evidence = 0.0000, required >= 0.9")
    # not the documents' misses (none: hit@1 is 1.0), the passages'
    assert failed.causes == ("  cause: chunks missed 2 of 2 at hit@1+evidence: 2 right document, wrong passage",)


def test_the_gate_reads_a_failed_evidence_rules_causes_from_the_analysis(monkeypatch):
    from pytest_retrieval_eval.analysis.analyse import analyse
    from pytest_retrieval_eval.rules.thresholds import Threshold
    from pytest_retrieval_eval.rules.settings import GateSettings
    from pytest_retrieval_eval.gate.verdict import decide

    run = RunResults([evaluate_engine(adapters.function(passages, name="chunks"), EVIDENCE)])
    settings = GateSettings(thresholds=(Threshold.parse("chunks:hit@1+evidence>=0.9", source="t"),))
    analysis = analyse(run, settings)  # at the rule's cutoff (1), not only the misses' (10)

    def computed_again(self, k):
        raise AssertionError("the gate computed the evidence-level misses again")

    monkeypatch.setattr(Scores, "evidence_misses", computed_again)
    [failed] = decide(run, settings, analysis).of_kind("rule")
    assert failed.causes == ("  cause: chunks missed 2 of 2 at hit@1+evidence: 2 right document, wrong passage",)


def test_a_rule_on_the_evidence_twin_of_an_ids_only_engine_says_why_it_has_no_value():
    from pytest_retrieval_eval.rules.thresholds import Threshold
    from pytest_retrieval_eval.rules.settings import GateSettings
    from pytest_retrieval_eval.gate.verdict import verdict_of

    ids = adapters.function(lambda q, k: ["wifi" if "wifi" in q else "print"], name="ids")
    run = RunResults([evaluate_engine(ids, EVIDENCE)])
    rule = Threshold.parse("ids:hit@1+evidence>=0.9", source="t")
    [failed] = verdict_of(run, GateSettings(thresholds=(rule,))).of_kind("rule")
    assert failed.startswith("ids: hit@1+evidence has no value, so the rule ids:hit@1+evidence>=0.9 checked nothing")
    assert "no evidence-level value: the engine returns document ids, not passages" in failed
    assert failed.causes == ()  # the documents' misses (none) say nothing of passages it never returned


def test_an_engine_that_answers_some_questions_with_ids_only_has_no_evidence_level_value():
    """Not 0 for those questions (a false miss), nor a mean over the others (questions the engine
    chose): no value, and the questions it answered with ids are named."""
    from pytest_retrieval_eval.rules.thresholds import Threshold
    from pytest_retrieval_eval.rules.settings import GateSettings
    from pytest_retrieval_eval.gate.verdict import verdict_of

    mixed = evaluate_engine(adapters.function(lambda q, k: passages(q, k) if "wifi" in q else ["print"],
                                              name="mixed"), EVIDENCE)
    chunks = evaluate_engine(adapters.function(passages, name="chunks"), EVIDENCE)
    assert mixed.mean("hit@1") == 1.0 and mixed.ids_answered == ("print",)
    assert not mixed.returns_passages and mixed.mean("hit@5+evidence") is None and mixed.mean("mrr+evidence") is None
    assert mixed.tokens_at(5) != mixed.tokens_at(5)  # hands a generator no known number of tokens
    assert mixed.evidence_unavailable() == "answered 1 of 2 questions with document ids, not passages (print)"
    run = RunResults([mixed, chunks])
    assert [c.measure for c in comparisons(run, ["hit@1", "hit@1+evidence"])] == ["hit@1"]
    rule = Threshold.parse("mixed:hit@1+evidence>=0.5", source="t")
    [failed] = verdict_of(run, GateSettings(thresholds=(rule,))).of_kind("rule")
    assert failed.startswith("mixed: hit@1+evidence has no value, so the rule mixed:hit@1+evidence>=0.5 checked nothing")
    assert "no evidence-level value: the engine answered 1 of 2 questions with document ids, not passages (print)" in failed


def test_a_failed_assertion_on_a_twin_the_engine_has_no_value_of_says_so_never_nan_nor_a_false_miss():
    mixed = evaluate_engine(adapters.function(lambda q, k: passages(q, k) if "wifi" in q else ["print"],
                                              name="mixed"), EVIDENCE)
    value = mixed.score("hit@5+evidence")
    assert not value >= 0.5 and repr(value) == "mixed hit@5+evidence (no value)"
    assert value.explain(">=", 0.5) == [
        "mixed: hit@5+evidence has no value, expected >= 0.5 (n=2 queries, 0 errored, labeled set labeled)",
        "mixed answered 1 of 2 questions with document ids, not passages (print): no evidence-level value"]


def test_an_errored_or_empty_answer_is_no_answer_with_ids_and_scores_zero_at_both_levels():
    def flaky(query, k):
        if "print" in query:
            raise RuntimeError("timeout")
        return passages(query, k)

    for engine in (flaky, lambda q, k: passages(q, k) if "wifi" in q else []):
        e = evaluate_engine(adapters.function(engine, name="e"), EVIDENCE)
        assert e.ids_answered == () and e.returns_passages and e.evidence_unavailable() is None
        assert e.mean("hit@5") == 0.5 and e.mean("hit@5+evidence") == 0.5


def test_an_http_service_returning_passages_is_scored_at_the_evidence_level():
    def answer(request):
        doc = "wifi" if "wifi" in request["q"] else "print"
        return {"hits": [{"id": doc, "text": t} for t in TEXTS[doc]]}

    with FakeApi() as api:
        api.script("/search", Reply(200, answer))
        service = adapters.http(api.url + "/search?q={query}", ids="hits[].id", texts="hits[].text")
        result = evaluate_engine(service, EVIDENCE)
    assert result.hit_at(1) == 1.0 and result.score("hit@1+evidence") == 0.0 and result.score("hit@2+evidence") == 1.0
    assert [(r.passages, dict(r.passage_ranks), dict(r.first_passages)) for r in result.results] == [
        (2, {"wifi": 2}, {"wifi": 1}), (2, {"print": 2}, {"print": 1})]


def test_a_haystack_retriever_returns_its_documents_text_as_passages():
    pytest.importorskip("haystack")
    from haystack import Document
    from haystack.components.retrievers.in_memory import InMemoryBM25Retriever
    from haystack.document_stores.in_memory import InMemoryDocumentStore

    store = InMemoryDocumentStore()
    store.write_documents([Document(content=t, meta={"doc_id": d}) for d, texts in TEXTS.items() for t in texts])
    result = evaluate_engine(adapters.haystack(InMemoryBM25Retriever(store)), EVIDENCE)
    assert result.returns_passages and result.hit_at(1) == 1.0
    # "guest wifi?" matches the passage that says "guest" only, not the one with the answer
    assert result.score("hit@5+evidence") == 0.5
    [miss] = result.evidence_misses(5).causes
    assert miss.query_id == "wifi" and miss.kind == "wrong-passage"


def test_results_json_keeps_what_the_twins_read_and_not_the_passages_text():
    result = evaluate_engine(adapters.function(passages, name="chunks"), EVIDENCE)
    saved = result.to_dict()
    assert "Badge in" not in json.dumps(saved)
    again = EvaluationResult.from_dict(json.loads(json.dumps(saved)))
    assert again.score("mrr+evidence") == result.score("mrr+evidence") == 0.5
    assert again.labeled.has_evidence and again.labeled.computed_fingerprint == EVIDENCE.fingerprint
    assert EVIDENCE.fingerprint != PLAIN.fingerprint  # the evidence is what the twins depend on


def _evidence_run(quote: str, returned: list[str]):
    labeled = LabeledSet((LabeledQuery("fee", "item1 fee?", {"doc1": 1}, {"evidence": {"doc1": [quote]}}),))
    engine = adapters.function(lambda q, k: [Passage("doc1", text) for text in returned], name="chunks")
    return evaluate_engine(engine, labeled)


def test_words_of_the_quote_scattered_over_a_passage_about_something_else_are_no_evidence():
    scattered = ("The canteen fee covers lunch; for item1 see the desk, which is open at 7 and takes payment in euros.")
    result = _evidence_run("the fee for item1 is 7 euros", [scattered])  # its 7 words are there, in order
    assert result.hit_at(1) == 1.0 and result.score("hit@1+evidence") == 0.0
    assert [c.kind for c in result.evidence_misses(1).causes] == ["wrong-passage"]


def test_a_quote_cut_by_a_chunk_boundary_counts_in_the_passage_that_holds_most_of_it():
    quote = "the fee for item1 is 7 euros per month"  # 9 words: 8 needed
    result = _evidence_run(quote, ["Opening hours are posted at the door.", "Read this first: the fee for item1 is 7 euros per",
                                   "month, paid at the desk."])
    assert result.score("mrr+evidence") == 0.5  # the passage with its head, at rank 2
    assert _evidence_run(quote, ["fee for item1 is 7 euros", "per month"]).score("hit@5+evidence") == 0.0  # 6 of 9


@pytest.mark.parametrize("quote_form, passage_form", [("NFC", "NFD"), ("NFD", "NFC"), ("NFC", "NFKD")])
def test_a_passage_in_any_unicode_form_carries_its_quote_written_in_another(quote_form, passage_form):
    import unicodedata

    text = "À la réception, la crème brûlée coûte 5 euros; le café est offert."
    quote = unicodedata.normalize(quote_form, "la crème brûlée coûte 5 euros")
    result = _evidence_run(quote, [unicodedata.normalize(passage_form, text)])
    assert result.score("hit@1+evidence") == 1.0
