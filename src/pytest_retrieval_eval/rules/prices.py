"""``--retrieval-prices``: what each model's tokens cost, in US dollars per million tokens
(``analysis/cost.py`` prices an evaluation's calls with them)."""

from __future__ import annotations

import re
from typing import Sequence

from ..errors import RetrievalEvalError

_PRICE = re.compile(r"^(?P<model>[^=\s]+)=(?P<input>\d+(?:\.\d*)?|\.\d+)(?:/(?P<output>\d+(?:\.\d*)?|\.\d+))?$")


def parse_prices(text: str | Sequence[str], *, source: str = "--retrieval-prices") -> tuple[tuple[str, float, float], ...]:
    """``MODEL=INPUT[/OUTPUT]``, in US dollars per million tokens as price pages state them
    (``text-embedding-3-small=0.02 gpt-4o-mini=0.15/0.60``; ``*=...`` prices every other model);
    without an output price, output tokens cost what input tokens do."""
    items = text.split() if isinstance(text, str) else [w for line in text for w in line.split()]
    out: dict[str, tuple[float, float]] = {}
    for item in items:
        if item.startswith("#"):
            break
        m = _PRICE.match(item)
        if not m:
            hint = "; separate models with spaces" if "," in item and "=" in item.split(",", 1)[1] else ""
            raise RetrievalEvalError(f"{source}: price {item!r} not understood; expected MODEL=INPUT[/OUTPUT] in "
                                     "dollars per million tokens, e.g. 'text-embedding-3-small=0.02' or "
                                     f"'gpt-4o-mini=0.15/0.60'{hint}")
        if m["model"] in out:
            raise RetrievalEvalError(f"{source}: {m['model']} is priced twice; give each model one price")
        given = float(m["input"])
        out[m["model"]] = (given, float(m["output"]) if m["output"] is not None else given)
    return tuple((model, i, o) for model, (i, o) in sorted(out.items()))
