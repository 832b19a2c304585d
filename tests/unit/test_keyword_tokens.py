"""Keyword engine fidelity. The production scorer tokenises with ``[^a-z0-9]+``
after lowercasing: ASCII letters and digits only. The port keeps that quirk (it is the baseline
every engine is measured against), pinned here with non-ASCII text. Expected values are worked
out by hand from the rules in the engine's docstring, not copied from a run."""

from __future__ import annotations

import pytest

from pytest_retrieval_eval import Doc
from pytest_retrieval_eval.engines.keyword import KeywordEngine, tokenize


@pytest.mark.parametrize("text, terms", [
    ("café", ["caf"]),
    ("Crème brûlée", ["cr", "me", "br"]),
    ("naïve résumé", ["na", "ve", "sum"]),
    ("東京 tokyo", ["tokyo"]),
    ("Straße 42", ["stra", "42"]),
    ("ÉCOLE", ["cole"]),
    ("über_alles-2", ["ber", "alles"]),
])
def test_tokens_are_ascii_letters_and_digits_only(text, terms):
    assert tokenize(text) == terms


def test_a_non_ascii_query_scores_by_the_production_rules():
    # title "Café hours" (weight 4), query "café": phrase "café" in title -> 8*4 = 32; term "caf"
    # occurs once -> 4 + 0.25*4*1 = 5; total 37. The filename "cafe.md" (weight 3) has "caf" once:
    # 3 + 0.75 = 3.75. Description empty: 0.
    engine = KeywordEngine([Doc("d1", "body", title="Café hours", filename="cafe.md"),
                            Doc("d2", "body", title="東京 office")])
    assert engine.scores("café") == {"d1": 32 + 5 + 3.75, "d2": 0.0}
    # "東京" gives no term, but the whole normalised query still matches as a phrase: 8*4 = 32
    assert engine.scores("東京") == {"d1": 0.0, "d2": 32.0} and engine.retrieve("東京", 10) == ["d2"]
