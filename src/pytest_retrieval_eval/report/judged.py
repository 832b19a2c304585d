"""How much of each top k the labels judge, said under the table when they judge few documents.

Generated questions judge one gold document each: of a top 10, nine documents at least are
unjudged and count as not relevant. The figures stay exact, but precision, map and ndcg are then
lower bounds, and a reader should see that beside them (ir_measures' ``Judged@k``).
"""

from __future__ import annotations

import textwrap
from typing import Any

from ..ir.measures import Measure

MEANING = ("unjudged documents count as not relevant: precision, map and ndcg are lower bounds; "
           "hit@k and mrr depend on the judged documents only")


def cutoffs(measures: list[str]) -> list[int]:
    """The cutoffs of the tabled (and so gated) relevance measures, ascending."""
    ks = set()
    for name in measures:
        m = Measure.parse(name)
        if not m.freshness and m.k is not None:
            ks.add(m.k)
    return sorted(ks)


def stale_lines(verdict: Any) -> list[str]:
    """Per labeled set with questions left out as stale: how many the numbers rest on."""
    seen, out = set(), []
    for e in verdict.run.evaluations:
        stale = e.labeled.provenance.get("stale_left_out") or {}
        if stale and e.labeled.name not in seen:
            seen.add(e.labeled.name)
            out.append(f"{e.labeled.name}: n {e.n}, {len(stale)} stale left out of the numbers and the gates "
                       "(a rule: stale<=N)")
    return out


def judged_lines(verdict: Any, *, markdown: bool = False, width: int = 80) -> list[str]:
    """One line per engine with judged@k at the table's cutoffs, when the labels judge fewer than
    two documents per question; nothing otherwise."""
    ks = cutoffs(list(verdict.measures))
    few = [e for e in verdict.run.evaluations if e.labeled.qrels.judges_few()]
    if not ks or not few:
        return []
    per_query = {e.labeled.name: e.labeled.qrels.judged_per_query() for e in few}
    sets = ", ".join(f"{v:.1f} document{'' if f'{v:.1f}' == '1.0' else 's'} per question"
                     + (f" ({name})" if len(per_query) > 1 else "") for name, v in per_query.items())
    head = f"judged@k, the share of each top k the labels judge ({sets}):"
    rows = [f"{e.engine}: " + ", ".join(f"judged@{k} {e.mean(f'judged@{k}'):.3f}" for k in ks) for e in few]
    if markdown:
        return [head, ""] + [f"- {r}" for r in rows] + ["", f"({MEANING})"]
    out = textwrap.wrap(head, width=width)
    for r in rows:
        out += textwrap.wrap(r, width=width, initial_indent="  ", subsequent_indent="    ")
    return out + textwrap.wrap(MEANING, width=width, initial_indent="  ", subsequent_indent="    ")
