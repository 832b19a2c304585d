"""LLM judgments of the documents the labels left unjudged: the +judged measures, the committed
file (its schema, its one-line errors, what survives a kill), the judge (its answers, votes,
concurrency, pacing, retries) against the tests' own chat-completions server, pooling, what a run
rests on, and the refusals that keep a change of judge from moving a number unnoticed."""

from __future__ import annotations

import importlib.resources
import json
import random
from dataclasses import replace

import pytest

from conftest import CORPUS, FAKE_KEY, results_text
from fake_api import Reply, judge_reply, umbrela_grade
from pytest_retrieval_eval import QueryResult
from pytest_retrieval_eval.cli import main as cli
from pytest_retrieval_eval.data.corpus import open_corpus
from pytest_retrieval_eval.data.judge import JudgeConfig, Pair, grade_of, judge_pairs, majority
from pytest_retrieval_eval.data.judges import Judge
from pytest_retrieval_eval.data.judgments import Judgment, Judgments, append, rewrite
from pytest_retrieval_eval.data.labeled import LabeledSet
from pytest_retrieval_eval.errors import RetrievalEvalError
from pytest_retrieval_eval.analysis.baseline import compare
from pytest_retrieval_eval.rules.settings import GateSettings, table_measures
from pytest_retrieval_eval.gate.verdict import verdict_of
from pytest_retrieval_eval.ir.measures import DEFAULT_TABLE_MEASURES, Measure
from pytest_retrieval_eval.ir.metrics import evaluate
from pytest_retrieval_eval.ir.agreement import cohen_kappa, kendall_tau
from pytest_retrieval_eval.report.judged import judged_lines, moved_most
from pytest_retrieval_eval.evaluation.judging import calibration_pairs, engine_order, pool, with_judgments
from pytest_retrieval_eval.analysis.result import EvaluationResult
from pytest_retrieval_eval.analysis.scores import Scores
from pytest_retrieval_eval.archive.saved import load_saved
from pytest_retrieval_eval.evaluation.results import RunResults
from pytest_retrieval_eval.analysis.shadow import shadows
from pytest_retrieval_eval.types import LabeledQuery

JUDGE_A = Judge("model-a", "p" * 64, 0.0, 1, "127.0.0.1")
JUDGE_B = Judge("model-b", "p" * 64, 0.0, 1, "127.0.0.1")


def schema() -> dict:
    text = importlib.resources.files("pytest_retrieval_eval.data").joinpath("judgments.schema.json").read_text()
    return json.loads(text)


def one(q="q1", d="d9", grade=2, judge=JUDGE_A, kind="hole", sha="s" * 64, human=None) -> Judgment:
    return Judgment(q, d, grade, (grade,), sha, judge, kind, human)


# --- measure names -------------------------------------------------------------------------------

@pytest.mark.parametrize("text, name", [("ndcg@10+judged", "ndcg@10+judged"), ("nDCG@10+judged", "ndcg@10+judged"),
                                        ("ndcg_cut_10+judged", "ndcg@10+judged"), ("P(rel=2)@5+judged",
                                                                                   "precision(rel=2)@5+judged"),
                                        ("Judged@10+judged", "judged@10+judged"), ("mrr+judged", "mrr+judged")])
def test_a_judged_measure_is_the_measure_with_its_labels_named(text, name):
    m = Measure.parse(text)
    assert m.name == name and m.judged
    assert m.on_human_labels == Measure.parse(name.removesuffix("+judged"))
    assert m.on_human_labels.with_judgments() == m


@pytest.mark.parametrize("text, why", [("freshness.stale_free@5+judged", "freshness"),
                                       ("ndcg@10+judged+judged", "applies once")])
def test_judged_is_refused_where_it_means_nothing(text, why):
    with pytest.raises(RetrievalEvalError, match=why):
        Measure.parse(text)


# --- statistics ----------------------------------------------------------------------------------

def test_cohens_kappa_and_kendalls_tau_agree_with_statsmodels_and_scipy():
    from scipy.stats import kendalltau
    from statsmodels.stats.inter_rater import cohens_kappa, to_table

    rng = random.Random(7)
    for _ in range(30):
        n = rng.randint(5, 60)
        a = [rng.randint(0, 1) for _ in range(n)]
        b = [x if rng.random() < 0.7 else 1 - x for x in a]
        if len(set(a) | set(b)) < 2:
            continue
        expected = cohens_kappa(to_table(list(zip(a, b)))[0]).kappa
        assert cohen_kappa(a, b) == pytest.approx(expected, abs=1e-12)
        x = rng.sample(range(100), 6)
        y = [v + rng.gauss(0, 20) for v in x]
        assert kendall_tau(x, y) == pytest.approx(kendalltau(x, y).statistic, abs=1e-12)  # no ties: tau-a = tau-b
    assert cohen_kappa([1, 1], [1, 1]) != cohen_kappa([1, 1], [1, 1])  # one label throughout: NaN
    assert cohen_kappa([0, 1, 0, 1], [1, 0, 1, 0]) == -1.0


# --- the file ------------------------------------------------------------------------------------

def test_what_is_written_validates_against_the_shipped_schema_and_reads_back(tmp_path):
    jsonschema = pytest.importorskip("jsonschema")  # a failure under CI
    path = tmp_path / "judgments.jsonl"
    written = [one(), one("q2", "d1", 0), one("q1", "d3", 3, kind="calibration", human=1)]
    append(path, written)
    for line in path.read_text().splitlines():
        jsonschema.validate(json.loads(line), schema())
    assert list(Judgments.load(path)) == written


@pytest.mark.parametrize("edit, field", [
    (lambda d: d.update(grade=4), "grade"),
    (lambda d: d.update(grade=True), "grade"),
    (lambda d: d.update(votes=[]), "votes"),
    (lambda d: d.pop("doc_sha256"), "doc_sha256"),
    (lambda d: d.update(kind="calibration"), "human"),
    (lambda d: d.update(kind="guess"), "kind"),
    (lambda d: d["judge"].update(model=""), "judge.model"),
    (lambda d: d["judge"].update(temperature=0.7), "judge.fingerprint"),  # an edited setting
])
def test_what_the_schema_rejects_the_loader_rejects_naming_file_line_and_field(tmp_path, edit, field):
    jsonschema = pytest.importorskip("jsonschema")
    good = one().to_dict()
    bad = json.loads(json.dumps(good))
    edit(bad)
    path = tmp_path / "judgments.jsonl"
    path.write_text(json.dumps(good) + "\n" + json.dumps(bad) + "\n")
    with pytest.raises(RetrievalEvalError) as caught:
        Judgments.load(path)
    assert str(caught.value).startswith(f"{path}:2:") and field in str(caught.value)
    assert "\n" not in str(caught.value)
    if field != "judge.fingerprint":  # a hash that does not fit is the loader's own check
        with pytest.raises(jsonschema.ValidationError):
            jsonschema.validate(bad, schema())


def test_whole_grades_written_as_json_floats_are_read_as_the_numbers_the_schema_accepts(tmp_path):
    # the human grade is read as the qrels and the questions cache read one (``ir.qrels.parse_grade``)
    d = one(kind="calibration", human=1).to_dict()
    d.update(grade=2.0, votes=[2.0, 3.0, 2.0], human=1.0)
    path = tmp_path / "judgments.jsonl"
    path.write_text(json.dumps(d) + "\n")
    [j] = Judgments.load(path)
    assert (j.grade, j.votes, j.human) == (2, (2, 3, 2), 1)
    assert all(type(x) is int for x in (j.grade, *j.votes, j.human))
    for field, value in (("human", 1.5), ("human", "1"), ("grade", 2.5), ("votes", [2, float("nan")])):
        path.write_text(json.dumps({**d, field: value}) + "\n")
        with pytest.raises(RetrievalEvalError, match=rf"judgments.jsonl:1: field '{field}'"):
            Judgments.load(path)


def test_a_line_cut_off_by_a_kill_is_dropped_and_cut_away_by_the_next_write(tmp_path):
    path = tmp_path / "judgments.jsonl"
    append(path, [one("q1"), one("q2")])
    whole = path.read_text()
    path.write_text(whole + json.dumps(one("q3").to_dict())[:40])  # killed mid-line
    assert [j.query_id for j in Judgments.load(path)] == ["q1", "q2"]
    append(path, [one("q4")])
    assert path.read_text().startswith(whole) and path.read_text().count("\n") == 3
    assert [j.query_id for j in Judgments.load(path)] == ["q1", "q2", "q4"]
    path.write_text(whole.replace('"grade":2', '"grade":9', 1))  # damage inside the file: refused
    with pytest.raises(RetrievalEvalError, match=":1:"):
        Judgments.load(path)


def test_the_rewrite_is_ordered_and_keeps_the_newest_judge_last(tmp_path):
    path = tmp_path / "judgments.jsonl"
    append(path, [one("q2", judge=JUDGE_B), one("q9", judge=JUDGE_A), one("q1", judge=JUDGE_A)])
    judgments = Judgments.load(path)
    assert judgments.current() == JUDGE_A  # the last line's judge
    rewrite(path, judgments)
    again = Judgments.load(path)
    assert [(j.judge.model, j.query_id) for j in again] == [("model-b", "q2"), ("model-a", "q1"), ("model-a", "q9")]
    assert again.current() == JUDGE_A
    assert again.current(JUDGE_B.fingerprint[:6]) == JUDGE_B
    with pytest.raises(RetrievalEvalError, match="no judge with fingerprint 'ffff'"):
        again.current("ffff")


# --- the judge's answers -------------------------------------------------------------------------

@pytest.mark.parametrize("content, grade", [("##final score: 2", 2), ("## Final Score: 3", 3), ("final score=0", 0),
                                            ("M: 2, T: 1\n##final score: 1", 1), ("2", 2), (" **3** ", 3)])
def test_the_grade_is_read_from_the_answer_shapes_judges_give(content, grade):
    assert grade_of(content) == grade


@pytest.mark.parametrize("content", ["", "relevant", "##final score: 7", "1 or 2"])
def test_an_answer_without_a_grade_is_refused(content):
    with pytest.raises(RetrievalEvalError, match="no grade"):
        grade_of(content)


def test_the_majority_of_votes_is_the_grade_and_a_tie_goes_to_the_lower_grade():
    assert majority([3, 2, 3]) == 3 and majority([2, 3]) == 2 and majority([0, 3, 3, 1, 1]) == 1


# --- judging against a real local server -----------------------------------------------------------

def bundled_pairs(n: int) -> list[Pair]:
    corpus = open_corpus(CORPUS).load()
    docs = corpus.docs[:n]
    return [Pair(f"q{i}", f"what about {d.title}?", d.doc_id, d.content, d.fingerprint) for i, d in enumerate(docs)]


def test_judging_writes_each_grade_asks_only_what_is_missing_and_never_shows_the_key(fake_api, tmp_path, capsys):
    fake_api.script("/chat/completions", Reply(200, judge_reply()))
    path = tmp_path / "judgments.jsonl"
    pairs = bundled_pairs(12)
    report = judge_pairs(pairs[:8], path, JudgeConfig(model="m", concurrency=4))
    assert (report.asked, report.reused, report.failed) == (8, 0, {})
    report = judge_pairs(pairs, path, JudgeConfig(model="m", concurrency=4))
    assert (report.asked, report.reused) == (4, 8)
    assert len(fake_api.hits("/chat/completions")) == 12
    assert judge_pairs(pairs, path, JudgeConfig(model="m")).asked == 0  # again: nothing asked
    assert len(fake_api.hits("/chat/completions")) == 12
    judgments = Judgments.load(path)
    for p in pairs:
        assert judgments.get(p.query_id, p.doc_id, JudgeConfig(model="m").judge).grade == umbrela_grade(p.question, p.text)
    changed = [Pair(p.query_id, p.question, p.doc_id, p.text + " new", "changed") for p in pairs[:2]]
    assert judge_pairs(changed, path, JudgeConfig(model="m")).asked == 2  # the document changed: asked again
    assert FAKE_KEY not in path.read_text() + capsys.readouterr().out
    seen = fake_api.hits("/chat/completions")[0]
    assert seen.headers["authorization"] == f"Bearer {FAKE_KEY}" and seen.body["temperature"] == 0.0
    assert "Query: what about" in seen.body["messages"][-1]["content"]


def test_votes_are_asked_each_and_their_majority_recorded(fake_api, tmp_path):
    answers = iter([3, 1, 3, 0, 0, 2])
    fake_api.script("/chat/completions", Reply(200, judge_reply(lambda q, p: next(answers))))
    path = tmp_path / "j.jsonl"
    judge_pairs(bundled_pairs(2), path, JudgeConfig(model="m", votes=3, concurrency=1))
    grades = sorted((j.grade, j.votes) for j in Judgments.load(path))
    assert grades == [(0, (0, 0, 2)), (3, (3, 1, 3))]


def test_failures_are_counted_and_named_never_written_and_asked_again(fake_api, tmp_path):
    fake_api.script("/chat/completions", Reply(200, judge_reply(lambda q, p: 7 if "battery" in q.lower() else 2)))
    path = tmp_path / "j.jsonl"
    pairs = bundled_pairs(10)
    report = judge_pairs(pairs, path, JudgeConfig(model="m"))
    bad = [p for p in pairs if "battery" in p.question.lower()]
    assert bad and len(report.failed) == len(bad) and report.asked == len(pairs) - len(bad)
    assert "no grade 0-3" in next(iter(report.failed.values())) and "run it again" in report.summary()
    assert len(Judgments.load(path)) == len(pairs) - len(bad)


def test_a_429_with_retry_after_is_waited_for_and_concurrency_is_held_to(fake_api, tmp_path):
    fake_api.script("/chat/completions", Reply(429, {"error": "slow down"}, headers={"Retry-After": "0.05"}),
                    Reply(200, judge_reply(), delay=0.05))
    report = judge_pairs(bundled_pairs(12), tmp_path / "j.jsonl", JudgeConfig(model="m", concurrency=3))
    assert report.asked == 12 and not report.failed
    assert fake_api.max_in_flight <= 3
    assert len(fake_api.hits("/chat/completions")) == 13  # the 429 once, then each pair


def test_the_rate_limit_paces_calls(fake_api, tmp_path):
    import time

    fake_api.script("/chat/completions", Reply(200, judge_reply()))
    started = time.perf_counter()
    judge_pairs(bundled_pairs(6), tmp_path / "j.jsonl", JudgeConfig(model="m", concurrency=6, rate=20.0))
    assert time.perf_counter() - started >= 5 / 20.0 - 0.01  # six calls, 50 ms apart at least


def test_a_hosted_endpoint_without_a_key_is_refused_naming_the_variable(monkeypatch, tmp_path):
    for name in ("RETRIEVAL_EVAL_API_KEY", "OPENROUTER_API_KEY"):
        monkeypatch.delenv(name, raising=False)
    with pytest.raises(RetrievalEvalError, match="RETRIEVAL_EVAL_API_KEY"):
        judge_pairs(bundled_pairs(1), tmp_path / "j.jsonl", JudgeConfig(model="m", url="https://api.example.com/v1"))
    assert not (tmp_path / "j.jsonl").exists()


# --- pooling, attaching, what a run rests on --------------------------------------------------------

LABELED = LabeledSet((LabeledQuery("q1", "alpha?", {"a": 1}), LabeledQuery("q2", "beta?", {"b": 1, "x": 0})),
                     name="set")


def run_of(**rankings) -> RunResults:
    evals = [EvaluationResult(engine, LABELED, tuple(QueryResult(q, tuple(r)) for q, r in zip(("q1", "q2"), ranked)),
                              context={"corpus": "c", "corpus_fingerprint": "f"})
             for engine, ranked in rankings.items()]
    return RunResults(evals)


def test_the_pool_holds_each_unjudged_document_of_each_engines_top_k_once():
    run = run_of(one=[["c", "a", "d"], ["x", "e", "b"]], two=[["d", "f", "a"], ["e", "g"]])
    assert [(h.query_id, h.doc_id) for h in pool(run, 2)] == [("q1", "c"), ("q2", "e"), ("q1", "d"), ("q1", "f"),
                                                              ("q2", "g")]
    assert [(h.query_id, h.doc_id) for h in pool(run, 1, ["two"])] == [("q1", "d"), ("q2", "e")]
    with pytest.raises(RetrievalEvalError, match="no evaluation of engine.*three.*the run has one, two"):
        pool(run, 1, ["three"])


def test_judged_labels_fill_holes_never_overrule_a_human_and_score_as_trec_eval_would():
    run = run_of(one=[["c", "a", "d"], ["x", "e", "b"]])
    judgments = Judgments([one("q1", "c", 3), one("q1", "d", 1), one("q2", "x", 3), one("q2", "e", 2),
                           one("q1", "a", 0)])  # a and x are the humans': theirs stands
    e = run.evaluations[0]
    assert e.mean("ndcg@10+judged") is None  # no judgments attached: no value, never a pass
    run, used = with_judgments(run, judgments, shown_path="j.jsonl")
    before, e = e, run.evaluations[0]
    assert before.judged == {} and before.judge is None  # attaching makes new evaluations, never edits one
    assert used.used == 3 and e.judged == {"q1": {"c": 3, "d": 1}, "q2": {"e": 2}}
    filled = {"q1": {"a": 1, "c": 1, "d": 0}, "q2": {"b": 1, "x": 0, "e": 1}}
    ranked = {"q1": {"c": 3, "a": 2, "d": 1}, "q2": {"x": 3, "e": 2, "b": 1}}
    for m in ("ndcg@10", "precision@3", "hit@1", "mrr", "judged@3"):
        assert e.mean(f"{m}+judged") == pytest.approx(evaluate(filled, ranked, [m])[m], abs=1e-12)
        assert e.mean(m) == pytest.approx(evaluate(LABELED.qrels, ranked, [m])[m], abs=1e-12)
    assert e.mean("judged@3") == pytest.approx(0.5) and e.mean("judged@3+judged") == 1.0


def test_judged_qrels_fill_only_the_holes_with_the_cut_and_change_nothing_they_read():
    from pytest_retrieval_eval import Qrels
    from pytest_retrieval_eval.data.grades import judged_qrels

    human = Qrels({"q1": {"a": 1, "b": 0}, "q2": {"c": 2}})
    grades = {"q1": {"a": 0, "b": 3, "x": 3, "y": 2, "z": 1, "w": 0}, "q3": {"d": 3}}  # q3: no human labels
    before = (json.dumps(grades), human.to_dict())
    got = judged_qrels(human, grades)
    assert isinstance(got, Qrels)
    assert got.to_dict() == {"q1": {"a": 1, "b": 0, "x": 1, "y": 1, "z": 0, "w": 0}, "q2": {"c": 2}}
    assert (json.dumps(grades), human.to_dict()) == before
    assert judged_qrels(human, {}).to_dict() == human.to_dict()


def test_the_holes_of_a_labeled_set_are_chosen_by_a_pure_function_and_the_evaluation_reads_their_qrels():
    from pytest_retrieval_eval.data.grades import judged_qrels
    from pytest_retrieval_eval.data.judgments import question_sha256
    from pytest_retrieval_eval.evaluation.judging import hole_grades

    judgments = Judgments([keyed("q1", "c", 3, "alpha, as it was asked before?"), keyed("q2", "e", 2, "beta?"),
                           one("q2", "g", 1), one("q1", "a", 0), one("q9", "z", 3)])  # a: the humans'; q9: not asked
    fresh, _ = judgments.holes(JUDGE_A)
    asked = {q.query_id: question_sha256(q.question) for q in LABELED.queries}
    grades, reworded, unkeyed = hole_grades(LABELED.qrels, fresh, asked)
    assert grades == {"q2": {"e": 2, "g": 1}} and reworded == {("q1", "c")} and unkeyed == {("q2", "g")}
    run = run_of(one=[["c", "a", "d"], ["x", "e", "g"]])
    run, _ = with_judgments(run, judgments, shown_path="j.jsonl")
    e = run.evaluations[0]
    assert e.judged == grades and Scores.of(e).filled_qrels == judged_qrels(LABELED.qrels, grades)
    assert e.mean("precision@3+judged") == pytest.approx(
        evaluate(judged_qrels(LABELED.qrels, grades), e.run, ["precision@3"])["precision@3"])


def test_a_judgment_whose_document_changed_is_stale_listed_and_left_out():
    run = run_of(one=[["c", "a", "d"], ["x", "e", "b"]])
    judgments = Judgments([one("q1", "c", 3, sha="old"), one("q2", "e", 3, sha="new")])
    run, used = with_judgments(run, judgments, shown_path="j.jsonl", fingerprints={"c": "changed", "e": "new"})
    assert used.stale == [("q1", "c")] and run.evaluations[0].judged == {"q2": {"e": 3}}
    assert any("1 judgment(s) in j.jsonl are stale" in w and "q1/c" in w for w in used.warnings())


def test_results_json_keeps_the_judged_labels_so_a_saved_run_rebuilds_both_numbers(tmp_path):
    run = run_of(one=[["c", "a", "d"], ["x", "e", "b"]])
    run, _ = with_judgments(run, Judgments([one("q1", "c", 3), one("q2", "e", 2)]), shown_path="j.jsonl")
    settings = GateSettings().for_run(run, DEFAULT_TABLE_MEASURES)
    assert "hit@1+judged" in settings.table_measures  # each column beside its judged twin
    path = tmp_path / "results.json"
    path.write_text(results_text(run, settings))
    again = load_saved(path).run  # read as a test reads it: each evaluation with its measures
    for m in ("ndcg@10+judged", "hit@1+judged", "mrr"):
        assert again.evaluations[0].mean(m) == run.evaluations[0].mean(m)
    assert again.judgments["judge"]["fingerprint"] == JUDGE_A.fingerprint


def test_the_table_twins_each_relevance_measure_and_leaves_counts_and_freshness_alone():
    run = run_of(one=[["c"], ["x"]])
    run, _ = with_judgments(run, Judgments([one("q1", "c", 3)]), shown_path="j.jsonl")
    names = table_measures(run, [Measure.parse(m) for m in ("hit@5", "num_ret", "ndcg@10")])
    assert names == ["hit@5", "hit@5+judged", "num_ret", "ndcg@10", "ndcg@10+judged"]
    assert table_measures(run, [Measure.parse("hit@5+judged")]) == ["hit@5+judged"]  # configured: as configured


def test_the_lines_say_what_each_gated_measure_rests_on_and_which_engine_the_judgments_moved_most():
    run = run_of(one=[["c", "a", "d", "e", "f"], ["x", "e", "b", "g", "h"]],
                 two=[["d", "e", "f", "g", "a"], ["b", "h", "i", "j", "k"]])
    run, _ = with_judgments(run, Judgments([one("q1", "c", 3), one("q1", "d", 0), one("q2", "e", 2)]),
                            shown_path="j.jsonl")
    verdict = verdict_of(run, GateSettings(), measures=["hit@1", "hit@1+judged", "recall@5"])
    text = "\n".join(line.strip() for line in judged_lines(verdict, width=10 ** 6))
    assert "one: judged@1 0.500 -> 1.000 with the judgments, judged@5 0.300 -> 0.600 with the judgments" in text
    assert "one: recall@5 rests on a top 5 that is 70% unjudged (40% with the judgments)" in text
    assert "hit@1 rests" not in text  # half of the top 1 judged: not low
    assert moved_most(verdict) == "the judgments moved one most: hit@1 0.000 -> 0.500 (+0.500); two +0.000"
    assert "+judged: human labels with 3 judged hole(s) from j.jsonl, judge model-a" in text
    assert "not calibrated against the human labels (the judge command's --calibrate)" in text


def test_calibration_samples_both_kinds_of_human_label_and_reports_kappa_and_the_order():
    run = run_of(one=[["a"], ["b"]], two=[["z"], ["x"]])

    class Corpus:
        def get(self, doc_id):
            from pytest_retrieval_eval.types import Doc
            return Doc(doc_id, f"text of {doc_id}")

    sample = calibration_pairs(run, Corpus(), sample=2)
    assert sorted(p.human for p in sample) == [0, 1] and "x" in [p.doc_id for p in sample]  # one of each kind
    judgments = Judgments([one("q1", "a", 0, kind="calibration", human=1), one("q2", "b", 0, kind="calibration", human=1),
                           one("q2", "x", 3, kind="calibration", human=0)])
    calibration = judgments.calibration(JUDGE_A)
    assert calibration.n == 3 and calibration.kappa == pytest.approx(cohen_kappa([1, 1, 0], [0, 0, 1]))
    assert calibration.confusion() == {0: {0: 0, 1: 0, 2: 0, 3: 1}, 1: {0: 2, 1: 0, 2: 0, 3: 0}}
    order = engine_order(run, judgments.of_kind("calibration", JUDGE_A))
    assert [e for e, _ in order.human] == ["one", "two"] and [e for e, _ in order.judge] == ["two", "one"]
    assert "the order changes (Kendall's tau -1.00)" in "\n".join(order.lines())
    run2 = run_of(one=[["a"], ["b"]])
    run2, used = with_judgments(run2, Judgments([*judgments, one("q1", "z", 2)]), shown_path="j.jsonl")
    assert any(f"kappa {calibration.kappa:.2f} on 3 calibrated pairs, below 0.4" in w for w in used.warnings())


# --- no silent moves -------------------------------------------------------------------------------

def test_a_baseline_judged_by_another_judge_is_refused_in_one_line_unless_forced():
    now, base = run_of(one=[["c"], ["e"]]), run_of(one=[["c"], ["e"]])
    now, _ = with_judgments(now, Judgments([one("q1", "c", 3, judge=JUDGE_B)]), shown_path="j.jsonl")
    base, _ = with_judgments(base, Judgments([one("q1", "c", 0, judge=JUDGE_A)]), shown_path="j.jsonl")
    refused = compare(now, base, ["hit@1", "hit@1+judged"])
    assert refused.diffs == [] and len(refused.refusals) == 1
    assert refused.refusals[0] == (f"one: judged with another judge (model-a, fingerprint {JUDGE_A.fingerprint} -> "
                                   f"model-b, fingerprint {JUDGE_B.fingerprint}): its +judged numbers would move with "
                                   "the judge")
    forced = compare(now, base, ["hit@1", "hit@1+judged"], force=True)
    assert len(forced.diffs) == 2 and any("compared although" in n and "another judge" in n for n in forced.notes)
    plain = run_of(one=[["c"], ["e"]])  # no judgments in the baseline: its human numbers compare, the judged not
    half = compare(now, plain, ["hit@1", "hit@1+judged"])
    assert [d.measure for d in half.diffs] == ["hit@1"] and "the baseline has no judgments" in half.notes[0]


def test_a_shadow_comparison_across_judges_is_refused():
    run = run_of(one=[["c"], ["e"]], two=[["c"], ["e"]])
    run, _ = with_judgments(run, Judgments([one("q1", "c", 3)]), shown_path="j.jsonl")
    run = replace(run, evaluations=[run.evaluations[0], run.evaluations[1].with_judged({}, JUDGE_B.to_dict())])
    found, problems = shadows(run, [("one", "two")], {"hit@1": 1.0})
    assert found == [] and "shadow one:two refused: two was judged with another judge" in problems[0]


def test_the_judge_command_needs_a_saved_run(tmp_path, capsys):
    assert cli(["judge", str(tmp_path / "missing.json"), "--corpus", str(CORPUS)]) == 2
    assert "missing.json" in capsys.readouterr().err


def test_labels_of_one_kind_give_kappa_0_said_as_such_and_no_warning():
    run = run_of(one=[["a"], ["b"]])
    judgments = Judgments([one("q1", "a", 3, kind="calibration", human=1), one("q2", "b", 1, kind="calibration", human=1),
                           one("q1", "z", 2)])
    calibration = judgments.calibration(JUDGE_A)
    assert calibration.one_sided and calibration.kappa == 0.0 and calibration.agreement == 0.5
    assert calibration.describe().startswith("Cohen's kappa 0.00 (the sample's human labels are all of one kind")
    run, used = with_judgments(run, judgments, shown_path="j.jsonl")
    assert used.one_sided and not [w for w in used.warnings() if "kappa" in w]
    assert "Cohen's kappa 0.00 (one kind of human label), agreement 50% against the human labels on 2 pairs" in \
        used.lines()[0]


# --- what the judge's answer states ----------------------------------------------------------------

@pytest.mark.parametrize("content, grade", [("Grade: 2", 2), ("Relevance = 1", 1), ("**Final score:** 3", 3),
                                            ("score: 0", 0), ('{"grade": 2}', 2), ('```json\n{"score": 3}\n```', 3),
                                            ("The final score is 2.", 2), ("M: 2, T: 1, O: 1", 1), ("3.", 3),
                                            ("Score: **2**/3", 2), ("Relevance: 1 / 3", 1), ("score: 2 out of 3", 2)])
def test_a_grade_is_read_where_the_answer_states_one(content, grade):
    assert grade_of(content) == grade


@pytest.mark.parametrize("content", ["shares 3 words with the query but does not answer it",
                                     "The passage has 2 relevant facts", "M: 2, T: 1", "95%", "score: 2.5",
                                     "score: 3/10", "-1", '{"answer": 2}', "grade: 2, grade: 3",
                                     "Relevance score: 3 out of 10", "Score: **3** out of 10", "Relevance: 3 of 10",
                                     "Score: 3 (out of 10)"])
def test_an_answer_that_states_no_grade_is_not_read_as_one(content):
    with pytest.raises(RetrievalEvalError, match="no grade 0-3"):
        grade_of(content)


def test_answers_without_a_grade_are_counted_and_reported_never_written(fake_api, tmp_path):
    def answer(request):
        return {"model": request["model"], "choices": [{"message": {
            "content": "shares 3 words with the query but does not answer it"}}]}

    fake_api.script("/chat/completions", Reply(200, answer))
    path = tmp_path / "j.jsonl"
    report = judge_pairs(bundled_pairs(3), path, JudgeConfig(model="m"))
    assert report.asked == 0 and report.unparsable == 3 and len(report.failed) == 3
    assert "3 answer(s) stated no grade" in report.summary()
    assert not path.exists() or not Judgments.load(path)


# --- what a judgment is keyed by: the question and the document the judge read ----------------------

def test_a_reworded_question_is_asked_again_and_its_old_grade_not_used(fake_api, tmp_path):
    fake_api.script("/chat/completions", Reply(200, judge_reply()))
    path = tmp_path / "j.jsonl"
    pairs = bundled_pairs(2)
    judge_pairs(pairs, path, JudgeConfig(model="m"))
    recorded = [json.loads(line) for line in path.read_text().splitlines()]
    assert all(len(d["question_sha256"]) == 64 for d in recorded)
    reworded = [Pair(pairs[0].query_id, "a different question entirely?", pairs[0].doc_id, pairs[0].text,
                     pairs[0].doc_sha256), pairs[1]]
    report = judge_pairs(reworded, path, JudgeConfig(model="m"))
    assert (report.asked, report.reused) == (1, 1)
    assert len(Judgments.load(path)) == 2  # the new grade replaces the old one


def keyed(q, d, grade, question, judge=JUDGE_A, kind="hole", human=None) -> Judgment:
    from pytest_retrieval_eval.data.judgments import question_sha256

    return Judgment(q, d, grade, (grade,), "s" * 64, judge, kind, human, question_sha256(question))


def test_a_judgment_made_for_another_wording_of_its_question_is_left_out_of_the_numbers():
    run = run_of(one=[["c", "a", "d"], ["x", "e", "b"]])  # q1 reads "alpha?", q2 "beta?"
    judgments = Judgments([keyed("q1", "c", 3, "alpha, as it was asked before?"), keyed("q2", "e", 3, "beta?")])
    run, used = with_judgments(run, judgments, shown_path="j.jsonl")
    assert run.evaluations[0].judged == {"q2": {"e": 3}} and used.used == 1
    assert used.reworded == [("q1", "c")]
    assert any("1 judgment(s) in j.jsonl were made for another wording of their question (q1/c)" in w
               for w in used.warnings())
    calibrated = Judgments([keyed("q1", "a", 0, "alpha, reworded?", kind="calibration", human=1),
                            keyed("q2", "b", 1, "beta?", kind="calibration", human=1)])
    assert with_judgments(run_of(one=[["a"], ["b"]]), calibrated, shown_path="j.jsonl")[1].calibrated == 1


def test_old_lines_without_the_questions_hash_are_used_said_so_and_asked_again(fake_api, tmp_path):
    fake_api.script("/chat/completions", Reply(200, judge_reply()))
    path = tmp_path / "j.jsonl"
    pairs = bundled_pairs(2)
    judge = JudgeConfig(model="m").judge
    append(path, [Judgment(p.query_id, p.doc_id, 1, (1,), p.doc_sha256, judge) for p in pairs])  # no question hash
    _, used = with_judgments(run_of(one=[["c"], ["e"]]), Judgments([one("q1", "c", 3)]), shown_path="j.jsonl")
    assert used.used == 1 and any("1 judgment(s) in j.jsonl predate question hashes" in w for w in used.warnings())
    assert judge_pairs(pairs, path, JudgeConfig(model="m")).asked == 2
    assert all(j.question_sha256 for j in Judgments.load(path))


# --- the model that judged -------------------------------------------------------------------------

def test_a_local_server_not_told_the_model_and_echoing_the_default_name_is_refused(fake_api, tmp_path):
    fake_api.script("/chat/completions", Reply(200, judge_reply()))  # echoes the model it was sent
    path = tmp_path / "j.jsonl"
    with pytest.raises(RetrievalEvalError, match="--model") as caught:
        judge_pairs(bundled_pairs(3), path, JudgeConfig(model=None))
    assert "\n" not in str(caught.value)
    assert not path.exists() or not Judgments.load(path)


def named(model: str):
    reply = judge_reply()
    return lambda request: {**reply(request), "model": model}


def test_the_recorded_judge_names_the_model_the_server_says_answered(fake_api, tmp_path):
    fake_api.script("/chat/completions", Reply(200, named("SmolLM2-135M-Instruct")))
    path = tmp_path / "j.jsonl"
    pairs = bundled_pairs(3)
    report = judge_pairs(pairs, path, JudgeConfig(model=None))
    assert report.asked == 3 and report.judge.model == "SmolLM2-135M-Instruct"
    assert {j.judge.model for j in Judgments.load(path)} == {"SmolLM2-135M-Instruct"}
    again = judge_pairs(pairs, path, JudgeConfig(model=None))  # the same server: nothing asked
    assert (again.asked, again.reused) == (0, 3) and again.judge == report.judge
    named_too = judge_pairs(pairs, path, JudgeConfig(model="smol"))  # another name sent, the server's recorded
    assert named_too.asked == 3 and named_too.judge.model == "SmolLM2-135M-Instruct"


def test_a_judge_not_named_is_announced_as_the_model_its_server_runs_not_as_a_url(fake_api, tmp_path):
    fake_api.script("/chat/completions", Reply(200, named("SmolLM2-135M-Instruct")))
    said = []
    judge_pairs(bundled_pairs(2), tmp_path / "j.jsonl", JudgeConfig(model=None), progress=said.append)
    assert said[0].startswith(f"judging 2 pair(s) with the model the server at {fake_api.url} runs (named by its "
                              "first answer), 1 at a time (")
    said.clear()
    judge_pairs(bundled_pairs(3), tmp_path / "j.jsonl", JudgeConfig(model=None), progress=said.append)
    assert said[0].startswith("judging 1 pair(s) with SmolLM2-135M-Instruct, 1 at a time (")  # known: named


def test_the_judge_command_at_a_local_server_without_a_model_says_to_name_it(fake_api, tmp_path, capsys):
    fake_api.script("/chat/completions", Reply(200, judge_reply()))
    results = saved_results(tmp_path)
    assert cli(["judge", str(results), "--corpus", str(CORPUS), "--judgments", str(tmp_path / "j.jsonl")]) == 2
    err = capsys.readouterr().err
    assert "--model" in err and len(err.strip().splitlines()) == 1 and "Traceback" not in err


# --- the file's last line, a folder in its place ---------------------------------------------------

def test_a_whole_last_line_without_a_newline_is_kept_and_a_cut_off_one_dropped_and_said(fake_api, tmp_path):
    path = tmp_path / "judgments.jsonl"
    append(path, [one("q1")])
    path.write_text(path.read_text() + canonical(one("q2", grade=3)))  # corrected by hand, no final newline
    append(path, [one("q3")])
    assert [(j.query_id, j.grade) for j in Judgments.load(path)] == [("q1", 2), ("q2", 3), ("q3", 2)]
    path.write_text(path.read_text() + canonical(one("q4"))[:30])  # cut off mid-write
    loaded = Judgments.load(path)
    assert len(loaded) == 3 and loaded.cut_off == 4
    dropped = append(path, [one("q5")])
    assert dropped and [j.query_id for j in Judgments.load(path)] == ["q1", "q2", "q3", "q5"]
    fake_api.script("/chat/completions", Reply(200, judge_reply()))
    path.write_text(path.read_text() + canonical(one("q6"))[:30])
    report = judge_pairs(bundled_pairs(1), path, JudgeConfig(model="m"))
    assert "a cut-off last line" in report.summary() and f"{path}:5" in report.summary()


def canonical(j: Judgment) -> str:
    from pytest_retrieval_eval.types import canonical_json

    return canonical_json(j.to_dict())


def test_a_judgments_path_that_is_a_folder_is_one_line_naming_it(tmp_path, capsys):
    folder = tmp_path / "judgments"
    folder.mkdir()
    with pytest.raises(RetrievalEvalError) as caught:
        Judgments.load(folder)
    assert str(folder) in str(caught.value) and "folder" in str(caught.value) and "\n" not in str(caught.value)
    results = saved_results(tmp_path)
    assert cli(["judge", str(results), "--corpus", str(CORPUS), "--judgments", str(folder), "--model", "m"]) == 2
    err = capsys.readouterr().err
    assert str(folder) in err and "Traceback" not in err and len(err.strip().splitlines()) == 1
    assert cli(["report", str(results), "--judgments", str(folder)]) == 2
    err = capsys.readouterr().err
    assert str(folder) in err and len(err.strip().splitlines()) == 1


# --- the corpus a saved run searched ---------------------------------------------------------------

def saved_results(tmp_path, corpus_name: str | None = None, fingerprint: str | None = None):
    """A results.json of a keyword-like run over the bundled corpus: each question ranks four documents."""
    corpus = open_corpus(CORPUS).load()
    ids = [d.doc_id for d in corpus.docs]
    queries = [LabeledQuery(f"q{i}", f"what about {corpus.docs[i].title}?", {ids[i]: 1}) for i in range(4)]
    labeled = LabeledSet(tuple(queries), name="set")
    results = tuple(QueryResult(q.query_id, tuple(ids[i:i + 4])) for i, q in enumerate(queries))
    context = {"corpus": corpus_name or corpus.name, "corpus_fingerprint": fingerprint or corpus.fingerprint}
    run = RunResults([EvaluationResult("kw", labeled, results, context=context)])
    path = tmp_path / "out" / "results.json"
    path.parent.mkdir(exist_ok=True)
    path.write_text(results_text(run, GateSettings().for_run(run, DEFAULT_TABLE_MEASURES)))
    return path


def test_judge_without_corpus_reads_the_corpus_the_run_recorded(fake_api, tmp_path, monkeypatch, capsys):
    import shutil

    fake_api.script("/chat/completions", Reply(200, judge_reply()))
    shutil.copytree(CORPUS, tmp_path / "handbook")  # the folder the run searched, by its recorded name
    (tmp_path / "corpus").mkdir()  # another corpus where the default would look
    (tmp_path / "corpus" / "x.json").write_text(json.dumps({"doc_id": "x", "title": "X", "content": "other"}))
    results = saved_results(tmp_path, corpus_name="handbook")
    monkeypatch.chdir(tmp_path)
    assert cli(["judge", str(results), "--judgments", str(tmp_path / "j.jsonl"), "--model", "m"]) == 0
    out = capsys.readouterr().out
    assert "judged 12 pair(s)" in out and "handbook" in out
    assert len(Judgments.load(tmp_path / "j.jsonl")) == 12
    assert f"--corpus {tmp_path / 'handbook'}" in out or "--corpus handbook" in out  # the command printed works
    edited = saved_results(tmp_path, corpus_name="handbook", fingerprint="f" * 64)  # documents edited since
    assert cli(["judge", str(edited), "--judgments", str(tmp_path / "j.jsonl"), "--model", "m"]) == 0
    assert "handbook, the one the run searched (handbook), its documents changed since the run" in \
        capsys.readouterr().out


def test_judge_refuses_a_corpus_it_cannot_find_or_that_holds_none_of_the_pool(fake_api, tmp_path, monkeypatch,
                                                                             capsys):
    fake_api.script("/chat/completions", Reply(200, judge_reply()))
    results = saved_results(tmp_path, corpus_name="scifact/test", fingerprint="f" * 64)
    monkeypatch.chdir(tmp_path)
    assert cli(["judge", str(results), "--judgments", str(tmp_path / "j.jsonl"), "--model", "m"]) == 2
    err = capsys.readouterr().err
    assert "scifact/test" in err and "--corpus" in err and len(err.strip().splitlines()) == 1
    other = tmp_path / "other"
    other.mkdir()
    (other / "x.json").write_text(json.dumps({"doc_id": "x", "title": "X", "content": "nothing the run ranked"}))
    assert cli(["judge", str(results), "--corpus", str(other), "--judgments", str(tmp_path / "j.jsonl"),
                "--model", "m"]) == 2
    err = capsys.readouterr().err
    assert "none of the 12 pooled document(s)" in err and "--corpus" in err
    assert not fake_api.hits("/chat/completions")


# --- the answer's length -----------------------------------------------------------------------------

def test_every_judge_request_caps_the_answers_length(fake_api, tmp_path):
    from pytest_retrieval_eval.data.judge import MAX_ANSWER_TOKENS

    fake_api.script("/chat/completions", Reply(200, judge_reply()))
    judge_pairs(bundled_pairs(3), tmp_path / "j.jsonl", JudgeConfig(model="m", votes=2))
    bodies = [h.body for h in fake_api.hits("/chat/completions")]
    assert len(bodies) == 6 and all(b["max_tokens"] == MAX_ANSWER_TOKENS for b in bodies)
    assert 8 <= MAX_ANSWER_TOKENS <= 64


def test_a_candidate_answers_only_the_questions_as_its_judgment_read_them():
    from pytest_retrieval_eval.data.chunking import Chunking
    from pytest_retrieval_eval.data.corpus import Corpus
    from pytest_retrieval_eval.evaluation.judging import candidates_record
    from pytest_retrieval_eval.types import Doc

    corpus, candidates = Corpus((Doc("a", "alpha text"),)), Corpus((Doc("new", "alpha and beta"),))
    sha = candidates.docs[0].fingerprint
    judgments = Judgments([Judgment("q1", "new", 3, (3,), sha, JUDGE_A, "candidate", None,
                                    keyed("q1", "new", 3, "alpha, reworded since?").question_sha256),
                           Judgment("q2", "new", 2, (2,), sha, JUDGE_A, "candidate", None,
                                    keyed("q2", "new", 2, "beta?").question_sha256)])
    record = candidates_record(candidates, corpus, Chunking(), shown_path="c", weight=0.1, judgments=judgments,
                               judge=JUDGE_A, run=run_of(one=[["a"], ["b"]]))
    assert record["items"][0]["answers"] == [["q2", 2]]


def test_a_run_says_the_judgments_files_last_line_is_cut_off(tmp_path):
    path = tmp_path / "j.jsonl"
    path.write_text(canonical(one("q1", "c", 3)) + "\n" + canonical(one("q2", "e", 3))[:25])
    _, used = with_judgments(run_of(one=[["c"], ["e"]]), Judgments.load(path), shown_path="j.jsonl")
    assert used.used == 1
    assert any("the last line of j.jsonl (line 2) is cut off" in w for w in used.warnings())


# --- a turn is judged with its conversation ---------------------------------------------------------

HELP_DOCS = [{"doc_id": "vpn", "title": "VPN", "content": "Install the VPN client; it asks for a one-time code."},
             {"doc_id": "wifi", "title": "Wifi", "content": "Join the office wifi with your badge number."},
             {"doc_id": "codes", "title": "Codes", "content": "Codes come from the authenticator app."}]


def conversation_results(tmp_path, first: str = "How do I connect to the VPN from home?"):
    """A results.json over a help-center corpus: a standalone question and a conversation whose
    follow-up ("it") means what its first turn asked about; every question ranks all three documents."""
    from pytest_retrieval_eval.data.corpus import open_corpus as opened
    from pytest_retrieval_eval.types import Turn
    from conftest import write_docs

    folder = write_docs(tmp_path / "help", HELP_DOCS)
    corpus = opened(folder).load()
    queries = (LabeledQuery("q1", "How do I join the office wifi?", {"wifi": 1}),
               LabeledQuery("c1#1", first, {"vpn": 1}, conversation="c1", turn=1),
               LabeledQuery("c1#2", "and does it need a code?", {"codes": 1}, conversation="c1", turn=2,
                            history=(Turn("user", first), Turn("assistant", "Install the client."))))
    labeled = LabeledSet(queries, name="set")
    results = tuple(QueryResult(q.query_id, ("vpn", "wifi", "codes")) for q in queries)
    run = RunResults([EvaluationResult("kw", labeled, results,
                                       context={"corpus": corpus.name, "corpus_fingerprint": corpus.fingerprint})])
    path = tmp_path / "out" / "results.json"
    path.parent.mkdir(exist_ok=True)
    path.write_text(results_text(run, GateSettings().for_run(run, DEFAULT_TABLE_MEASURES)))
    return path, folder


def test_the_judge_reads_a_follow_up_with_the_conversation_before_it_and_a_question_as_it_is(fake_api, tmp_path):
    from pytest_retrieval_eval.data.judge import PROMPT_SHA256

    fake_api.script("/chat/completions", Reply(200, judge_reply()))
    results, folder = conversation_results(tmp_path)
    path = tmp_path / "j.jsonl"
    assert cli(["judge", str(results), "--corpus", str(folder), "--judgments", str(path), "--model", "m",
                "--depth", "3"]) == 0
    queries = {h.body["messages"][-1]["content"].split("\nQuery: ", 1)[1].split("\nPassage: ", 1)[0]
               for h in fake_api.hits("/chat/completions")}
    assert queries == {"How do I join the office wifi?", "How do I connect to the VPN from home?",
                       ("and does it need a code? (earlier in the conversation: user: How do I connect to the VPN "
                        "from home? / assistant: Install the client.)")}
    # the prompt's hash is the template's: one judge for every question, a turn or not
    assert {j.judge.prompt_sha256 for j in Judgments.load(path)} == {PROMPT_SHA256}


def test_a_standalone_questions_key_is_the_hash_of_its_text_as_judgments_files_always_held():
    from pytest_retrieval_eval.types import Turn, sha256_text

    q = LabeledQuery("q1", "  How do I join\nthe office wifi? ", {"wifi": 1})
    assert q.asked == q.question and q.asked_sha256 == sha256_text("How do I join the office wifi?")
    first = LabeledQuery("c1#1", "How do I join the office wifi?", {"wifi": 1}, conversation="c1", turn=1)
    assert first.asked_sha256 == q.asked_sha256  # a first turn is asked with nothing before it
    follow = LabeledQuery("c1#2", "and does it need a code?", {"codes": 1}, conversation="c1", turn=2,
                          history=(Turn("user", "How do I join the office wifi?"),))
    other = LabeledQuery("c2#2", "and does it need a code?", {"codes": 1}, conversation="c2", turn=2,
                         history=(Turn("user", "How do I connect to the VPN?"),))
    assert len({follow.asked_sha256, other.asked_sha256, sha256_text(follow.question)}) == 3


def test_a_follow_up_whose_earlier_turn_changed_is_asked_again_and_its_old_grades_left_out(fake_api, tmp_path, capsys):
    fake_api.script("/chat/completions", Reply(200, judge_reply()))
    results, folder = conversation_results(tmp_path)
    path = tmp_path / "j.jsonl"
    argv = ["judge", str(results), "--corpus", str(folder), "--judgments", str(path), "--model", "m", "--depth", "3"]
    assert cli(argv) == 0
    assert "judged 6 pair(s)" in capsys.readouterr().out  # each question's two unlabeled documents
    asked_before = len(fake_api.hits("/chat/completions"))
    conversation_results(tmp_path, first="How do I join the office wifi?")  # "it" is the wifi now: replaced 2
    from pytest_retrieval_eval.archive.saved import load_run

    _, used = with_judgments(load_run(results), Judgments.load(path), shown_path="j.jsonl")
    assert sorted(q for q, _ in used.reworded) == ["c1#1", "c1#1", "c1#2", "c1#2"]
    assert any("were made for another wording of their question (c1#1/" in w and w.endswith(
        "judge again to grade the question as it reads now (a turn: with the conversation before it)")
               for w in used.warnings())
    assert cli(argv) == 0
    out = capsys.readouterr().out
    assert "judged 4 pair(s)" in out and "2 already in the file" in out  # only q1's holes stand
    assert len(fake_api.hits("/chat/completions")) == asked_before + 4


def test_every_pair_a_judge_is_given_reads_a_turn_as_asked(tmp_path):
    from pytest_retrieval_eval.data.corpus import open_corpus as opened
    from pytest_retrieval_eval.evaluation.judging import candidate_pairs, labeled_pairs, pairs
    from pytest_retrieval_eval.evaluation.validation import hidden_labels
    from pytest_retrieval_eval.archive.saved import load_run

    results, folder = conversation_results(tmp_path)
    run, corpus = load_run(results), opened(folder).load()
    asked = {q.query_id: q.asked for q in run.evaluations[0].labeled.queries}
    assert asked["c1#2"].startswith("and does it need a code? (earlier in the conversation: user: How do I connect")
    given = [*pairs(pool(run, 3), corpus)[0], *labeled_pairs(run, corpus), *calibration_pairs(run, corpus),
             *(h.pair for h in hidden_labels(run, corpus, Judgments())), *candidate_pairs(corpus, run)]
    assert {p.query_id for p in given} == set(asked)
    assert all(p.question == asked[p.query_id] for p in given)


def test_the_judge_reads_a_title_once_where_the_text_begins_with_it():
    from pytest_retrieval_eval.evaluation.judging import doc_text
    from pytest_retrieval_eval.types import Doc

    heading = Doc("wifi", "Staff wifi\n\nStaff laptops join Acme-Staff.", title="Staff wifi")  # a Markdown article
    assert doc_text(heading) == "Staff wifi\n\nStaff laptops join Acme-Staff."
    other = Doc("vpn", "Install the client.", title="Connecting to the VPN")
    assert doc_text(other) == "Connecting to the VPN\nInstall the client."
    prefix = Doc("s", "Staff wifi and more\nText.", title="Staff")  # a title that only begins the first line
    assert doc_text(prefix).startswith("Staff\nStaff wifi")


# --- a local server: one request at a time, every failure counted by kind, a dead server --------------

def chat(content: str, finish: str = "stop"):
    return lambda request: {"model": request["model"], "choices": [
        {"index": 0, "message": {"role": "assistant", "content": content}, "finish_reason": finish}]}


def dead_url() -> str:
    """The base URL of a server of the tests' own that was stopped: nothing listens on its port."""
    from fake_api import FakeApi

    with FakeApi() as api:
        pass
    return api.url


def test_a_local_server_is_asked_one_pair_at_a_time_unless_told_and_the_run_says_why(fake_api, tmp_path):
    fake_api.script("/chat/completions", Reply(200, judge_reply(), delay=0.05))
    said = []
    report = judge_pairs(bundled_pairs(6), tmp_path / "j.jsonl", JudgeConfig(model="m"), progress=said.append)
    assert report.asked == 6 and fake_api.max_in_flight == 1  # a threading server: the client sent one at a time
    assert said == ["judging 6 pair(s) with m, 1 at a time (127.0.0.1 is a local or private server, which answers one "
                    "request at a time: more would wait in its queue past the timeout; --concurrency=N "
                    "(--retrieval-judge-concurrency=N in a pytest run) to send more)"]
    said.clear()
    judge_pairs(bundled_pairs(12), tmp_path / "j.jsonl", JudgeConfig(model="m", concurrency=3), progress=said.append)
    assert fake_api.max_in_flight == 3 and said[0].endswith(", 3 at a time (as asked with --concurrency=N "
                                                            "(--retrieval-judge-concurrency=N in a pytest run))")
    for url in ("http://localhost:8080/v1", "http://[::1]:8080/v1", "http://0.0.0.0:8080/v1", "http://10.0.0.7/v1",
                "http://ollama:11434/v1"):
        assert JudgeConfig(url=url).width()[0] == 1, url
    hosted = JudgeConfig(url="https://openrouter.ai/api/v1").width()
    assert hosted[0] == 8 and hosted[1].startswith("a hosted endpoint; --concurrency=N")


def test_against_a_server_answering_one_at_a_time_the_default_times_nothing_out(tmp_path):
    """llama.cpp's server with a small model: a request sent beside others waits in its queue, and
    eight at once left the last ones past the limit (31 of 60 timed out on the bundled eval)."""
    from fake_api import FakeApi

    with FakeApi(serial=True) as api:
        api.script("/chat/completions", Reply(200, judge_reply(), delay=0.3))
        fitted = judge_pairs(bundled_pairs(8), tmp_path / "j.jsonl", JudgeConfig(model="m", url=api.url, timeout=1.0))
        assert (fitted.asked, fitted.failed) == (8, {})
        crowded = judge_pairs(bundled_pairs(8), tmp_path / "crowded.jsonl",
                              JudgeConfig(model="m", url=api.url, timeout=1.0, concurrency=8))
    assert crowded.counts().get("timeout", 0) >= 3  # eight at once: what the default no longer does


def test_the_summary_counts_every_kind_of_failure_and_names_one_of_each_in_full(fake_api, tmp_path):
    fake_api.script("/chat/completions",
                    Reply(200, chat("##final score: 2")),
                    Reply(400, {"error": "the context is too long"}),
                    Reply(200, chat("The passage shares 3 words with the query")),
                    Reply(200, chat("M: 2, T: 1, the passage is about", "length")),  # cut before its grade
                    Reply(200, chat("##final score: 3\nM: 3, T:", "length")),  # cut after it: the grade is read
                    Reply(200, chat("##final score: 1"), delay=0.8),  # past the client's limit
                    Reply(200, chat("##final score: 1")))
    path = tmp_path / "j.jsonl"
    report = judge_pairs(bundled_pairs(7), path, JudgeConfig(model="m", timeout=0.4))
    assert report.counts() == {"timeout": 1, "status": 1, "no_grade": 1, "cut": 1}
    assert (report.asked, report.cut, report.cut_graded) == (3, 2, 1)
    first, *examples = report.summary().splitlines()
    assert first.startswith("judged 3 pair(s) with m (")
    assert ("4 failed (1 timed out (export RETRIEVAL_EVAL_TIMEOUT=120 to wait longer), 1 got an HTTP error, "
            "1 answer(s) stated no grade, 1 cut by the answer cap before a grade); run it again to ask for them; 2 "
            "answer(s) cut by the 32-token answer cap (finish_reason length), 1 of them graded before the cut: raise "
            "the cap with --max-tokens=N (--retrieval-judge-max-tokens=N in a pytest run)") in first
    assert [e.split(", e.g. ")[0] for e in examples] == ["  timed out", "  got an HTTP error", "  stated no grade",
                                                         "  cut by the answer cap before a grade"]
    timeout = examples[0]
    assert timeout.endswith("(not sent again: a local server answers one request at a time and still works on this "
                            "one; a copy would wait behind it)")  # whole, not cut mid-sentence
    assert "HTTP 400" in examples[1] and "the context is too long" in examples[1]
    assert "finish_reason length" in examples[3] and "M: 2, T: 1" in examples[3]
    assert sorted(j.grade for j in Judgments.load(path)) == [1, 2, 3]


def test_the_answer_cap_is_an_option_and_every_request_carries_it(fake_api, tmp_path, capsys):
    fake_api.script("/chat/completions", Reply(200, chat("##final score: 2", "length")))
    results = saved_results(tmp_path)
    assert cli(["judge", str(results), "--corpus", str(CORPUS), "--judgments", str(tmp_path / "j.jsonl"),
                "--model", "m", "--max-tokens", "200"]) == 0
    out = capsys.readouterr().out
    assert {h.body["max_tokens"] for h in fake_api.hits("/chat/completions")} == {200}
    assert "answer(s) cut by the 200-token answer cap (finish_reason length)" in out and "--max-tokens=N" in out


def test_a_server_that_is_not_there_stops_the_judging_in_one_line_naming_it(tmp_path):
    import time

    url = dead_url().replace("http://", f"http://user:{FAKE_KEY}@")
    started = time.perf_counter()
    with pytest.raises(RetrievalEvalError) as caught:
        judge_pairs(bundled_pairs(20), tmp_path / "j.jsonl", JudgeConfig(model="m", url=url))
    took = time.perf_counter() - started
    message = str(caught.value)
    assert took < 10 and "\n" not in message and FAKE_KEY not in message
    assert message.startswith("the judge's server http://") and "@127.0.0.1:" in message
    assert "is not answering: 3 calls in a row could not connect (ConnectError" in message
    assert "Start the server" in message


def test_the_judge_command_against_a_port_nothing_listens_on_stops_within_seconds(tmp_path, capsys):
    import time

    results = saved_results(tmp_path)
    started = time.perf_counter()
    code = cli(["judge", str(results), "--corpus", str(CORPUS), "--judgments", str(tmp_path / "j.jsonl"),
                "--model", "m", "--base-url", dead_url()])
    took = time.perf_counter() - started
    err = capsys.readouterr().err
    assert code == 2 and took < 30 and len(err.strip().splitlines()) == 1
    assert "is not answering: 3 calls in a row could not connect" in err


def test_a_call_that_could_not_connect_is_counted_and_named_in_the_summary(tmp_path):
    from pytest_retrieval_eval.data.judge import JudgingReport

    report = JudgingReport(JUDGE_A, failed={"q1/a": "POST http://127.0.0.1:9/v1/chat/completions failed after 3 "
                                                     "attempts: ConnectError: [Errno 111] Connection refused"},
                           kinds={"q1/a": "connect"})
    assert "1 failed (1 could not connect)" in report.summary()
    assert report.summary().splitlines()[1] == ("  could not connect, e.g. q1/a: POST http://127.0.0.1:9/v1/chat/"
                                                "completions failed after 3 attempts: ConnectError: [Errno 111] "
                                                "Connection refused")
