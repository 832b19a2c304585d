"""Question generation: one paraphrased question per chunk from an OpenAI-compatible
chat-completions endpoint, written into the questions cache as it goes.

- bounded concurrency (one call at a time at a local server unless told, ``ChatEndpoint.in_flight``),
  retries with backoff on 429/5xx/timeouts honouring ``Retry-After`` (``_http.post_json``),
  temperature 0, every answer capped at ``max_tokens`` (a question needs a few dozen; uncapped, a
  weak local model can talk to the end of its context); an answer the cap cut is counted, and its
  question read when it arrived whole before the cut (``{"question": "...", "evidence": "...``);
- a server that is not there stops the run after three calls in a row that could not connect
  (``_http.DeadServer``), in one line naming it, instead of failing each chunk in turn;
- fail loud: a chunk whose call or answer fails is logged, left out and counted, never dropped
  silently; the run says how many failed and which;
- generate touches only its own questions (``labels.is_generated``): imported labels and
  hand-written entries are kept whatever it decides; their staleness is for ``check`` and the
  session to report, never acted on here;
- with ``follow_ups`` (``generate --follow-ups=N``), up to N chunks also get a two-turn
  conversation: a first question and a follow-up that needs it (a pronoun for the first's
  subject), both labeled with the chunk's document, the follow-up ``depends``; the first turn
  passes the question filters, the follow-up must read as dependent (``segments.depends_guess``);
- nothing is lost: an exclusive lock keeps concurrent writers (xdist workers) apart, the cache
  is rewritten atomically after every answer, so a killed run leaves a valid cache holding all it
  had, and the next run fills only what is missing or stale.
"""

from __future__ import annotations

import contextvars
import dataclasses
import json
import logging
import re
import threading
from concurrent.futures import FIRST_COMPLETED, ThreadPoolExecutor, wait
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Sequence

from .._atomic import locked
from .._http import (DEFAULT_CHAT_MODEL, FAILURE_KINDS, ChatEndpoint, DeadServer, api_key_for, base_url, failure_kind,
                     new_client, post_json)
from .._secrets import mask_and_cap, redact
from .._usage import counting
from .corpus import Corpus
from ..errors import RetrievalEvalError
from .chunking import Chunking
from .question_filters import QuestionFilter
from .labeled import LabeledSet, load_questions_cache, write_questions_cache
from .label_lifecycle import is_generated
from .segments import depends_guess
from ..types import Chunk, LabeledQuery, sha256_text

log = logging.getLogger(__name__)

#: characters of a model's answer that a message or log line shows
SHOWN = 200

SYSTEM_PROMPT = (
    "You write evaluation questions for a search system. Given one passage from a knowledge base, "
    "write ONE question that a real user could ask and that this passage answers. Paraphrase: do not "
    "reuse the passage's distinctive words (product names, rare terms, title words, numbers as written); "
    "use everyday words instead, as someone who has never seen the passage would. The question must stand "
    "on its own: never mention 'the passage', 'the text' or 'the document'. "
    'Answer with JSON only: {"question": "...", "evidence": "..."}, where evidence is the sentence or '
    "sentences of the passage that answer the question, copied word for word."
)
USER_PROMPT = "Passage:\n<<<\n{passage}\n>>>"
PROMPT_SHA256 = sha256_text(SYSTEM_PROMPT + "\n\n" + USER_PROMPT)
FOLLOW_UP_PROMPT = (
    "You write evaluation conversations for a chat assistant's search. Given one passage from a knowledge base, "
    "write TWO questions a real user could ask one after the other, both answered by this passage. The first "
    "stands on its own. The second is a follow-up that only makes sense after the first: it refers to the first "
    "question's subject with a pronoun (it, that, they, this) and never names it again. Paraphrase: do not reuse "
    "the passage's distinctive words (product names, rare terms, title words, numbers as written); never mention "
    "'the passage', 'the text' or 'the document'. "
    'Answer with JSON only: {"question": "...", "follow_up": "...", "evidence": "..."}, where evidence is the '
    "sentence or sentences of the passage that answer them, copied word for word."
)
FOLLOW_UP_PROMPT_SHA256 = sha256_text(FOLLOW_UP_PROMPT + "\n\n" + USER_PROMPT)
DEFAULT_MODEL = DEFAULT_CHAT_MODEL


#: tokens a question's answer may take: ``{"question": "...", "evidence": "..."}`` needs about a hundred
MAX_TOKENS = 128
#: calls in flight at a hosted endpoint unless told (a local server gets one: ``ChatEndpoint.in_flight``)
HOSTED_CONCURRENCY = 4


@dataclass(frozen=True)
class GeneratorConfig(ChatEndpoint):
    max_tokens: int | None = MAX_TOKENS
    filters: QuestionFilter = QuestionFilter()


@dataclass
class GenerationReport:
    generated: list[str] = field(default_factory=list)  # new query ids
    kept: int = 0
    dropped: list[str] = field(default_factory=list)  # stale query ids removed
    untouched: list[str] = field(default_factory=list)  # imported or hand-written ids, kept as they are (in ``kept``)
    untouched_stale: list[str] = field(default_factory=list)  # of those, stale against the corpus: for ``check``
    failed: dict[str, str] = field(default_factory=dict)  # chunk id -> reason
    filtered: dict[str, list[str]] = field(default_factory=dict)  # reason -> chunk ids whose answer was dropped
    calls: int = 0  # requests sent, every retry and failed one among them (``_usage.counting``)
    #: answers the length cap cut (``finish_reason: length``), and of them those whose question was read
    cut: int = 0
    cut_read: int = 0
    #: the cap the answers had, in tokens
    cap: int | None = None
    #: chunk id -> its failure's kind (``_http.FAILURE_KINDS``; ``other`` for the rest)
    kinds: dict[str, str] = field(default_factory=dict)

    def summary(self) -> str:
        text = (f"generated {len(self.generated)}, kept {self.kept}, dropped {len(self.dropped)} stale, "
                f"failed {len(self.failed)}")
        if self.untouched:
            text += (f"; {len(self.untouched)} imported or hand-written question(s) left as they are"
                     + (f" ({len(self.untouched_stale)} stale against the corpus)" if self.untouched_stale else ""))
        if self.filtered:
            text += (f", filtered {sum(map(len, self.filtered.values()))} ("
                     + ", ".join(f"{r} {len(c)}" for r, c in sorted(self.filtered.items())) + ")")
        if self.failed:  # counted by kind, one of each named whole (a timeout's says how to wait longer)
            found = [self.kinds.get(c, "other") for c in self.failed]
            kinds = [k for k in (*FAILURE_KINDS, "other") if k in found]
            said = ", ".join(f"{found.count(k)} {FAILURE_KINDS.get(k, 'failed otherwise')}" for k in kinds)
            text += f" ({said}; " + "; ".join(
                f"{FAILURE_KINDS.get(k, 'failed otherwise')}, e.g. {c}: {mask_and_cap(self.failed[c], 500)}"
                for k in kinds for c in [next(c for c in self.failed if self.kinds.get(c, 'other') == k)]) + ")"
        if self.calls:
            text += f"; {self.calls} call(s)"
        if self.cut:
            text += (f"; {self.cut} answer(s) cut by the answer cap of {self.cap} tokens (twice that for a "
                     f"conversation; finish_reason length), {self.cut_read} of them with their question read whole "
                     "before the cut: raise the cap with generate --max-tokens=N")
        return text


def require_api_key(url: str | None = None) -> str | None:
    """The API key for the generation endpoint; None for a local or private server without one;
    an error naming the variable for a hosted endpoint without one (``_http.api_key_for``)."""
    return api_key_for(base_url(url), "question generation")


class UnparsableAnswer(RetrievalEvalError):
    """The model answered, but no question could be read from the answer: dropped and counted."""


_FENCE = re.compile(r"```[a-zA-Z]*\s*(.*?)\s*```", re.S)
_LABEL = re.compile(r"^(?:[-*>#\d.)\s]*)(?:\*\*|__)?\s*(?:question|q)\s*\d*\s*[:.-]\s*(?:\*\*|__)?\s*", re.I)
_PREAMBLE = re.compile(r"^(?:here(?:'s| is| are)|sure|certainly|okay|ok|of course|below is|the question)\b", re.I)
_QUOTES = "\"'“”‘’«»`"


def question_text(content: str) -> str:
    """The question in a model's answer, in the shapes models give: a JSON object with a
    ``question`` key (other keys ignored), such JSON in a code fence, a plain question, a
    preamble or label line before it (``Here is a question about the passage:``,
    ``Question:``), surrounding quotes or bold. Anything else raises ``UnparsableAnswer``."""
    text = content.strip()
    fenced = _FENCE.search(text)
    if fenced:
        text = fenced.group(1).strip()
    if "{" in text and "}" in text:
        candidate = text[text.index("{"): text.rindex("}") + 1]
        try:
            data = json.loads(candidate)
        except ValueError:
            data = None
        if isinstance(data, dict):
            question = data.get("question")
            if not isinstance(question, str):
                raise UnparsableAnswer(f"JSON without a 'question' text: {_shown(content)}")
            return _tidy(question, content)
    if text.lstrip().startswith("{"):  # JSON cut short (by the length cap): its question, when whole
        found = whole_fields(text).get("question")
        if found is None:
            why = ("JSON cut before its question was whole" if '"question"' in text else
                   "JSON cut short, without a 'question' text before the cut")
            raise UnparsableAnswer(f"{why}: {_shown(content)}")
        return _tidy(found, content)
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    kept = []
    for line in lines:
        labelled = _LABEL.sub("", line)
        if labelled != line:
            line = labelled
        elif _PREAMBLE.match(line) or (line.endswith(":") and not line.endswith("?")):
            continue  # "Here is a question about the passage:"
        if line.strip(_QUOTES + "* "):
            kept.append(line)
    questions = [line for line in kept if line.rstrip(_QUOTES + "* ").endswith("?")]
    if questions:
        return _tidy(questions[0], content)
    if len(kept) == 1:
        return _tidy(kept[0], content)
    raise UnparsableAnswer(f"no question in the answer: {_shown(content)}" if kept or not lines
                           else f"only a preamble in the answer: {_shown(content)}")


_FIELD = re.compile(r'"(\w+)"\s*:\s*("(?:[^"\\]|\\.)*")')


def whole_fields(text: str) -> dict[str, str]:
    """The text fields of a JSON object that arrived whole, read from its start even when the
    rest was cut (``{"question": "Why?", "evidence": "The bat`` -> ``{"question": "Why?"}``)."""
    out: dict[str, str] = {}
    for name, raw in _FIELD.findall(text):
        try:
            value = json.loads(raw)
        except ValueError:
            continue
        out.setdefault(name, value)
    return out


def _shown(text: str, limit: int = SHOWN) -> str:
    """A model's answer as a message shows it: masked, then capped (it may be a megabyte)."""
    return repr(mask_and_cap(text, limit))


def _tidy(question: str, content: str) -> str:
    question = " ".join(question.split()).strip()
    for _ in range(3):  # "**\"How ...?\"**"
        question = question.strip("*_ ").strip(_QUOTES).strip()
    if len(question) < 5:
        raise UnparsableAnswer(f"question {question!r} is empty or too short (answer {_shown(content)})")
    return question


def answer_evidence(answer: object, passage: str) -> str | None:
    """The sentence(s) the model says its question was made from (``"evidence"`` in its JSON),
    when ``passage`` holds them as a label's quote must be held (``data.evidence.holds``); None
    otherwise: a quote the model did not copy is no label."""
    from .evidence import holds

    try:
        content = answer["choices"][0]["message"]["content"]  # type: ignore[index]
        fenced = _FENCE.search(content)
        text = fenced.group(1) if fenced else content
        quote = json.loads(text[text.index("{"): text.rindex("}") + 1]).get("evidence")
    except (KeyError, IndexError, TypeError, ValueError, AttributeError):
        return None
    if not isinstance(quote, str) or not quote.strip() or not holds(passage, quote):
        return None
    return " ".join(quote.split())


def _content(answer: object) -> str:
    """The text of a chat-completions answer (``choices[0].message.content``), or why there is none."""
    try:
        content = answer["choices"][0]["message"]["content"]  # type: ignore[index]
    except (KeyError, IndexError, TypeError):
        raise RetrievalEvalError("malformed answer: no choices[0].message.content") from None
    if not isinstance(content, str):
        raise RetrievalEvalError("malformed answer: content is not text")
    return content


def parse_question(answer: object) -> str:
    """The question out of a chat-completions answer (see ``question_text``)."""
    return question_text(_content(answer))


def parse_follow_up(answer: object) -> tuple[str, str]:
    """(first question, follow-up) out of a chat-completions answer holding JSON with
    ``question`` and ``follow_up``; anything else raises ``UnparsableAnswer``."""
    content = _content(answer)
    fenced = _FENCE.search(content)
    text = fenced.group(1) if fenced else content
    try:
        data = json.loads(text[text.index("{"): text.rindex("}") + 1])
    except ValueError:
        data = whole_fields(text) if text.lstrip().startswith("{") else None  # cut short: what is whole
    if not isinstance(data, dict) or not isinstance(data.get("question"), str) or not isinstance(
            data.get("follow_up"), str):
        raise UnparsableAnswer(f"no JSON with 'question' and 'follow_up' texts: {_shown(content)}")
    return _tidy(data["question"], content), _tidy(data["follow_up"], content)


def _still_fresh(q: LabeledQuery, corpus: Corpus, chunks: dict[str, Chunk]) -> LabeledQuery | None:
    """A generated entry with its doc fingerprint refreshed, or None when it is stale: a judged
    document is gone or its source chunk changed."""
    src = dict(q.source)
    doc = corpus.get(src.get("doc_id") or (q.gold[0] if q.gold else ""))
    if doc is None or any(d not in corpus for d in q.relevant):
        return None
    chunk = chunks.get(src["chunk_id"])
    if chunk is None or chunk.fingerprint != src.get("chunk_sha256"):
        return None
    src["doc_sha256"] = doc.fingerprint
    return dataclasses.replace(q, source=src)


def plan(existing: LabeledSet | None, chunks: Sequence[Chunk], corpus: Corpus, *, regenerate: bool
         ) -> tuple[list[LabeledQuery], list[Chunk], list[str]]:
    """(entries to keep, chunks that need a question, stale ids dropped). Only generated entries
    (``is_generated``) are judged: every other one is kept as it is. A chunk needs a question
    when no kept generated entry comes from it, or always with ``regenerate``, unless its document
    is out of date (``out_of_date``); a kept entry is replaced only once its chunk's new question
    has arrived, so a failed regeneration loses no good entry."""
    by_id = {c.chunk_id: c for c in chunks}
    keep, dropped = [], []
    for q in (existing.everything if existing else ()):  # an unanswerable turn is a team's label: kept
        if not is_generated(q):
            keep.append(q)
            continue
        fresh = _still_fresh(q, corpus, by_id)
        if fresh is None:
            dropped.append(q.query_id)
        else:
            keep.append(fresh)
    covered = set() if regenerate else {q.source.get("chunk_id") for q in keep if is_generated(q)
                                        and q.conversation is None}  # a chunk's conversation is no question
    stale = out_of_date(corpus)
    return keep, [c for c in chunks if c.chunk_id not in covered and c.doc_id not in stale], dropped


NOTES = ("one question per chunk, generated by the model above with the prompt in pytest_retrieval_eval/data/"
         "generate.py and kept when it passes the filters (data/question_filters.py); entries' source.by names who "
         "wrote each")


def _notes(existing: LabeledSet | None) -> str:
    """The generator's notes, with the notes of a cache made another way (imported, handwritten)
    carried along: what a team wrote about its labels stays."""
    before = dict((existing.provenance.get("generator") or {}) if existing is not None else {})
    if before.get("method") == "llm" and before.get("notes"):
        return str(before["notes"])
    if before.get("notes"):
        return f"{NOTES}. Before generation ({before.get('method') or 'unknown'}): {before['notes']}"
    return NOTES


def _free_id(chunk_id: str, taken: set[str]) -> str:
    """``CHUNK#1``, or the next number when a question the generator does not own holds that id."""
    n = 1
    while f"{chunk_id}#{n}" in taken:
        n += 1
    return f"{chunk_id}#{n}"


def _free_conversation(chunk_id: str, taken: set[str]) -> str:
    """``CHUNK.chat1`` (its turns ``CHUNK.chat1#1``, ``#2``), or the next number when taken."""
    n = 1
    while f"{chunk_id}.chat{n}#1" in taken or f"{chunk_id}.chat{n}#2" in taken:
        n += 1
    return f"{chunk_id}.chat{n}"


def conversation_plan(keep: Sequence[LabeledQuery], chunks: Sequence[Chunk], corpus: Corpus, *, wanted: int,
                      regenerate: bool) -> list[Chunk]:
    """The chunks that get a generated conversation now: as many as bring the cache's generated
    conversations up to ``wanted`` (``wanted`` new ones with ``regenerate``), in chunk order,
    skipping chunks that have one and documents out of date."""
    have = {q.source.get("chunk_id") for q in keep if is_generated(q) and q.conversation is not None}
    missing = wanted if regenerate else max(0, wanted - len(have))
    stale = out_of_date(corpus)
    return [c for c in chunks if (regenerate or c.chunk_id not in have) and c.doc_id not in stale][:missing]


def _stale_among(keep: Sequence[LabeledQuery], ids: Sequence[str], corpus: Corpus) -> list[str]:
    """Which of the untouched entries ``ids`` are stale: reported, never acted on."""
    from .staleness import check

    wanted = set(ids)
    found = check(LabeledSet(tuple(q for q in keep if q.query_id in wanted)), corpus)
    stale = {q for docs in (found.changed, found.deleted, found.unknown) for qs in docs.values() for q in qs}
    return sorted(stale)


def out_of_date(corpus: Corpus) -> set[str]:
    """Documents superseded or outside their validity today: no question is generated from
    them, since its answer would be out of date (see data/freshness.py)."""
    import datetime as dt

    from .freshness import Freshness

    found = Freshness.of(corpus.docs, dt.date.today())
    return set(found.stale) if found is not None else set()


def generate_questions(corpus: Corpus, chunks: Sequence[Chunk], path: str | Path, *,
                       config: GeneratorConfig = GeneratorConfig(), split: Chunking = Chunking(),
                       regenerate: bool = False, progress: Callable[[str], None] | None = None,
                       follow_ups: int = 0) -> GenerationReport:
    """Fill ``path`` with a question for every chunk that lacks a fresh one (all, with
    ``regenerate``), and with up to ``follow_ups`` two-turn conversations; see the module
    docstring for what is guaranteed on failure."""
    path = Path(path)
    api_key = require_api_key(config.base)
    report = GenerationReport()
    json_mode = [True]  # ask for JSON output until the endpoint says it does not take the parameter
    with locked(path):
        existing = load_questions_cache(path) if path.exists() else None
        keep, todo, report.dropped = plan(existing, chunks, corpus, regenerate=regenerate)
        jobs = [("question", c) for c in todo] + [("conversation", c) for c in conversation_plan(
            keep, chunks, corpus, wanted=follow_ups, regenerate=regenerate)] if follow_ups else [
            ("question", c) for c in todo]
        report.kept = len(keep)
        report.untouched = [q.query_id for q in keep if not is_generated(q)]
        report.untouched_stale = _stale_among(keep, report.untouched, corpus)
        entries = {q.query_id: q for q in keep}
        taken = set(report.untouched)  # ids the generator must not write over
        header = {
            "generator": {"method": "llm", "model": config.model, "prompt_sha256": PROMPT_SHA256,
                          "temperature": config.temperature, "endpoint": redact(config.base),
                          "filters": dataclasses.asdict(config.filters), "filtered": {},
                          "notes": _notes(existing),
                          **({"follow_up_prompt_sha256": FOLLOW_UP_PROMPT_SHA256} if follow_ups else {})},
            "splitter": split.describe(),
            "corpus_fingerprint": corpus.fingerprint,
        }

        def save() -> None:
            ordered = tuple(sorted(entries.values(), key=lambda q: q.query_id))
            write_questions_cache(path, LabeledSet(ordered, name=path.name), **header)

        if report.dropped or existing is None:
            save()
        if not jobs:
            return report
        width, why = config.in_flight(HOSTED_CONCURRENCY, "--concurrency=N")
        report.cap = config.max_tokens
        if progress:
            talks = sum(kind == "conversation" for kind, _ in jobs)
            progress(f"generating questions for {len(jobs) - talks} chunks"
                     + (f" and conversations for {talks}" if talks else "") + f" with {config.model}, "
                     f"{width} at a time ({why})")
        cuts, counted = [0, 0], threading.Lock()  # answers the cap cut, and of them whose question was read

        def ask(job: tuple[str, Chunk]) -> list[LabeledQuery]:
            kind, chunk = job
            prompt = SYSTEM_PROMPT if kind == "question" else FOLLOW_UP_PROMPT
            payload = {"model": config.model, "temperature": config.temperature,
                       **({"max_tokens": config.max_tokens * (1 + (kind != "question"))} if config.max_tokens else {}),
                       "messages": [{"role": "system", "content": prompt},
                                    {"role": "user", "content": USER_PROMPT.format(passage=chunk.text)}]}
            url = f"{config.base}/chat/completions"
            if json_mode[0]:
                try:
                    answer = post_json(client, url, {**payload, "response_format": {"type": "json_object"}},
                                       api_key=api_key, retries=config.retries)
                except RetrievalEvalError as exc:
                    if getattr(exc, "status", None) not in (400, 404, 415, 422, 501):
                        raise
                    # the endpoint refuses the parameter (or JSON mode): once without, then never again
                    answer = post_json(client, url, payload, api_key=api_key, retries=config.retries)
                    if json_mode[0]:
                        json_mode[0] = False
                        log.warning("%s refused response_format (%s); asking without it from now on", url, exc)
            else:
                answer = post_json(client, url, payload, api_key=api_key, retries=config.retries)
            cut = _finish(answer) == "length"
            if cut:
                with counted:
                    cuts[0] += 1
            made = _made(kind, chunk, answer)
            if cut:
                with counted:
                    cuts[1] += 1
            return made

        def _made(kind: str, chunk: Chunk, answer: object) -> list[LabeledQuery]:
            doc = corpus.get(chunk.doc_id)
            quote = answer_evidence(answer, chunk.text)  # what it was made from: a label that outlives the chunk
            source = {"doc_id": chunk.doc_id, "doc_sha256": doc.fingerprint, "chunk_id": chunk.chunk_id,
                      "chunk_sha256": chunk.fingerprint, "by": config.model,
                      **({"evidence": {chunk.doc_id: [quote]}} if quote else {})}
            if kind == "question":
                return [LabeledQuery(_free_id(chunk.chunk_id, taken), parse_question(answer), {chunk.doc_id: 1}, source)]
            from .conversations import TurnLabel, turns_of

            first, follow_up = parse_follow_up(answer)
            return turns_of(_free_conversation(chunk.chunk_id, taken), [
                TurnLabel(first, None, {chunk.doc_id: 1}, source, False),
                TurnLabel(follow_up, None, {chunk.doc_id: 1}, source, True)])

        down = DeadServer(config.base, "question generation")
        with counting() as meter, new_client(timeout=config.timeout) as client, \
                ThreadPoolExecutor(width) as pool:  # every attempt sent is a call, failed ones too
            pending = {pool.submit(contextvars.copy_context().run, ask, job): job for job in jobs}
            try:
                while pending:
                    done, _ = wait(pending, return_when=FIRST_COMPLETED)
                    for future in done:
                        kind, chunk = pending.pop(future)
                        talk = kind == "conversation"
                        name = f"{chunk.chunk_id} (conversation)" if talk else chunk.chunk_id
                        down.saw(future.exception())  # three calls in a row that could not connect: stop
                        try:
                            made = future.result()
                        except UnparsableAnswer as exc:  # the model answered: dropped, counted by reason
                            report.filtered.setdefault("unparsable", []).append(name)
                            header["generator"]["filtered"] = {r: len(c) for r, c in sorted(report.filtered.items())}
                            log.warning("answer for %s dropped: %s", chunk.chunk_id, exc)
                            save()
                            continue
                        except Exception as exc:  # recorded, counted, reported
                            reason = mask_and_cap(exc if isinstance(exc, RetrievalEvalError)
                                                  else f"{type(exc).__name__}: {exc}", 500)
                            report.failed[name] = reason
                            report.kinds[name] = failure_kind(exc) or "other"
                            log.warning("question generation failed for %s: %s", chunk.chunk_id, reason)
                            continue
                        others = [e.asked for e in entries.values()  # a follow-up repeats nothing alone
                                  if not (is_generated(e) and e.source.get("chunk_id") == chunk.chunk_id)]
                        reason = config.filters.reject(made[0].asked, chunk.text, others)
                        if reason is None and talk and not depends_guess(made[1].question):
                            reason = "follow_up_standalone"  # it names its subject: no follow-up at all
                        if reason is not None:  # counted, named, and asked again on the next run
                            report.filtered.setdefault(reason, []).append(name)
                            header["generator"]["filtered"] = {r: len(c) for r, c in sorted(report.filtered.items())}
                            log.warning("%s for %s dropped (%s): %s", kind, chunk.chunk_id, reason,
                                        _shown(" / ".join(q.question for q in made)))
                            save()
                            continue
                        for old in [k for k, e in entries.items() if is_generated(e) and e.source.get("chunk_id")
                                    == chunk.chunk_id and (e.conversation is not None) == talk]:
                            del entries[old]  # replaced (with --regenerate) only now that the new one exists
                            report.kept -= 1
                        for q in made:
                            entries[q.query_id] = q
                            report.generated.append(q.query_id)
                        save()
            finally:
                for future in pending:
                    future.cancel()
                report.calls = meter.calls
                report.cut, report.cut_read = cuts
    return report


def _finish(answer: object) -> str | None:
    """Why the model stopped (``choices[0].finish_reason``: ``length`` when the cap cut it)."""
    try:
        reason = answer["choices"][0].get("finish_reason")  # type: ignore[index]
    except (KeyError, IndexError, TypeError, AttributeError):
        return None
    return reason if isinstance(reason, str) else None
