"""The LLM judge: grades (question, document text) pairs 0-3 through an OpenAI-compatible chat
endpoint, in the style of UMBRELA (the open reproduction of Bing's relevance assessor used for
the TREC 2024 RAG Track), and writes each grade to the judgments file as it arrives.

The endpoint is the one question generation uses (``RETRIEVAL_EVAL_BASE_URL``, a key from
``RETRIEVAL_EVAL_API_KEY``/``OPENROUTER_API_KEY``, none for a local server); calls run ``concurrency``
at a time under an optional rate limit, with ``_http.post_json``'s retries (429, 5xx, timeouts,
``Retry-After``). A pair already judged by the same judge on the same document text is never
asked again; a failed call is counted and named, never written.
"""

from __future__ import annotations

import contextvars
import re
import time
from concurrent.futures import FIRST_COMPLETED, ThreadPoolExecutor, wait
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Sequence

from .._http import ChatEndpoint, Pace, api_key_for, post_json
from .._secrets import mask_and_cap
from .._usage import counting
from ..errors import RetrievalEvalError
from ..types import sha256_text
from .._atomic import locked
from .judgments import Judge, Judgment, Judgments, append, rewrite

SYSTEM_PROMPT = "You are a search quality rater evaluating the relevance of passages."
USER_PROMPT = """Given a query and a passage, you must provide a score on an integer scale of 0 to 3 with the following meanings:
0 = represents that the passage has nothing to do with the query,
1 = represents that the passage seems related to the query but does not answer it,
2 = represents that the passage has some answer for the query, but the answer may be a bit unclear, or hidden amongst extraneous information and
3 = represents that the passage is dedicated to the query and contains the exact answer.

Important Instruction: Assign category 1 if the passage is somewhat related to the topic but not completely, category 2 if passage presents something very important related to the entire topic but also has some extra information and category 3 if the passage only and entirely refers to the topic. If none of the above satisfies give it category 0.

Query: {query}
Passage: {passage}

Split this problem into steps:
Consider the underlying intent of the search.
Measure how well the content matches a likely intent of the query (M).
Measure how trustworthy the passage is (T).
Consider the aspects above and the relative importance of each, and decide on a final score (O). Final score must be an integer value only.
Do not provide any code in result. Provide each score in the format of: ##final score: score without providing any reasoning."""
PROMPT_SHA256 = sha256_text(SYSTEM_PROMPT + "\n\n" + USER_PROMPT)
#: characters of a document the judge reads (its title first): a page, not a book
MAX_PASSAGE_CHARS = 4000

_FINAL = re.compile(r"final\s*score\s*[:=]?\s*\**\s*([0-3])\b", re.I)
_LONE = re.compile(r"^\D*([0-3])\D*$")


def grade_of(content: str) -> int:
    """The grade in a judge's answer: ``##final score: 2`` (as the prompt asks), or a lone digit
    0-3; anything else raises (the pair is counted as failed and asked again next time)."""
    found = _FINAL.findall(content or "")
    if found:
        return int(found[-1])
    lone = _LONE.match((content or "").strip())
    if lone:
        return int(lone.group(1))
    raise RetrievalEvalError(f"no grade 0-3 in the judge's answer: {mask_and_cap(content, 120)!r}")


def majority(votes: Sequence[int]) -> int:
    """The most given grade; a tie goes to the lower grade (a doubtful document is not relevant)."""
    return max(sorted(set(votes)), key=lambda g: (votes.count(g), -g))


@dataclass(frozen=True)
class JudgeConfig(ChatEndpoint):
    concurrency: int = 8
    votes: int = 1
    #: requests per second at most (None: no limit beyond ``concurrency``)
    rate: float | None = None

    @property
    def judge(self) -> Judge:
        from urllib.parse import urlsplit

        # the host, not the port: a local server started on another port is the same judge
        return Judge(self.model, PROMPT_SHA256, float(self.temperature), self.votes, urlsplit(self.base).hostname or "")


@dataclass(frozen=True)
class Pair:
    """A question and a document to grade, with the text the judge reads."""

    query_id: str
    question: str
    doc_id: str
    text: str
    doc_sha256: str
    kind: str = "hole"
    human: int | None = None


@dataclass
class JudgingReport:
    judge: Judge
    pairs: int = 0
    reused: int = 0
    asked: int = 0  # pairs graded now
    calls: int = 0
    failed: dict[str, str] = field(default_factory=dict)  # "query/doc" -> why
    seconds: float = 0.0

    def summary(self) -> str:
        text = (f"judged {self.asked} pair(s) with {self.judge.model} ({self.calls} call(s), {self.seconds:.1f} s), "
                f"{self.reused} already in the file, {len(self.failed)} failed")
        if self.failed:
            shown = "; ".join(f"{k}: {v}" for k, v in list(self.failed.items())[:3])
            text += f" ({shown}{'; ...' if len(self.failed) > 3 else ''}); run it again to ask for them"
        return text


def messages(question: str, text: str) -> list[dict[str, str]]:
    passage = " ".join(text.split())[:MAX_PASSAGE_CHARS]
    return [{"role": "system", "content": SYSTEM_PROMPT},
            {"role": "user", "content": USER_PROMPT.format(query=" ".join(question.split()), passage=passage)}]


def judge_pairs(pairs: Sequence[Pair], path: str | Path, config: JudgeConfig = JudgeConfig(), *,
                progress: Callable[[str], None] | None = None) -> JudgingReport:
    """Grade every pair the file lacks for this judge (or holds for another text of the
    document), appending each as it arrives; rewrite the file in order once all were asked."""
    import httpx

    path, judge = Path(path), config.judge
    report = JudgingReport(judge, pairs=len(pairs))
    started = time.perf_counter()
    with locked(path):
        existing = Judgments.load(path)
        todo = []
        for p in dict.fromkeys(pairs):
            had = existing.get(p.query_id, p.doc_id, judge, p.kind)
            if had is not None and had.doc_sha256 == p.doc_sha256:
                report.reused += 1
            else:
                todo.append(p)
        if not todo:
            return report
        api_key = api_key_for(config.base, "judging")
        if progress:
            progress(f"judging {len(todo)} pair(s) with {config.model} ({config.concurrency} at a time)")
        pace, url = Pace(config.rate), f"{config.base}/chat/completions"

        def ask(p: Pair) -> Judgment:
            votes = []
            for _ in range(config.votes):
                pace.wait()
                answer = post_json(client, url, {"model": config.model, "temperature": config.temperature,
                                                 "messages": messages(p.question, p.text)},
                                   api_key=api_key, retries=config.retries)
                try:
                    content = answer["choices"][0]["message"]["content"]
                except (KeyError, IndexError, TypeError):
                    raise RetrievalEvalError("malformed answer: no choices[0].message.content") from None
                votes.append(grade_of(content if isinstance(content, str) else ""))
            return Judgment(p.query_id, p.doc_id, majority(votes), tuple(votes), p.doc_sha256, judge, p.kind, p.human)

        limits = httpx.Limits(max_connections=config.concurrency, max_keepalive_connections=config.concurrency)
        with counting() as meter, httpx.Client(timeout=config.timeout, limits=limits) as client, \
                ThreadPoolExecutor(config.concurrency) as pool:  # every attempt sent is a call, failed ones too
            pending = {pool.submit(contextvars.copy_context().run, ask, p): p for p in todo}
            written: list[Judgment] = []
            try:
                while pending:
                    done, _ = wait(pending, return_when=FIRST_COMPLETED)
                    finished = []
                    for future in done:
                        p = pending.pop(future)
                        try:
                            finished.append(future.result())
                        except Exception as exc:  # counted and named; asked again on the next run
                            report.failed[f"{p.query_id}/{p.doc_id}"] = mask_and_cap(
                                exc if isinstance(exc, RetrievalEvalError) else f"{type(exc).__name__}: {exc}", 200)
                    if finished:
                        append(path, finished)
                        written += finished
                        report.asked += len(finished)
            finally:
                for future in pending:
                    future.cancel()
        report.calls = meter.calls
        rewrite(path, Judgments([*existing, *written]))  # the file's lines and ours, under the lock
    report.seconds = time.perf_counter() - started
    return report

