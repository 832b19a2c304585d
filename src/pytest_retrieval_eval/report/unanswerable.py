"""The unanswerable turns, as the reports show them: a line per engine under the terminal's
table (how many of them came back with documents) and, in results.md, each turn's top documents
per engine. Read from the analysis (``analysis/unanswerable.py`` listed them) and the record (the
turns' texts); nothing is computed here, and nothing is shown for a set without such turns."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:  # the gate's verdict, read here; imported only by type checkers
    from ..gate.verdict import Verdict

HEAD = "unanswerable turns (no relevant document exists: left out of every measure)"


def terminal_lines(verdict: Verdict) -> list[str]:
    """``unanswerable turns (...): 7, with documents at the top 5:`` then per engine ``  hybrid
    7 of 7 (results.md lists them)``."""
    found = verdict.analysis.unanswered
    if not found:
        return []
    several = len({x.labeled for x in found}) > 1
    names = {id(x): x.engine + (f" ({x.labeled})" if several else "") for x in found}
    width = max(len(n) for n in names.values())
    out = [f"{HEAD}: {found[0].n}, with documents at the top {found[0].k}:" if not several else
           f"{HEAD}, with documents at the top {found[0].k}:"]
    for x in found:
        out.append(f"  {names[id(x)]:<{width}}  {x.returned} of {x.n}" + (" (results.md lists them)" if x.returned else ""))
    return out


def markdown(verdict: Verdict) -> list[str]:
    """results.md's "Unanswerable turns": per evaluation, each turn's text and top documents."""
    found = verdict.analysis.unanswered
    if not found:
        return []
    texts = {q.query_id: q.question for e in verdict.run.evaluations
             for q in getattr(e.labeled, "unanswerable", ())}
    out = ["", "## Unanswerable turns", "",
           "Turns labeled unanswerable (no relevant document exists) are left out of every measure, as trec_eval "
           "leaves out a query without a relevant document. What each engine returned for them at the top is what "
           "a generator would be handed:"]
    for x in found:
        out += ["", f"### {x.engine} on {x.labeled} (documents for {x.returned} of {x.n})", "",
                f"| turn | question | top {x.k} |", "|---|---|---|"]
        for t in x.turns:
            shown = f"error: {t.error}" if t.error else ", ".join(t.top) or "nothing"
            question = " ".join(texts.get(t.query_id, "").split()).replace("|", "\\|")
            out.append(f"| {t.query_id} | {question} | {shown.replace('|', '/')} |")
    return out
