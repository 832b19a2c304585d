"""What the engines' rankings say of the labeled set itself (the label-only checks are
``data/set_checks.py``): findings named by their questions, never dropped.

- ``no_signal``: questions every engine (two or more on the set) answers at rank 1: they cannot
  tell any engine from another, whatever changes;
- ``metadata_baseline``: the set-level warning when the metadata-only baseline (the built-in
  ``keyword`` engine, which reads titles, descriptions and file names only) scores as well as the
  best other engine: the set then rewards naming the document, not finding it.
"""

from __future__ import annotations

from typing import Sequence

from ..data.set_checks import SetFinding
from .scores import Scores

KINDS = ("no_signal", "metadata_baseline")
#: the engine that reads a document's metadata only (``engines/keyword.py``)
METADATA_ENGINE = "keyword"


def _by_set(run) -> dict[str, list]:
    out: dict[str, list] = {}
    for e in run.evaluations:
        out.setdefault(e.labeled.name, []).append(e)
    return out


def no_signal(run) -> list[SetFinding]:
    """One finding per labeled set with questions every engine (of two or more) ranks at 1."""
    out = []
    for name, evaluations in _by_set(run).items():
        if len(evaluations) < 2:
            continue
        ranks = [e.first_relevant_rank for e in evaluations]
        ids = tuple(q.query_id for q in evaluations[0].labeled.queries if all(r.get(q.query_id) == 1 for r in ranks))
        if ids:
            engines = ", ".join(e.engine for e in evaluations)
            out.append(SetFinding("no_signal", ids, f"{len(ids)} of {evaluations[0].n} questions of {name} every "
                                  f"engine ({engines}) answers at rank 1: they separate none of them"))
    return out


def metadata_baseline(run, measure: str) -> list[SetFinding]:
    """A finding per labeled set on which ``keyword`` scores ``measure`` at least as well as the
    best other engine; it names the questions the baseline answers at rank 1."""
    out = []
    for name, evaluations in _by_set(run).items():
        base = next((e for e in evaluations if e.engine == METADATA_ENGINE), None)
        others = [e for e in evaluations if e is not base and e.n]
        if base is None or not others or not base.n:
            continue
        best = max(others, key=lambda e: (Scores.of(e).mean(measure), e.engine))
        if Scores.of(base).mean(measure) >= Scores.of(best).mean(measure):
            ranks = base.first_relevant_rank
            ids = tuple(q.query_id for q in base.labeled.queries if ranks.get(q.query_id) == 1)
            out.append(SetFinding("metadata_baseline", ids, f"the set rewards naming the document: on {name} the "
                                  f"metadata-only baseline {METADATA_ENGINE} scores {measure} "
                                  f"{Scores.of(base).mean(measure):.3f}, the best engine {best.engine} {Scores.of(best).mean(measure):.3f} "
                                  f"({len(ids)} questions {METADATA_ENGINE} answers at rank 1)"))
    return out


def set_signal(run, measure: str) -> list[SetFinding]:
    return [*no_signal(run), *metadata_baseline(run, measure)]


def warnings(findings: Sequence[SetFinding]) -> list[str]:
    """The set-level warnings among ``findings`` (every surface shows them, not only with -v)."""
    return [f"labeled set: {f.detail}" for f in findings if f.kind == "metadata_baseline"]


def lines(findings: Sequence[SetFinding], *, limit: int | None = None) -> list[str]:
    """Each finding on a line, its questions named (all, or the first ``limit`` and how many more)."""
    out = []
    for f in findings:
        cut = len(f.query_ids) if limit is None else limit
        named = ", ".join(f.query_ids[:cut]) + (f" and {len(f.query_ids) - cut} more" if len(f.query_ids) > cut else "")
        out.append(f"{f.kind}: {named}: {f.detail}" if named else f"{f.kind}: {f.detail}")
    return out
