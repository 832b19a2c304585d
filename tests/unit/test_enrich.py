"""The one step between a recorded run and its analysis (``plugin/enrich.enrich``): coverage, the
judgments file's grades, the candidates and the content fingerprints added to a new run, the run
as recorded (what every process shipped, combined) left exactly as it was."""

from __future__ import annotations

from conftest import CORPUS, results_text, write_docs
from pytest_retrieval_eval.data.corpus import open_corpus
from pytest_retrieval_eval.data.judges import Judge
from pytest_retrieval_eval.data.judgments import Judgment, append
from pytest_retrieval_eval.data.labeled import LabeledSet
from pytest_retrieval_eval.data.worksheet import HUMAN
from pytest_retrieval_eval.analysis.result import EvaluationResult
from pytest_retrieval_eval.evaluation.results import RunResults
from pytest_retrieval_eval.plugin.config import (DataConfig, GateConfig, HybridSetup, JudgingConfig, ReportConfig,
                                                 RetrievalConfig, RunConfig)
from pytest_retrieval_eval.plugin.enrich import enrich
from pytest_retrieval_eval.plugin.session import RetrievalSession
from pytest_retrieval_eval.types import LabeledQuery, QueryResult

FINGERPRINT = open_corpus(CORPUS).load().fingerprint
JUDGE = Judge("model-a", "p" * 64, 0.0, 1, "127.0.0.1")
LABELED = LabeledSet((LabeledQuery("q1", "how do I delete my account", {"account-deletion": 1}),
                      LabeledQuery("q2", "how do I care for the battery", {"battery-care": 1})), name="set")


def recorded() -> RunResults:
    return RunResults([EvaluationResult("kw", LABELED, (QueryResult("q1", ("account-deletion", "adaptive-bikes")),
                                                         QueryResult("q2", ("appendix-c", "battery-care"))),
                                        context={"corpus": "corpus", "corpus_fingerprint": FINGERPRINT})])


def session_of(judgments=None, *, candidates=None, cache=None) -> RetrievalSession:
    hybrid = HybridSetup(embedder="hashing", cache_dir=cache)  # the model-free embedder: candidates' semantic novelty
    config = RetrievalConfig(DataConfig(corpus=CORPUS), RunConfig(), hybrid, GateConfig(), ReportConfig(),
                             JudgingConfig(judgments=judgments, candidates=candidates))
    return RetrievalSession(config, None)


def test_enrich_returns_a_new_run_with_coverage_judgments_and_fingerprints_and_leaves_the_recorded_run_as_it_was(
        tmp_path):
    path = tmp_path / "judgments.jsonl"
    append(path, [Judgment("q1", "adaptive-bikes", 2, (2,), "s" * 64, JUDGE, "hole")])
    run = recorded()
    evaluations, before = list(run.evaluations), results_text(run)
    enriched = enrich(run, session_of(path), None)
    assert enriched.failures == []
    new = enriched.run
    assert new is not run
    assert new.coverage["documents"]["total"] == 30 and new.judgments["path"]
    assert new.fingerprints["corpora"][FINGERPRINT] and new.fingerprints["judgments"]["sha256"]
    assert new.evaluations[0].judge is not None  # the file's judge, on the new run's evaluations
    # the recorded run: not one attribute written into it
    assert run.evaluations == evaluations and run.evaluations[0].judge is None
    assert (run.coverage, run.judgments, run.fingerprints, run.candidates) == ({}, {}, {}, {})
    assert results_text(run) == before


def test_what_enrich_could_not_do_is_a_gate_failure_and_the_recorded_run_is_still_untouched(tmp_path):
    path = tmp_path / "judgments.jsonl"
    append(path, [Judgment("q1", "adaptive-bikes", 2, (2,), "s" * 64, HUMAN, "human", question_sha256="q" * 64,
                           depth=1)])
    run = recorded()
    enriched = enrich(run, session_of(path), None)
    [failure] = enriched.failures
    assert failure.startswith("judgments ") and "the file holds no judgment by an LLM judge" in failure
    assert enriched.run.judgments == {} and enriched.run.coverage  # the rest is still added
    assert (run.coverage, run.judgments, run.fingerprints) == ({}, {}, {})


def test_a_run_that_evaluated_nothing_is_returned_as_it_came():
    run = RunResults([])
    assert enrich(run, session_of(), None).run is run


def test_the_candidates_novelty_is_added_to_the_new_run(tmp_path):
    folder = write_docs(tmp_path / "candidates", [{"doc_id": "new-doc", "title": "Deleting accounts",
                                                   "content": "To delete your account, open the settings."}])
    session = session_of(candidates=folder, cache=tmp_path / "cache")
    run = recorded()
    try:
        enriched = enrich(run, session, None)
    finally:
        session.close()
    assert enriched.failures == []
    [item] = enriched.run.candidates["items"]
    assert item["doc_id"] == "new-doc" and item["nearest"] == "account-deletion:0"
    assert run.candidates == {} and run.fingerprints == {}
