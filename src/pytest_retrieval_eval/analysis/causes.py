"""Why a question missed: one cause per engine, question and cutoff, from what the run recorded.

A miss (no relevant document in the top k) is attributed, first match wins, to:

- ``error``: the engine call failed;
- ``not-in-corpus``: no relevant document is in the corpus; ``not-ingested``: none has a chunk in
  the engine's store;
- ``judged``: the top k holds documents the judge graded relevant (a hole, not a miss);
- ``approximate``: the engine's exact search (``--retrieval-exact-check``) ranks a relevant
  document within k: "missed by the approximate index (exact rank 3)";
- ``stale-version``: a stale version of a relevant document is in the top k;
  ``near-duplicate``: a document whose chunks duplicate a relevant one's (corpus lint) is;
- ``ranked``: a relevant document is retrieved, deeper than k ("ranked 7");
- with stages (``engines.base.Stages``): ``cut`` (a leg had it, a step let it go: "cut by
  fusion"), ``never-candidate`` (no leg had it: "keyword leg empty");
- ``window``: not retrieved, and its text runs past the embedder's window;
- ``absent``: not retrieved, for no reason the run can see.

With repeated trials (``--retrieval-trials``), a question another trial found within k is
``flaky`` ("flaky: found in 3 of 5 trials"), whatever the first trial's reason: it flips, so
it is named as flaky, not as a miss of the engine.

At the evidence level (``hit@5+evidence``: no passage of the top k carries the evidence), a
relevant document whose passage is in the top k, or which came back at all, without its
evidence is ``wrong-passage`` ("right document, wrong passage"); evidence deeper than k is
``ranked``; a document not retrieved has its document-level cause.

What a cause rests on is recorded with the result (stage ranks per query, ``Evidence`` per
evaluation, ``evaluation/known.py``), so ``report`` rebuilds every cause from results.json.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from typing import Any, Mapping, Sequence

from ..evaluation.known import Evidence
from ..types import LabeledQuery, QueryResult
from ..data.freshness import Freshness
from ..evaluation.results import Evaluation

#: every cause, in the order the summary line lists them
KINDS = ("flaky", "error", "not-in-corpus", "not-ingested", "judged", "approximate", "stale-version",
         "near-duplicate", "wrong-passage", "ranked", "cut", "never-candidate", "window", "absent")
#: the group of a miss the approximate index caused
INDEX_MISS = "missed by the approximate index"
#: the cause of an evidence-level miss where the document came back without its evidence
WRONG_PASSAGE = "right document, wrong passage"


@dataclass(frozen=True)
class Cause:
    """Why one question missed at one cutoff: ``kind`` (one of ``KINDS``), what a person reads
    (``text``), and the group it is counted in on the summary line (``group``)."""

    query_id: str
    kind: str
    text: str
    group: str
    rank: int | None = None  # of the first relevant document, when retrieved deeper than k


def cause_of(query: LabeledQuery, result: QueryResult, k: int, *, evidence: Evidence | None = None,
             freshness: Freshness | None = None, judged: Mapping[str, int] | None = None) -> Cause | None:
    """The cause of ``query``'s miss at ``k``, or None when a relevant document is in its top k
    (or nothing is judged relevant, so nothing could count)."""
    qid = query.query_id

    def cause(kind: str, text: str, group: str | None = None, rank: int | None = None) -> Cause:
        return Cause(qid, kind, text, group or text, rank)

    if result.error is not None:
        return cause("error", f"engine error: {result.error[:120]}", "engine error")
    relevant = list(query.gold)
    if not relevant:
        return None
    ranked = list(result.doc_ids)
    first = next((i for i, d in enumerate(ranked, start=1) if query.relevant.get(d, 0) >= 1), None)
    if first is not None and first <= k:
        return None
    ev = evidence or Evidence()
    present = [d for d in relevant if d not in ev.missing]
    if not present:
        return cause("not-in-corpus", f"not in the corpus: {', '.join(relevant[:3])}", "not in the corpus")
    stored = [d for d in present if d not in ev.not_ingested]
    if not stored:
        return cause("not-ingested", f"not ingested: {', '.join(present[:3])} has no chunk in the store",
                     "not ingested")
    top = ranked[:k]
    from ..data.grades import is_judged_relevant

    holes = [(r, d, judged[d]) for r, d in enumerate(top, start=1)
             if judged and d not in query.relevant and is_judged_relevant(judged.get(d, 0))]
    if holes:
        r, d, g = holes[0]
        return cause("judged", f"a hole, not a miss: {d} (rank {r}) judged relevant (grade {g})",
                     "judged relevant by the judge (holes)")
    exact = next(((r, d) for r, d in enumerate((result.exact or ())[:k], start=1) if d in stored), None)
    if exact is not None:  # the exact search had it in the top k: the index lost it
        r, d = exact
        return cause("approximate", f"{INDEX_MISS} (exact rank {r}: {d}"
                     + (f"; the index ranked it {ranked.index(d) + 1})" if d in ranked else ")"), INDEX_MISS, r)
    if freshness is not None:
        for r, d in enumerate(top, start=1):
            if d in freshness.stale and any(_versions_of(freshness, d, g) for g in stored):
                return cause("stale-version", f"beaten by a stale version of itself: {d} (rank {r}; "
                             f"{freshness.stale[d]})", "beaten by a stale version")
    for r, d in enumerate(top, start=1):
        twin = next((g for g in stored if d in ev.duplicates.get(g, ())), None)
        if twin is not None:
            return cause("near-duplicate", f"outranked by a near-duplicate of {twin}: {d} (rank {r})",
                         "outranked by a near-duplicate")
    if first is not None:
        return cause("ranked", f"ranked {first}", "ranked", first)
    window = next(((g, ev.truncated[g]) for g in stored if g in ev.truncated), None)
    if result.stages:
        return _staged(qid, stored, result, window)
    if window is not None:
        return cause("window", f"answer past the embedder window ({window[1]})", "answer past the embedder window")
    return cause("absent", f"not retrieved (not among the {len(ranked)} returned)" if ranked else
                 "not retrieved (the engine returned nothing)", "not retrieved")


def _versions_of(freshness: Freshness, stale: str, gold: str) -> bool:
    """Whether ``stale`` is another version of ``gold``: one version key, or superseded by it."""
    key = freshness.versions.get(stale)
    reasons = freshness.stale[stale].split("; ")
    return (key is not None and key == freshness.versions.get(gold)) or any(
        r == f"superseded by {gold}" or r.startswith(f"superseded by {gold}, ") for r in reasons)


def _staged(qid: str, stored: Sequence[str], result: QueryResult, window: tuple[str, str] | None) -> Cause:
    """A relevant document not retrieved, told by the stages: the step that let go of the one
    that got furthest, or no leg having any (with the legs' sizes)."""
    legs = [s for s in result.stages if s.kind == "leg"]
    steps = [s for s in result.stages if s.kind == "step"]
    best: tuple[int, str, str] | None = None  # (steps passed, doc, step that cut it)
    for doc in stored:
        held = [s for s in legs if doc in s.ranks]
        if not held:
            continue
        passed = 0
        cut = "the depth"
        for s in steps:
            if doc not in s.ranks:
                cut = s.name
                break
            passed += 1
        if best is None or passed > best[0]:
            best = (passed, doc, cut)
    if best is not None:
        _, doc, cut = best
        had = ", ".join(f"{s.name} leg had it at rank {s.ranks[doc]}" for s in legs if doc in s.ranks)
        before = steps[best[0] - 1] if best[0] else None
        where = f"; {before.name} had it at rank {before.ranks[doc]}" if before is not None else ""
        return Cause(qid, "cut", f"cut by {cut} ({had}{where})", f"cut by {cut}")
    empty = [s.name for s in legs if s.size == 0]
    said = "; ".join([*(f"{n} leg empty" for n in empty),
                      *(f"{s.name} leg: {s.size} other{'s' * (s.size != 1)}" for s in legs if s.size)])
    text = f"never a candidate ({said})" if said else "never a candidate"
    group = "never a candidate" + (f" ({', '.join(n + ' leg empty' for n in empty)})" if empty else "")
    if window is not None:
        return Cause(qid, "window", f"answer past the embedder window ({window[1]}); {text}",
                     "answer past the embedder window")
    return Cause(qid, "never-candidate", text, group)


def evidence_cause_of(query: LabeledQuery, result: QueryResult, k: int, **kw: Any) -> Cause | None:
    """The cause of ``query``'s miss at ``k`` at the evidence level (ranks are passages), or None
    when a passage of its top ``k`` carries a relevant document's evidence."""
    qid = query.query_id
    if result.error is not None or not query.gold:
        return cause_of(query, result, k, **kw)
    found = min(result.passage_ranks.values(), default=None)
    if found is not None and found <= k:
        return None
    shown = sorted((r, d) for d, r in result.first_passages.items() if d not in result.passage_ranks or r < result.passage_ranks[d])
    deeper = f", its evidence at passage {found}" if found is not None else ""
    if shown and (shown[0][0] <= k or found is None):
        r, d = shown[0]
        return Cause(qid, "wrong-passage", f"{WRONG_PASSAGE}: {d} at passage {r} lacks the evidence{deeper}", WRONG_PASSAGE)
    if found is not None:
        return Cause(qid, "ranked", f"evidence ranked {found}", "ranked", found)
    return cause_of(query, result, max(k, len(result.doc_ids)), **kw) or Cause(
        qid, "absent", "evidence not retrieved", "not retrieved")


def causes(e: Evaluation, k: int, *, evidence_level: bool = False) -> dict[str, Cause]:
    """Query id -> the cause of its miss at ``k`` (at the evidence level: ``evidence_cause_of``),
    for ``e``'s missed questions in labeled-set order."""
    by_id = e.labeled.by_id()
    out = {}
    of = evidence_cause_of if evidence_level else cause_of
    for r in e.results:
        c = of(by_id[r.query_id], r, k, evidence=e.evidence, freshness=e.freshness, judged=e.judged.get(r.query_id))
        if c is not None:
            out[r.query_id] = c
    if e.trial_results and not evidence_level:
        out.update(flaky(e, k, out))
    return out


def flaky(e: Evaluation, k: int, missed: Mapping[str, Cause]) -> dict[str, Cause]:
    """The ``missed`` questions another trial found within ``k``: each one's cause is that it flips
    ("flaky: found in 3 of 5 trials"), the first trial's reason kept in its text."""
    by_id = e.labeled.by_id()
    trials = (e.results, *e.trial_results)
    found: Counter[str] = Counter()
    for results in trials:
        for r in results:
            if r.query_id in missed and r.error is None:
                rank = Evaluation.gold_rank(by_id[r.query_id], r)
                found[r.query_id] += rank is not None and rank <= k
    return {q: Cause(q, "flaky", f"flaky: found in {found[q]} of {len(trials)} trials (the first: {c.text})",
                     "flaky (found in other trials)") for q, c in missed.items() if found[q]}


@dataclass(frozen=True)
class Misses:
    """One engine's misses at one cutoff, counted by cause: what the line under the table says."""

    engine: str
    labeled: str
    k: int
    n: int
    causes: tuple[Cause, ...]
    #: counted at the evidence level (``hit@k+evidence``: ranks are passages)
    evidence: bool = False

    def groups(self) -> list[tuple[str, int]]:
        """(group as the line says it, count), in ``KINDS`` order; ranks folded into one range."""
        order = {kind: i for i, kind in enumerate(KINDS)}
        counted = Counter((order[c.kind], c.group) for c in self.causes)
        out = []
        for (_, group), n in sorted(counted.items()):
            if group == "ranked":
                ranks = [c.rank for c in self.causes if c.kind == "ranked" and c.rank is not None]
                low, high = min(ranks), max(ranks)
                group = f"ranked {low}" if low == high else f"ranked {low}-{high}"
            out.append((group, n))
        return out

    def line(self) -> str:
        at = f"hit@{self.k}" + ("+evidence" if self.evidence else "")
        if not self.causes:
            return f"{self.engine} missed none of {self.n} at {at}"
        said = ", ".join(f"{n} {group}" for group, n in self.groups())
        return f"{self.engine} missed {len(self.causes)} of {self.n} at {at}: {said}"

    def to_dict(self) -> dict[str, Any]:
        return {"engine": self.engine, "labeled": self.labeled, "k": self.k, "missed": len(self.causes),
                "n": self.n, "by_cause": dict(self.groups())}
