"""Adapters: the retrievers teams already run, as engines, each a one-liner in a conftest::

    from pytest_retrieval_eval import adapters

    def pytest_retrieval_engines(registry, config):
        registry.register("mine", lambda request: adapters.function(my_search))
        registry.register("rag", lambda request: adapters.haystack(build_query_pipeline()))
        registry.register("lc", lambda request: adapters.langchain(vectorstore.as_retriever()))
        registry.register("li", lambda request: adapters.llamaindex(index.as_retriever()))
        registry.register("search-api", lambda request: adapters.http("http://search.internal/q?text={query}&n={k}",
                                                                       ids="hits[].id"))

Everything is duck-typed: no adapter makes its library a dependency of the plugin. The
retrievers' documents come back as passages (``Passage``: doc id and text, scored at the
evidence level too), an HTTP service's as ids, or passages with ``texts=``; results are read as document ids, best first: scored answers are ranked by trec_eval's rule (score
descending, ties by doc id descending), and chunk hits are folded into their documents (first
occurrence, order kept) through a metadata field (``doc_id`` by default).
"""

from __future__ import annotations

import inspect
import numbers
import os
import re
from typing import Any, Callable, Iterable, Mapping, Sequence

from ..errors import RetrievalEvalError
from ..types import Passage, Turn
from .base import takes_turn

#: How many calls an HTTP engine has in flight by default: a search service takes several at once.
HTTP_CONCURRENCY = 8


def ranked_ids(answer: Any) -> list[str]:
    """An engine's answer as doc ids, best first: a sequence (or iterator) of ids; ``(id, score)``
    pairs; ``{id: score}``; ``Passage`` objects (their documents', folded). The answer is read
    exactly once; any other shape is a ``TypeError`` that names it (an unordered set, None, a lone
    string, objects that are not ids)."""
    if type(answer) in (list, tuple) and all(type(i) is str for i in answer):  # the common answer, checked fast
        return list(answer)
    if type(answer) in (list, tuple) and answer and all(type(i) is Passage for i in answer):
        return fold(p.doc_id for p in answer)
    from ..ir.runs import rank_by_score

    if answer is None:
        raise TypeError("retrieve() returned None; return doc ids, best first")
    if isinstance(answer, (set, frozenset)):
        raise TypeError(f"retrieve() returned a {type(answer).__name__}, which has no order; return doc ids "
                        "best first (a list)")
    if isinstance(answer, (str, bytes)):
        raise TypeError(f"retrieve() returned a single {type(answer).__name__} {answer!r:.60}; return a list of doc ids")
    if isinstance(answer, Mapping):
        return list(rank_by_score(_scores(answer.items(), "{id: score}")))
    try:
        items = list(answer)
    except TypeError:
        raise TypeError(f"retrieve() returned a {type(answer).__name__}, not a sequence of doc ids") from None
    if items and all(isinstance(i, (tuple, list)) and len(i) == 2 for i in items):
        return list(rank_by_score(_scores(items, "(id, score) pairs")))
    for i, item in enumerate(items):
        if not isinstance(item, str):
            raise TypeError(f"retrieve() returned a {type(answer).__name__} whose item {i} is a "
                            f"{type(item).__name__} ({item!r:.60}), not a doc id string")
    return items


def passages_of(answer: Any) -> list[tuple[str, str]] | None:
    """(doc id, text) of each passage of an answer made of ``Passage`` objects, best first; None
    for an answer of ids, or of passages without any text (no evidence level for it)."""
    if type(answer) in (list, tuple) and answer and all(type(i) is Passage for i in answer) and any(
            p.text.strip() for p in answer):
        return [(p.doc_id, p.text) for p in answer]
    return None


def _passage(doc_id: str, text: Any) -> Passage:
    """A retrieved document or chunk as a ``Passage`` (no text: an empty one, which carries no evidence)."""
    return Passage(doc_id, text if isinstance(text, str) else "")


def _scores(pairs: Iterable[Any], shape: str) -> dict[str, float]:
    """First score of each id; ids must be strings and scores numbers (NaN is not a score)."""
    scores: dict[str, float] = {}
    for doc, score in pairs:
        if not isinstance(doc, str):
            raise TypeError(f"retrieve() returned {shape} with a {type(doc).__name__} id {doc!r:.40}, not a string")
        if isinstance(score, bool) or not isinstance(score, numbers.Real) or score != score:
            raise TypeError(f"retrieve() returned {shape} where '{doc}' has score {score!r:.40}, not a number")
        scores.setdefault(doc, float(score))
    return scores


def fold(ids: Iterable[str]) -> list[str]:
    """First occurrence of each id, order kept (chunk hits of one document become one hit)."""
    return list(dict.fromkeys(ids))


def _one_turn(query: str) -> tuple[Turn, ...]:
    """A single question as the conversation it is: one user turn."""
    return (Turn("user", query),)


def chat_messages(turns: Sequence[Turn]) -> list[dict[str, str]]:
    """The turns in OpenAI's chat message shape, ``[{"role": "user", "content": ...}, ...]``:
    what an HTTP engine's ``"{conversation}"`` becomes."""
    return [{"role": t.role, "content": t.text} for t in turns]


class Adapted:
    """An engine made from something else: ``name``, ``retrieve``, ``describe``, ``concurrency``;
    with ``converse`` (``converse(turns, k)``, or ``converse(turns, k, turn=...)`` where it takes
    ``turn``: told which turn it answers), ``retrieve_conversation`` too, and a single question is
    then asked as a one-turn conversation (``turn`` None)."""

    def __init__(self, name: str, call: Callable[[str, int], Any], info: Mapping[str, Any], *,
                 concurrency: int | None = None, converse: Callable[[Sequence[Turn], int], Any] | None = None,
                 exact: Callable[[str, int], Any] | None = None) -> None:
        self.name = name
        told = converse is not None and takes_turn(converse)
        self._told = told
        self._call = call if converse is None else (
            lambda query, k: converse(_one_turn(query), k, **({"turn": None} if told else {})))
        self._info = dict(info)
        self.concurrency = concurrency
        if converse is not None:  # an attribute only where it answers: engines.base.converses(self)
            self._converse = converse
            self.retrieve_conversation = self._conversation
        if exact is not None:  # engines.base.ExactSearches: asked with --retrieval-exact-check
            self.exact_search = exact

    def _conversation(self, turns: Sequence[Turn], k: int, turn: Any = None) -> Any:
        """The answer as it came, passages kept (a ``Passage`` answer is read at the evidence level)."""
        return self._converse(tuple(turns), k, **({"turn": turn} if self._told else {}))

    def retrieve(self, query: str, k: int) -> list[str]:
        return ranked_ids(self._call(query, k))

    def retrieve_passages(self, query: str, k: int) -> Any:
        """The answer as it came, passages kept (what the evaluation reads: ``engines.base.answer_of``)."""
        return self._call(query, k)

    def describe(self) -> dict:
        return dict(self._info)


class AsyncAdapted(Adapted):
    """An ``AsyncEngine`` made from an ``async def`` callable."""

    async def retrieve(self, query: str, k: int) -> list[str]:  # type: ignore[override]
        return ranked_ids(await self._call(query, k))

    async def retrieve_passages(self, query: str, k: int) -> Any:  # type: ignore[override]
        return await self._call(query, k)

    async def _conversation(self, turns: Sequence[Turn], k: int, turn: Any = None) -> Any:  # type: ignore[override]
        return await self._converse(tuple(turns), k, **({"turn": turn} if self._told else {}))


def function(fn: Callable[..., Any], *, name: str | None = None, concurrency: int | None = None,
             conversation: bool = False, exact_search: Callable[[str, int], Any] | None = None) -> Adapted:
    """A plain callable ``fn(query, k)`` (sync or ``async def``) returning doc ids, ``(id, score)``
    pairs or ``{id: score}``. With ``conversation=True`` it is ``fn(turns, k)``: ``turns`` the
    conversation so far (``types.Turn``: ``role`` and ``text``, the user's current turn last), and
    a single question comes as one user turn; ``fn(turns, k, turn)`` is also told which turn it
    answers (``TurnContext``; None for a single question). ``exact_search(query, k)``: the same
    search without its approximate index, what ``--retrieval-exact-check`` measures ``fn`` against."""
    label = getattr(fn, "__qualname__", type(fn).__name__)
    kind = AsyncAdapted if inspect.iscoroutinefunction(fn) else Adapted
    return kind(name or getattr(fn, "__name__", "function"), fn,
                {"adapter": "function", "callable": label, **({"takes": "the conversation"} if conversation else {})},
                concurrency=concurrency, converse=fn if conversation else None, exact=exact_search)


def _meta_id(meta: Mapping[str, Any] | None, field: str, fallback: Any) -> str:
    value = (meta or {}).get(field)
    return str(value if value not in (None, "") else fallback)


def haystack(obj: Any, *, name: str = "haystack", output: str | None = None, doc_id_field: str = "doc_id",
             inputs: Callable[[str, int], dict] | None = None, concurrency: int | None = None,
             id_required: bool = False, path: Any = None, conversation_input: str | None = None) -> Adapted:
    """A Haystack ``Pipeline`` or a retriever component.

    A pipeline gets ``inputs(query, k)`` (default ``{"query": query}``, which Haystack hands to
    every component with a ``query`` input); ``output`` names the documents to read
    (``"ranker.documents"``), by default the only documents output the pipeline returns. A
    component is called as ``run(query=query, top_k=k)``. A document's id is its
    ``meta[doc_id_field]``, else its ``id`` (with ``id_required``, a document without the meta
    field is an error naming ``path``, the pipeline's file).

    ``conversation_input`` (``"messages"``, or ``"rewriter.messages"`` for one component's
    socket): the engine takes the conversation, given to that input as a list of Haystack
    ``ChatMessage`` (``from_user`` and ``from_assistant``, oldest first), in place of ``inputs``; a
    single question comes as one user message. A component is called as
    ``run(<conversation_input>=messages, top_k=k)``."""
    is_pipeline = hasattr(obj, "get_component") and hasattr(obj, "run")
    make_inputs = inputs or (lambda query, k: {"query": query})

    def documents(result: Mapping[str, Any]) -> list:
        if output:
            component, _, socket = output.partition(".")
            try:
                return list(result[component][socket or "documents"])
            except KeyError:
                raise RetrievalEvalError(f"haystack engine {name}: the pipeline returned no {output!r}; it returned "
                                         f"{', '.join(f'{c}.{s}' for c, out in result.items() for s in out)}") from None
        found = sorted((c, out["documents"]) for c, out in result.items() if isinstance(out, Mapping) and "documents" in out)
        if len(found) != 1:
            raise RetrievalEvalError(f"haystack engine {name}: {len(found)} components returned documents "
                                     f"({', '.join(c for c, _ in found) or 'none'}); name one with output='COMPONENT.documents'")
        return list(found[0][1])

    def read(result: Mapping[str, Any]) -> list[Passage]:
        docs = documents(result) if is_pipeline else list(result["documents"])
        if id_required and any((d.meta or {}).get(doc_id_field) is None for d in docs):
            raise RetrievalEvalError(f"a retrieved document lacks the id meta field '{doc_id_field}'",
                                     path=path, field=doc_id_field)
        return [_passage(_meta_id(d.meta, doc_id_field, d.id), getattr(d, "content", None)) for d in docs]

    def call(query: str, k: int) -> list[Passage]:
        return read(obj.run(make_inputs(query, k)) if is_pipeline else obj.run(query=query, top_k=k))

    def converse(turns: Sequence[Turn], k: int) -> list[Passage]:
        messages = haystack_messages(turns)
        component, _, socket = str(conversation_input).rpartition(".")
        if not is_pipeline:
            return read(obj.run(**{socket: messages}, top_k=k))
        return read(obj.run({component: {socket: messages}} if component else {socket: messages}))

    info = {"adapter": "haystack", "object": type(obj).__name__, "doc_id_field": doc_id_field}
    if output:
        info["output"] = output
    if conversation_input:
        info["conversation_input"] = conversation_input
    return Adapted(name, call, info, concurrency=concurrency, converse=converse if conversation_input else None)


def haystack_messages(turns: Sequence[Turn]) -> list:
    """The turns as Haystack ``ChatMessage`` objects, oldest first."""
    from haystack.dataclasses import ChatMessage

    return [ChatMessage.from_assistant(t.text) if t.role == "assistant" else ChatMessage.from_user(t.text)
            for t in turns]


def langchain(retriever: Any, *, name: str = "langchain", doc_id_field: str = "doc_id",
              concurrency: int | None = None) -> Adapted:
    """A LangChain retriever (``invoke(query)`` -> Documents). The depth is passed on as
    ``search_kwargs["k"]`` where the retriever has them; a document's id is its
    ``metadata[doc_id_field]``, else its ``id``."""
    def call(query: str, k: int) -> list[str]:
        kwargs = getattr(retriever, "search_kwargs", None)
        config = {"search_kwargs": {**kwargs, "k": k}} if isinstance(kwargs, dict) else {}
        docs = retriever.invoke(query, **config) if config else retriever.invoke(query)
        return [_passage(_meta_id(getattr(d, "metadata", None), doc_id_field, getattr(d, "id", None)),
                         getattr(d, "page_content", None)) for d in docs]

    return Adapted(name, call, {"adapter": "langchain", "object": type(retriever).__name__,
                                "doc_id_field": doc_id_field}, concurrency=concurrency)


def llamaindex(retriever: Any, *, name: str = "llamaindex", doc_id_field: str = "doc_id",
               concurrency: int | None = None) -> Adapted:
    """A LlamaIndex retriever (``retrieve(query)`` -> ``NodeWithScore``); a node's id is its
    ``metadata[doc_id_field]``, else its ``ref_doc_id``, else its ``node_id``. The depth is the
    retriever's own (``similarity_top_k``)."""
    def call(query: str, k: int) -> list[str]:
        out = []
        for hit in retriever.retrieve(query):
            node = getattr(hit, "node", hit)
            fallback = getattr(node, "ref_doc_id", None) or getattr(node, "node_id", None)
            text = node.get_content() if callable(getattr(node, "get_content", None)) else getattr(node, "text", None)
            out.append(_passage(_meta_id(getattr(node, "metadata", None), doc_id_field, fallback), text))
        return out

    return Adapted(name, call, {"adapter": "llamaindex", "object": type(retriever).__name__,
                                "doc_id_field": doc_id_field}, concurrency=concurrency)


_ENV = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}")


#: the whole-string value of a JSON body template that becomes the conversation's messages
CONVERSATION = "{conversation}"


def _fill(template: Any, query: str, k: int, turns: Sequence[Turn] | None = None) -> Any:
    """``{query}`` and ``{k}`` in every string of a JSON-like template (a whole-string ``{k}``
    stays a number); a whole-string ``"{conversation}"`` becomes the turns' chat messages
    (``chat_messages``; a single question's: one user message)."""
    if isinstance(template, str):
        if template == "{k}":
            return k
        if template == CONVERSATION:
            return chat_messages(turns if turns is not None else _one_turn(query))
        return template.replace("{query}", query).replace("{k}", str(k))
    if isinstance(template, Mapping):
        return {key: _fill(v, query, k, turns) for key, v in template.items()}
    if isinstance(template, list):
        return [_fill(v, query, k, turns) for v in template]
    return template


def _holds(template: Any, value: str) -> bool:
    """Whether ``value`` is a whole string somewhere in a JSON-like template."""
    if isinstance(template, Mapping):
        return any(_holds(v, value) for v in template.values())
    if isinstance(template, list):
        return any(_holds(v, value) for v in template)
    return template == value


def pick(document: Any, path: str) -> list[str]:
    """The ids at ``path`` in a JSON answer: dotted keys, ``[]`` to map over a list, e.g.
    ``hits[].id``, ``data.results[].document.id``, ``ids`` or ``[].id``."""
    values = [document]
    for part in filter(None, path.split(".")):
        spread = part.endswith("[]")
        key = part[:-2] if spread else part
        nxt = []
        for v in values:
            if key:
                if not isinstance(v, Mapping) or key not in v:
                    from .._secrets import mask_and_cap

                    raise RetrievalEvalError(f"ids path {path!r}: no key {key!r} in {mask_and_cap(v, 80)}")
                v = v[key]
            if spread:
                if not isinstance(v, list):
                    raise RetrievalEvalError(f"ids path {path!r}: {key or 'the answer'} is not a list")
                nxt.extend(v)
            else:
                nxt.append(v)
        values = nxt
    if len(values) == 1 and isinstance(values[0], list):
        values = values[0]
    return [str(v) for v in values]


def http(url: str, *, name: str = "http", method: str = "GET", params: Mapping[str, Any] | None = None,
         json: Any = None, ids: str = "ids", texts: str | None = None, headers: Mapping[str, str] | None = None, timeout: float = 10.0,
         retries: int = 3, concurrency: int = HTTP_CONCURRENCY, conversation: bool | None = None) -> Adapted:
    """A search service over HTTP. ``{query}`` and ``{k}`` are filled into the URL (URL-encoded),
    ``params`` and the ``json`` body template; ``ids`` is the path to the ids in the answer, and
    ``texts`` (``hits[].text``), where the service returns passages, the path to their texts;
    header values may name environment variables (``"Bearer ${SEARCH_TOKEN}"``), whose values
    are masked in every message. 429, 5xx and timeouts are retried honouring ``Retry-After``.

    The conversation goes in the request body: a ``json`` template value ``"{conversation}"``
    becomes the turns so far as chat messages, ``[{"role": "user", "content": ...},
    {"role": "assistant", "content": ...}, ...]`` (OpenAI's shape, oldest first), and ``{query}``
    is the last turn's text. ``conversation`` (default: whether the template holds
    ``"{conversation}"``) makes the engine take the conversation."""
    import threading
    from urllib.parse import quote

    import httpx

    from .._http import new_client, request_json
    from .._secrets import register_secret

    talks = _holds(json, CONVERSATION) if conversation is None else conversation
    if talks and not _holds(json, CONVERSATION):
        raise RetrievalEvalError(f'http engine {name}: conversation=True needs a json body template with a '
                                 f'"{CONVERSATION}" value, e.g. json={{"messages": "{CONVERSATION}", "k": "{{k}}"}}')
    missing = sorted({m for v in (headers or {}).values() for m in _ENV.findall(v) if not os.environ.get(m)})
    if missing:
        raise RetrievalEvalError(f"http engine {name}: header variable(s) {', '.join(missing)} not set")
    resolved = {h: _ENV.sub(lambda m: os.environ[m.group(1)], v) for h, v in (headers or {}).items()}
    secrets = [os.environ[m] for v in (headers or {}).values() for m in _ENV.findall(v)]
    for secret in secrets:
        register_secret(secret)
    # One client for every thread (httpx clients are thread-safe): building one costs tens of
    # milliseconds of CPU (its TLS context), which a client per thread would pay per thread.
    holder: list = []
    lock = threading.Lock()

    def call(query: str, k: int, turns: Sequence[Turn] | None = None) -> list[str]:
        if not holder:
            with lock:
                if not holder:
                    holder.append(new_client(timeout=timeout, limits=httpx.Limits(max_connections=max(concurrency, 10))))
        client = holder[0]
        target = url.replace("{query}", quote(query)).replace("{k}", str(k))
        answer = request_json(client, method, target, params=_fill(params, query, k) if params else None,
                              json=_fill(json, query, k, turns) if json is not None else None, headers=resolved,
                              secrets=secrets, retries=retries)
        found = pick(answer, ids)
        if texts is None:
            return fold(found)
        said = pick(answer, texts)
        if len(said) != len(found):
            raise RetrievalEvalError(f"http engine {name}: {len(found)} ids at {ids!r} but {len(said)} texts at {texts!r}")
        return [_passage(d, t) for d, t in zip(found, said)]

    def converse(turns: Sequence[Turn], k: int) -> list[str]:
        return call(turns[-1].text, k, turns)

    return Adapted(name, call, {"adapter": "http", "method": method, "url": url.split("?")[0], "ids": ids,
                                **({"texts": texts} if texts else {}), "timeout": timeout,
                                **({"takes": "the conversation"} if talks else {})},
                   concurrency=concurrency, converse=converse if talks else None)
