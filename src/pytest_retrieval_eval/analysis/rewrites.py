"""Rewrites measured against the person's, where the labels carry a standalone rewrite of a turn
(``LabeledQuery.rewrite``) and the run holds the oracle that searches it (``oracle_rewrite``: its
``engine_info["conversation"]`` is ``GIVEN_HUMAN_REWRITE``).

- ``fidelity_of``: each engine that recorded its rewrites (``rewritten``, ``TurnContext.record_rewrite``)
  against the person's, per turn: ROUGE-1 recall (the person's word tokens, ``data.text.words``,
  found in the engine's rewrite, repeats counted as often as the engine's has them) and the
  overlap of the two top k (the share of the oracle's top k in the engine's top k, where both
  answered), and their means over the turns.
- ``oracle_gaps``: each other engine's gap to the oracle on follow-ups (the oracle's value minus
  the engine's, turn by turn), split into **pool** and **ranking**. The pool part is the gap an
  ideal ranking of each one's candidates would leave: the measure of the relevant documents its
  candidate pool held, best grade first, where the pool is every document a leg of its stages
  held (``Stages``: the engine's candidate depth), or, without stages, its answer at the run's
  depth. The ranking part is the rest (gap minus pool). Each part's 95% interval is the paired
  bootstrap over conversations (``ir.stats.paired_difference_ci``); the pools' mean recall is
  kept beside them.

Which oracle an engine is measured to: the one over the same engine (its ``over``, the engine's
name or its own ``over``), else the labeled set's only oracle; none where several ran and none
matches.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from typing import Sequence

from ..data.text import words
from ..engines.base import GIVEN_HUMAN_REWRITE
from ..evaluation.results import Evaluation, RunResults
from ..ir.metrics import evaluate
from ..ir.runs import Run
from ..ir.stats import paired_difference_ci
from ..types import LabeledQuery, QueryResult
from .scores import Scores


@dataclass(frozen=True)
class TurnFidelity:
    """One turn's rewrite against the person's: ROUGE-1 recall, and the overlap of the top k with
    the oracle's (None where the oracle did not run or either call failed)."""

    query_id: str
    rouge: float
    overlap: float | None


@dataclass(frozen=True)
class Fidelity:
    """One engine's recorded rewrites against the person's, on one labeled set: per turn and the
    means (``overlap`` over the turns that have one; None where none has)."""

    engine: str
    labeled: str
    #: the oracle the top ``k`` are compared with; None where none ran
    oracle: str | None
    k: int
    turns: tuple[TurnFidelity, ...]
    rouge: float
    overlap: float | None


@dataclass(frozen=True)
class OracleGap:
    """One engine's gap to the oracle on ``measure`` over the ``n`` follow-ups of ``conversations``
    conversations: ``gap`` = ``pool`` + ``ranking``, each with its 95% interval over conversations.
    ``pool_from``: what the engine's pool is (``stages``: every document its legs held; ``top N``: its
    answer at the run's depth); ``recall`` and ``oracle_recall``: the mean recall of the two pools."""

    engine: str
    labeled: str
    oracle: str
    measure: str
    n: int
    conversations: int
    pool_from: str
    gap: float
    gap_ci: tuple[float, float]
    pool: float
    pool_ci: tuple[float, float]
    ranking: float
    ranking_ci: tuple[float, float]
    recall: float
    oracle_recall: float


def rouge1_recall(reference: str, candidate: str) -> float | None:
    """The share of ``reference``'s word tokens found in ``candidate`` (each as often as the
    candidate has it): ROUGE-1 recall, on the one normalisation (``data.text.words``); None when
    the reference has no word."""
    wanted = Counter(words(reference))
    if not wanted:
        return None
    found = Counter(words(candidate))
    return sum(min(n, found[w]) for w, n in wanted.items()) / sum(wanted.values())


def top_overlap(a: Sequence[str], b: Sequence[str], k: int) -> float | None:
    """The share of the oracle's top ``k`` (``b``) that the engine's top ``k`` (``a``) holds: of
    what the oracle returned, where it returned fewer than ``k``; None where it returned nothing."""
    theirs = set(b[:k])
    return len(set(a[:k]) & theirs) / len(theirs) if theirs else None


def is_oracle(e: Evaluation) -> bool:
    return e.engine_info.get("conversation") == GIVEN_HUMAN_REWRITE


def oracle_of(e: Evaluation, run: RunResults) -> Evaluation | None:
    """The oracle ``e`` is measured to (see the module's docstring); None where there is none."""
    found = [o for o in run.evaluations if is_oracle(o) and o.labeled.name == e.labeled.name and o is not e]
    over = [o for o in found if o.engine_info.get("over") is not None
            and o.engine_info.get("over") in (e.engine, e.engine_info.get("over"))]
    return over[0] if over else found[0] if len(found) == 1 else None


def fidelity_of(run: RunResults, k: int) -> list[Fidelity]:
    """Each evaluation whose engine recorded a rewrite of a turn the labels rewrite too, in run order."""
    out = []
    for e in run.evaluations:
        if not any(r.rewrite is not None for r in e.results):
            continue
        by_id = e.labeled.by_id()
        oracle = oracle_of(e, run)
        theirs = {r.query_id: r for r in oracle.results} if oracle is not None else {}
        turns = []
        for r in e.results:
            q = by_id[r.query_id]
            if r.rewrite is None or q.rewrite is None or (rouge := rouge1_recall(q.rewrite, r.rewrite)) is None:
                continue
            o = theirs.get(r.query_id)
            both = o is not None and not o.errored and not r.errored
            turns.append(TurnFidelity(r.query_id, rouge, top_overlap(r.doc_ids, o.doc_ids, k) if both else None))
        if not turns:
            continue
        overlaps = [t.overlap for t in turns if t.overlap is not None]
        out.append(Fidelity(e.engine, e.labeled.name, oracle.engine if oracle is not None else None, k, tuple(turns),
                            sum(t.rouge for t in turns) / len(turns),
                            sum(overlaps) / len(overlaps) if overlaps else None))
    return out


def pool_of(q: LabeledQuery, r: QueryResult) -> list[str]:
    """The relevant documents ``r``'s candidate pool held, best grade first (ties by id): those of
    every leg (the first step's, for stages without legs) and of the answer; none for an error."""
    if r.errored:
        return []
    legs = [s for s in r.stages if s.kind == "leg"] or [s for s in r.stages if s.kind == "step"][:1]
    held = {d for s in legs for d in s.ranks} | set(r.doc_ids)
    return [d for d in q.gold if d in held]


def oracle_gaps(run: RunResults, measure: str) -> list[OracleGap]:
    """Each evaluation's gap to its oracle on ``measure`` over the follow-ups (turn 2 on), split
    into pool and ranking, in run order; none for a set without an oracle or without follow-ups."""
    out = []
    for e in run.evaluations:
        oracle = None if is_oracle(e) else oracle_of(e, run)
        if oracle is None:
            continue
        theirs = {r.query_id: r for r in oracle.results}
        by_id = e.labeled.by_id()
        pairs = [(by_id[r.query_id], r, theirs[r.query_id]) for r in e.results
                 if r.query_id in theirs and by_id[r.query_id].conversation is not None and by_id[r.query_id].turn > 1]
        if not pairs:
            continue
        ids = [q.query_id for q, _, _ in pairs]
        clusters = [q.conversation for q, _, _ in pairs]
        queries = [q for q, _, _ in pairs]
        qrels = {q.query_id: dict(q.relevant) for q in queries}
        sides = []  # (values, the values an ideal ranking of the pool would give), the engine's then the oracle's
        for x, results in ((e, [r for _, r, _ in pairs]), (oracle, [o for _, _, o in pairs])):
            got = Scores.of(x).per_query(measure)
            ideal = evaluate(qrels, Run.from_ranked({q.query_id: pool_of(q, r) for q, r in zip(queries, results)}),
                             [measure], per_query=True)[measure]
            sides.append(([got.get(i, 0.0) for i in ids], [ideal.get(i, 0.0) for i in ids]))
        (mine, my_pool), (best, best_pool) = sides
        lost, best_lost = [v - p for v, p in zip(mine, my_pool)], [v - p for v, p in zip(best, best_pool)]

        def part(a: Sequence[float], b: Sequence[float]) -> tuple[float, tuple[float, float]]:
            """mean(a - b), turn by turn, and its paired interval over conversations."""
            return sum(x - y for x, y in zip(a, b)) / len(ids), paired_difference_ci(a, b, clusters=clusters)

        def recall(q: LabeledQuery, r: QueryResult) -> float:
            return len(pool_of(q, r)) / len(q.gold) if q.gold else 0.0

        staged = any(r.stages for _, r, _ in pairs)
        out.append(OracleGap(e.engine, e.labeled.name, oracle.engine, measure, len(pairs), len(set(clusters)),
                             "stages" if staged else f"top {e.depth}", *part(best, mine), *part(best_pool, my_pool),
                             *part(best_lost, lost), sum(recall(q, r) for q, r, _ in pairs) / len(pairs),
                             sum(recall(q, o) for q, _, o in pairs) / len(pairs)))
    return out
