"""A conversation in the reports: the page shows each conversation's turns together, in order,
each with the messages before it and its ranking; the table's line names the engines given the
last turn alone (terminal, results.md, page); a saved run renders the same page; a set of single
questions shows none of it."""

from __future__ import annotations

import io
import re
from html import unescape

from pytest_retrieval_eval import GateSettings, LabeledQuery, LabeledSet, RunResults, adapters, load_saved, results_json
from conftest import evaluate_engine
from pytest_retrieval_eval.gate.verdict import conclude, verdict_of
from pytest_retrieval_eval.report.files import markdown
from pytest_retrieval_eval.report.html import render
from pytest_retrieval_eval.report.terminal import LineWriter, Outcome, write_summary
from pytest_retrieval_eval.report.turns_given import line
from test_conversation_evaluation import Keyword, conversations, rewrite


def run_of(labeled: LabeledSet) -> RunResults:
    return RunResults([evaluate_engine(Keyword(), labeled),
                       evaluate_engine(adapters.function(rewrite, name="rewrite", conversation=True), labeled)])


def shuffled() -> LabeledSet:
    """The conversations' turns out of order (second turns first), as a file may list them."""
    queries = conversations().queries
    return LabeledSet(tuple(q for q in queries if q.turn == 2) + tuple(q for q in queries if q.turn == 1),
                      name="conversations")


def text(html: str) -> str:
    return re.sub(r"\s+", " ", unescape(re.sub(r"<[^>]+>", " ", html)))


def engine_section(html: str, engine: str) -> str:
    """The engine's rows, each history in its row as the page's script puts it there when it opens."""
    return opened(html).split(f'<section class="engine" data-engine="{engine}">')[1].split("</section>")[0]


def opened(html: str) -> str:
    """The page as its script leaves it: the history a row refers to (``data-said``) copied into
    the row from the block holding each history once."""
    kept = dict(re.findall(r'<template id="said-(\d+)">(.*?)</template>', html))
    return re.sub(r'<ol class="said" data-said="(\d+)"></ol>', lambda m: f'<ol class="said">{kept[m[1]]}</ol>', html)


def test_a_conversation_s_turns_are_shown_together_in_order_with_what_was_said_before():
    html = render(verdict_of(run_of(shuffled()), measures=["hit@1"]))
    rows = engine_section(html, "keyword")
    said = text(rows)
    first = said.index("conversation refund (2 turns searched)")
    assert first < said.index("turn 1 What about the refund window for laptops?", first)
    assert said.index("turn 1 What about the refund window for laptops?") < said.index(
        "assistant For laptops, the refund window is in the policy.") < said.index("turn 2 and for phones?")
    assert said.count("user What about the refund window for laptops?") == 0  # shown once, as its own turn
    assert rows.count('<tr class="conv"') == 5 and rows.count('data-conv="refund"') == 3
    assert said.index("conversation refund") < said.index("conversation shipping")  # the set's order of conversations
    assert "given the last turn alone (no retrieve_conversation): keyword" in text(html.split('id="per-query"')[0])


def test_a_turn_whose_earlier_turn_is_not_shown_carries_the_whole_history():
    labeled = LabeledSet(tuple(q for q in conversations().queries if q.turn == 2), name="follow-ups")
    said = text(engine_section(render(verdict_of(run_of(labeled), measures=["hit@1"])), "keyword"))
    assert ("conversation refund (1 turn searched) user What about the refund window for laptops? assistant For "
            "laptops, the refund window is in the policy. turn 2 and for phones?") in said


def test_each_history_is_written_once_however_many_engines_show_its_turn():
    labeled = LabeledSet(tuple(q for q in conversations().queries if q.turn == 2), name="follow-ups")
    reply = "For laptops, the refund window is in the policy."
    one = render(verdict_of(RunResults([evaluate_engine(Keyword(), labeled)]), measures=["hit@1"]))
    run = RunResults([evaluate_engine(Keyword(), labeled, name=f"engine-{i}") for i in range(4)])
    html = render(verdict_of(run, measures=["hit@1"]))
    assert one.count(reply) == html.count(reply) == 1 and html.count("What about the refund window for laptops?") == 1
    for i in range(4):  # and every engine's row of the turn shows it
        assert f"user What about the refund window for laptops? assistant {reply} turn 2 and for phones?" in text(
            engine_section(html, f"engine-{i}"))


def test_the_segment_table_shows_each_turn_segment_once():
    from pytest_retrieval_eval.data.segments import derive

    labeled = derive(conversations(), [])
    html = render(verdict_of(run_of(labeled), measures=["hit@1"], by=("tags",)))
    segments = re.findall(r"<tr><td>([^<]+?)(?: <span|</td>)", html.split('<table id="segments">')[1].split("</table>")[0])
    # first-turn's other half is follow-up, not "not first-turn" (follow-up's rows again); turn:1 is first-turn
    assert segments == ["all", "length:short", "first-turn", "follow-up", "depends", "standalone", "turn:2"]


def test_the_line_under_the_table_names_the_engines_given_the_last_turn_alone():
    verdict = verdict_of(run_of(conversations()), measures=["hit@1"])
    expected = "given the last turn alone (no retrieve_conversation): keyword"
    assert line(verdict.run) == expected
    out = io.StringIO()
    write_summary(LineWriter(out), Outcome(conclude(verdict.run, verdict.settings)), report=True, thresholds=0,
                  unavailable={})
    lines = out.getvalue().splitlines()
    assert lines.count(expected) == 1 and all(len(x) <= 88 for x in lines)
    assert lines.index(expected) < next(i for i, x in enumerate(lines) if x.startswith("keyword missed"))
    assert "\n" + expected + "\n" in markdown(verdict, {})


def test_the_last_turn_baseline_is_named_with_the_engines_given_the_last_turn_alone():
    from pytest_retrieval_eval import concatenated, last_turn

    labeled = conversations()
    mixed = RunResults([evaluate_engine(Keyword(), labeled), evaluate_engine(last_turn(Keyword()), labeled),
                        evaluate_engine(concatenated(Keyword()), labeled)])
    assert line(mixed) == "given the last turn alone: keyword (no retrieve_conversation); keyword-last (last_turn)"
    only = RunResults([evaluate_engine(last_turn(Keyword()), labeled), evaluate_engine(concatenated(Keyword()), labeled)])
    assert line(only) == "given the last turn alone: keyword-last (last_turn)"
    many = RunResults([evaluate_engine(Keyword(), labeled, name=f"engine-number-{i}") for i in range(5)]
                      + [evaluate_engine(last_turn(Keyword()), labeled)])
    assert len(line(many)) <= 88 and line(many).endswith("more") and "(last_turn)" in line(many, None)


def test_many_engines_given_the_last_turn_alone_stay_on_one_line():
    labeled = conversations()
    run = RunResults([evaluate_engine(Keyword(), labeled, name=f"engine-number-{i}") for i in range(9)])
    said = line(run)
    assert len(said) <= 88 and said.endswith("more") and "engine-number-0" in said
    assert line(run, None).count("engine-number-") == 9


def test_a_saved_run_renders_the_same_conversation_page(tmp_path):
    verdict = conclude(run_of(shuffled()), GateSettings())
    path = tmp_path / "results.json"
    path.write_text(results_json(verdict), encoding="utf-8")
    saved = load_saved(path)
    again = conclude(saved.run, saved.settings, recorded=saved.analysis)
    assert render(again) == render(verdict) and markdown(again, {}) == markdown(verdict, {})


def test_single_questions_show_no_conversation_and_no_line():
    labeled = LabeledSet((LabeledQuery("q1", "refund laptops", {"refund-laptops": 1}),), name="questions")
    verdict = verdict_of(RunResults([evaluate_engine(Keyword(), labeled)]), measures=["hit@1"])
    html = render(verdict)
    assert 'class="conv"' not in html.split("<body>")[1].split("<script>")[0] and "turn-no" not in html.split("<body>")[1]
    assert "given the last turn alone" not in html and "given the last turn alone" not in markdown(verdict, {})
    assert '<tr class="q" data-miss="0"' in html  # the row as it always was


def test_the_rewrite_a_team_s_rewriter_made_of_a_turn_shows_under_it():
    from pytest_retrieval_eval.engines.turns import rewritten

    labeled = conversations()
    team = rewritten(Keyword(), lambda turns: " ".join(t.text for t in turns if t.role == "user"), name="team")
    run = RunResults([evaluate_engine(team, labeled), evaluate_engine(Keyword(), labeled)])
    section = engine_section(render(verdict_of(run)), "team")
    assert "searched as: What about the refund window for laptops? and for phones?" in text(section)
    assert "searched as" not in engine_section(render(verdict_of(run)), "keyword")  # no rewrite, no line


def test_a_turn_s_human_rewrite_shows_under_it_beside_what_each_engine_searched():
    """The label's rewrite (what the oracle searches) is printed with its turn, as the question is."""
    from dataclasses import replace

    from pytest_retrieval_eval.engines.turns import oracle_rewrite

    labeled = conversations()
    told = LabeledSet(tuple(replace(q, rewrite="What about the refund window for phones?")
                            if q.query_id == "refund#2" else q for q in labeled.queries), name=labeled.name)
    run = RunResults([evaluate_engine(oracle_rewrite(Keyword(), name="oracle"), told),
                      evaluate_engine(Keyword(), told)])
    page = text(render(verdict_of(run)))
    assert page.count("a person's rewrite: What about the refund window for phones?") == 2  # one row per engine
    assert "a person's rewrite" not in text(render(verdict_of(run_of(labeled))))  # no rewrite, no line
