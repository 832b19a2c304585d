"""The labeled set's section: a subset run's price (the smallest drop it still detects against the
full set's, ``analysis/subset.py``) and what the set says of itself (near duplicates, leakage,
no signal, the metadata-only baseline: ``data/set_checks.py``, ``analysis/set_signal.py``).
Read from the analysis; each finding names its questions."""

from __future__ import annotations

import textwrap
from typing import TYPE_CHECKING

from ..analysis.set_signal import lines as finding_lines

if TYPE_CHECKING:
    from ..gate.verdict import Verdict

#: questions a terminal line names before "and N more" (results.md and the page name them all)
SHOWN = 10


def subset_lines(verdict: Verdict, *, markdown: bool = False) -> list[str]:
    """``subset pr: 20 of 68 questions; smallest detectable drop of hit@5: keyword 0.310 (0.150 with all 68)``"""
    drops = verdict.analysis.subset
    if not drops:
        return []
    first = drops[0]
    per = "; ".join(f"{d.engine} {d.subset:.3f}" + (f" (all {d.of_n}: {d.full:.3f})" if d.full is not None else
                                                    " (the full set's: not recorded)") for d in drops)
    line = (f"subset {first.name}: {first.n} of {first.of_n} questions; the smallest drop of {first.measure} it "
            f"can detect (80% power): {per}")
    return [f"- {line}"] if markdown else textwrap.wrap(line, width=80, subsequent_indent="    ",
                                                         break_on_hyphens=False)


def finding_count(verdict: Verdict) -> str:
    found = verdict.analysis.labeled_set
    kinds: dict[str, int] = {}
    for f in found:
        kinds[f.kind] = kinds.get(f.kind, 0) + len(f.query_ids)
    return ", ".join(f"{k.replace('_', ' ')} {n}" for k, n in kinds.items())


def lines(verdict: Verdict, *, markdown: bool = False) -> list[str]:
    """The section's lines: findings as bullets in Markdown, indented under a header in the terminal."""
    found = verdict.analysis.labeled_set
    if not found:
        return []
    body = finding_lines(found, limit=None if markdown else SHOWN)
    if markdown:
        return [f"- {line}" for line in body]
    return [f"labeled set: {finding_count(verdict)} (questions named)", *(f"  {line}" for line in body)]
