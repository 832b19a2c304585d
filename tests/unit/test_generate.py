"""Question generation against a real local chat-completions server: answers, retries, failures,
fail-loud accounting, resumption, and the cache it keeps intact."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from conftest import CORPUS, FAKE_KEY, QUESTIONS, requires_hybrid
from fake_api import Reply, chat_reply
from projects import small_corpus, words
from pytest_retrieval_eval.cli import main as cli
from pytest_retrieval_eval.data.corpus import JsonFolder
from pytest_retrieval_eval.data.generate import PROMPT_SHA256, SYSTEM_PROMPT, GeneratorConfig, generate_questions, parse_question
from pytest_retrieval_eval.data.chunking import Chunking, chunk_corpus
from pytest_retrieval_eval.data.labeled import load_questions_cache

pytestmark = requires_hybrid  # chunking and the embedders run Haystack

SPLIT = Chunking(split_length=30, split_overlap=5)


@pytest.fixture
def small(tmp_path):
    return small_corpus(tmp_path / "corpus")


def run(folder: Path, path: Path, **kw):
    corpus = JsonFolder(folder).load()
    kw.setdefault("config", GeneratorConfig(model="test-model", retries=2))
    return generate_questions(corpus, chunk_corpus(corpus, SPLIT), path, split=SPLIT, **kw)


def test_one_question_per_chunk_with_provenance(fake_api, small, tmp_path):
    fake_api.script("/chat/completions", Reply(200, chat_reply()))
    path = tmp_path / "q.json"
    report = run(small, path)
    assert len(report.generated) == 4 and not report.failed
    labeled = load_questions_cache(path)
    raw = json.loads(path.read_text())
    assert raw["generator"]["model"] == "test-model" and raw["generator"]["prompt_sha256"] == PROMPT_SHA256
    assert raw["generator"]["temperature"] == 0.0
    assert raw["splitter"] == {"split_by": "word", "split_length": 30, "split_overlap": 5}
    assert raw["corpus_fingerprint"] == JsonFolder(small).load().fingerprint
    assert {q.source["chunk_id"] for q in labeled} == {"alpha:0", "alpha:1", "beta:0", "gamma:0"}
    for q in labeled:
        assert q.relevant == {q.source["doc_id"]: 1} and len(q.source["chunk_sha256"]) == 64 and q.source["by"] == "test-model"
    request = fake_api.hits("/chat/completions")[0]
    assert request.body["temperature"] == 0.0 and request.body["messages"][0]["content"] == SYSTEM_PROMPT
    assert "do not reuse the passage's distinctive words" in SYSTEM_PROMPT
    assert request.headers["authorization"] == f"Bearer {FAKE_KEY}"


def test_a_rerun_only_fills_what_is_missing_or_stale(fake_api, small, tmp_path):
    fake_api.script("/chat/completions", Reply(200, chat_reply()))
    path = tmp_path / "q.json"
    run(small, path)
    assert run(small, path).generated == [] and len(fake_api.hits("/chat/completions")) == 4
    # Change one document: only its chunk is asked again; delete another: its entry goes.
    (small / "beta.json").write_text(json.dumps({"doc_id": "beta", "title": "Beta", "content": words(20, "B")}))
    (small / "gamma.json").unlink()
    report = run(small, path)
    assert report.generated == ["beta:0#1"] and sorted(report.dropped) == ["beta:0#1", "gamma:0#1"]
    assert len(fake_api.hits("/chat/completions")) == 5
    assert {q.source["chunk_id"] for q in load_questions_cache(path)} == {"alpha:0", "alpha:1", "beta:0"}


def test_a_changed_document_keeps_questions_of_its_unchanged_chunks(fake_api, small, tmp_path):
    fake_api.script("/chat/completions", Reply(200, chat_reply()))
    path = tmp_path / "q.json"
    run(small, path)
    # alpha's second window changes, its first does not
    (small / "alpha.json").write_text(json.dumps({"doc_id": "alpha", "title": "Alpha", "content": words(40, "a") + " changed" * 10}))
    report = run(small, path)
    assert report.generated == ["alpha:1#1"] and report.dropped == ["alpha:1#1"]
    kept = load_questions_cache(path).by_id()["alpha:0#1"]
    assert kept.source["doc_sha256"] == JsonFolder(small).load().get("alpha").fingerprint  # refreshed


def test_429_with_retry_after_then_success(fake_api, small, tmp_path):
    fake_api.script("/chat/completions", Reply(429, {"error": "rate"}, {"retry-after": "0"}), Reply(200, chat_reply()))
    report = run(small, tmp_path / "q.json", config=GeneratorConfig(concurrency=1, retries=2))
    assert len(report.generated) == 4 and len(fake_api.hits("/chat/completions")) == 5


@pytest.mark.parametrize(
    "reply, attempts, reason",
    [
        (Reply(500, {"error": "boom"}), 2, "failed after 2 attempts: HTTP 500"),
        # a local server still working on it is not asked again (it would queue the copy behind it)
        (Reply(200, chat_reply(), delay=1.5), 1, "timed out after 0.5 s (ReadTimeout); export RETRIEVAL_EVAL_TIMEOUT="),
        (Reply(200, "this is not json"), 1, "the answer is not JSON"),
        (Reply(200, {"choices": [{"message": {"content": None}}]}), 1, "malformed answer: content is not text"),
        (Reply(200, {"choices": []}), 1, "malformed answer: no choices"),
    ],
)
def test_failures_are_counted_named_and_excluded(fake_api, small, tmp_path, reply, attempts, reason, caplog):
    # the first chunk gets the bad reply on every attempt (1 + retries when retryable), then all is well
    fake_api.scripts["/v1/chat/completions"] = [reply] * attempts + [Reply(200, chat_reply())]
    report = run(small, tmp_path / "q.json", config=GeneratorConfig(concurrency=1, retries=1, timeout=0.5))
    assert len(report.failed) == 1 and len(report.generated) == 3
    [(chunk, why)] = report.failed.items()
    assert reason in why
    assert chunk in caplog.text  # logged
    assert chunk not in {q.source["chunk_id"] for q in load_questions_cache(tmp_path / "q.json")}
    assert "failed 1 (" in report.summary()


def test_a_failed_regeneration_keeps_the_good_entries(fake_api, small, tmp_path):
    fake_api.script("/chat/completions", Reply(200, chat_reply()))
    path = tmp_path / "q.json"
    run(small, path)
    before = {q.query_id: q.question for q in load_questions_cache(path)}
    fake_api.script("/chat/completions", Reply(500, {"error": "down"}))
    report = run(small, path, regenerate=True)
    assert len(report.failed) == 4
    assert {q.query_id: q.question for q in load_questions_cache(path)} == before


def test_concurrency_is_bounded(fake_api, small, tmp_path):
    fake_api.script("/chat/completions", Reply(200, chat_reply(), delay=0.2))
    run(small, tmp_path / "q.json", config=GeneratorConfig(concurrency=2))
    assert fake_api.max_in_flight == 2


def test_parse_question_strips_code_fences():
    content = '```json\n{"question": "  How   long is it?  "}\n```'
    assert parse_question({"choices": [{"message": {"content": content}}]}) == "How long is it?"


def test_cli_without_a_key_says_which_variable_to_set(monkeypatch, capsys, small, tmp_path):
    monkeypatch.delenv("RETRIEVAL_EVAL_BASE_URL", raising=False)  # the hosted default
    monkeypatch.delenv("RETRIEVAL_EVAL_API_KEY", raising=False)
    monkeypatch.delenv("OPENROUTER_API_KEY", raising=False)
    assert cli(["generate", "--corpus", str(small), "--questions", str(tmp_path / "q.json")]) == 2
    err = capsys.readouterr().err
    assert "question generation calls https://openrouter.ai/api/v1, which needs an API key: set RETRIEVAL_EVAL_API_KEY (or OPENROUTER_API_KEY)" in err
    assert not (tmp_path / "q.json").exists()


def test_cli_generate_then_check(fake_api, capsys, small, tmp_path):
    fake_api.script("/chat/completions", Reply(200, chat_reply()))
    q = str(tmp_path / "q.json")
    assert cli(["generate", "--corpus", str(small), "--questions", q, "--split-length", "30", "--split-overlap", "5"]) == 0
    assert "generated 4, kept 0, dropped 0 stale, failed 0" in capsys.readouterr().out
    assert cli(["check", "--corpus", str(small), "--questions", q]) == 0
    (small / "beta.json").write_text(json.dumps({"doc_id": "beta", "content": "new words"}))
    assert cli(["check", "--corpus", str(small), "--questions", q]) == 1
    out = capsys.readouterr().out
    assert "changed: beta (1 question: beta:0#1)" in out and "python -m pytest_retrieval_eval generate" in out


def test_cli_failures_exit_1_and_never_print_the_key(fake_api, capsys, small, tmp_path):
    fake_api.script("/chat/completions", Reply(401, {"error": f"bad key {FAKE_KEY}"}))
    assert cli(["generate", "--corpus", str(small), "--questions", str(tmp_path / "q.json")]) == 1
    out = capsys.readouterr()
    assert "failed 3" in out.out and "HTTP 401" in out.out  # 3 chunks at the default split
    assert FAKE_KEY not in out.out + out.err


def test_the_bundled_cache_keeps_its_handwritten_questions(fake_api, tmp_path):
    """Every chunk of the bundled corpus already has a fresh question: nothing to generate."""
    path = tmp_path / "q.json"
    shutil.copy(QUESTIONS, path)
    corpus = JsonFolder(CORPUS).load()
    report = generate_questions(corpus, chunk_corpus(corpus), path)
    assert report.generated == [] and report.dropped == [] and report.kept == 68
    assert fake_api.hits("/chat/completions") == []


def test_every_generation_request_carries_the_max_tokens_cap(fake_api, small, tmp_path):
    """A question needs a few dozen tokens; without a cap a weak local model can talk to the end
    of its context (minutes on a CPU)."""
    fake_api.script("/chat/completions", Reply(200, chat_reply()))
    run(small, tmp_path / "q.json")
    cap = GeneratorConfig().max_tokens
    assert 32 <= cap <= 128
    assert {h.body["max_tokens"] for h in fake_api.hits("/chat/completions")} == {cap}
    run(small, tmp_path / "r.json", config=GeneratorConfig(max_tokens=40))
    assert fake_api.hits("/chat/completions")[-1].body["max_tokens"] == 40


@pytest.mark.parametrize("answer, reason", [
    ("What is the passage about?", "about_the_passage"),
    ("What is this text about?", "about_the_passage"),
    ("According to the document, how long is the warranty?", "about_the_passage"),
])
def test_a_question_about_the_passage_itself_is_refused_each_time(fake_api, small, tmp_path, answer, reason):
    fake_api.script("/chat/completions", Reply(200, chat_reply(lambda passage: answer)))
    report = run(small, tmp_path / "q.json")
    assert report.generated == [] and list(report.filtered) == [reason]
    assert len(report.filtered[reason]) == 4 and f"filtered 4 ({reason} 4)" in report.summary()


def test_a_question_that_repeats_another_chunks_question_is_refused(fake_api, small, tmp_path):
    fake_api.script("/chat/completions", Reply(200, chat_reply(lambda passage: "How do I reset my password?")))
    report = run(small, tmp_path / "q.json", config=GeneratorConfig(concurrency=1))
    assert len(report.generated) == 1 and len(report.filtered["duplicate"]) == 3
    assert "filtered 3 (duplicate 3)" in report.summary()
    assert [q.question for q in load_questions_cache(tmp_path / "q.json")] == ["How do I reset my password?"]


def _quoting(quote_of):
    """A chat answer with a question and ``quote_of(passage)`` as its evidence."""
    def answer(request: dict) -> dict:
        passage = request["messages"][-1]["content"].split("<<<\n", 1)[1].rsplit("\n>>>", 1)[0]
        content = json.dumps({"question": f"What about {passage.split()[2]} here?", "evidence": quote_of(passage)})
        return {"choices": [{"index": 0, "message": {"role": "assistant", "content": content}}]}
    return answer


def test_a_generated_question_records_the_sentence_it_was_made_from_when_the_model_copied_it(fake_api, small, tmp_path):
    fake_api.script("/chat/completions", Reply(200, _quoting(lambda p: " ".join(p.split()[1:7]).upper())))
    path = tmp_path / "q.json"
    run(small, path)
    labeled = load_questions_cache(path)
    chunks = {c.chunk_id: c.text for c in chunk_corpus(JsonFolder(small).load(), SPLIT)}
    for q in labeled:
        [quote] = q.source["evidence"][q.source["doc_id"]]
        assert quote == " ".join(chunks[q.source["chunk_id"]].split()[1:7]).upper()


def test_a_quote_the_model_did_not_copy_from_the_passage_is_no_evidence(fake_api, small, tmp_path):
    fake_api.script("/chat/completions", Reply(200, _quoting(lambda p: "words the passage never held")))
    path = tmp_path / "q.json"
    run(small, path)
    assert all("evidence" not in q.source for q in load_questions_cache(path))
