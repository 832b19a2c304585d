"""Pure, vectorised retrieval measures with trec_eval semantics.

Semantics (trec_eval with ``-c``):
- a judged query is one present in the qrels; means are over judged queries, and a judged query
  the run leaves out (or ranks nothing for) scores 0; queries only in the run are ignored;
- grade >= 1 is relevant, grade 0 (or below) is not; nDCG gains are the grades themselves
  (trec_eval's ``ndcg_cut``: linear gain, ``log2(rank + 1)`` discount);
- a scored run is ordered by score descending, ties by doc id descending (see ``runs``);
- ``map@k`` divides by all relevant documents, not by ``min(k, R)`` (trec_eval ``map_cut``);
- ``precision@k`` divides by ``k`` even when fewer than ``k`` documents were retrieved.
"""

from __future__ import annotations

import math
from bisect import bisect_left, bisect_right
from typing import Iterable, Mapping, Sequence, Sized

import numpy as np

from ..errors import RetrievalEvalError
from .measures import Measure, parse_measures
from .qrels import Qrels
from .runs import Run


def as_run(run: "Run | Mapping") -> Run:
    """Accept a ``Run``, ``{qid: {doc: score}}`` or ``{qid: [doc, ...]}``."""
    if isinstance(run, Run):
        return run
    first = next(iter(run.values()), None)
    if isinstance(first, Mapping):
        return Run.from_dict(run)
    return Run.from_ranked(run)


def as_qrels(qrels: "Qrels | Mapping") -> Qrels:
    return qrels if isinstance(qrels, Qrels) else Qrels.from_dict(qrels)


def evaluate(
    qrels: "Qrels | Mapping[str, Mapping[str, int]]",
    run: "Run | Mapping",
    measures: "Iterable[str | Measure] | str | Measure",
    *,
    per_query: bool = False,
) -> "dict[str, float] | dict[str, dict[str, float]]":
    """Score ``run`` against ``qrels``.

    Returns ``{measure name: mean}``, or with ``per_query=True`` ``{measure name: {qid: value}}``
    over every judged query. With no judged query every mean is NaN: 0 of 0 is not a pass.
    """
    if isinstance(measures, (str, Measure)):
        measures = [measures]
    parsed = parse_measures(measures)
    fresh = [m.name for m in parsed if m.freshness]
    if fresh:
        raise RetrievalEvalError(f"{', '.join(fresh)}: freshness measures are judged on the corpus's document "
                                 "versions, not on qrels; read them from an evaluation (results['" + fresh[0] + "'])")
    qrels = as_qrels(qrels)
    run = as_run(run)
    qids = list(qrels)
    values = _per_query_arrays(qrels, run, qids, parsed)
    if per_query:
        return {m.name: dict(zip(qids, v.tolist())) for m, v in values.items()}
    return {m.name: (float(v.mean()) if len(qids) else math.nan) for m, v in values.items()}


def _depth(source: Mapping[str, Sized], qids: Sequence[str], measures: Sequence[Measure]) -> int:
    """How many ranks the measures read: the largest cutoff, or the whole ranking when uncut."""
    longest = max((len(source.get(q, ())) for q in qids), default=0)
    ks = [m.k for m in measures]
    if any(k is None for k in ks):
        return max(1, longest)
    return max(1, min(max(ks), longest))


def _grades_from_rankings(grades: np.ndarray, judgements: Mapping, rankings: Mapping, qids: Sequence[str],
                          best: list, depth: int) -> None:
    empty: tuple[str, ...] = ()
    for i, qid in enumerate(qids):
        judged = judgements[qid]
        ranking = rankings.get(qid, empty)[:depth]
        if not (best[i] and ranking):
            continue
        if 4 * len(judged) < len(ranking):
            # few judged documents: find each in the ranking (a C-level scan) rather than look up
            # every retrieved document
            for doc, grade in judged.items():
                if grade and doc in ranking:
                    grades[i, ranking.index(doc)] = grade
        else:
            row = [judged.get(d, 0) for d in ranking]
            grades[i, : len(row)] = row


def _grades_from_scores(grades: np.ndarray, judgements: Mapping, scores: Mapping, qids: Sequence[str],
                        best: list, depth: int) -> None:
    """The rank of each judged document straight from the scores, without sorting the query:
    1 + the documents scoring higher + those scoring the same with a greater id (trec_eval's
    order: score descending, ties by doc id descending)."""
    for i, qid in enumerate(qids):
        docs = scores.get(qid)
        if not (best[i] and docs):
            continue
        ordered = None
        n = len(docs)
        for doc, grade in judgements[qid].items():
            if not grade or doc not in docs:
                continue
            if ordered is None:
                ordered = sorted(docs.values())
            s = docs[doc]
            above = bisect_right(ordered, s)
            rank = n - above + 1
            if above - bisect_left(ordered, s) > 1:  # tied: greater ids come first
                rank += sum(1 for d, v in docs.items() if v == s and d > doc)
            if rank <= depth:
                grades[i, rank - 1] = grade


def _per_query_arrays(
    qrels: Qrels, run: Run, qids: Sequence[str], measures: Sequence[Measure]
) -> dict[Measure, np.ndarray]:
    nq = len(qids)
    judgements = qrels._data  # plain dicts: no method call per query
    scores = run._scores if run._ranked is None else None
    depth = _depth(scores if scores is not None else run._data, qids, measures)
    grades = np.zeros((nq, depth), dtype=np.float64)
    # the judged relevant grades of each query, best first: recall/map denominators, ideal DCG
    best = [sorted((g for g in judgements[q].values() if g >= 1), reverse=True) for q in qids]
    if scores is not None:
        _grades_from_scores(grades, judgements, scores, qids, best, depth)
    else:
        _grades_from_rankings(grades, judgements, run._data, qids, best, depth)
    gains = np.clip(grades, 0, None)
    rel = grades >= 1
    num_rel = np.fromiter((len(b) for b in best), dtype=np.float64, count=nq)
    positions = np.arange(1, depth + 1, dtype=np.float64)
    discount = 1.0 / np.log2(positions + 1.0)

    cache: dict[str, np.ndarray] = {}

    def cum_rel() -> np.ndarray:
        if "cum" not in cache:
            cache["cum"] = np.cumsum(rel, axis=1, dtype=np.float64)
        return cache["cum"]

    def ideal(k: int | None) -> np.ndarray:
        """Ideal DCG over the best ``k`` judged grades (all of them when uncut)."""
        key = f"idcg{k}"
        if key not in cache:
            width = max((len(b) for b in best), default=0) if k is None else k
            matrix = np.zeros((nq, max(width, 1)))
            for i, b in enumerate(best):
                if b:
                    row = b[:width]
                    matrix[i, : len(row)] = row
            disc = 1.0 / np.log2(np.arange(2, matrix.shape[1] + 2, dtype=np.float64))
            cache[key] = matrix @ disc
        return cache[key]

    def safe_div(num: np.ndarray, den: np.ndarray) -> np.ndarray:
        out = np.zeros_like(num)
        np.divide(num, den, out=out, where=den > 0)
        return out

    out: dict[Measure, np.ndarray] = {}
    for m in measures:
        k = depth if m.k is None else min(m.k, depth)
        window = rel[:, :k]
        if m.family == "hit":
            v = window.any(axis=1).astype(np.float64)
        elif m.family == "mrr":
            has = window.any(axis=1)
            first = window.argmax(axis=1).astype(np.float64)
            v = np.where(has, 1.0 / (first + 1.0), 0.0)
        elif m.family == "recall":
            v = safe_div(window.sum(axis=1, dtype=np.float64), num_rel)
        elif m.family == "precision":
            v = window.sum(axis=1, dtype=np.float64) / float(m.k)
        elif m.family == "ndcg":
            dcg = (gains[:, :k] * discount[:k]).sum(axis=1)
            v = safe_div(dcg, ideal(m.k))
        elif m.family == "map":
            precision_at = cum_rel()[:, :k] / positions[:k]
            v = safe_div((precision_at * window).sum(axis=1), num_rel)
        else:  # pragma: no cover - Measure validates families
            raise AssertionError(m.family)
        out[m] = v
    return out
