"""``judge --recheck=N``: a judge's stored grades asked again at the tests' own chat server, whose
model changes its grades under the same name; the agreement as printed and stored per judge, the
floor's exit code, and the warning in every run that uses a drifted judge's grades."""

from __future__ import annotations

import json

import pytest

from conftest import CORPUS, results_text
from fake_api import Reply, judge_reply, umbrela_grade
from pytest_retrieval_eval import QueryResult
from pytest_retrieval_eval.cli import main as cli
from pytest_retrieval_eval.data.corpus import open_corpus
from pytest_retrieval_eval.data.grades import is_judged_relevant
from pytest_retrieval_eval.data.judges import Judge
from pytest_retrieval_eval.data.judgments import Judgments
from pytest_retrieval_eval.data.labeled import LabeledSet
from pytest_retrieval_eval.data.recheck import RECHECK_FLOOR, Recheck, draw, load, recheck_path
from pytest_retrieval_eval.evaluation.judging import with_judgments_file
from pytest_retrieval_eval.analysis.result import EvaluationResult
from pytest_retrieval_eval.evaluation.results import RunResults
from pytest_retrieval_eval.archive.saved import load_run
from pytest_retrieval_eval.rules.settings import GateSettings
from pytest_retrieval_eval.ir.measures import DEFAULT_TABLE_MEASURES
from pytest_retrieval_eval.ir.agreement import cohen_kappa
from pytest_retrieval_eval.types import LabeledQuery

DOCS = open_corpus(CORPUS).load().docs
IDS = [d.doc_id for d in DOCS]
QUESTIONS = {f"q{i}": f"{DOCS[i].title}: what does it say?" for i in range(6)}


def saved(tmp_path):
    """A results.json over the bundled corpus: each question labels one document, and the engine
    ranks four it does not judge (the holes the judge grades)."""
    labeled = LabeledSet(tuple(LabeledQuery(q, QUESTIONS[q], {IDS[i]: 1}) for i, q in enumerate(QUESTIONS)), name="set")
    context = {"corpus": "handbook", "corpus_fingerprint": open_corpus(CORPUS).load().fingerprint}
    run = RunResults([EvaluationResult("kw", labeled, tuple(
        QueryResult(f"q{i}", (IDS[i], *IDS[i + 7:i + 11])) for i in range(6)), context=context)])
    results = tmp_path / "results.json"
    results.write_text(results_text(run, GateSettings().for_run(run, DEFAULT_TABLE_MEASURES)))
    return results, tmp_path / "judgments.jsonl"


class Provider:
    """The chat server's model ``judge-1``: UMBRELA-style grades (``umbrela_grade``) until the
    provider updates it in place (``updated``), after which it calls relevant what it called not."""

    def __init__(self) -> None:
        self.updated = False

    def grade(self, query: str, passage: str) -> int:
        grade = umbrela_grade(query, passage)
        return (0 if is_judged_relevant(grade) else 3) if self.updated else grade


def judge(results, judgments, *extra: str) -> list[str]:
    return ["judge", str(results), f"--corpus={CORPUS}", "--model=judge-1", f"--judgments={judgments}", *extra]


def test_an_unchanged_judge_gives_its_stored_grades_and_the_file_is_untouched(fake_api, tmp_path, capsys):
    provider = Provider()
    fake_api.script("/chat/completions", Reply(200, judge_reply(provider.grade)))
    results, judgments = saved(tmp_path)
    assert cli(judge(results, judgments)) == 0
    stored = Judgments.load(judgments)
    holes = len(stored)
    assert holes == 24
    before, asked = judgments.read_bytes(), len(fake_api.hits("/chat/completions"))
    capsys.readouterr()
    assert cli(judge(results, judgments, "--recheck=100")) == 0
    out = capsys.readouterr().out
    assert len(fake_api.hits("/chat/completions")) == asked + holes  # every stored grade asked again
    assert judgments.read_bytes() == before  # the runs keep reading what they read
    assert f"on {holes} of its {holes} stored grade(s)" in out
    assert f"the same grade on 100% ({holes}/{holes}), the same relevance on 100% ({holes}/{holes})" in out
    fingerprint = stored.current().fingerprint
    assert f"judge {fingerprint} gives the grades it stored (the same relevance on at least 90% of the pairs, and on " \
           "at least 50% of those stored as relevant and of those stored as not)" in out
    record = load(recheck_path(judgments))[fingerprint]
    assert recheck_path(judgments) == tmp_path / "judgments.recheck.json"
    assert (record["pairs"], record["stored"], record["agreement"], record["exact"], record["drifted"]) == (
        holes, holes, 1.0, 1.0, False)
    assert record["floor"] == RECHECK_FLOOR and record["judge"]["model"] == "judge-1"


def test_a_judge_updated_under_its_name_is_drifted_and_every_run_using_its_grades_says_so(fake_api, tmp_path, capsys):
    provider = Provider()
    fake_api.script("/chat/completions", Reply(200, judge_reply(provider.grade)))
    results, judgments = saved(tmp_path)
    assert cli(judge(results, judgments)) == 0
    stored = Judgments.load(judgments)
    current = stored.current()
    grades = [j.grade for j in stored]
    provider.updated = True  # the provider updates the model; its name, and so the fingerprint, stay
    capsys.readouterr()
    assert cli(judge(results, judgments, "--recheck=100")) == 1
    out = capsys.readouterr().out
    now = [0 if is_judged_relevant(g) else 3 for g in grades]
    exact = sum(a == b for a, b in zip(grades, now))
    assert exact == 0 and f"the same grade on 0% (0/24), the same relevance on 0% (0/24)" in out
    assert f"judge {current.fingerprint} DRIFTED: graded again on " in out
    assert "of its stored pairs, it gave the same relevance on 0% of them, below 90%: the model changed" in out
    command = out.split("To grade again into a new file: ", 1)[1].strip()
    assert command == (f"python -m pytest_retrieval_eval judge {results} --judgments={tmp_path / 'judgments.rejudged.jsonl'} "
                       f"--corpus={CORPUS} --model=judge-1")
    import shlex

    assert cli(shlex.split(command)[3:]) == 0  # as printed: the run's holes graded into a new file
    assert len(Judgments.load(tmp_path / "judgments.rejudged.jsonl")) == 24
    record = load(recheck_path(judgments))[current.fingerprint]
    assert record["drifted"] and record["agreement"] == 0.0

    run = load_run(results)
    run, used = with_judgments_file(run, judgments, shown_path="judgments.jsonl")
    [warning] = [w for w in used.warnings() if "drifted" in w]
    assert warning.startswith(f"judge judge-1 ({current.fingerprint}) drifted: graded again on 24 of its stored pairs (")
    assert "it gave the same relevance on 0% of them, below 90%: the model changed under the same name" in warning
    assert run.judgments["recheck"]["drifted"]  # results.json keeps what the warning rests on
    assert cli(["report", str(results), f"--judgments={judgments}", f"--corpus={CORPUS}"]) in (0, 1)
    assert f"warning: judge judge-1 ({current.fingerprint}) drifted" in " ".join(capsys.readouterr().out.split())

    provider.updated = False  # back as it was: a recheck that meets the floor clears the mark
    assert cli(judge(results, judgments, "--recheck=100")) == 0
    run = load_run(results)
    run, used = with_judgments_file(run, judgments, shown_path="j")
    assert not [w for w in used.warnings() if "drifted" in w]
    assert "recheck" not in run.judgments


def test_a_smaller_recheck_is_a_seeded_draw_of_the_stored_grades(fake_api, tmp_path, capsys):
    fake_api.script("/chat/completions", Reply(200, judge_reply(Provider().grade)))
    results, judgments = saved(tmp_path)
    assert cli(judge(results, judgments)) == 0
    asked = len(fake_api.hits("/chat/completions"))
    assert cli(judge(results, judgments, "--recheck=5")) == 0
    assert len(fake_api.hits("/chat/completions")) == asked + 5
    assert "on 5 of its 24 stored grade(s) (a seeded draw of --recheck=5)" in capsys.readouterr().out
    items = list(range(24))
    assert draw(items, 5) == draw(items, 5) != draw(items, 5, seed=1) and len(draw(items, 5)) == 5


def test_a_recheck_of_a_judge_the_file_does_not_hold_is_refused_naming_the_flag(fake_api, tmp_path, capsys):
    fake_api.script("/chat/completions", Reply(200, judge_reply()))
    results, judgments = saved(tmp_path)
    assert cli(judge(results, judgments)) == 0
    assert cli(["judge", str(results), f"--corpus={CORPUS}", "--model=judge-2", f"--judgments={judgments}",
                "--recheck=3"]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"error: {judgments}: no grade in the file by the judge these settings ask for (judge-2 ")
    assert "give the judge's own --model=NAME, --temperature and --votes" in err


def test_the_recheck_figures_are_exact_relevance_and_kappa_of_the_stored_against_the_new():
    grades = [(0, 0), (1, 1), (2, 3), (3, 3), (1, 2), (0, 1), (3, 0), (2, 2), (0, 0), (1, 0)]
    r = Recheck(Judge("m", "p"), grades, stored=40)
    assert r.exact == 5 / 10
    rel = [(int(a >= 2), int(b >= 2)) for a, b in grades]
    assert r.agreement == sum(a == b for a, b in rel) / 10 == 0.8
    assert r.kappa == pytest.approx(cohen_kappa([a for a, _ in rel], [b for _, b in rel]))
    assert r.drifted  # 80% < 90%
    record = r.record("2026-01-02T03:04:05Z")
    assert record["grades"] == {"0": {"0": 2, "1": 1}, "1": {"0": 1, "1": 1, "2": 1}, "2": {"2": 1, "3": 1},
                                "3": {"0": 1, "3": 1}}
    assert json.loads(json.dumps(record))["agreement"] == 0.8
    assert not Recheck(Judge("m", "p"), [(3, 3)] * 9 + [(2, 1)]).drifted  # 90% meets the floor


def test_a_judge_that_now_grades_everything_not_relevant_is_drifted_though_most_pairs_agree():
    """Two relevant pairs of twenty stored; the judge now says 0 to all: 90% agree, the floor of
    the share alone would pass it, the relevant ones it keeps (0 of 2) do not."""
    lazy = Recheck(Judge("m", "p"), [(3, 0), (2, 0)] + [(0, 0)] * 18, stored=20)
    assert lazy.agreement == 0.9 and lazy.kept(True) == 0.0 and lazy.kept(False) == 1.0
    assert lazy.drifted and lazy.why_drifted == "of those it stored as relevant, it grades only 0% so now, below 50%"
    assert lazy.record("2026-01-02T03:04:05Z")["why"] == lazy.why_drifted
    # one borderline flip among the relevant ones is a temperature-0 judge's noise, not a drift
    assert not Recheck(Judge("m", "p"), [(3, 3), (2, 1)] + [(0, 0)] * 18).drifted
    # the server naming another model answering is a drift whatever the grades
    other = Recheck(Judge("m", "p"), [(0, 0)] * 5, answered_by=Judge("m-2025-06", "p"))
    assert other.why_drifted == "the server names another model as answering (m-2025-06)"


def test_a_turn_is_asked_again_with_its_conversation_and_not_once_the_conversation_changed(fake_api, tmp_path, capsys):
    from pytest_retrieval_eval.types import Turn

    fake_api.script("/chat/completions", Reply(200, judge_reply()))

    def turns(reply: str):
        first = f"{DOCS[0].title}: what does it say?"
        labeled = LabeledSet((LabeledQuery("c1#1", first, {IDS[0]: 1}, conversation="c1", turn=1),
                              LabeledQuery("c1#2", "and what else?", {IDS[1]: 1}, conversation="c1", turn=2,
                                           history=(Turn("user", first), Turn("assistant", reply)))), name="set")
        context = {"corpus": "handbook", "corpus_fingerprint": open_corpus(CORPUS).load().fingerprint}
        run = RunResults([EvaluationResult("kw", labeled, (QueryResult("c1#1", (IDS[0], *IDS[7:9])),
                                                           QueryResult("c1#2", (IDS[1], *IDS[7:9]))), context=context)])
        results = tmp_path / "results.json"
        results.write_text(results_text(run, GateSettings().for_run(run, DEFAULT_TABLE_MEASURES)))
        return results, tmp_path / "judgments.jsonl"

    results, judgments = turns("It says a lot.")
    assert cli(judge(results, judgments)) == 0
    asked = len(fake_api.hits("/chat/completions"))
    assert cli(judge(results, judgments, "--recheck=100")) == 0
    again = [h.body["messages"][-1]["content"] for h in fake_api.hits("/chat/completions")[asked:]]
    assert sum("Query: and what else? (earlier in the conversation: user: " in c and "assistant: It says a lot.)" in c
               for c in again) == 2  # the follow-up's two holes, asked as they were graded
    capsys.readouterr()
    turns("It says nothing.")  # the conversation before the follow-up changed: its grades are another question's
    assert cli(judge(results, judgments, "--recheck=100")) == 0
    assert "on 2 of its 2 stored grade(s)" in capsys.readouterr().out  # the first turn's alone
