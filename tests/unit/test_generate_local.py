"""Question generation with the models teams run: a local server without a key, answers in the
shapes real models give, and an endpoint that refuses ``response_format``; all against the
tests' own chat-completions server (fake_api), through the real httpx client."""

from __future__ import annotations

import json

import pytest

from conftest import CORPUS
from fake_api import Reply
from pytest_retrieval_eval.cli import main as cli
from pytest_retrieval_eval.data.generate import UnparsableAnswer, question_text
from pytest_retrieval_eval._http import is_private

Q = "How long do I have to send a lamp back?"
WORDS = ["lamps", "saddles", "chargers", "pedals", "helmets", "panniers"]


@pytest.mark.parametrize("content", [
    json.dumps({"question": Q}),
    json.dumps({"question": Q, "answer": "30 days", "difficulty": "easy"}),  # extra keys ignored
    f"```json\n{json.dumps({'question': Q})}\n```",
    f"```\n{json.dumps({'question': Q})}\n```",
    Q,
    f"  {Q}  \n",
    f'"{Q}"',
    f"“{Q}”",
    f"Question: {Q}",
    f"**Question:** {Q}",
    f"Q: {Q}",
    f"Here is a question about the passage:\n\n{Q}",
    f"Here's a question a user might ask:\n\"{Q}\"",
    f"Sure! Here is one question:\n**{Q}**",
    f"Here is a question about the passage:\nQuestion: {Q}",
])
def test_the_shapes_models_answer_in(content):
    assert question_text(content) == Q


@pytest.mark.parametrize("content, why", [
    ("", "no question"),
    ("Here is a question about the passage:", "only a preamble"),
    (json.dumps({"answer": "30 days"}), "JSON without a 'question'"),
    ("The lamp.\nThe charger.\nThe saddle.", "no question"),
    ("Q?", "too short"),
])
def test_what_is_not_a_question_is_dropped_with_its_reason(content, why):
    with pytest.raises(UnparsableAnswer, match=why):
        question_text(content)


@pytest.mark.parametrize("url, private", [
    ("http://localhost:11434/v1", True), ("http://127.0.0.1:8000/v1", True), ("http://[::1]:8080/v1", True),
    ("http://192.168.1.20:1234/v1", True), ("http://10.0.0.5/v1", True), ("http://ollama:11434/v1", True),
    ("http://gpu-box.local:8000/v1", True), ("https://openrouter.ai/api/v1", False),
    ("https://api.openai.com/v1", False), ("http://8.8.8.8/v1", False),
])
def test_which_endpoints_count_as_local_or_private(url, private):
    assert is_private(url) is private


def chat(content_of):
    def answer(request):
        passage = request["messages"][-1]["content"]
        return {"id": "x", "object": "chat.completion", "model": request.get("model"),
                "choices": [{"index": 0, "message": {"role": "assistant", "content": content_of(passage)},
                             "finish_reason": "stop"}]}
    return answer


def bundled_chunks() -> int:
    from pytest_retrieval_eval.data.chunking import chunk_corpus
    from pytest_retrieval_eval.data.corpus import JsonFolder
    from pytest_retrieval_eval.data.generate import out_of_date

    corpus = JsonFolder(CORPUS).load()
    stale = out_of_date(corpus)
    return sum(1 for c in chunk_corpus(corpus) if c.doc_id not in stale)


@pytest.mark.parametrize("shape", ["plain", "preamble"])
def test_a_local_server_without_a_key_fills_every_chunk_of_the_bundled_corpus(fake_api, monkeypatch, capsys,
                                                                               tmp_path, shape):
    monkeypatch.delenv("RETRIEVAL_EVAL_API_KEY")
    n = [0]

    def content(passage):
        n[0] += 1
        question = "Which " + " ".join(f"t{n[0]}k{i}" for i in range(5)) + "?"  # distinct, copies nothing
        return question if shape == "plain" else f"Here is a question about the passage:\n\n{question}"

    fake_api.script("/chat/completions", Reply(200, chat(content)))
    q = tmp_path / "q.json"
    assert cli(["generate", "--corpus", str(CORPUS), "--questions", str(q)]) == 0
    expected = bundled_chunks()
    assert f"generated {expected}, kept 0, dropped 0 stale, failed 0" in capsys.readouterr().out
    saved = json.loads(q.read_text())["queries"]
    assert len(saved) == expected == 36  # 38 chunks; the two superseded versions get none
    assert all(e["question"].startswith("Which t") for e in saved)
    hits = fake_api.hits("/chat/completions")
    assert all("authorization" not in h.headers for h in hits)  # no key was set, none was sent
    assert all(h.body["response_format"] == {"type": "json_object"} for h in hits)


def test_an_endpoint_that_refuses_response_format_is_asked_without_it(fake_api, capsys, tmp_path):
    sent = []

    def body(request):
        sent.append("response_format" in request)
        if "response_format" in request:
            return {"error": {"message": "Unrecognized request argument supplied: response_format"}}
        return chat(lambda p: f"Question: what does {p.split()[3]} mean for {p.split()[1]}?")(request)

    fake_api.script("/chat/completions", Reply(lambda request: 400 if "response_format" in request else 200, body))
    folder = tmp_path / "corpus"
    folder.mkdir()
    for i in range(6):
        (folder / f"d{i}.json").write_text(json.dumps({"doc_id": f"d{i}", "content": f"Doc {i} says {WORDS[i]} " * 5}))
    q = tmp_path / "q.json"
    assert cli(["generate", "--corpus", str(folder), "--questions", str(q), "--concurrency", "1"]) == 0
    assert "generated 6, kept 0, dropped 0 stale, failed 0" in capsys.readouterr().out
    assert sent[:2] == [True, False] and sent.count(True) == 1 and len(sent) == 7  # refused once, then never sent
    assert all(e["question"].startswith("what does") for e in json.loads(q.read_text())["queries"])


def test_unparsable_answers_are_dropped_counted_and_asked_again(fake_api, capsys, tmp_path):
    folder = tmp_path / "corpus"
    folder.mkdir()
    for i in range(3):
        (folder / f"d{i}.json").write_text(json.dumps({"doc_id": f"d{i}", "content": f"Doc {i} says {WORDS[i]} " * 5}))
    fake_api.script("/chat/completions", Reply(200, chat(lambda p: "Here is a question about the passage:")))
    q = tmp_path / "q.json"
    assert cli(["generate", "--corpus", str(folder), "--questions", str(q)]) == 0
    out = capsys.readouterr().out
    assert "generated 0, kept 0, dropped 0 stale, failed 0, filtered 3 (unparsable 3)" in out
    assert json.loads(q.read_text())["generator"]["filtered"] == {"unparsable": 3}
    fake_api.script("/chat/completions", Reply(200, chat(lambda p: f"Question: why {p.split()[5]} and {p.split()[3]}?")))
    assert cli(["generate", "--corpus", str(folder), "--questions", str(q)]) == 0
    assert "generated 3" in capsys.readouterr().out


# --- a local server: one call at a time, a dead server, answers cut by the cap -----------------------

def small_corpus(tmp_path, n: int = 6):
    folder = tmp_path / "corpus"
    folder.mkdir()
    for i in range(n):
        (folder / f"d{i}.json").write_text(json.dumps({"doc_id": f"d{i}", "content": f"Doc {i} says {WORDS[i]} " * 5}))
    return folder


def test_a_local_server_is_asked_one_chunk_at_a_time_unless_told_and_the_run_says_why(fake_api, capsys, tmp_path):
    fake_api.script("/chat/completions", Reply(200, chat(lambda p: f"Question: why does {p.split()[3]} matter?"),
                                               delay=0.05))
    folder, q = small_corpus(tmp_path), tmp_path / "q.json"
    assert cli(["generate", "--corpus", str(folder), "--questions", str(q)]) == 0
    out = capsys.readouterr().out
    assert fake_api.max_in_flight == 1  # a threading server: the client sent one at a time
    assert ("1 at a time (127.0.0.1 is a local or private server, which answers one request at a time: more would "
            "wait in its queue past the timeout; --concurrency=N to send more)") in out
    assert cli(["generate", "--corpus", str(folder), "--questions", str(q), "--regenerate", "--concurrency", "3"]) == 0
    assert fake_api.max_in_flight == 3 and "3 at a time (as asked with --concurrency=N)" in capsys.readouterr().out


def test_a_server_that_is_not_there_stops_generation_in_one_line_naming_it(capsys, tmp_path):
    import time

    from fake_api import FakeApi

    with FakeApi() as api:
        pass  # stopped: nothing listens on its port
    folder, q = small_corpus(tmp_path), tmp_path / "q.json"
    started = time.perf_counter()
    code = cli(["generate", "--corpus", str(folder), "--questions", str(q), "--base-url", api.url])
    took = time.perf_counter() - started
    err = capsys.readouterr().err
    assert code == 2 and took < 30 and len(err.strip().splitlines()) == 1
    assert err.startswith(f"error: question generation's server {api.url} is not answering: 3 calls in a row could "
                          "not connect (ConnectError")


def test_an_answer_cut_by_the_cap_is_counted_and_its_whole_question_kept(fake_api, capsys, tmp_path):
    def cut(request):
        passage = request["messages"][-1]["content"]
        word = passage.split()[5]
        content = (f'{{"question": "Where can I buy new {word} for the bike?", "evidence": "Doc says'
                   if "Doc 0" not in passage else '{"question": "Why does it')  # the first one cut inside its question
        return {"model": request["model"], "choices": [{"index": 0, "finish_reason": "length",
                                                        "message": {"role": "assistant", "content": content}}]}

    fake_api.script("/chat/completions", Reply(200, cut))
    folder, q = small_corpus(tmp_path, 3), tmp_path / "q.json"
    assert cli(["generate", "--corpus", str(folder), "--questions", str(q), "--max-tokens", "40"]) == 0
    out = capsys.readouterr().out
    assert {h.body["max_tokens"] for h in fake_api.hits("/chat/completions")} == {40}
    assert "generated 2," in out and "filtered 1 (unparsable 1)" in out
    assert ("3 answer(s) cut by the answer cap of 40 tokens (twice that for a conversation; finish_reason length), 2 of "
            "them with their question read whole before the cut: raise the cap with generate --max-tokens=N") in out
    assert sorted(e["question"] for e in json.loads(q.read_text())["queries"]) == [
        "Where can I buy new chargers for the bike?", "Where can I buy new saddles for the bike?"]


def test_a_cut_json_answer_gives_its_question_when_the_question_arrived_whole():
    from pytest_retrieval_eval.data.generate import parse_follow_up

    assert question_text('{"question": "How do I reset \\"it\\"?", "evidence": "Hold the but') == 'How do I reset "it"?'
    with pytest.raises(UnparsableAnswer, match="cut before its question was whole"):
        question_text('{"question": "How do I res')
    with pytest.raises(UnparsableAnswer, match="JSON cut short, without a 'question' text before the cut"):
        question_text('{ "id": 1032, "title": "Passage: Delivery slots Choosing when')  # SmolLM2-135M's, cut
    answer = {"choices": [{"message": {"content": '{"question": "What does the lamp cost?", "follow_up": "And does '
                                                  'it fold?", "evidence": "The la'}, "finish_reason": "length"}]}
    assert parse_follow_up(answer) == ("What does the lamp cost?", "And does it fold?")
