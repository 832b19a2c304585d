"""Why a measure is what it is, in words: what a failed ``assert result.hit_at(5) >= 0.8`` says
(the worst-scoring queries, or for a freshness measure the stale documents behind it), and the
verdict's reason beside a freshness breach. Prose only: it reads the result model, never scores."""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

from ..ir.measures import Measure

if TYPE_CHECKING:
    from ..evaluation.results import Evaluation
    from .scores import Scores


#: the comparisons pytest explains, as the assertion wrote them
_HOLDS = {">=": float.__ge__, "<=": float.__le__, ">": float.__gt__, "<": float.__lt__, "==": float.__eq__,
          "!=": float.__ne__}


def explain(e: "Evaluation", measure: str, value: float, op: str, other: object, limit: int = 5) -> list[str]:
    """The lines under a failed assertion on ``r``'s ``measure``. pytest also asks of a comparison
    that held where another beside it failed (``assert a >= 0.3 and b >= 0.9``): that one says
    it held, and explains no miss."""
    if op in _HOLDS and isinstance(other, (int, float)) and not isinstance(other, bool) \
            and _HOLDS[op](float(value), float(other)):
        return [f"{e.engine}: {measure} = {value:.4f} {op} {other} holds"]
    from .scores import Scores

    r, s = e, Scores.of(e)
    parsed = Measure.parse(measure)
    valued = s.has_value(parsed)  # no value: said, with why; no question is "worst" on nothing
    lines = [
        f"{r.engine}: {measure} {f'= {value:.4f}' if valued else 'has no value'}, expected {op} {other} "
        f"(n={r.n} queries, {r.n_errored} errored, labeled set {r.labeled.name})"
    ]
    if parsed.freshness:
        lines.extend(freshness_lines(s, parsed, limit))
        return lines
    if parsed.evidence and not r.returns_passages:
        return lines + [f"{r.engine} {r.evidence_unavailable()}: no evidence-level value"]
    if not valued:
        return lines + [f"{r.engine}: {why}" for why in [s.no_value_why(parsed)] if why]
    if parsed.evidence:  # the evidence level's misses: "right document, wrong passage" among them
        lines.append(s.evidence_misses(parsed.k or r.depth).line())
    elif not parsed.judged and not parsed.count:  # the misses at the measure's cutoff, by cause
        lines.append(s.misses(parsed.k or r.depth).line())
    misses = worst(s, measure, limit)
    if misses:
        lines.append(f"worst-scoring queries on {measure}:")
        lines.extend("  " + m for m in misses)
    return lines


def worst(s: "Scores", measure: str, limit: int = 5) -> list[str]:
    """One line per worst-scoring query (below the best possible value), worst first."""
    self = s.e
    values = s.per_query(measure)
    by_id = self.labeled.by_id()
    rows = []
    for r in self.results:
        v = values.get(r.query_id, 0.0)
        if v >= 1.0:
            continue
        rank = self.gold_rank(by_id[r.query_id], r)
        rows.append((v, -(rank or math.inf), r.query_id, r, rank))
    rows.sort(key=lambda row: row[:3])
    lines = []
    parsed = Measure.parse(measure)
    causes = ({} if parsed.judged else {c.query_id: c for c in s.evidence_misses(parsed.k or self.depth).causes}
              if parsed.evidence else s.causes(parsed.k or self.depth))
    for v, _, qid, r, rank in rows[:limit]:
        q = by_id[qid]
        question = q.question if len(q.question) <= 70 else q.question[:67] + "..."
        cause = causes.get(qid)
        where = f"rank {rank}" if rank else "not retrieved"
        if cause is not None and cause.kind not in ("ranked", "error"):  # an error is shown as it is
            where += f"; why: {cause.text}"
        got = r.error if r.error else (", ".join(r.doc_ids[:3]) or "nothing")
        named = f"{qid} ({measure}={v:.3f}) {question!r}" if q.name == qid else f"{question!r} ({measure}={v:.3f})"
        lines.append(
            f"{named} gold: {', '.join(q.gold)} ({where}); "
            f"{'error' if r.error else 'top 3'}: {got}"
        )
    return lines

def freshness_lines(s: "Scores", measure: Measure, limit: int = 5) -> list[str]:
    """Why a freshness measure is below 1: the queries and the documents, or that the corpus
    has no versioned documents to judge."""
    self = s.e
    if self.freshness is None:
        return [f"the corpus {self.corpus or ''} has no versioned documents (version_key, valid_from, "
                "valid_until, superseded_by): nothing to judge".replace("corpus  has", "corpus has")]
    if measure.family == "freshness.stale_free":
        found = {q: ", ".join(docs) for q, docs in s.stale_queries(measure.k).items()}
        head = f"queries with a stale document in the top {measure.k} (as of {self.freshness.as_of})"
    else:
        found = {q: "; ".join(" and ".join(c) for c in cs) for q, cs in s.conflicting_queries(measure.k).items()}
        head = f"queries with two versions of one document in the top {measure.k}"
    if not found:
        return []
    shown = list(found.items())[:limit]
    more = f" ... and {len(found) - limit} more" if len(found) > limit else ""
    by_id = self.labeled.by_id()
    return [f"{head}: {len(found)}"] + [f"  {by_id[q].name if q in by_id else q}: {what}" for q, what in shown] + ([more] if more else [])
