"""How much of each top k the labels judge, said under the table when they judge few documents.

Generated questions judge one gold document each: of a top 10, nine documents at least are
unjudged and count as not relevant. The figures stay exact, but precision, map and ndcg are then
lower bounds, and a reader should see that beside them (ir_measures' ``Judged@k``). The shares
are the analysis's (``analysis/judged.py``); here they are only said.
"""

from __future__ import annotations

import textwrap
from typing import TYPE_CHECKING, Any

from ..analysis.judged import cutoffs

if TYPE_CHECKING:  # the gate's verdict, read here; imported only by type checkers
    from ..gate.verdict import Verdict

MEANING = ("unjudged documents count as not relevant: precision, map and ndcg are lower bounds; "
           "hit@k and mrr depend on the judged documents only")


def stale_lines(verdict: Verdict) -> list[str]:
    """Per labeled set with questions left out as stale: how many the numbers rest on."""
    seen, out = set(), []
    for e in verdict.run.evaluations:
        stale = e.labeled.provenance.get("stale_left_out") or {}
        if stale and e.labeled.name not in seen:
            seen.add(e.labeled.name)
            out.append(f"{e.labeled.name}: n {e.n}, {len(stale)} stale left out of the numbers and the gates "
                       "(a rule: stale<=N)")
    return out


#: a top k judged less than this share draws a "rests on" line per engine
LOW_JUDGED = 0.5


def _rests_on(found: Any) -> list[str]:
    """``hybrid: hit@5 rests on a top 5 that is 81% unjudged``, for the gated measures whose top
    k is judged below ``LOW_JUDGED``: one line per engine, the first cutoff said in full."""
    parts = []
    for at in found.at:
        unjudged = 1.0 - at.labels
        names = at.rests  # one the engine has no value of (ids only: +evidence) rests on nothing
        if not names or not unjudged > 1.0 - LOW_JUDGED:
            continue
        after = f" ({1.0 - at.judged:.0%}{' with the judgments' if not parts else ''})" \
            if at.judged is not None else ""
        if not parts:
            parts.append(f"{found.engine}: {', '.join(names)} rest{'s' if len(names) == 1 else ''} on a top {at.k} "
                         f"that is {unjudged:.0%} unjudged{after}")
        else:
            parts.append(f"{', '.join(names)} {unjudged:.0%}{after}")
    return ["; ".join(parts)] if parts else []


def moved_most(verdict: Verdict) -> str | None:
    """Which engine's score the filled holes moved most, on the first column with a judged twin."""
    pairs = [(m, j) for m in verdict.measures if (j := f"{m}+judged") in verdict.measures]
    if not pairs:
        return None
    m, j = pairs[0]
    moves = [(r.values[j] - r.values[m], r) for r in verdict.rows
             if r.values[j] is not None and r.values[m] is not None]
    if not moves:
        return None
    delta, row = max(moves, key=lambda p: abs(p[0]))
    others = ", ".join(f"{r.engine} {d:+.3f}" for d, r in moves if r is not row)
    return (f"the judgments moved {row.engine} most: {m} {row.values[m]:.3f} -> {row.values[j]:.3f} ({delta:+.3f})"
            + (f"; {others}" if others else ""))


def ppi_lines(verdict: Verdict) -> list[str]:
    """What the ``~ppi`` estimates rest on: the human-judged questions, the judge they correct,
    and per engine what each is worth in human-judged questions, or why it fell back to them alone."""
    found = verdict.estimates
    if not found:
        return []
    sizes = sorted({(x.ppi.n, x.ppi.N) for x in found})
    rests = ", ".join(f"{n} of {N}" for n, N in sizes)
    out = [f"~ppi: prediction-powered from {rests} questions people judged completely (a worksheet), correcting "
           f"judge {found[0].judge}: each interval is the estimate's own, or the people's alone where the judge "
           "does not narrow it"]
    several = len({x.labeled for x in found}) > 1
    by_engine: dict[tuple[str, str], dict[str, list[str]]] = {}
    for x in found:
        said = (f"human-only: {x.ppi.note.split(':')[0]}" if x.ppi.fell_back else
                f"worth {x.ppi.effective_n:.0f} human-judged questions")
        by_engine.setdefault((x.engine, x.labeled), {}).setdefault(said, []).append(x.measure)
    out += [f"{engine}{f' ({labeled})' if several else ''}: "
            + "; ".join(f"{', '.join(names)} {said}" for said, names in groups.items())
            for (engine, labeled), groups in by_engine.items()]
    return out


def ppi_line(verdict: Verdict) -> list[str]:
    """``~ppi: 30 of 68 questions human-judged; hit@1, hit@5 columns human-only``: what the
    estimates rest on, in one line (``ppi_lines`` says it in full)."""
    found = verdict.estimates
    if not found:
        return []
    rests = ", ".join(f"{n} of {N}" for n, N in sorted({(x.ppi.n, x.ppi.N) for x in found}))
    alone = list(dict.fromkeys(x.measure.removesuffix("~ppi") for x in found if x.ppi.fell_back))
    return [f"~ppi: {rests} questions human-judged; "
            + (f"{', '.join(alone)} column{'s' if len(alone) > 1 else ''} human-only" if alone
               else "the judge narrows every column")]


def asked_judged_lines(verdict: Verdict, width: int = 80) -> list[str]:
    """The judged@k section where the run read a judgments file (it asked for it), without ``-v``:
    what ``~ppi`` rests on in one line, and judged@k per engine with and without the judgments."""
    judged = [x for x in verdict.analysis.judged if any(at.judged is not None for at in x.at)]
    rows = [f"{x.engine}: " + ", ".join(f"judged@{at.k} {at.labels:.3f} -> {at.judged:.3f}" for at in x.at)
            for x in judged]
    head = ["judged@k, the share of each top k judged, by the labels -> with the judgments:"] if rows else []
    return ppi_line(verdict) + head + [line for row in rows for line in textwrap.wrap(
        row, width=width, initial_indent="  ", subsequent_indent="    ", break_on_hyphens=False)]


def judged_lines(verdict: Verdict, *, markdown: bool = False, width: int = 80) -> list[str]:
    """One line per engine with judged@k at the table's cutoffs (and with the judgments, when a
    run has them), when the labels judge fewer than two documents per question or judgments fill
    them; a line per engine whose gated top k is mostly unjudged; nothing otherwise."""
    few = verdict.analysis.judged
    top = list(verdict.analysis.judgment_lines)
    top += ppi_lines(verdict)
    moved = moved_most(verdict)
    top += [moved] if moved else []
    if not cutoffs(verdict.measures) or not few:
        return _shown(top, [], [], markdown, width)
    per_query = {x.labeled: x.per_question for x in few}
    sets = ", ".join(f"{v:.1f} document{'' if f'{v:.1f}' == '1.0' else 's'} per question"
                     + (f" ({name})" if len(per_query) > 1 else "") for name, v in per_query.items())
    head = f"judged@k, the share of each top k the labels judge ({sets}):"
    rows = [f"{x.engine}: " + ", ".join(f"judged@{at.k} {at.labels:.3f}"
                                        + (f" -> {at.judged:.3f} with the judgments" if at.judged is not None else "")
                                        for at in x.at) for x in few]
    rests = [line for x in few for line in _rests_on(x)]
    return _shown(top, [head], rows + rests, markdown, width, meaning=True)


def _shown(top: list[str], head: list[str], rows: list[str], markdown: bool, width: int, *, meaning: bool = False
           ) -> list[str]:
    if markdown:
        out = [*top, ""] if top else []
        out += [*head, ""] + [f"- {r}" for r in rows] if head else []
        return out + (["", f"({MEANING})"] if meaning else [])
    out = [w for line in top for w in textwrap.wrap(line, width=width, subsequent_indent="    ")]
    out += [w for line in head for w in textwrap.wrap(line, width=width)]
    for r in rows:
        out += textwrap.wrap(r, width=width, initial_indent="  ", subsequent_indent="    ")
    return out + (textwrap.wrap(MEANING, width=width, initial_indent="  ", subsequent_indent="    ") if meaning else [])


def candidate_lines(run: Any) -> list[str]:
    """One line per candidate document: its novelty, and the questions it would answer."""
    from ..data.novelty import Novelty

    recorded = getattr(run, "candidates", None) or {}
    items = [Novelty.from_dict(d) for d in recorded.get("items", [])]
    if not items:
        return []
    mean = sum(n.value for n in items) / len(items)
    return ([f"candidates ({len(items)} from {recorded.get('path')}): mean novelty {mean:.2f} against the corpus "
             f"(weight {recorded.get('weight', 0):g} in the shadow comparisons' knowledge gain)"]
            + [f"  {n.describe()}" for n in items])
