"""How far two raters (a judge and the people, two judges) agree: Cohen's kappa, Fleiss' kappa
over a panel, and Kendall's tau between two rankings of the same items."""

from __future__ import annotations

import math
from typing import Sequence

import numpy as np


def cohen_kappa(a: Sequence[object], b: Sequence[object]) -> float:
    """Cohen's kappa of two raters over the same items: (observed - chance agreement) / (1 -
    chance), chance from each rater's own label shares. 1 is full agreement, 0 what chance gives;
    NaN with no item, and with one label used by both raters throughout (chance is then 1)."""
    if len(a) != len(b):
        raise ValueError(f"two raters of the same items: {len(a)} and {len(b)} labels")
    n = len(a)
    if not n:
        return math.nan
    observed = sum(x == y for x, y in zip(a, b)) / n
    labels = set(a) | set(b)
    chance = sum((sum(x == lab for x in a) / n) * (sum(y == lab for y in b) / n) for lab in labels)
    return math.nan if chance == 1.0 else (observed - chance) / (1.0 - chance)


def fleiss_kappa(table: Sequence[Sequence[int]]) -> float:
    """Fleiss' kappa of several raters: ``table`` has a row per item and a column per category,
    each cell the raters who put the item there (every row the same number of raters, two or
    more). (mean observed agreement per item - chance agreement from the pooled category shares)
    / (1 - chance); 1 is full agreement, 0 what chance gives; NaN with no item, and when every
    rating falls in one category (chance is then 1). Fleiss (1971)."""
    rows = [list(map(int, r)) for r in table]
    if not rows:
        return math.nan
    raters = {sum(r) for r in rows}
    if len(raters) != 1 or next(iter(raters)) < 2:
        raise ValueError(f"every item rated by the same number of raters (two or more): got {sorted(raters)}")
    n, items = raters.pop(), len(rows)
    observed = sum((sum(x * x for x in r) - n) / (n * (n - 1)) for r in rows) / items
    chance = sum((sum(r[j] for r in rows) / (items * n)) ** 2 for j in range(len(rows[0])))
    return math.nan if chance >= 1.0 - 1e-15 else (observed - chance) / (1.0 - chance)


def kendall_tau(a: Sequence[float], b: Sequence[float]) -> float:
    """Kendall's tau-a between two scorings of the same items (engines' means under two sets of
    labels): 1 when they order every pair alike, -1 when they reverse every pair; NaN under two items."""
    n = len(a)
    if n != len(b):
        raise ValueError(f"two scorings of the same items: {n} and {len(b)} values")
    if n < 2:
        return math.nan
    score = 0
    for i in range(n):
        for j in range(i + 1, n):
            score += int(np.sign(a[i] - a[j]) * np.sign(b[i] - b[j]))
    return score / (n * (n - 1) / 2)
