"""What the engines' rankings say of the labeled set: the questions every engine answers at rank 1
(they separate none), and the warning when the metadata-only keyword engine is as good as the best."""

from __future__ import annotations

from conftest import CORPUS, QUESTIONS
from pytest_retrieval_eval.data.corpus import open_corpus
from pytest_retrieval_eval.data.labeled import load_questions_cache
from pytest_retrieval_eval.engines.keyword import KeywordEngine
from conftest import evaluate_engine
from pytest_retrieval_eval.evaluation.results import RunResults
from pytest_retrieval_eval.analysis.set_signal import lines, metadata_baseline, no_signal

LABELED = load_questions_cache(QUESTIONS)
GOLD = {q.question: q.gold[0] for q in LABELED}
IDS = [q.query_id for q in LABELED]


class Scripted:
    """Gold first for the questions in ``first``, second (behind another document) for the rest."""

    def __init__(self, name, first):
        self.name, self.first = name, set(first)

    def retrieve(self, query, k):
        gold = GOLD[query]
        other = "battery-care" if gold != "battery-care" else "account-deletion"
        return [gold, other] if query in self.first else [other, gold]


def run_of(*engines):
    return RunResults([evaluate_engine(e, LABELED) for e in engines])


def questions(ids):
    return [q.question for q in LABELED if q.query_id in ids]


def test_questions_every_engine_ranks_first_are_named_and_the_others_not():
    a = Scripted("a", questions(IDS[:10]))
    b = Scripted("b", questions(IDS[5:15]))
    found = no_signal(run_of(a, b))
    assert [f.query_ids for f in found] == [tuple(IDS[5:10])]
    assert "5 of 68 questions" in found[0].detail and "(a, b)" in found[0].detail


def test_one_engine_alone_separates_nothing_so_it_says_nothing():
    assert no_signal(run_of(Scripted("a", questions(IDS)))) == []


def test_the_metadata_baseline_as_good_as_the_best_engine_is_a_set_level_finding():
    keyword = Scripted("keyword", questions(IDS[:30]))
    worse = Scripted("vector", questions(IDS[:20]))
    found = metadata_baseline(run_of(keyword, worse), "hit@1")
    assert [f.kind for f in found] == ["metadata_baseline"]
    assert found[0].query_ids == tuple(IDS[:30])
    assert "keyword scores hit@1 0.441, the best engine vector 0.294" in found[0].detail
    better = Scripted("vector", questions(IDS[:31]))
    assert metadata_baseline(run_of(keyword, better), "hit@1") == []


def test_the_real_keyword_engine_on_the_bundled_set_is_beaten_so_no_warning():
    corpus = open_corpus(CORPUS).load()
    oracle = Scripted("oracle", questions(IDS))
    assert metadata_baseline(run_of(KeywordEngine(corpus.docs), oracle), "hit@5") == []


def test_a_line_names_every_question_unless_told_how_many():
    found = no_signal(run_of(Scripted("a", questions(IDS[:12])), Scripted("b", questions(IDS[:12]))))
    assert all(i in lines(found)[0] for i in IDS[:12])
    assert lines(found, limit=10)[0].startswith(f"no_signal: {', '.join(IDS[:10])} and 2 more: ")


def test_the_metadata_baseline_warning_is_a_warning_of_the_run_and_its_questions_a_finding():
    from pytest_retrieval_eval.analysis.analyse import analyse
    from pytest_retrieval_eval.rules.settings import GateSettings

    run = run_of(Scripted("keyword", questions(IDS[:30])), Scripted("vector", questions(IDS[:20])))
    analysis = analyse(run, GateSettings())
    assert [w for w in analysis.warnings if w.startswith("labeled set: ")] == [
        "labeled set: the set rewards naming the document: on questions.cache.json the metadata-only baseline keyword "
        "scores hit@5 1.000, the best engine vector 1.000 (30 questions keyword answers at rank 1)"]  # as good: warned
    assert [(f.kind, len(f.query_ids)) for f in analysis.labeled_set] == [("no_signal", 20), ("metadata_baseline", 30)]
