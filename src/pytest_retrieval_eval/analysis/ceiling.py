"""The candidate pool's ceiling: per engine that reports its stages, recall@k at each stage and
where its misses were lost.

No ranking can find what its candidates lack: a vector leg holding 70% of the relevant documents
in its top 50 caps every later step at 0.70. ``ceiling_of`` reads the stages the engine reported
per question (``types.Stage``) and the final ranking, and gives:

- recall@k of each stage, in trec_eval's sense: per question, the relevant documents (grade >= 1)
  the stage holds in its top k over those judged, averaged over every question of the labeled
  set (one with nothing relevant, or an engine error, scores 0, as ``recall@k`` does), for k in
  ``GRID`` below the most the stage held, then at that size (the stage's ceiling);
- each miss at the run's cutoff (``hit@miss_k`` 0, the questions ``Misses`` counts) attributed to
  one stage: an engine error; ranked below k (a relevant document is in the answer, deeper, or
  every step kept one but the answer's depth cut it); else, for the relevant document that got
  furthest, the step that let it go ("cut by fusion") or no leg having any ("never a candidate").
  This is ``analysis/causes.py``'s walk, without its earlier causes (holes, stale versions),
  so the shares always add up to every miss.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..types import LabeledQuery, QueryResult, Stage
from ..evaluation.results import Evaluation

#: the cutoffs recall is shown at, below each stage's size
GRID = (1, 3, 5, 10, 20, 50, 100, 200, 500, 1000)
#: the name the answer's row goes by
FINAL = "final ranking"
ERROR = "engine error"
NEVER = "never a candidate"


@dataclass(frozen=True)
class StageRecall:
    """One stage's recall curve: ``kind`` "leg", "step" or "final"; ``size`` the most documents
    it held for a question; ``points`` (k, recall@k), the last at ``size``: all it held."""

    name: str
    kind: str
    size: int
    points: tuple[tuple[int, float], ...]

    @property
    def label(self) -> str:
        return f"{self.name} leg" if self.kind == "leg" else self.name

    @property
    def ceiling(self) -> float:
        return self.points[-1][1] if self.points else 0.0

    def at(self, k: int) -> float | None:
        """recall@k where ``k`` is one of the points, else None."""
        return next((v for x, v in self.points if x == k), None)


@dataclass(frozen=True)
class StageCurve:
    """One evaluation's stages: recall@k at each (legs, steps, the final ranking) over ``n``
    questions, and its ``missed`` questions at hit@``miss_k`` by where they were lost (``losses``:
    (where, count), in pipeline order, every stage listed, zeros too)."""

    engine: str
    labeled: str
    n: int
    miss_k: int
    missed: int
    stages: tuple[StageRecall, ...]
    losses: tuple[tuple[str, int], ...]

    def share(self, where: str) -> float:
        return dict(self.losses).get(where, 0) / self.missed if self.missed else 0.0

    def line(self) -> str:
        """``hybrid, recall of all each stage held: vector leg 0.93 (50), ...; the 7 misses at hit@5
        lost: 43% never a candidate, ...``: the terminal's line (with -v)."""
        said = ", ".join(f"{s.label} {s.ceiling:.2f} ({s.size})" for s in self.stages)
        lost = ", ".join(f"{self.share(w):.0%} {w}" for w, c in self.losses if c)
        misses = f"{self.missed} miss{'es' if self.missed != 1 else ''}"
        tail = f"the {misses} at hit@{self.miss_k} lost: {lost}" if self.missed else f"no miss at hit@{self.miss_k}"
        return f"{self.engine}, recall of all each stage held: {said}; {tail}"


def ranked_below(k: int) -> str:
    return f"ranked below {k}"


def cut_by(step: str) -> str:
    return f"cut by {step}"


def ceiling_of(e: Evaluation, miss_k: int) -> StageCurve | None:
    """``e``'s (an ``EvaluationResult``) stage curve and losses at ``miss_k``; None when the engine
    reported no stage for any question (nothing to show)."""
    results: list[QueryResult] = list(e.results)
    if not any(r.stages for r in results):
        return None
    order: dict[tuple[str, str], int] = {}  # (kind, name) -> most documents held, in first-seen order
    for r in results:
        for s in r.stages:
            order[(s.kind, s.name)] = max(order.get((s.kind, s.name), 0), s.size)
    legs = [(kind, name) for kind, name in order if kind == "leg"]
    steps = [(kind, name) for kind, name in order if kind == "step"]
    by_id = e.labeled.by_id()
    queries = [by_id[r.query_id] for r in results]
    n = len(e.labeled.queries)
    depth = max((len(r.doc_ids) for r in results), default=0)

    def curve(kind: str, name: str, size: int, ranks_of: Any) -> StageRecall:
        ks = [k for k in GRID if k < size] + [size]
        found = [0.0] * len(ks)
        for q, r in zip(queries, results):
            gold = q.gold
            if not gold or r.error is not None:
                continue
            ranks = ranks_of(r)
            for i, k in enumerate(ks):
                found[i] += sum(1 for d in gold if d in ranks and ranks[d] <= k) / len(gold)
        return StageRecall(name, kind, size, tuple((k, v / n if n else 0.0) for k, v in zip(ks, found)))

    def held(kind: str, name: str):
        def ranks_of(r: QueryResult) -> dict[str, int]:
            s = next((s for s in r.stages if (s.kind, s.name) == (kind, name)), None)
            return dict(s.ranks) if s is not None else {}
        return ranks_of

    def answered(r: QueryResult) -> dict[str, int]:
        ranks: dict[str, int] = {}
        for i, d in enumerate(r.doc_ids, start=1):
            ranks.setdefault(d, i)
        return ranks

    stages = [curve(kind, name, size, held(kind, name)) for (kind, name), size in order.items()]
    stages.append(curve("final", FINAL, depth, answered))
    counts = {ERROR: 0, NEVER: 0, **{cut_by(name): 0 for _, name in steps}, ranked_below(miss_k): 0}
    missed = 0
    for q, r in zip(queries, results):
        where = lost_at(q, r, miss_k, [name for _, name in legs], [name for _, name in steps])
        if where is not None:
            missed += 1
            counts[where] += 1
    losses = tuple((w, c) for w, c in counts.items() if w != ERROR or c)
    return StageCurve(e.engine, e.labeled.name, n, miss_k, missed, tuple(stages), losses)


def lost_at(query: LabeledQuery, result: QueryResult, k: int, legs: list[str], steps: list[str]) -> str | None:
    """Where ``query``'s miss at ``k`` was lost, or None for a hit (or nothing judged relevant)."""
    if result.error is not None:
        return ERROR
    gold = query.gold
    if not gold:
        return None
    first = next((i for i, d in enumerate(result.doc_ids, start=1) if d in gold), None)
    if first is not None:
        return None if first <= k else ranked_below(k)
    held = {s.name: s for s in result.stages if s.kind == "leg"}
    ordered: list[Stage | None] = [next((s for s in result.stages if s.kind == "step" and s.name == name), None)
                                   for name in steps]
    best: int | None = None  # the most steps a relevant document any leg had passed
    cut = NEVER
    for doc in gold:
        if not any(doc in s.ranks for name, s in held.items() if name in legs):
            continue
        passed = next((i for i, s in enumerate(ordered) if s is None or doc not in s.ranks), len(ordered))
        if best is None or passed > best:
            best = passed
            cut = cut_by(steps[passed]) if passed < len(steps) else ranked_below(k)
    return cut
