"""The line under the table that names the engines given a conversation's last turn alone: those
with no ``retrieve_conversation``, and the ``last_turn`` baseline, which takes the turns but
rewrites nothing. Their follow-up numbers measure a search that never saw the earlier turns.
Read from each evaluation's ``engine_info["conversation"]``; nothing is computed here."""

from __future__ import annotations

from typing import Any

from ..engines.base import GIVEN_LAST_TURN, GIVEN_LAST_TURN_BASELINE

#: the line's width, as the terminal's default summary keeps it
WIDTH = 88
#: why an engine is given the last turn alone, as the line says it
WHY = {GIVEN_LAST_TURN: "no retrieve_conversation", GIVEN_LAST_TURN_BASELINE: "last_turn"}
LEAD = "given the last turn alone (no retrieve_conversation): "


def alone(run: Any) -> list[str]:
    """The engines given the last turn alone, in the table's order, each once."""
    return list(_why(run))


def _why(run: Any) -> dict[str, str]:
    """engine -> why it is given the last turn alone, in the table's order."""
    out: dict[str, str] = {}
    for e in run.evaluations:
        why = WHY.get(e.engine_info.get("conversation"))
        if why is not None:
            out.setdefault(e.engine, why)
    return out


def _text(named: list[tuple[str, str]], shown: int) -> str:
    """The first ``shown`` of ``named``, the rest counted. Only engines without
    ``retrieve_conversation``: the reason once, in the lead; with the baseline among them (shown
    or not): each group of names followed by its reason."""
    tail = f" and {len(named) - shown} more" if shown < len(named) else ""
    if all(why == WHY[GIVEN_LAST_TURN] for _, why in named):
        return LEAD + ", ".join(name for name, _ in named[:shown]) + tail
    groups: dict[str, list[str]] = {}
    for name, why in named[:shown]:
        groups.setdefault(why, []).append(name)
    return "given the last turn alone: " + "; ".join(f"{', '.join(names)} ({why})"
                                                      for why, names in groups.items()) + tail


def line(run: Any, width: int | None = WIDTH) -> str:
    """One line (empty when every engine took the conversation, or the set has none); with
    ``width``, the names that do not fit are counted."""
    named = list(_why(run).items())
    if not named:
        return ""
    text = _text(named, len(named))
    for shown in range(len(named) - 1, 0, -1):
        if width is None or len(text) <= width:
            break
        text = _text(named, shown)
    return text
