"""The two baselines a team's query rewrite is measured against, over any engine that takes a
question: ``last_turn`` rewrites nothing (the user's latest turn alone) and ``concatenated`` joins
the user's turns, oldest first. Both take the conversation (``retrieve_conversation``); the
report still names ``last_turn`` among the engines "given the last turn alone" (it is, by design:
``last_turn_only``), marked as the baseline. What each sends is in its ``describe()``.

The assistant's replies are left out of ``concatenated``: they are long, restate documents and
vary with the generator, so a baseline that read them would measure the generator as much as the
retrieval. A rewrite that uses them is the team's to write, and is then measured against both.
"""

from __future__ import annotations

from typing import Any, Sequence

from .base import Engine, answer_of, describe, is_async, is_staged


def user_text(turns: Sequence[Any], separator: str = " ") -> str:
    """The user's turns, oldest first, joined by ``separator`` (the assistant's replies left out)."""
    return separator.join(t.text for t in turns if t.role == "user")


class OverTurns:
    """An engine that takes a question, made to take a conversation: ``rewrite(turns)`` is the
    question it is asked. A single question is asked as it is; ``retrieve_stages``,
    ``retrieve_passages``, ``prepare`` and ``concurrency`` are the engine's own where it has them.
    ``last_turn_only``: the rewrite sends the last turn alone, as the report says."""

    def __init__(self, engine: Engine, rewrite: Any, about: str, name: str, last_turn_only: bool = False) -> None:
        self.engine, self.rewrite, self.about, self.name = engine, rewrite, about, name
        self.last_turn_only = last_turn_only
        self.concurrency = getattr(engine, "concurrency", None)
        if is_staged(engine):  # the stages of a turn are the stages of its rewritten question
            self.retrieve_stages = engine.retrieve_stages  # type: ignore[attr-defined]
        if callable(getattr(engine, "retrieve_passages", None)):
            self.retrieve_passages = engine.retrieve_passages  # type: ignore[attr-defined]
        if callable(getattr(engine, "prepare", None)):
            self.prepare = engine.prepare  # type: ignore[attr-defined]

    def retrieve(self, query: str, k: int) -> Any:
        return self.engine.retrieve(query, k)

    def retrieve_conversation(self, turns: Sequence[Any], k: int) -> Any:
        return answer_of(self.engine)(self.rewrite(turns), k)

    def describe(self) -> dict:
        return {**describe(self.engine), "rewrite": self.about}


class AsyncOverTurns(OverTurns):
    """``OverTurns`` over an ``AsyncEngine``: both calls are coroutines."""

    async def retrieve(self, query: str, k: int) -> Any:  # type: ignore[override]
        return await self.engine.retrieve(query, k)

    async def retrieve_conversation(self, turns: Sequence[Any], k: int) -> Any:  # type: ignore[override]
        return await answer_of(self.engine)(self.rewrite(turns), k)


def _over(engine: Engine, rewrite: Any, about: str, name: str, last_turn_only: bool = False) -> OverTurns:
    return (AsyncOverTurns if is_async(engine) else OverTurns)(engine, rewrite, about, name, last_turn_only)


def last_turn(engine: Engine, *, name: str | None = None) -> OverTurns:
    """``engine`` given the user's latest turn alone: the rewrite that rewrites nothing."""
    return _over(engine, lambda turns: turns[-1].text, "none: the last turn alone", name or f"{engine.name}-last",
                 last_turn_only=True)


def concatenated(engine: Engine, separator: str = " ", *, name: str | None = None) -> OverTurns:
    """``engine`` given the user's turns joined by ``separator``, oldest first; the assistant's
    replies are left out (see the module's docstring)."""
    return _over(engine, lambda turns: user_text(turns, separator),
                 f"the user's turns joined oldest first by {separator!r}, the assistant's replies left out",
                 name or f"{engine.name}-concat")
