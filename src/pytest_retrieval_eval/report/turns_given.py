"""The line under the table that names the engines given a conversation's last turn alone (no
``retrieve_conversation``): their follow-up numbers measure a search that never saw the earlier
turns. Read from each evaluation's ``engine_info["conversation"]``; nothing is computed here."""

from __future__ import annotations

from typing import Any

from ..evaluation.evaluate import GIVEN_LAST_TURN

#: the line's width, as the terminal's default summary keeps it
WIDTH = 88
LEAD = "given the last turn alone (no retrieve_conversation): "


def alone(run: Any) -> list[str]:
    """The engines given the last turn alone, in the table's order, each once."""
    return list(dict.fromkeys(e.engine for e in run.evaluations if e.engine_info.get("conversation") == GIVEN_LAST_TURN))


def line(run: Any, width: int | None = WIDTH) -> str:
    """One line (empty when every engine took the conversation, or the set has none); with
    ``width``, the names that do not fit are counted."""
    names = alone(run)
    if not names:
        return ""
    text = LEAD + ", ".join(names)
    for shown in range(len(names) - 1, 0, -1):
        if width is None or len(text) <= width:
            break
        text = LEAD + ", ".join(names[:shown]) + f" and {len(names) - shown} more"
    return text
