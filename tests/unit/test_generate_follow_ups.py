"""``generate --follow-ups=N`` against a real local chat-completions server: a two-turn
conversation per chunk (a question, then a follow-up that needs it), filtered as questions are,
the follow-up kept only when it reads as dependent; the chunk's own question untouched."""

from __future__ import annotations

import json

import pytest

from conftest import requires_hybrid
from fake_api import Reply
from projects import small_corpus
from pytest_retrieval_eval.cli import main as cli
from pytest_retrieval_eval.data.chunking import Chunking, chunk_corpus
from pytest_retrieval_eval.data.corpus import JsonFolder
from pytest_retrieval_eval.data.generate import (FOLLOW_UP_PROMPT, FOLLOW_UP_PROMPT_SHA256, GeneratorConfig,
                                                 generate_questions)
from pytest_retrieval_eval.data.labeled import load_questions_cache
from pytest_retrieval_eval.types import Turn

pytestmark = requires_hybrid  # chunking runs Haystack

SPLIT = Chunking(split_length=30, split_overlap=5)


def answers(follow_up: str = "And how long does it take?"):
    """A question for the question prompt, a question and ``follow_up`` for the conversation prompt."""
    def answer(request: dict) -> dict:
        words = request["messages"][-1]["content"].split()
        first = f"How does {words[3]} relate to {words[4]}?"
        content = ({"question": first, "follow_up": follow_up} if request["messages"][0]["content"] == FOLLOW_UP_PROMPT
                   else {"question": first})
        return {"choices": [{"index": 0, "message": {"role": "assistant", "content": json.dumps(content)}}]}
    return answer


def run(folder, path, follow_ups, **kw):
    corpus = JsonFolder(folder).load()
    return generate_questions(corpus, chunk_corpus(corpus, SPLIT), path, split=SPLIT, follow_ups=follow_ups,
                              config=GeneratorConfig(model="test-model", retries=1), **kw)


def test_follow_ups_write_two_turn_conversations_beside_the_questions(fake_api, tmp_path):
    folder = small_corpus(tmp_path / "corpus")
    fake_api.script("/chat/completions", Reply(200, answers()))
    path = tmp_path / "q.json"
    report = run(folder, path, 2)
    assert not report.failed and not report.filtered
    labeled = load_questions_cache(path)
    talks = [q for q in labeled if q.conversation is not None]
    assert len([q for q in labeled if q.conversation is None]) == 4  # every chunk's question, as without
    assert [q.query_id for q in talks] == ["alpha:0.chat1#1", "alpha:0.chat1#2", "alpha:1.chat1#1", "alpha:1.chat1#2"]
    first, second = talks[0], talks[1]
    assert second.history == (Turn("user", first.question),) and second.question == "And how long does it take?"
    assert (first.depends, second.depends) == (False, True)
    assert dict(second.relevant) == {"alpha": 1} and second.source["chunk_id"] == "alpha:0"
    assert json.loads(path.read_text())["generator"]["follow_up_prompt_sha256"] == FOLLOW_UP_PROMPT_SHA256
    assert len(fake_api.hits("/chat/completions")) == 6
    again = run(folder, path, 2)  # fresh: nothing asked again
    assert again.generated == [] and len(fake_api.hits("/chat/completions")) == 6


@pytest.mark.parametrize("follow_up, reason", [
    ("How long does the alpha passage installation take on each machine?", "follow_up_standalone"),
    ("Why?", "unparsable"),  # too short to be a question at all
])
def test_a_follow_up_that_stands_alone_is_dropped_and_counted(fake_api, tmp_path, follow_up, reason):
    folder = small_corpus(tmp_path / "corpus")
    fake_api.script("/chat/completions", Reply(200, answers(follow_up)))
    report = run(folder, tmp_path / "q.json", 1)
    assert report.filtered == {reason: ["alpha:0 (conversation)"]}
    assert not load_questions_cache(tmp_path / "q.json").has_conversations


def test_the_first_turn_passes_the_question_filters(fake_api, tmp_path):
    folder = small_corpus(tmp_path / "corpus")

    def about_the_passage(request: dict) -> dict:
        content = {"question": "What is the passage about here?", "follow_up": "Why does it matter?"}
        return {"choices": [{"index": 0, "message": {"role": "assistant", "content": json.dumps(content)}}]}

    fake_api.script("/chat/completions", Reply(200, about_the_passage))
    report = run(folder, tmp_path / "q.json", 1)
    assert sorted(report.filtered) == ["about_the_passage"] and sorted(report.filtered["about_the_passage"]) == [
        "alpha:0", "alpha:0 (conversation)", "alpha:1", "beta:0", "gamma:0"]


def test_cli_generate_follow_ups(fake_api, capsys, tmp_path):
    folder = small_corpus(tmp_path / "corpus")
    fake_api.script("/chat/completions", Reply(200, answers()))
    q = str(tmp_path / "q.json")
    assert cli(["generate", "--corpus", str(folder), "--questions", q, "--split-length", "30", "--split-overlap", "5",
                "--follow-ups", "1"]) == 0
    assert "generated 6" in capsys.readouterr().out
    assert cli(["generate", "--corpus", str(folder), "--questions", q, "--follow-ups", "-1"]) == 2
    assert "--follow-ups: a number of chunks, 0 or more" in capsys.readouterr().err


def test_a_question_is_no_repeat_of_a_follow_up_that_was_asked_after_another_question(fake_api, tmp_path):
    from pytest_retrieval_eval.data.label_lifecycle import remove_labels

    folder, path = small_corpus(tmp_path / "corpus"), tmp_path / "q.json"
    fake_api.script("/chat/completions", Reply(200, answers("And how long does it take?")))
    run(folder, path, 1)
    [gamma] = [q.query_id for q in load_questions_cache(path) if q.source.get("chunk_id") == "gamma:0"]
    remove_labels(path, [gamma])

    def the_follow_ups_text(request: dict) -> dict:  # asked alone now: "it" is whatever gamma is about
        content = json.dumps({"question": "And how long does it take?"})
        return {"choices": [{"index": 0, "message": {"role": "assistant", "content": content}}]}

    fake_api.script("/chat/completions", Reply(200, the_follow_ups_text))
    report = run(folder, path, 1)
    assert not report.filtered and len(report.generated) == 1
