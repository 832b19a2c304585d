"""The LLM judge: grades (question, document text) pairs 0-3 through an OpenAI-compatible chat
endpoint, in the style of UMBRELA (the open reproduction of Bing's relevance assessor used for
the TREC 2024 RAG Track), and writes each grade to the judgments file as it arrives.

The endpoint is the one question generation uses (``RETRIEVAL_EVAL_BASE_URL``, a key from
``RETRIEVAL_EVAL_API_KEY``/``OPENROUTER_API_KEY``, none for a local server); calls run ``concurrency``
at a time (one at a local server unless told, ``ChatEndpoint.in_flight``) under an optional rate
limit, with ``_http.post_json``'s retries (429, 5xx, timeouts, ``Retry-After``), each answer capped
at ``max_tokens`` (an answer the cap cut is read for a grade stated before the cut, and counted).
A pair already judged by the same judge on the same question text and document text is never
asked again; a failed call, or an answer that states no grade, is counted by kind and named,
never written; calls that cannot connect, three in a row, stop the judging (``DeadServer``). The
recorded judge names the model the server says answered.
"""

from __future__ import annotations

import contextvars
import queue
import re
import threading
import time
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Callable, Sequence

from .._atomic import locked
from .._defaults import JUDGE_MAX_TOKENS
from .._http import (DEFAULT_BASE_URL, DEFAULT_CHAT_MODEL, FAILURE_KINDS, ChatEndpoint, DeadServer, Pace, api_key_for,
                     failure_kind, new_client, post_json, timeout_hint)
from .._secrets import mask_and_cap, redact
from .._usage import counting
from ..errors import RetrievalEvalError
from ..types import sha256_text
from .grades import majority
from .judges import Judge, Panel
from .judgments import Judgment, Judgments, append, question_sha256, rewrite

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

#: the longest answer a judge may give, in tokens, unless ``--max-tokens`` says otherwise:
#: ``##final score: N`` (or ``M: 2, T: 1, O: 2`` before it) takes about twenty; without a cap a
#: small local model can talk to the end of its context
MAX_ANSWER_TOKENS = JUDGE_MAX_TOKENS
#: calls in flight at a hosted endpoint unless told (a local server gets one: ``ChatEndpoint.in_flight``)
HOSTED_CONCURRENCY = 8
#: how a message says to change the concurrency and the cap, on the command line and in a run
CONCURRENCY_OPTION = "--concurrency=N (--retrieval-judge-concurrency=N in a pytest run)"
MAX_TOKENS_OPTION = "--max-tokens=N (--retrieval-judge-max-tokens=N in a pytest run)"

# A grade is read only where the answer states one: a digit not followed by another digit, a
# decimal, a percent sign or a fraction other than of 3, written or spelled ("2.5", "3/10",
# "3 out of 10", "3 (of 10)", "95%" are no grades 0-3; "2/3" and "2 out of 3" are 2 on the 0-3 scale).
_DIGIT = r"([0-3])(?![\d%]|[.,]\s*\d|[\s*_]*\(?\s*(?:/|out\s+of\b|of\b)\s*(?!3\b)\d)"
_FINAL = re.compile(r"final[\s_]*score[\s*#_]*(?:[:=]|\bis\b)[\s*#_]*" + _DIGIT, re.I)
_LABELED = re.compile(r"\b(?:score|grade|relevance|rating|category|O)[\s*#_]*(?:[:=]|\bis\b)[\s*#_]*" + _DIGIT, re.I)
_WHOLE = re.compile(r"^[^\w+-]*([0-3])[\W_]*$")  # "-1" is no grade
_JSON_KEYS = ("final_score", "final score", "grade", "score", "relevance", "O")


def _json_grade(content: str) -> int | None:
    """The grade of a JSON object in the answer (``{"grade": 2}``, in a code fence or not)."""
    import json

    start, end = content.find("{"), content.rfind("}")
    if start < 0 or end < start:
        return None
    try:
        found = json.loads(content[start:end + 1])
    except ValueError:
        return None
    if not isinstance(found, dict):
        return None
    for key in _JSON_KEYS:
        value = found.get(key, found.get(key.lower()))
        if isinstance(value, str) and value.strip() in ("0", "1", "2", "3"):
            value = int(value.strip())
        if isinstance(value, int) and not isinstance(value, bool) and value in (0, 1, 2, 3):
            return value
    return None


def grade_of(content: str) -> int:
    """The grade an answer states: the whole answer is one (``2``, ``**3**``), or it says
    ``##final score: 2`` (as the prompt asks; the last one counts), is JSON with a grade, or
    says ``grade: 2``/``score``/``relevance``/``O`` (one value). A digit elsewhere ("shares 3 words")
    is no grade: anything else raises, and the pair is counted as failed and asked again."""
    text = (content or "").strip()
    whole = _WHOLE.match(text)
    if whole:
        return int(whole.group(1))
    final = _FINAL.findall(text)
    if final:
        return int(final[-1])
    found = _json_grade(text)
    if found is not None:
        return found
    labeled = set(_LABELED.findall(text))
    if len(labeled) == 1:  # two different labeled grades state none
        return int(labeled.pop())
    raise NoGrade(f"no grade 0-3 stated in the judge's answer: {mask_and_cap(content, 120)!r}")


class NoGrade(RetrievalEvalError):
    """An answer that states no grade: counted apart from calls that failed."""

    kind = "no_grade"


class CutAnswer(NoGrade):
    """An answer the length cap cut (``finish_reason: length``) before it stated a grade."""

    kind = "cut"


#: how a summary counts each kind of failed pair (the calls' own kinds, ``_http.FAILURE_KINDS``, first)
KINDS = {**FAILURE_KINDS, "no_grade": "stated no grade", "cut": "cut by the answer cap before a grade",
         "malformed": "malformed answer", "other": "failed otherwise"}


@dataclass(frozen=True)
class JudgeConfig(ChatEndpoint):
    #: the chat model; None (not named): the default hosted model at the default endpoint, and
    #: at any other the model its server says answered (a server that only echoes the name sent
    #: is refused: the grades would be recorded as made by a model that never judged)
    model: str | None = None  # type: ignore[assignment]
    votes: int = 1
    #: requests per second at most (None: no limit beyond ``concurrency``)
    rate: float | None = None
    #: the answer's cap, in tokens (``--max-tokens``)
    max_tokens: int | None = MAX_ANSWER_TOKENS

    @property
    def cap(self) -> int:
        return self.max_tokens or MAX_ANSWER_TOKENS

    def width(self) -> tuple[int, str]:
        """(calls in flight, why): ``ChatEndpoint.in_flight`` at the judge's hosted default."""
        return self.in_flight(HOSTED_CONCURRENCY, CONCURRENCY_OPTION)

    @property
    def sent_model(self) -> str:
        """The model name each request carries."""
        return self.model or DEFAULT_CHAT_MODEL

    @property
    def named(self) -> bool:
        """Does the name sent say which model judges (named, or the default at its own endpoint)?"""
        return self.model is not None or self.base == DEFAULT_BASE_URL

    @property
    def judge(self) -> Judge:
        """The judge as asked for; the recorded one names the model the server says answered."""
        from urllib.parse import urlsplit

        # the host, not the port: a local server started on another port is the same judge
        return Judge(self.sent_model, PROMPT_SHA256, float(self.temperature), self.votes,
                     urlsplit(self.base).hostname or "")

    def known_judge(self, judgments: Judgments) -> Judge | None:
        """The judge the file already holds for these settings: the newest with the same prompt,
        temperature, votes and host that answered to this model name (as its own, or ``asked_as``)."""
        want = self.judge
        for j in reversed(judgments.judges()):
            if (j.prompt_sha256, j.temperature, j.votes, j.host) != (want.prompt_sha256, want.temperature, want.votes,
                                                                     want.host):
                continue
            if j.asked_as == want.model or (self.named and not j.asked_as and j.model == want.model):
                return j
        return None

    def answered_by(self, answer: Any) -> Judge:
        """The judge of one answer: the model the server says answered (``model``), the name sent
        recorded beside it when they differ; refused when no model was named and the server
        only echoes the name sent (or names none)."""
        said = answer.get("model") if isinstance(answer, dict) else None
        said = said.strip() if isinstance(said, str) else ""
        if not self.named and said in ("", self.sent_model):
            raise JudgeRefused(
                f"the judge's server {redact(self.base)} was sent no model name of its own and "
                f"{'names no model in its answer' if not said else f'answered as {said}, the default hosted model'}: "
                "its grades would be recorded as made by a model that never judged; name the model it runs "
                "with --model=NAME (--retrieval-judge-model=NAME in a pytest run)")
        if said in ("", self.sent_model):
            return self.judge
        return replace(self.judge, model=said, asked_as=self.sent_model)


class JudgeRefused(RetrievalEvalError):
    """A fault of the whole judging, not of one pair: every call stops."""


@dataclass(frozen=True)
class Pair:
    """A question and a document to grade, with the text the judge reads."""

    query_id: str
    #: the question as asked (``LabeledQuery.asked``: a turn with its conversation so far), as the
    #: prompt's query; its hash keys the judgment
    question: str
    doc_id: str
    text: str
    doc_sha256: str
    kind: str = "hole"
    human: int | None = None

    @property
    def question_sha256(self) -> str:
        return question_sha256(self.question)


@dataclass
class JudgingReport:
    judge: Judge
    pairs: int = 0
    reused: int = 0
    asked: int = 0  # pairs graded now
    calls: int = 0
    failed: dict[str, str] = field(default_factory=dict)  # "query/doc" -> why
    unparsable: int = 0  # of the failed: answers that stated no grade (cut by the cap or not)
    seconds: float = 0.0
    #: "file:line" of a last line cut off mid-write that was dropped (None: none)
    cut_off: str | None = None
    #: "query/doc" -> its failure's kind (``KINDS``)
    kinds: dict[str, str] = field(default_factory=dict)
    #: answers the length cap cut (``finish_reason: length``), and of them those that stated a grade first
    cut: int = 0
    cut_graded: int = 0
    #: the answers' cap, in tokens, and the calls' time limit, in seconds (what the hints raise)
    cap: int = MAX_ANSWER_TOKENS
    timeout: float | None = None

    def counts(self) -> dict[str, int]:
        """Failed pairs by kind (``KINDS`` order)."""
        found = list(self.kinds.values())
        return {k: found.count(k) for k in KINDS if k in found}

    def summary(self) -> str:
        """A first line that counts (every failure by kind, the answers the cap cut), then for each
        kind of failure one example named in full."""
        text = (f"judged {self.asked} pair(s) with {self.judge.model} ({self.calls} call(s), {self.seconds:.1f} s), "
                f"{self.reused} already in the file, {len(self.failed)} failed")
        counts = self.counts()
        if self.failed:
            said = []
            for kind, n in counts.items():
                said.append(f"{n} answer(s) stated no grade" if kind == "no_grade" else f"{n} {KINDS[kind]}")
                if kind == "timeout":
                    said[-1] += f" ({timeout_hint(self.timeout)})"
            text += f" ({', '.join(said)}); run it again to ask for them"
        if self.cut:
            text += (f"; {self.cut} answer(s) cut by the {self.cap}-token answer cap (finish_reason length), "
                     f"{self.cut_graded} of them graded before the cut: raise the cap with {MAX_TOKENS_OPTION}")
        if self.cut_off:
            text += f"; a cut-off last line ({self.cut_off}, not a whole judgment) was dropped"
        for kind in counts:
            key = next(k for k, v in self.kinds.items() if v == kind)
            text += f"\n  {KINDS[kind]}, e.g. {key}: {self.failed[key]}"
        return text


def _malformed(message: str) -> RetrievalEvalError:
    """An answer that came, in a shape no grade can be read from: counted as malformed."""
    error = RetrievalEvalError(message)
    error.kind = "malformed"  # type: ignore[attr-defined]
    return error


def _graded(content: str, cut: bool, cap: int, cuts: list[int], lock: Any) -> int:
    """The grade of one answer; one the cap cut (``finish_reason: length``) is read for a grade
    stated before the cut and counted (``cuts``: cut, of them graded), or refused as cut."""
    try:
        grade = grade_of(content)
    except NoGrade as exc:
        if not cut:
            raise
        with lock:
            cuts[0] += 1
        raise CutAnswer(f"the answer was cut by the {cap}-token cap (finish_reason length) before it stated a grade: "
                        f"{mask_and_cap(content, 120)!r}") from exc
    if cut:
        with lock:
            cuts[0] += 1
            cuts[1] += 1
    return grade


def messages(question: str, text: str) -> list[dict[str, str]]:
    passage = " ".join(text.split())[:MAX_PASSAGE_CHARS]
    return [{"role": "system", "content": SYSTEM_PROMPT},
            {"role": "user", "content": USER_PROMPT.format(query=" ".join(question.split()), passage=passage)}]


class _Stopped(Exception):
    """A call not made: the judging stopped."""


def judge_pairs(pairs: Sequence[Pair], path: str | Path, config: JudgeConfig = JudgeConfig(), *,
                progress: Callable[[str], None] | None = None) -> JudgingReport:
    """Grade every pair the file lacks for this judge, or holds for another text of its question
    or document, appending each as it arrives; rewrite the file in order once all were asked.

    Calls run on daemon threads: on Ctrl-C (or a refusal) the pairs not started are dropped and
    calls in flight are not waited for, and every judgment that finished is in the file."""
    import httpx

    path = Path(path)
    started = time.perf_counter()
    with locked(path):
        existing = Judgments.load(path)
        known = config.known_judge(existing)
        # without a model name of its own, no judgment is this judge's until the server names it
        lookup = known or (config.judge if config.named else None)
        report = JudgingReport(lookup or config.judge, pairs=len(pairs))
        if existing.cut_off is not None:
            report.cut_off = f"{path}:{existing.cut_off}"
        todo = []
        for p in dict.fromkeys(pairs):
            had = existing.get(p.query_id, p.doc_id, lookup, p.kind) if lookup is not None else None
            if had is not None and had.reads(p.question_sha256, p.doc_sha256):
                report.reused += 1
            else:
                todo.append(p)
        if not todo:
            return report
        api_key = api_key_for(config.base, "judging")
        width, why = config.width()
        report.cap, report.timeout = config.cap, config.timeout
        if progress:
            who = (report.judge.model if lookup is not None else
                   f"the model the server at {redact(config.base)} runs (named by its first answer)")
            progress(f"judging {len(todo)} pair(s) with {who}, {width} at a time ({why})")
        pace, url = Pace(config.rate), f"{config.base}/chat/completions"
        stop = threading.Event()
        cuts, counted = [0, 0], threading.Lock()  # answers the cap cut, and of them graded before the cut

        def ask(p: Pair) -> Judgment:
            votes, judges = [], set()
            for _ in range(config.votes):
                if stop.is_set():
                    raise _Stopped()
                pace.wait()
                answer = post_json(client, url, {"model": config.sent_model, "temperature": config.temperature,
                                                 "max_tokens": config.cap,
                                                 "messages": messages(p.question, p.text)},
                                   api_key=api_key, retries=config.retries)
                judges.add(config.answered_by(answer))
                try:
                    choice = answer["choices"][0]
                    content = choice["message"]["content"]
                except (KeyError, IndexError, TypeError):
                    raise _malformed("malformed answer: no choices[0].message.content") from None
                votes.append(_graded(content if isinstance(content, str) else "",
                                     choice.get("finish_reason") == "length", config.cap, cuts, counted))
            if len(judges) > 1:
                raise _malformed(f"the votes were answered by different models "
                                 f"({', '.join(sorted(j.model for j in judges))})")
            return Judgment(p.query_id, p.doc_id, majority(votes), tuple(votes), p.doc_sha256, judges.pop(), p.kind,
                            p.human, p.question_sha256)

        tasks: queue.SimpleQueue = queue.SimpleQueue()
        for p in todo:
            tasks.put(p)
        results: queue.SimpleQueue = queue.SimpleQueue()

        def work() -> None:
            while not stop.is_set():
                try:
                    p = tasks.get_nowait()
                except queue.Empty:
                    return
                try:
                    results.put((p, ask(p), None))
                except BaseException as exc:  # noqa: BLE001 - handed to the main thread
                    results.put((p, None, exc))

        limits = httpx.Limits(max_connections=width, max_keepalive_connections=width)
        client = new_client(timeout=config.timeout, limits=limits)
        written: list[Judgment] = []

        pending = [len(todo)]

        def take(block: bool) -> None:
            """Write what finished: at least one result when ``block``, else what is there."""
            got = []
            while block and not got:
                try:
                    got.append(results.get(timeout=0.2))  # a timeout: Ctrl-C is seen at once
                except queue.Empty:
                    pass
            while True:
                try:
                    got.append(results.get_nowait())
                except queue.Empty:
                    break
            finished, refused = [], None
            for p, judgment, exc in got:
                pending[0] -= 1
                if exc is None:
                    finished.append(judgment)
                elif isinstance(exc, JudgeRefused):
                    refused = refused or exc
                elif not isinstance(exc, _Stopped):  # counted and named; asked again on the next run
                    report.unparsable += isinstance(exc, NoGrade)
                    key = f"{p.query_id}/{p.doc_id}"
                    report.kinds[key] = failure_kind(exc) or "other"
                    # our own messages whole (a timeout's says how to wait longer); anything else capped
                    report.failed[key] = mask_and_cap(exc, 2000) if isinstance(exc, RetrievalEvalError) else \
                        mask_and_cap(f"{type(exc).__name__}: {exc}", 200)
                if not isinstance(exc, (_Stopped, JudgeRefused)):
                    try:
                        down.saw(exc)
                    except RetrievalEvalError as dead:
                        refused = refused or dead
            if finished:
                append(path, finished)
                written.extend(finished)
                report.asked += len(finished)
                report.judge = finished[-1].judge
            report.cut, report.cut_graded = cuts
            if refused is not None:
                raise refused

        down = DeadServer(config.base, "the judge")
        with counting() as meter:  # every attempt sent is a call, failed ones too
            threads = [threading.Thread(target=contextvars.copy_context().run, args=(work,), name=f"judge-{i}",
                                        daemon=True) for i in range(min(width, len(todo)))]
            for t in threads:
                t.start()
            try:
                while pending[0]:
                    take(block=True)
            except BaseException:  # Ctrl-C or a refusal: nothing more is asked, nothing in flight waited for
                stop.set()
                take(block=False)
                raise
            finally:
                report.calls = meter.calls
        for t in threads:
            t.join()
        client.close()
        rewrite(path, Judgments([*existing, *written]))  # the file's lines and ours, under the lock
    report.seconds = time.perf_counter() - started
    return report


def panel_configs(path: str | Path, members: Sequence[str], config: JudgeConfig) -> tuple[Panel, list[JudgeConfig]]:
    """(the panel ``members`` names in the judgments file, a judge config per member at
    ``config``'s endpoint: its model name as sent, temperature and votes), so each member grades
    what the panel lacks as it graded before; a member asked at another host is refused by name."""
    _, panel = Judgments.load(path).with_panel(members)
    host = config.judge.host
    out = []
    for m in panel.members:
        if m.host != host:
            raise RetrievalEvalError(f"judge {m.fingerprint} ({m.model}) of the panel was asked at host {m.host or '?'}, "
                                     f"not {host or '?'}: give its endpoint (--base-url, RETRIEVAL_EVAL_BASE_URL)",
                                     path=path)
        out.append(replace(config, model=m.asked_as or m.model, temperature=m.temperature, votes=m.votes))
    return panel, out


def judge_panel(pairs: Sequence[Pair], path: str | Path, members: Sequence[str], config: JudgeConfig, *,
                progress: Callable[[str], None] | None = None) -> tuple[Panel, list[JudgingReport]]:
    """Every member of the panel grades the pairs it lacks (``judge_pairs``, one member after the
    other); the panel and each member's report."""
    panel, configs = panel_configs(path, members, config)
    return panel, [judge_pairs(pairs, path, c, progress=progress) for c in configs]
