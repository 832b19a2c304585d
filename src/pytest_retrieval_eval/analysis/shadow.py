"""Shadow comparisons: a candidate engine beside the current one, on the same queries in one run.

``--retrieval-shadow CANDIDATE:BASELINE`` asks what a change gained. The answer is one number,
the **knowledge gain**: the weighted mean of the candidate's per-measure differences,

    gain = sum_m w_m * (mean_candidate(m) - mean_baseline(m)) / sum_m w_m

with the weights of ``--retrieval-gain-weights`` (default ``recall@5=2,ndcg@5=1``: finding the
gold documents counts twice as much as ordering them). Each query contributes its own weighted
difference divided by the number of queries, so the contributions add up to the gain and the
queries that moved most are the ones that explain it. The gain's p-value is the paired
randomization test on the per-query weighted scores; each measure's delta has its own test and
bootstrap interval. The documents that moved most are the judged-relevant documents the candidate
newly brings into the top k (or newly loses), counted over queries, with k the largest cutoff of
the weighted measures.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Mapping, Sequence

import numpy as np

from ..errors import RetrievalEvalError
from ..data.segments import all_tags, distinct
from ..ir.measures import Measure
from ..ir.paired import MOVERS, paired
from ..evaluation.judging import judge_problem
from .scores import Scores
from ..evaluation.results import Evaluation, RunResults

#: ``--retrieval-gain-weights`` and the pair syntax are parsed in ``rules/shadows.py``


@dataclass(frozen=True)
class Delta:
    measure: str
    candidate: float
    baseline: float
    p: float
    ci: tuple[float, float]

    @property
    def delta(self) -> float:
        return self.candidate - self.baseline


@dataclass(frozen=True)
class QueryMove:
    query_id: str
    question: str
    contribution: float  # this query's share of the gain
    changes: tuple[tuple[str, float, float], ...]  # (measure, baseline value, candidate value) that moved


@dataclass(frozen=True)
class Shadow:
    """The candidate against the baseline on one labeled set."""

    candidate: str
    baseline: str
    labeled: str
    n: int
    weights: Mapping[str, float]
    gain: float
    gain_p: float
    gain_ci: tuple[float, float]
    deltas: tuple[Delta, ...]
    better: int
    worse: int
    same: int
    movers: tuple[QueryMove, ...]
    cutoff: int
    newly_hit: tuple[tuple[str, int], ...]  # (doc id, queries), most first
    newly_missed: tuple[tuple[str, int], ...]
    skipped: tuple[str, ...] = field(default=())  # weighted measures either engine has no value of
    #: the mean novelty of the documents the change would add (``data/novelty.py``), and its weight
    novelty: float | None = None
    novelty_weight: float = 0.0
    #: the gain on each tag's questions: (tag, n, gain, p), in ``all_tags`` order, a segment once (``distinct``)
    segments: tuple[tuple[str, int, float, float], ...] = ()

    @property
    def blended_gain(self) -> float | None:
        """The knowledge gain with the candidates' novelty: ``gain + novelty_weight * novelty``."""
        return None if self.novelty is None else self.gain + self.novelty_weight * self.novelty

    def delta(self, measure: str) -> float:
        name = Measure.parse(measure).name
        return next((d.delta for d in self.deltas if d.measure == name), math.nan)

    def to_dict(self) -> dict[str, Any]:
        return {
            "candidate": self.candidate, "baseline": self.baseline, "labeled": self.labeled, "n": self.n,
            "weights": dict(self.weights), "gain": self.gain, "gain_p": self.gain_p, "gain_ci95": list(self.gain_ci),
            "deltas": [{"measure": d.measure, "candidate": d.candidate, "baseline": d.baseline, "delta": d.delta,
                        "p": d.p, "ci95": list(d.ci)} for d in self.deltas],
            "queries": {"better": self.better, "worse": self.worse, "same": self.same},
            "movers": [{"id": m.query_id, "question": m.question, "contribution": m.contribution,
                        "changes": [list(c) for c in m.changes]} for m in self.movers],
            "cutoff": self.cutoff, "newly_hit": [list(x) for x in self.newly_hit],
            "newly_missed": [list(x) for x in self.newly_missed], "skipped": list(self.skipped),
            **({"novelty": self.novelty, "novelty_weight": self.novelty_weight, "blended_gain": self.blended_gain}
               if self.novelty is not None else {}),
            **({"segments": [{"tag": t, "n": n, "gain": g, "p": p} for t, n, g, p in self.segments]}
               if self.segments else {}),
        }


def compare(candidate: Evaluation, baseline: Evaluation, weights: Mapping[str, float], measures: Sequence[str] = (), *,
            novelty: tuple[float, float] | None = None) -> Shadow:
    """``candidate`` and ``baseline`` are ``EvaluationResult``s of the same labeled set;
    ``novelty``: (the candidates' mean novelty, its weight) to blend into the gain."""
    if [q.query_id for q in candidate.labeled.queries] != [q.query_id for q in baseline.labeled.queries]:
        raise RetrievalEvalError(f"shadow {candidate.engine}:{baseline.engine}: the engines were asked different "
                                 f"queries ({candidate.n} and {baseline.n})")
    weights = dict(sorted(weights.items()))  # one order of summation, live or from results.json
    names = list(dict.fromkeys([*measures, *weights]))
    cand = {m: Scores.of(candidate).values(m) for m in names}  # per-query values, in labeled-set order
    base = {m: Scores.of(baseline).values(m) for m in names}
    # a weight either engine has no value of (an ids-only engine's +evidence) is no difference: left out, said
    usable = {m: w for m, w in weights.items() if not (np.isnan(cand[m]).any() or np.isnan(base[m]).any())}
    skipped = tuple(m for m in weights if m not in usable)
    deltas = []
    for m in names:
        a, b = cand[m], base[m]
        if np.isnan(a).any() or np.isnan(b).any():
            continue
        pair = paired(a, b, clusters=candidate.clusters())
        deltas.append(Delta(m, float(a.mean()) if len(a) else math.nan, float(b.mean()) if len(b) else math.nan,
                            pair.p, pair.ci))
    total = sum(usable.values())
    n = candidate.n
    ids = [q.query_id for q in candidate.labeled.queries]
    if usable and n:
        score_a = sum(w * cand[m] for m, w in usable.items()) / total
        score_b = sum(w * base[m] for m, w in usable.items()) / total
        diff = score_a - score_b
        gain, pair = float(diff.mean()), paired(score_a, score_b, ids, clusters=candidate.clusters())
    else:
        diff, gain, pair = np.zeros(n), math.nan, paired(np.zeros(n), np.zeros(n), ids)
    p, ci = (pair.p, pair.ci) if usable and n else (math.nan, (math.nan, math.nan))
    questions = {q.query_id: q.question for q in candidate.labeled.queries}
    movers = []
    for i in pair.movers:
        changes = tuple((m, float(base[m][i]), float(cand[m][i])) for m in usable if cand[m][i] != base[m][i])
        movers.append(QueryMove(ids[i], questions[ids[i]], float(diff[i]) / n, changes))
    cutoff = max((Measure.parse(m).k or 0 for m in usable), default=0) or 5
    hit, missed = _moved_documents(candidate, baseline, cutoff)
    segments = []
    if usable and n:  # where the gain came from: each tag's questions
        for tag in distinct(all_tags(candidate.labeled)):
            at = [i for i, q in enumerate(candidate.labeled.queries) if tag in q.tags]
            part = paired(score_a[at], score_b[at], [ids[i] for i in at],
                          clusters=candidate.clusters([ids[i] for i in at]))
            segments.append((tag, len(at), float(diff[at].mean()), part.p))
    counts = (pair.wins, pair.losses, pair.ties) if usable and n else (0, 0, 0)  # nothing weighed: none compared
    return Shadow(candidate.engine, baseline.engine, candidate.labeled.name, n, dict(weights), gain, p, ci,
                  tuple(deltas), *counts, tuple(movers),
                  cutoff, hit, missed, skipped, *(novelty or (None, 0.0)), tuple(segments))


def _moved_documents(candidate: Evaluation, baseline: Evaluation, k: int) -> tuple[tuple[tuple[str, int], ...], ...]:
    """Relevant documents the candidate newly brings into its top k, and those it newly loses."""
    before = {r.query_id: set(r.doc_ids[:k]) for r in baseline.results}
    hit: dict[str, int] = {}
    missed: dict[str, int] = {}
    for q, r in zip(candidate.labeled.queries, candidate.results):
        relevant = {d for d, g in q.relevant.items() if g >= 1}
        now, was = set(r.doc_ids[:k]) & relevant, before.get(q.query_id, set()) & relevant
        for d in now - was:
            hit[d] = hit.get(d, 0) + 1
        for d in was - now:
            missed[d] = missed.get(d, 0) + 1

    def top(counts: dict[str, int]) -> tuple[tuple[str, int], ...]:
        return tuple(sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))[:MOVERS])

    return top(hit), top(missed)


def shadows(run: RunResults, pairs: Sequence[tuple[str, str]], weights: Mapping[str, float],
            measures: Sequence[str] = ()) -> tuple[list[Shadow], list[str]]:
    """Every configured pair on every labeled set both engines answered, and a problem line per
    pair that could not be compared (an engine was not evaluated: a failure, never a silent pass)."""
    out, problems = [], []
    for cand, base in pairs:
        found = False
        for a in run.evaluations:
            b = run.get(base, a.labeled.name) if a.engine == cand else None
            if b is not None and b.labeled.fingerprint == a.labeled.fingerprint:
                found = True
                problem = judge_problem(a.judge, b.judge)
                if problem:  # never compared silently (--retrieval-baseline-force does not apply within a run)
                    problems.append(f"shadow {cand}:{base} refused: {base} was {problem}")
                    continue
                out.append(compare(a, b, weights, measures, novelty=candidates_novelty(run)))
        if not found:
            engines = sorted({e.engine for e in run.evaluations})
            problems.append(f"shadow {cand}:{base}: no labeled set was evaluated with both engines "
                            f"(evaluated: {', '.join(engines) or 'none'})")
    return out, problems


def candidates_novelty(run: RunResults) -> tuple[float, float] | None:
    """(mean novelty of the run's candidate documents, its weight), or None without candidates."""
    recorded = getattr(run, "candidates", None) or {}
    items = recorded.get("items") or []
    if not items:
        return None
    from ..data.novelty import Novelty

    values = [Novelty.from_dict(d).value for d in items]
    return sum(values) / len(values), float(recorded.get("weight", 0.0))
