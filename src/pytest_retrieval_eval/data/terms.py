"""Text as the metadata keyword engine reads it (``engines/keyword.py``): normalised, then cut
into unique ASCII terms of 2+ characters. Here, below the engines, so the labeled set's derived
segments (``body-only``) read questions exactly as that engine does."""

from __future__ import annotations

import re

_DASHES = re.compile(r"[_-]+")
_SPACES = re.compile(r"\s+")
_NOT_ALNUM = re.compile(r"[^a-z0-9]+")  # ASCII only, as production


def normalize(text: str) -> str:
    return _SPACES.sub(" ", _DASHES.sub(" ", text.lower())).strip()


def tokenize(text: str) -> list[str]:
    """Unique terms of 2+ characters, in first-seen order."""
    terms = (t for t in _NOT_ALNUM.split(normalize(text)) if len(t) >= 2)
    return list(dict.fromkeys(terms))
