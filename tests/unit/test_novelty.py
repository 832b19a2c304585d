"""What a candidate document would add: lexical novelty (1 - the largest Jaccard similarity of
token sets with an existing chunk), semantic novelty with an embedder, and the blend into a
shadow comparison's knowledge gain."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from conftest import CORPUS
from pytest_retrieval_eval import QueryResult
from pytest_retrieval_eval.data.chunking import Chunking, chunk_corpus
from pytest_retrieval_eval.data.corpus import Corpus, open_corpus
from pytest_retrieval_eval.data.labeled import LabeledSet
from pytest_retrieval_eval.data.novelty import nearest_questions, novelty, tokens
from pytest_retrieval_eval.analysis.result import EvaluationResult
from pytest_retrieval_eval.evaluation.results import RunResults
from pytest_retrieval_eval.analysis.shadow import shadows
from pytest_retrieval_eval.types import Chunk, Doc, LabeledQuery

VOLCANO = Doc("cand-volcano", "Eyjafjallajokull erupted in 2010, sending basaltic ash plumes across the North "
              "Atlantic; magma chambers beneath glaciers produce jokulhlaups, meltwater floods that reshape sandur "
              "plains. Tephrochronology dates the layers.", title="Volcanic eruptions of Iceland")


@pytest.fixture(scope="module")
def bundled():
    corpus = open_corpus(CORPUS).load()
    return corpus, chunk_corpus(corpus, Chunking())


def candidates(*docs: Doc) -> Corpus:
    return Corpus(tuple(docs), "candidates")


def test_a_copy_of_a_bundled_document_is_not_novel_and_a_topic_the_corpus_lacks_is(bundled):
    corpus, chunks = bundled
    copy = dataclasses.replace(corpus.docs[4], doc_id="cand-copy")
    found = {n.doc_id: n for n in novelty(chunk_corpus(candidates(copy, VOLCANO), Chunking()), chunks)}
    assert found["cand-copy"].lexical < 0.2 and found["cand-copy"].nearest.startswith(corpus.docs[4].doc_id + ":")
    assert found["cand-volcano"].lexical > 0.8
    assert found["cand-copy"].semantic is None and found["cand-copy"].value == found["cand-copy"].lexical


def test_lexical_novelty_is_one_minus_the_largest_jaccard_of_token_sets():
    existing = [Chunk("a", 0, "red green blue"), Chunk("b", 0, "red yellow")]
    found = novelty([Chunk("c", 0, "Red, GREEN and violet")], existing)[0]
    # {red, green, and, violet} against {red, green, blue}: 2 / 5; against {red, yellow}: 1 / 5
    assert found.lexical == pytest.approx(1 - 2 / 5) and found.nearest == "a:0"
    two = novelty([Chunk("d", 0, "red green blue"), Chunk("d", 1, "nothing shared")], existing)[0]
    assert two.lexical == pytest.approx(1 - (1.0 + 0.0) / 2)  # the mean over the candidate's chunks
    assert tokens("A b-c dd") == frozenset({"dd"})


def test_semantic_novelty_is_one_minus_the_largest_cosine():
    vectors = {"x": [1.0, 0.0], "y": [0.0, 1.0], "z": [1.0, 1.0]}
    found = novelty([Chunk("c", 0, "z")], [Chunk("a", 0, "x"), Chunk("b", 0, "y")],
                    embed=lambda texts: np.array([vectors[t] for t in texts]))[0]
    assert found.semantic == pytest.approx(1 - 1 / np.sqrt(2)) and found.semantic_nearest in ("a:0", "b:0")
    assert found.value == pytest.approx((found.lexical + found.semantic) / 2)


def test_a_candidate_is_graded_against_the_questions_nearest_it_in_words():
    questions = [("q1", "When do volcanic eruptions happen in Iceland?"), ("q2", "How do I pay?"),
                 ("q3", "What are ash plumes?")]
    assert nearest_questions(f"{VOLCANO.title} {VOLCANO.content}", questions) == ["q1", "q3"]


def test_the_candidates_novelty_is_blended_into_the_knowledge_gain_at_its_weight():
    labeled = LabeledSet((LabeledQuery("q1", "x", {"a": 1}), LabeledQuery("q2", "y", {"b": 1})))
    run = RunResults([EvaluationResult("new", labeled, (QueryResult("q1", ("a",)), QueryResult("q2", ("b",)))),
                      EvaluationResult("old", labeled, (QueryResult("q1", ("a",)), QueryResult("q2", ("c",))))])
    (plain,), _ = shadows(run, [("new", "old")], {"hit@1": 1.0})
    run = dataclasses.replace(run, candidates={"path": "c", "weight": 0.2, "items": [
        {"doc_id": "c1", "lexical": 0.9, "nearest": "a:0", "semantic": 0.5, "semantic_nearest": "a:0", "answers": []},
        {"doc_id": "c2", "lexical": 0.1, "nearest": "b:0", "semantic": None, "semantic_nearest": None, "answers": []}]})
    (blended,), _ = shadows(run, [("new", "old")], {"hit@1": 1.0})
    assert plain.blended_gain is None and plain.gain == pytest.approx(0.5)
    novelty_mean = ((0.9 + 0.5) / 2 + 0.1) / 2
    assert blended.novelty == pytest.approx(novelty_mean)
    assert blended.blended_gain == pytest.approx(0.5 + 0.2 * novelty_mean)
    assert blended.to_dict()["blended_gain"] == pytest.approx(blended.blended_gain)
