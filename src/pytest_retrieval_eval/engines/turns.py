"""The baselines a team's query rewrite is measured against, the oracle, and a team's own
rewriter, over any engine that takes a question: ``last_turn`` rewrites nothing (the user's latest
turn alone), ``concatenated`` joins the user's turns, oldest first, ``oracle_rewrite`` searches the
person's standalone rewrite the labels carry (``LabeledQuery.rewrite``), and ``rewritten(engine,
fn)`` searches what a team's ``fn(turns)`` makes of the turns. All take the conversation
(``retrieve_conversation``) and keep the engine's stages, so a miss keeps its cause ("cut by
fusion", "never a candidate") and recall by stage is the engine's; the report still names
``last_turn`` among the engines "given the last turn alone" (it is, by design:
``last_turn_only``), marked as the baseline. What each sends is in its ``describe()``.

The assistant's replies are left out of ``concatenated``: they are long, restate documents and
vary with the generator, so a baseline that read them would measure the generator as much as the
retrieval. A rewrite that uses them is the team's to write, and is then measured against both.
"""

from __future__ import annotations

import asyncio
import inspect
from typing import Any, Callable, Sequence

from .base import Engine, TurnContext, answer_of, describe, is_async, is_staged, takes_turn


def user_text(turns: Sequence[Any], separator: str = " ") -> str:
    """The user's turns, oldest first, joined by ``separator`` (the assistant's replies left out)."""
    return separator.join(t.text for t in turns if t.role == "user")


class OverTurns:
    """An engine that takes a question, made to take a conversation: ``rewrite(turns, turn)`` is
    the question it is asked (``turn``: the ``TurnContext``, None when called without one). A
    single question is asked as it is; ``retrieve_stages``, ``retrieve_passages``, ``prepare``,
    ``concurrency`` and ``index`` (the plugin's store it reads, which the causes of its misses
    rest on) are the engine's own where it has them. ``last_turn_only``: the rewrite sends
    the last turn alone, as the report says; ``oracle``: it sends the person's rewrite, the
    oracle the others' gap is measured to; ``team``: a team's rewriter, whose every rewrite is
    recorded with the turn's result and is not made ahead of the turn (``prepare_turns``)."""

    def __init__(self, engine: Engine, rewrite: Any, about: str, name: str, last_turn_only: bool = False, *,
                 oracle: bool = False, team: bool = False) -> None:
        self.engine, self.rewrite, self.about, self.name = engine, rewrite, about, name
        self.last_turn_only, self.oracle, self.team = last_turn_only, oracle, team
        self.concurrency = getattr(engine, "concurrency", None)
        if is_staged(engine):  # the stages of a turn are the stages of its rewritten question
            self.retrieve_stages = engine.retrieve_stages  # type: ignore[attr-defined]
        if callable(getattr(engine, "retrieve_passages", None)):
            self.retrieve_passages = engine.retrieve_passages  # type: ignore[attr-defined]
        if callable(getattr(engine, "prepare", None)):
            self.prepare = engine.prepare  # type: ignore[attr-defined]
            self.prepare_turns = self._prepare_turns
        if hasattr(engine, "index"):  # the plugin's store it reads: what a miss's cause rests on (past the window...)
            self.index = engine.index

    def _prepare_turns(self, asks: Sequence[tuple[Sequence[Any], TurnContext | None]]) -> None:
        """The engine prepared (``engines.base.PreparesTurns``) with what it will search: each single
        question, and each turn's rewrite where it is known ahead (the baselines', the oracle's);
        a team's rewriter is asked at its turn, timed with it, so its rewrites are not made here."""
        texts = [turns[-1].text if turn is None else self.rewrite(turns, turn) for turns, turn in asks
                 if turn is None or not self.team]
        if texts:
            self.engine.prepare(texts)  # type: ignore[attr-defined]

    def _said(self, text: Any, turn: TurnContext | None) -> str:
        if not isinstance(text, str):
            raise TypeError(f"the rewrite returned {type(text).__name__}; expected the text to search")
        if self.team and turn is not None:
            turn.record_rewrite(text)
        return text

    def retrieve(self, query: str, k: int) -> Any:
        return self.engine.retrieve(query, k)

    def retrieve_conversation(self, turns: Sequence[Any], k: int, turn: TurnContext | None = None) -> Any:
        return answer_of(self.engine)(self._said(self.rewrite(turns, turn), turn), k)

    def describe(self) -> dict:
        over = {"over": self.engine.name} if self.oracle or self.team else {}
        return {**describe(self.engine), "rewrite": self.about, **over}


class AsyncOverTurns(OverTurns):
    """``OverTurns`` over an ``AsyncEngine``, or with an ``async def`` rewriter: both calls are
    coroutines. A sync engine's calls run in a worker thread (the event loop stays free for the
    turns asked beside), its whole answer kept: a ``Stages`` answer keeps the engine's stages."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        if not is_async(self.engine):
            self.retrieve_passages = self._passages  # type: ignore[method-assign]

    async def _answer(self, query: str, k: int) -> Any:
        ask = answer_of(self.engine)
        if is_async(self.engine):
            return await ask(query, k)
        return await asyncio.to_thread(ask, query, k)

    async def _passages(self, query: str, k: int) -> Any:
        return await self._answer(query, k)

    async def retrieve(self, query: str, k: int) -> Any:  # type: ignore[override]
        if is_async(self.engine):
            return await self.engine.retrieve(query, k)
        return await asyncio.to_thread(self.engine.retrieve, query, k)

    async def retrieve_conversation(self, turns: Sequence[Any], k: int,  # type: ignore[override]
                                    turn: TurnContext | None = None) -> Any:
        text = self.rewrite(turns, turn)
        if inspect.isawaitable(text):
            text = await text
        return await self._answer(self._said(text, turn), k)


def _over(engine: Engine, rewrite: Any, about: str, name: str, last_turn_only: bool = False, *,
          oracle: bool = False, team: bool = False, awaits: bool = False) -> OverTurns:
    kind = AsyncOverTurns if is_async(engine) or awaits else OverTurns
    return kind(engine, rewrite, about, name, last_turn_only, oracle=oracle, team=team)


def last_turn(engine: Engine, *, name: str | None = None) -> OverTurns:
    """``engine`` given the user's latest turn alone: the rewrite that rewrites nothing."""
    return _over(engine, lambda turns, turn: turns[-1].text, "none: the last turn alone",
                 name or f"{engine.name}-last", last_turn_only=True)


def concatenated(engine: Engine, separator: str = " ", *, name: str | None = None) -> OverTurns:
    """``engine`` given the user's turns joined by ``separator``, oldest first; the assistant's
    replies are left out (see the module's docstring)."""
    return _over(engine, lambda turns, turn: user_text(turns, separator),
                 f"the user's turns joined oldest first by {separator!r}, the assistant's replies left out",
                 name or f"{engine.name}-concat")


def oracle_rewrite(engine: Engine, *, name: str | None = None) -> OverTurns:
    """``engine`` given the person's standalone rewrite of each turn (the label's ``rewrite``,
    read from the ``TurnContext``), where the turn has one, else the last turn alone: the oracle
    a rewriter's gap is measured to (what every conversational search benchmark runs beside the
    raw turn)."""
    def human(turns: Sequence[Any], turn: TurnContext | None) -> str:
        return turn.rewrite if turn is not None and turn.rewrite is not None else turns[-1].text

    return _over(engine, human, "the person's rewrite of the turn (the labels' rewrite), else the last turn alone",
                 name or f"{engine.name}-rewrite", oracle=True)


def rewritten(engine: Engine, rewrite_fn: Callable[..., Any], *, name: str | None = None) -> OverTurns:
    """``engine`` given what a team's rewriter makes of the turns: ``rewrite_fn(turns)`` (plain or
    ``async def``) returns the text to search; one that also takes ``turn`` (a second argument, or
    the keyword) is told which turn it rewrites (``TurnContext``: id, conversation, position). The
    engine's stages are kept, so its misses keep their causes; each turn's rewrite is recorded
    with its result and, where the labels carry a person's rewrite, scored against it."""
    if not callable(rewrite_fn):
        raise TypeError(f"rewritten(): rewrite_fn must be callable, got {type(rewrite_fn).__name__}")
    call = _caller(rewrite_fn)
    awaits = inspect.iscoroutinefunction(rewrite_fn) or inspect.iscoroutinefunction(
        getattr(rewrite_fn, "__call__", None))
    label = getattr(rewrite_fn, "__qualname__", type(rewrite_fn).__name__)
    return _over(engine, call, f"a team's rewrite: {label}", name or f"{engine.name}-rewritten", team=True,
                 awaits=awaits)


def _caller(fn: Callable[..., Any]) -> Callable[[Sequence[Any], TurnContext | None], Any]:
    """``fn`` called as it is written: ``fn(turns, turn=...)``, ``fn(turns, turn)`` (a second
    argument without a default) or ``fn(turns)``."""
    if takes_turn(fn):
        return lambda turns, turn: fn(tuple(turns), turn=turn)
    try:
        params = list(inspect.signature(fn).parameters.values())
    except (TypeError, ValueError):
        params = []
    needed = [p for p in params if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD) and p.default is p.empty]
    if len(needed) >= 2:  # a second argument it must be given: the turn
        return lambda turns, turn: fn(tuple(turns), turn)
    return lambda turns, turn: fn(tuple(turns))
