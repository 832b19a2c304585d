"""``judge --validate``: every human label (the labels' own, relevant and not, and a worksheet's
grades) hidden from a judge at the tests' own chat server and graded again; kappa with the base
rate, the confusion tables and Kendall's tau as printed, checked against numbers computed here
from the known grades; the result stored per judge fingerprint, and the floor's exit code."""

from __future__ import annotations

import pytest

from conftest import CORPUS, results_text
from fake_api import Reply
from pytest_retrieval_eval import QueryResult
from pytest_retrieval_eval.cli import main as cli
from pytest_retrieval_eval.data.corpus import open_corpus
from pytest_retrieval_eval.data.judgments import Judgment, Judgments, question_sha256, rewrite
from pytest_retrieval_eval.data.labeled import LabeledSet
from pytest_retrieval_eval.data.validation import load, validation_path
from pytest_retrieval_eval.data.worksheet import HUMAN
from pytest_retrieval_eval.analysis.result import EvaluationResult
from pytest_retrieval_eval.evaluation.results import RunResults
from pytest_retrieval_eval.rules.settings import GateSettings
from pytest_retrieval_eval.ir.measures import DEFAULT_TABLE_MEASURES
from pytest_retrieval_eval.ir.metrics import evaluate
from pytest_retrieval_eval.ir.agreement import cohen_kappa, kendall_tau
from pytest_retrieval_eval.types import LabeledQuery

DOCS = open_corpus(CORPUS).load().docs
IDS = [d.doc_id for d in DOCS]
QUESTIONS = {f"q{i}": f"what about {DOCS[i].title} ({i})?" for i in range(6)}
#: the labels: per question one relevant document and one judged not relevant
LABELS = {f"q{i}": {IDS[i]: 1, IDS[i + 10]: 0} for i in range(6)}
#: a worksheet's grades (the judge's 0-3 scale) of documents the labels do not judge
SHEET = {("q2", IDS[20]): 3, ("q2", IDS[21]): 1, ("q3", IDS[22]): 3, ("q3", IDS[23]): 0}
#: where the good judge disagrees: (question, document) -> its grade
WRONG = {("q0", IDS[0]): 0, ("q1", IDS[11]): 2, ("q2", IDS[20]): 1}
#: each engine's ranking of a question: the worksheet's documents after the labels' two; sparse
#: ranks q1's relevant document first where dense ranks the one judged wrongly first, so the judge
#: reorders them
RANKINGS = {"kw": lambda i: [IDS[i], IDS[i + 10], *sheet_docs(i), IDS[24]],
            "dense": lambda i: [IDS[i + 10], IDS[i], *sheet_docs(i), IDS[24]],
            "sparse": lambda i: [IDS[i], IDS[24], IDS[i + 10]] if i == 1 else [IDS[i + 10], IDS[i], *sheet_docs(i)]}


def sheet_docs(i: int) -> list[str]:
    return [d for q, d in SHEET if q == f"q{i}"]

def agreeing(qid: str, doc: str) -> int:
    """The grade of a judge that agrees with every human label (the labels' 1 is a 3)."""
    if (qid, doc) in SHEET:
        return SHEET[(qid, doc)]
    return 3 if LABELS[qid].get(doc) else 0


def grades_by_model(request: dict) -> dict:
    """The chat server's judge: ``good`` agrees except on ``WRONG``; ``bad`` says the opposite."""
    content = request["messages"][-1]["content"]
    query = content.split("\nQuery: ", 1)[1].split("\nPassage: ", 1)[0]
    passage = content.split("\nPassage: ", 1)[1].split("\n\nSplit this problem", 1)[0]
    qid = next(q for q, text in QUESTIONS.items() if text == query)
    doc = next(d.doc_id for d in DOCS if " ".join(f"{d.title}\n{d.content}".split())[:4000] == passage)
    grade = WRONG.get((qid, doc), agreeing(qid, doc))
    if request["model"] == "bad":
        grade = 3 - agreeing(qid, doc)
    return {"id": "x", "object": "chat.completion", "model": request["model"],
            "choices": [{"index": 0, "message": {"role": "assistant", "content": f"##final score: {grade}"},
                         "finish_reason": "stop"}]}


def saved(tmp_path):
    """A results.json of three engines over the bundled corpus, and a judgments file holding a
    worksheet's grades."""
    labeled = LabeledSet(tuple(LabeledQuery(q, QUESTIONS[q], LABELS[q]) for q in QUESTIONS), name="set")
    context = {"corpus": "handbook", "corpus_fingerprint": open_corpus(CORPUS).load().fingerprint}
    run = RunResults([EvaluationResult(engine, labeled, tuple(QueryResult(f"q{i}", tuple(rank(i))) for i in range(6)),
                                       context=context) for engine, rank in RANKINGS.items()])
    results = tmp_path / "results.json"
    results.write_text(results_text(run, GateSettings().for_run(run, DEFAULT_TABLE_MEASURES)))
    by_id = {d.doc_id: d for d in DOCS}
    judgments = tmp_path / "judgments.jsonl"
    rewrite(judgments, Judgments([Judgment(q, d, g, (g,), by_id[d].fingerprint, HUMAN, "human", None,
                                           question_sha256(QUESTIONS[q]), 4) for (q, d), g in SHEET.items()]))
    return results, judgments


def validate(results, judgments, model: str) -> list[str]:
    return ["judge", str(results), "--validate", "--sample=100", f"--corpus={CORPUS}", f"--judge-model={model}",
            f"--judgments={judgments}"]


def test_validate_prints_kappa_the_base_rate_the_confusion_tables_and_kendalls_tau(fake_api, tmp_path, capsys):
    fake_api.script("/chat/completions", Reply(200, grades_by_model))
    results, judgments = saved(tmp_path)
    assert cli(validate(results, judgments, "good")) == 0
    out = capsys.readouterr().out
    pairs = [(q, d, g, False) for q, docs in LABELS.items() for d, g in docs.items()]
    pairs += [(q, d, g, True) for (q, d), g in SHEET.items()]
    human = [int(g >= 2) if sheet else int(g >= 1) for _, _, g, sheet in pairs]
    judged = [int(WRONG.get((q, d), agreeing(q, d)) >= 2) for q, d, _, _ in pairs]
    kappa = cohen_kappa(human, judged)
    assert len(fake_api.hits("/chat/completions")) == 16 and 0.4 < kappa < 0.9
    assert "on 16 of the 16 human label(s) hidden from it" in out
    assert f"Cohen's kappa {kappa:.2f}, agreement {sum(map(int.__eq__, human, judged)) / 16:.0%}" in out
    assert f"base rate: {sum(human) / 16:.0%} of the 16 human labels relevant" in out and "base rate: 50%" in out
    lines = out.splitlines()
    start = lines.index("human \\ judge     0     1     2     3")
    assert lines[start:start + 7] == ["human \\ judge     0     1     2     3",
                                      "            0     5     0     1     0",  # q1's not relevant judged a 2
                                      "            1     1     0     0     5",  # q0's relevant judged a 0
                                      "sheet \\ judge     0     1     2     3",
                                      "            0     1     0     0     0",
                                      "            1     0     1     0     0",
                                      "            3     0     1     0     1"]  # q2's 3 judged a 1
    # the engines on the human labels (the worksheet's filling its holes) and on the judge's in their place
    qrels = {q: {**{d: int(g >= 2) for (sq, d), g in SHEET.items() if sq == q}, **LABELS[q]} for q in QUESTIONS}
    swapped = {q: {d: int(WRONG.get((q, d), agreeing(q, d)) >= 2) for d in docs} for q, docs in qrels.items()}
    means = {}
    for engine, rank in RANKINGS.items():
        run = {f"q{i}": {d: 9.0 - r for r, d in enumerate(rank(i))} for i in range(6)}
        means[engine] = (evaluate(qrels, run, ["ndcg@10"])["ndcg@10"], evaluate(swapped, run, ["ndcg@10"])["ndcg@10"])
    by_human = sorted(means, key=lambda e: -means[e][0])
    tau = kendall_tau([means[e][0] for e in by_human], [means[e][1] for e in by_human])
    assert f"engines by ndcg@10, human labels: {' > '.join(f'{e} {means[e][0]:.3f}' for e in by_human)}" in out
    assert by_human != sorted(means, key=lambda e: -means[e][1]) and abs(tau) < 1  # the judge swaps two engines
    assert f"  the order changes (Kendall's tau {tau:.2f})" in lines
    assert "meets the floor (Cohen's kappa >= 0.4" in out


def test_the_stored_validation_is_keyed_by_the_judges_fingerprint_and_a_judge_below_the_floor_fails(
        fake_api, tmp_path, capsys):
    fake_api.script("/chat/completions", Reply(200, grades_by_model))
    results, judgments = saved(tmp_path)
    assert cli(validate(results, judgments, "good")) == 0
    good = Judgments.load(judgments).current()
    stored = load(validation_path(judgments))
    assert validation_path(judgments) == tmp_path / "judgments.validation.json"
    assert list(stored) == [good.fingerprint] and stored[good.fingerprint]["judge"]["model"] == "good"
    first = stored[good.fingerprint]
    assert first["passed"] and first["pairs"] == first["hidden"] == 16 and first["base_rate"] == 0.5
    assert first["confusion"]["sheet"]["3"] == {"0": 0, "1": 1, "2": 0, "3": 1}
    capsys.readouterr()

    assert cli(validate(results, judgments, "bad")) == 1  # every label the other way round
    out = capsys.readouterr().out
    bad = Judgments.load(judgments).current()
    assert f"judge {bad.fingerprint} FAILS the floor" in out and "Cohen's kappa -1.00" in out
    stored = load(validation_path(judgments))
    assert set(stored) == {good.fingerprint, bad.fingerprint} and not stored[bad.fingerprint]["passed"]
    assert stored[bad.fingerprint]["kappa"] == pytest.approx(-1.0) and stored[good.fingerprint] == first

    asked = len(fake_api.hits("/chat/completions"))
    assert cli(validate(results, judgments, "good")) == 0  # every grade in the file: nothing asked again
    assert len(fake_api.hits("/chat/completions")) == asked
    assert load(validation_path(judgments)) == stored


def test_a_smaller_sample_is_a_seeded_uniform_draw_of_the_hidden_labels(fake_api, tmp_path, capsys):
    from pytest_retrieval_eval.evaluation.validation import draw, hidden_labels
    from pytest_retrieval_eval.archive.saved import load_run

    fake_api.script("/chat/completions", Reply(200, grades_by_model))
    results, judgments = saved(tmp_path)
    hidden = hidden_labels(load_run(results), open_corpus(CORPUS).load(), Judgments.load(judgments))
    assert sorted((h.pair.query_id, h.pair.doc_id, h.human, h.sheet) for h in hidden) == sorted(
        [(q, d, g, False) for q, docs in LABELS.items() for d, g in docs.items()]
        + [(q, d, g, True) for (q, d), g in SHEET.items()])
    drawn = draw(hidden, 6)
    assert len(drawn) == 6 and drawn == draw(hidden, 6) and drawn != draw(hidden, 6, seed=1)
    human = [int(h.human >= 2) if h.sheet else int(h.human >= 1) for h in drawn]
    judged = [int(WRONG.get((h.pair.query_id, h.pair.doc_id), agreeing(h.pair.query_id, h.pair.doc_id)) >= 2)
              for h in drawn]
    kappa = cohen_kappa(human, judged)
    argv = validate(results, judgments, "good")
    assert cli([*argv[:3], "--sample=6", *argv[4:]]) == (0 if kappa >= 0.4 else 1)
    out = capsys.readouterr().out
    assert "on 6 of the 16 human label(s) hidden from it" in out and len(fake_api.hits("/chat/completions")) == 6
    assert f"Cohen's kappa {kappa:.2f}" in out and f"base rate: {sum(human) / 6:.0%} of the 6 human labels" in out


def test_a_panel_is_validated_like_one_judge_with_its_members_agreement_stored_and_printed(fake_api, tmp_path, capsys):
    """``good`` and ``twin`` grade alike and ``bad`` the other way round: the panel's majority is
    ``good``'s, so its kappa is too; stored under the panel's own fingerprint, nothing asked twice."""
    from pytest_retrieval_eval.data.judges import Panel
    from pytest_retrieval_eval.ir.agreement import fleiss_kappa

    fake_api.script("/chat/completions", Reply(200, grades_by_model))
    results, judgments = saved(tmp_path)
    for model in ("good", "twin", "bad"):
        cli(validate(results, judgments, model))
    members = Judgments.load(judgments).judges(people=False)
    capsys.readouterr()
    asked = len(fake_api.hits("/chat/completions"))
    argv = validate(results, judgments, "good")
    assert cli([*argv[:-2], "--judges=all", argv[-1]]) == 0
    assert len(fake_api.hits("/chat/completions")) == asked  # every member's grade is in the file
    out = capsys.readouterr().out
    panel = Panel(tuple(members))
    stored = load(validation_path(judgments))
    assert stored[panel.fingerprint]["kappa"] == stored[members[0].fingerprint]["kappa"]  # good's
    assert stored[panel.fingerprint]["judge"]["panel"][0]["model"] == "bad" and stored[panel.fingerprint]["passed"]
    # the members on the 16 hidden labels: good and twin relevant alike, bad the other way round
    good = [int(WRONG.get((q, d), agreeing(q, d)) >= 2) for q, docs in LABELS.items() for d in docs]
    good += [int(WRONG.get((q, d), agreeing(q, d)) >= 2) for q, d in SHEET]
    bad = [int(3 - agreeing(q, d) >= 2) for q, docs in LABELS.items() for d in docs]
    bad += [int(3 - agreeing(q, d) >= 2) for q, d in SHEET]
    fleiss = fleiss_kappa([[2 * (1 - g) + (1 - b), 2 * g + b] for g, b in zip(good, bad)])
    assert "validation of a panel of 3 by majority (a tie to the lower grade): bad (temperature 0" in out
    assert f"the panel's members: Fleiss' kappa {fleiss:.2f} on relevance" in out and "over the 16 pair(s) all 3" in out
    assert "good ~ twin 1.00" in out
    assert stored[panel.fingerprint]["members_agreement"]["fleiss"] == pytest.approx(fleiss, abs=1e-6)
    assert f"judge {panel.fingerprint} meets the floor" in out
    capsys.readouterr()
    assert cli([*argv[:-2], "--judges=all", "--model=good", argv[-1]]) == 2
    assert "--judges names the panel's judges, each with its own model: leave out --model" in capsys.readouterr().err


def test_judge_with_a_panel_has_each_member_grade_the_holes_it_lacks_and_says_how_they_agree(
        fake_api, tmp_path, capsys):
    from pytest_retrieval_eval.data.judges import Panel

    fake_api.script("/chat/completions", Reply(200, grades_by_model))
    results, judgments = saved(tmp_path)
    hole = ["judge", str(results), f"--corpus={CORPUS}", f"--judgments={judgments}", "--judge-depth=5"]
    assert cli([*hole, "--judge-model=good"]) == 0
    one = len(fake_api.hits("/chat/completions"))
    assert cli([*hole, "--judge-model=bad", "--judge-depth=3"]) == 0  # bad grades the top 3 only
    members = Judgments.load(judgments).judges(people=False)
    capsys.readouterr()
    asked = len(fake_api.hits("/chat/completions"))
    assert cli([*hole, "--judges=all"]) == 0
    out = capsys.readouterr().out
    assert len(fake_api.hits("/chat/completions")) - asked == one - (asked - one)  # bad's missing top 4-5 only
    panel = Panel(tuple(members))
    file = Judgments.load(judgments)
    both = {(j.query_id, j.doc_id) for j in file if j.kind == "hole" and j.judge == members[0]}
    assert both == {(j.query_id, j.doc_id) for j in file if j.kind == "hole" and j.judge == members[1]}
    assert "the panel's members: Fleiss' kappa" in out and f"over the {one} pair(s) all 2 graded" in out
    assert f"--judges={','.join(m.fingerprint for m in panel.members)}" in out  # validate the panel, not a member
