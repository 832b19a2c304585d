"""Honest approximate indexes: what an approximate nearest-neighbour index costs an engine, and
an engine that returns fewer documents than asked.

- ``IndexGap`` (with ``--retrieval-exact-check``): each question's recall@k of the engine's answer
  against its exact search's (``QueryResult.exact``: the same engine with the index unused),
  their mean with its 95% interval, the settings it was measured at, and the misses the index
  caused (the ``approximate`` cause of ``analysis/causes.py``: "missed by the approximate index
  (exact rank 3)").
- ``UnderReturn``: the questions an engine answered with fewer than k documents while the corpus
  holds more ("under-returned: 3 of 10"). An HNSW search returns at most ``ef_search`` rows and
  a filter applied after it keeps fewer still; for the built-in hybrid engine the fix is named
  (pgvector's ``hnsw.iterative_scan``, its ``iterative_scan`` setting).

Everything here reads the record (rankings, the exact rankings, ``engine_info``, the coverage's
corpus size); the renderers read these.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Mapping

from ..evaluation.results import Evaluation, RunResults
from ..ir.stats import mean_ci
from .causes import Cause

#: the questions a line names, at most
NAMED = 5
#: the built-in engine's fix, as its hybrid setting (the variants are made over the session's settings: it is theirs too)
ITERATIVE_FIX = "iterative_scan=relaxed_order"


def index_settings(info: Mapping[str, Any]) -> str:
    """The index an engine describes (``HybridEngine.describe``), as one phrase: ``hnsw m=16
    ef_construction=64 ef_search=10 iterative_scan=off``; '' where it names none."""
    kind = info.get("index")
    if not kind:
        return ""
    keys = ("hnsw_m", "hnsw_ef_construction", "ef_search", "iterative_scan")
    return " ".join([str(kind), *(f"{k.removeprefix('hnsw_')}={info[k]}" for k in keys if k in info)])


@dataclass(frozen=True)
class IndexGap:
    """One evaluation's approximate-versus-exact gap at ``k``."""

    engine: str
    labeled: str
    k: int
    #: questions measured: the exact search answered with at least one document
    n: int
    #: the mean over them of |answer's top k & exact top k| / |exact top k|; None: none measured
    recall: float | None
    interval: tuple[float, float] | None
    #: questions whose top k lacks a document of the exact top k
    differ: int
    #: the misses at ``k`` the index caused (``Cause`` of kind ``approximate``), in labeled-set order
    misses: tuple[Cause, ...]
    #: the index and its settings (``index_settings``), '' where the engine names none
    settings: str = ""
    #: seconds of the exact pass and of the engine's own answers, where the run timed them
    exact_seconds: float | None = None
    answer_seconds: float | None = None
    #: why it was not measured, or how many exact searches failed; '' when all were asked
    note: str = ""

    def line(self, names: Mapping[str, str] | None = None) -> str:
        """``hybrid: approximate vs exact recall@10 0.912 [0.885, 0.937] over 300 questions ...``"""
        if self.recall is None or self.interval is None:
            return f"{self.engine}: approximate vs exact: {self.note or 'no question measured'}"
        lo, hi = self.interval
        at = f" at {self.settings}" if self.settings else ""
        whose = "1 question's top {} differs" if self.differ == 1 else f"{self.differ} questions' top {{}} differ"
        gap = "no gap" if self.differ == 0 else whose.format(self.k) + " from the exact search's"
        said = [f"{self.engine}: approximate vs exact recall@{self.k} {self.recall:.3f} [{lo:.3f}, {hi:.3f}] over "
                f"{self.n} questions{at}: {gap}"]
        if self.misses:
            shown = ", ".join(f"{(names or {}).get(c.query_id, c.query_id)} (exact rank {c.rank})"
                              for c in self.misses[:NAMED])
            more = f" and {len(self.misses) - NAMED} more" if len(self.misses) > NAMED else ""
            said.append(f"{len(self.misses)} miss{'es' * (len(self.misses) != 1)} at hit@{self.k} caused by the "
                        f"index: {shown}{more}")
        if self.exact_seconds is not None:
            said.append(f"exact search {self.exact_seconds:.1f} s" + (
                f", approximate {self.answer_seconds:.1f} s" if self.answer_seconds is not None else ""))
        if self.note:
            said.append(self.note)
        return "; ".join(said)


def index_gap(e: Evaluation, k: int, misses: tuple[Cause, ...], *, timed: bool = False) -> IndexGap | None:
    """``e``'s gap at ``k`` (``misses``: its causes at ``k``), None where the exact check was not
    asked for it; ``timed`` (``--retrieval-latency``): with the seconds of both passes (else the
    record holds no time, and the same inputs give the same bytes)."""
    info = e.engine_info
    asked = "exact_check" in info or any(r.exact is not None for r in e.results)
    if not asked:
        return None
    values, ids, differ = [], [], 0
    for r in e.results:
        exact = list(r.exact or ())[:k]
        if not exact:
            continue
        found = len(set(r.doc_ids[:k]) & set(exact))
        values.append(found / len(exact))
        ids.append(r.query_id)
        differ += found < len(exact)
    recall = math.fsum(values) / len(values) if values else None
    interval = mean_ci(values, binary=False, clusters=e.clusters(ids)) if values else None
    note = str(info.get("exact_check", ""))
    if info.get("exact_failed"):
        note = f"the exact search failed on {info['exact_failed']} questions ({info.get('exact_error', '')})"
    seconds = e.measured.get("exact_seconds") if timed else None
    return IndexGap(e.engine, e.labeled.name, k, len(values), recall, interval, differ,
                    tuple(c for c in misses if c.kind == "approximate"), index_settings(info),
                    float(seconds) if seconds is not None else None, e.seconds if seconds is not None else None, note)


@dataclass(frozen=True)
class UnderReturn:
    """One evaluation's questions answered with fewer than ``k`` documents while the corpus holds
    more: (query id, documents returned), in labeled-set order."""

    engine: str
    labeled: str
    k: int
    #: questions answered (not errored)
    n: int
    short: tuple[tuple[str, int], ...]
    #: the fix, where the run knows it (the built-in hybrid engine's HNSW scan); '' else
    fix: str = ""

    def line(self) -> str:
        """``hybrid under-returned on 42 of 300 questions at k=10 (fewest: 3 of 10)``, and the fix
        where it is known (the questions are in results.json)."""
        fewest = min(n for _, n in self.short)
        text = (f"{self.engine} under-returned on {len(self.short)} of {self.n} questions at k={self.k} (fewest: "
                f"{fewest} of {self.k})")
        return text + (f"; {self.fix}" if self.fix else "")


def corpus_size(run: RunResults) -> int | None:
    """The documents of the corpus the run searched (its coverage record), None where unknown."""
    total = ((run.coverage or {}).get("documents") or {}).get("total")
    return total if isinstance(total, int) and not isinstance(total, bool) else None


def under_return(e: Evaluation, k: int, corpus: int | None) -> UnderReturn | None:
    """``e``'s questions answered with fewer than ``k`` documents (fewer than the corpus's
    ``corpus`` documents, where that is smaller); None where there are none or the corpus's size
    is unknown (so "the corpus holds more" cannot be said)."""
    if corpus is None:
        return None
    wanted = min(k, corpus)
    answered = [r for r in e.results if not r.errored]
    short = tuple((r.query_id, len(r.doc_ids)) for r in answered if len(r.doc_ids) < wanted)
    if not short:
        return None
    return UnderReturn(e.engine, e.labeled.name, k, len(answered), short, fix_of(e.engine_info))


def fix_of(info: Mapping[str, Any]) -> str:
    """The fix of an under-return the engine's description explains: the built-in hybrid engine
    with its HNSW scan stopping at ``ef_search`` rows (its filter keeps fewer still)."""
    if info.get("engine") != "hybrid" or info.get("index") != "hnsw" or info.get("iterative_scan") != "off":
        return ""
    return (f"its HNSW search returns at most ef_search={info.get('ef_search')} rows a query, fewer after a filter: "
            f"scan on with --retrieval-hybrid={ITERATIVE_FIX} (pgvector's hnsw.iterative_scan)")
