"""Pure, vectorised retrieval measures with trec_eval 10 semantics.

Semantics (trec_eval with ``-c``):
- a judged query is one present in the qrels; means are over judged queries, and a judged query
  the run leaves out (or ranks nothing for) scores 0; queries only in the run are ignored;
- grade >= 1 is relevant (>= ``rel`` for a measure at a relevance level, trec_eval ``-l``), a
  grade from 0 up is judged, a negative grade is in the pool but unjudged (trec_eval's rule);
  nDCG gains are the grades themselves (trec_eval's ``ndcg_cut``: linear gain, ``log2(rank + 1)``
  discount), or ``2**grade - 1`` with ``gain=exp``;
- a scored run is ordered by score descending, ties by doc id descending (see ``runs``); scores
  are doubles, as in trec_eval 10 (pytrec_eval rounds them to float32 first);
- ``map@k`` divides by all relevant documents, not by ``min(k, R)`` (trec_eval ``map_cut``);
- ``precision@k`` divides by ``k`` even when fewer than ``k`` documents were retrieved;
- counts (``num_ret``, ``num_rel``, ``num_rel_ret``) are summed over queries, as trec_eval does.
"""

from __future__ import annotations

from bisect import bisect_left, bisect_right
from typing import Iterable, Mapping, Sequence, Sized

import numpy as np

from ..errors import RetrievalEvalError
from .measures import Measure, parse_measures
from .qrels import Qrels
from .runs import Run

#: families that read where judged non-relevant documents sit in the ranking, not only relevant ones
_READS_JUDGED = frozenset({"bpref", "judged"})
#: ERR's grade scale tops out at 4, as in gdeval (which ir_measures' ERR runs)
ERR_MAX_GRADE = 4


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
    """Score ``run`` against ``qrels``; measures are names in any spelling ``Measure.parse``
    reads, ``Measure`` objects or ir_measures measure objects; keys are canonical names.

    Returns ``{measure name: summary}`` (the mean over judged queries; for counts the sum), or
    with ``per_query=True`` ``{measure name: {qid: value}}`` over every judged query. With no
    judged query every summary is NaN: 0 of 0 is not a pass.
    """
    if isinstance(measures, (str, Measure)) or hasattr(measures, "NAME"):
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
    return {m.name: m.aggregate(v) for m, v in values.items()}


def per_query_frame(
    qrels: "Qrels | Mapping[str, Mapping[str, int]]",
    run: "Run | Mapping",
    measures: "Iterable[str | Measure] | str | Measure",
):
    """Per-query values as a pandas DataFrame (pandas is optional), for a notebook: one row per
    judged query (index ``query_id``, qrels order), one column per measure (canonical names)."""
    from .runs import require

    pandas = require("pandas", "per_query_frame()")
    qrels = as_qrels(qrels)
    per = evaluate(qrels, run, measures, per_query=True)
    return pandas.DataFrame({name: list(values.values()) for name, values in per.items()},
                            index=pandas.Index(list(qrels), name="query_id"))


def _depth(source: Mapping[str, Sized], qids: Sequence[str], measures: Sequence[Measure]) -> int:
    """How many ranks the measures read: the largest cutoff, or the whole ranking when uncut."""
    longest = max((len(source.get(q, ())) for q in qids), default=0)
    ks = [m.k for m in measures]
    if any(k is None for k in ks):
        return max(1, longest)
    return max(1, min(max(ks), longest))


def _grades_from_rankings(grades: np.ndarray, judged: "np.ndarray | None", judgements: Mapping,
                          rankings: Mapping, qids: Sequence[str], best: list, depth: int) -> None:
    """Fill each query's row with the grades of its top ``depth``; ``judged`` (when asked for)
    marks the judged documents (grade >= 0), whatever their grade."""
    empty: tuple[str, ...] = ()
    for i, qid in enumerate(qids):
        labels = judgements[qid]
        ranking = rankings.get(qid, empty)[:depth]
        if not ((best[i] or judged is not None) and ranking):
            continue
        if 4 * len(labels) < len(ranking):
            # few judged documents: find each in the ranking (a C-level scan) rather than look up
            # every retrieved document
            for doc, grade in labels.items():
                if (grade or judged is not None) and doc in ranking:
                    rank = ranking.index(doc)
                    grades[i, rank] = grade
                    if judged is not None:
                        judged[i, rank] = grade >= 0
        else:
            row = [labels.get(d, 0) for d in ranking]
            grades[i, : len(row)] = row
            if judged is not None:
                judged[i, : len(row)] = [labels.get(d, -1) >= 0 for d in ranking]


def _grades_from_scores(grades: np.ndarray, judged: "np.ndarray | None", judgements: Mapping, scores: Mapping,
                        qids: Sequence[str], best: list, depth: int) -> None:
    """The rank of each judged document straight from the scores, without sorting the query:
    1 + the documents scoring higher + those scoring the same with a greater id (trec_eval's
    order: score descending, ties by doc id descending)."""
    for i, qid in enumerate(qids):
        docs = scores.get(qid)
        if not ((best[i] or judged is not None) and docs):
            continue
        ordered = None
        n = len(docs)
        for doc, grade in judgements[qid].items():
            if not (grade or judged is not None) or doc not in docs:
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
                if judged is not None:
                    judged[i, rank - 1] = grade >= 0


def _safe_div(num: np.ndarray, den: np.ndarray) -> np.ndarray:
    out = np.zeros_like(num, dtype=np.float64)
    np.divide(num, den, out=out, where=den > 0)
    return out


class _Matrices:
    """The matrices of one evaluation (queries x ranks), each built once and only when a measure
    reads it."""

    def __init__(self, qrels: Qrels, run: Run, qids: Sequence[str], measures: Sequence[Measure]) -> None:
        judgements = qrels.judgements  # plain dicts: no method call per query
        scores = run.unranked_scores
        self.source = scores if scores is not None else run.rankings
        self.qids, self.judgements = qids, judgements
        self.depth = depth = _depth(self.source, qids, measures)
        nq = len(qids)
        self.grades = np.zeros((nq, depth), dtype=np.float64)
        self.judged = np.zeros((nq, depth), dtype=bool) if any(m.family in _READS_JUDGED for m in measures) else None
        # the judged relevant grades of each query, best first: recall/map denominators, ideal DCG
        self.best = [sorted((g for g in judgements[q].values() if g >= 1), reverse=True) for q in qids]
        if scores is not None:
            _grades_from_scores(self.grades, self.judged, judgements, scores, qids, self.best, depth)
        else:
            _grades_from_rankings(self.grades, self.judged, judgements, run.rankings, qids, self.best, depth)
        self.positions = np.arange(1, depth + 1, dtype=np.float64)
        self._cache: dict = {}

    def _once(self, key, make):
        if key not in self._cache:
            self._cache[key] = make()
        return self._cache[key]

    def rel(self, level: int) -> np.ndarray:
        return self._once(("rel", level), lambda: self.grades >= level)

    def num_rel(self, level: int) -> np.ndarray:
        return self._once(("num_rel", level), lambda: np.fromiter(
            (len(b) if level == 1 else sum(1 for g in b if g >= level) for b in self.best),
            dtype=np.float64, count=len(self.best)))

    def cum_rel(self, level: int) -> np.ndarray:
        return self._once(("cum", level), lambda: np.cumsum(self.rel(level), axis=1, dtype=np.float64))

    def lengths(self) -> np.ndarray:
        """How many documents each query retrieved."""
        return self._once("len", lambda: np.fromiter((len(self.source.get(q, ())) for q in self.qids),
                                                     dtype=np.float64, count=len(self.qids)))

    def gains(self, gain: str | None) -> np.ndarray:
        linear = self._once("gain", lambda: np.clip(self.grades, 0, None))
        return linear if gain is None else self._once("gain-exp", lambda: np.exp2(linear) - 1.0)

    def discount(self) -> np.ndarray:
        return self._once("discount", lambda: 1.0 / np.log2(self.positions + 1.0))

    def ideal(self, k: int | None, gain: str | None) -> np.ndarray:
        """Ideal DCG over the best ``k`` judged grades (all of them when uncut)."""
        def make():
            width = max((len(b) for b in self.best), default=0) if k is None else k
            matrix = np.zeros((len(self.best), max(width, 1)))
            for i, b in enumerate(self.best):
                if b:
                    row = b[:width]
                    matrix[i, : len(row)] = row
            if gain == "exp":
                matrix = np.exp2(matrix) - 1.0
            disc = 1.0 / np.log2(np.arange(2, matrix.shape[1] + 2, dtype=np.float64))
            return matrix @ disc
        return self._once(("idcg", k, gain), make)

    def max_grade(self) -> np.ndarray:
        return self._once("max", lambda: np.fromiter((b[0] if b else 0 for b in self.best), dtype=np.float64,
                                                     count=len(self.best)))

    def num_nonrel(self, level: int) -> np.ndarray:
        """Judged documents below the relevance level (grades 0 .. level - 1), retrieved or not."""
        return self._once(("nonrel", level), lambda: np.fromiter(
            (sum(1 for g in self.judgements[q].values() if 0 <= g < level) for q in self.qids),
            dtype=np.float64, count=len(self.qids)))


def _per_query_arrays(
    qrels: Qrels, run: Run, qids: Sequence[str], measures: Sequence[Measure]
) -> dict[Measure, np.ndarray]:
    q = _Matrices(qrels, run, qids, measures)
    return {m: _one(q, m) for m in measures}


def _one(q: _Matrices, m: Measure) -> np.ndarray:
    """One measure's value for every query."""
    k = q.depth if m.k is None else min(m.k, q.depth)
    level = m.rel or 1
    family = m.family
    if family in ("hit", "mrr", "recall", "precision", "map", "num_rel_ret", "rprec", "set_precision",
                  "set_recall", "set_f", "bpref"):
        window = q.rel(level)[:, :k]
    if family == "hit":
        return window.any(axis=1).astype(np.float64)
    if family == "mrr":
        has = window.any(axis=1)
        first = window.argmax(axis=1).astype(np.float64)
        return np.where(has, 1.0 / (first + 1.0), 0.0)
    if family == "recall":
        return _safe_div(window.sum(axis=1, dtype=np.float64), q.num_rel(level))
    if family == "precision":
        return window.sum(axis=1, dtype=np.float64) / float(m.k)
    if family == "ndcg":
        dcg = (q.gains(m.gain)[:, :k] * q.discount()[:k]).sum(axis=1)
        return _safe_div(dcg, q.ideal(m.k, m.gain))
    if family == "map":
        precision_at = q.cum_rel(level)[:, :k] / q.positions[:k]
        return _safe_div((precision_at * window).sum(axis=1), q.num_rel(level))
    if family == "rprec":
        big_r = q.num_rel(level)
        at_r = np.clip(big_r.astype(np.int64) - 1, 0, q.depth - 1)
        found = q.cum_rel(level)[np.arange(len(big_r)), at_r] if len(big_r) else big_r
        return _safe_div(found, big_r)
    if family == "bpref":
        return _bpref(q, level)
    if family == "judged":
        seen = q.lengths() if m.k is None else np.minimum(q.lengths(), m.k)
        return _safe_div(q.judged[:, :k].sum(axis=1, dtype=np.float64), seen)
    if family == "num_ret":
        return q.lengths() if m.k is None else np.minimum(q.lengths(), m.k)
    if family == "num_rel":
        return q.num_rel(level).copy()
    if family == "num_rel_ret":
        return window.sum(axis=1, dtype=np.float64)
    if family in ("set_precision", "set_recall", "set_f"):
        found = window.sum(axis=1, dtype=np.float64)
        precision, recall = _safe_div(found, q.lengths()), _safe_div(found, q.num_rel(level))
        if family == "set_precision":
            return precision
        if family == "set_recall":
            return recall
        x = m.beta or 1.0  # trec_eval's set_F: (x + 1) P R / (x P + R)
        return _safe_div((x + 1.0) * precision * recall, x * precision + recall)
    if family == "err":
        grade = np.clip(q.grades[:, :k], 0, ERR_MAX_GRADE)
        stop = (np.exp2(grade) - 1.0) / 2.0 ** ERR_MAX_GRADE
        reach = np.cumprod(np.hstack([np.ones((len(stop), 1)), 1.0 - stop[:, :-1]]), axis=1)
        return (stop * reach / q.positions[:k]).sum(axis=1)
    if family == "rbp":
        if m.rel is None:  # trec_eval: graded, gains scaled into [0, 1] by the query's top grade
            gain = q.gains(None)[:, :k] / np.maximum(q.max_grade(), 1.0)[:, None]
        else:
            gain = q.rel(m.rel)[:, :k].astype(np.float64)
        return (1.0 - m.p) * (gain * m.p ** (q.positions[:k] - 1.0)).sum(axis=1)
    raise AssertionError(family)  # pragma: no cover - Measure validates families


def _bpref(q: _Matrices, level: int) -> np.ndarray:
    """trec_eval's bpref: each relevant document retrieved scores 1 - (judged non-relevant above
    it, at most R) / min(R, judged non-relevant); unjudged documents are skipped; / R."""
    rel = q.rel(level)
    nonrel = q.judged & ~rel
    above = np.cumsum(nonrel, axis=1, dtype=np.float64)  # at a relevant rank: non-relevant above it
    big_r = q.num_rel(level)
    denominator = np.minimum(q.num_nonrel(level), big_r)[:, None]
    penalty = _safe_div(np.minimum(above, big_r[:, None]), np.broadcast_to(denominator, above.shape))
    return _safe_div(((1.0 - penalty) * rel).sum(axis=1), big_r)
