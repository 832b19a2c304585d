"""A sharp subset for pull requests: the questions that best separate the engines (or past runs),
so a pull request runs a few and the nightly run the whole set.

The rule (``choose``): every evaluation of the saved run(s) on the labeled set is a column; each
question's spread is the population variance of its per-question measure across the columns
(hit@5: a question two engines of three find scores 0.22, one all find or all miss 0); questions
are taken by spread, largest first, ties broken by the spread of the reciprocal rank (how far
apart the engines rank its first relevant document), then by id, up to ``size``. A question with no spread
separates nothing: it is taken only when fewer than ``size`` have one, and the file says how many.

The file (``subsets/NAME.json``, ``--retrieval-subset=NAME`` selects it) records the questions,
the rule, and per engine the smallest drop the full set and the subset can detect
(``ir.stats.detectable_drop``): the price of the speed, which the run's report repeats.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Mapping, Sequence

from .._atomic import write_text_atomic
from .._plain import strict_json, to_plain
from .._textfiles import read_text
from ..errors import RetrievalEvalError
from ..ir.stats import detectable_drop
from .scores import Scores
from ..data.labeled import LabeledSet
from ..evaluation.results import RunResults

FORMAT = "pytest-retrieval-eval/subset"
VERSION = 1
RULE = ("population variance across engines and runs of each question's {measure}, largest first; "
        "ties broken by the variance of its reciprocal rank, then by id")


@dataclass(frozen=True)
class SubsetDrop:
    """What a subset costs one engine: the smallest drop of ``measure`` it can detect (``subset``,
    over ``n`` questions) against the full set's (``full``, over ``of_n``), at 80% power."""

    name: str
    engine: str
    labeled: str
    measure: str
    n: int
    of_n: int
    subset: float
    full: float | None

    def __str__(self) -> str:
        full = f"{self.full:.3f} with all {self.of_n}" if self.full is not None else "the full set's unknown"
        return f"{self.engine} {self.measure} {self.subset:.3f} with {self.n} questions ({full})"


def spreads(runs: Sequence[Any], measure: str) -> tuple[list[str], dict[str, tuple[float, float]], list[Any]]:
    """The questions every column shares unchanged (in the first run's order; ``question_changes``:
    a past run that read one otherwise, or labeled it otherwise, measured another question), each
    one's spread (of ``measure``, then of the reciprocal rank), and the columns (evaluations) of the
    first labeled set."""
    import numpy as np

    from ..data.labeled import question_changes

    first = runs[0].evaluations
    if not first:
        raise RetrievalEvalError("the saved run has no evaluations to choose a subset from")
    name = first[0].labeled.name
    columns = [e for r in runs for e in r.evaluations if e.labeled.name == name and e.n]
    _has_value(columns, measure, name)
    per = [dict(zip((q.query_id for q in e.labeled.queries), Scores.of(e).values(measure))) for e in columns]
    rr = [{q: 1.0 / r if r else 0.0 for q, r in e.first_relevant_rank.items()} for e in columns]
    asked = [e.labeled.by_id() for e in columns]
    ids = [q.query_id for q in first[0].labeled.queries
           if all(q.query_id in p and not question_changes(q, a[q.query_id]) for p, a in zip(per, asked))]
    spread = {q: (float(np.var([p[q] for p in per])), float(np.var([r.get(q, 0.0) for r in rr]))) for q in ids}
    return ids, spread, columns


def _has_value(columns: Sequence[Any], measure: str, labeled: str) -> None:
    """Refuses a measure some column has no value of (NaN: an ids-only engine's ``+evidence``
    twin, a ``~ppi`` estimate, ``+judged`` without judgments): a spread of no value separates
    nothing, and its detectable drop is no number. Before anything is written."""
    import numpy as np

    from ..ir.measures import Measure

    empty = list(dict.fromkeys(e.engine for e in columns if np.isnan(Scores.of(e).values(measure)).all()))
    if not empty:
        return
    m = Measure.parse(measure)
    why = ("an estimate over the questions has no per-question value" if m.ppi else
           "no judgments are attached" if m.judged else
           "an engine of document ids holds no passage to carry a quote" if m.evidence else
           "the corpus has no versioned documents" if m.freshness else "it was not measured")
    plain = m.on_documents.on_human_labels
    other = plain.name if plain.name != m.name and not plain.freshness else f"hit@{m.k or 5}"
    raise RetrievalEvalError(f"{m.name} has no value for {', '.join(empty)} on {labeled} ({why}): choose a measure "
                             f"every engine has, e.g. --measure={other}")


def choose(runs: Sequence[Any], measure: str, size: int) -> tuple[list[str], int]:
    """The ``size`` question ids by the module's rule, and how many of them have any spread."""
    ids, spread, columns = spreads(runs, measure)
    if len(columns) < 2:
        raise RetrievalEvalError(f"a subset needs two engines or runs to separate; the saved run has "
                                 f"{len(columns)} evaluation(s) on its labeled set: save a run of several engines, "
                                 "or pass the results.json of several past runs")
    ranked = sorted(ids, key=lambda q: (-spread[q][0], -spread[q][1], q))[:size]
    return ranked, sum(1 for q in ranked if spread[q][0] > 0)


def drops(runs: Sequence[Any], measure: str, chosen: Sequence[str], alpha: float) -> dict[str, dict[str, float]]:
    """Per engine of the first run: the smallest detectable drop over all questions and over ``chosen``."""
    keep = set(chosen)
    out = {}
    for e in runs[0].evaluations:
        values = Scores.of(e).values(measure)
        ids = [q.query_id for q in e.labeled.queries if q.query_id in keep]
        mine = [v for q, v in zip((q.query_id for q in e.labeled.queries), values) if q in keep]
        out[e.engine] = {"full": detectable_drop(values, alpha=alpha, clusters=e.clusters()),
                         "subset": detectable_drop(mine, alpha=alpha, clusters=e.clusters(ids))}
    return out


def write_subset(path: Path, *, name: str, ids: Sequence[str], measure: str, labeled: LabeledSet, sources: Sequence[str],
                 spread: int, alpha: float, by_engine: Mapping[str, Mapping[str, float]]) -> None:
    doc = {"format": FORMAT, "version": VERSION, "name": name, "measure": measure, "rule": RULE.format(measure=measure),
           "from": list(sources), "labeled": labeled.name, "of": labeled.fingerprint, "of_n": len(labeled),
           "with_spread": spread, "alpha": alpha, "detectable_drop": {e: dict(v) for e, v in by_engine.items()},
           "ids": list(ids)}
    write_text_atomic(path, strict_json(to_plain(doc), indent=2) + "\n")  # a drop of no number: null


def subset_path(path: Path) -> Path:
    """``DIR/NAME`` (a name resolved as a path) -> ``DIR/subsets/NAME.json``; a ``.json`` path as given."""
    path = Path(path)
    return path if path.suffix == ".json" else path.parent / "subsets" / f"{path.name}.json"


def read_subset(path: Path) -> dict[str, Any]:
    """A subset file, refused in one line naming the file and the field."""
    if not Path(path).is_file():
        raise RetrievalEvalError(f"no such subset file; write one with python -m pytest_retrieval_eval subset "
                                 f"results.json --size=20 --name={Path(path).stem} --dir={Path(path).parent}",
                                 path=path)
    try:
        doc = json.loads(read_text(path))
    except json.JSONDecodeError as exc:
        raise RetrievalEvalError(f"not JSON ({exc.msg})", path=path, line=exc.lineno) from None
    if not isinstance(doc, dict) or doc.get("format") != FORMAT:
        raise RetrievalEvalError(f"not a subset file (format must be {FORMAT!r})", path=path, field="format")
    ids = doc.get("ids")
    if not isinstance(ids, list) or not ids or not all(isinstance(i, str) for i in ids):
        raise RetrievalEvalError("'ids' must be a non-empty list of question ids", path=path, field="ids")
    drops_ = doc.get("detectable_drop", {})
    if not isinstance(drops_, dict) or not all(isinstance(v, dict) for v in drops_.values()):
        raise RetrievalEvalError("'detectable_drop' must map engines to {full, subset}", path=path,
                                 field="detectable_drop")
    return doc


def restrict(labeled: LabeledSet, doc: Mapping[str, Any], path: Path) -> LabeledSet:
    """``labeled`` less the questions the subset leaves out, its provenance saying which subset of
    how many (the full set's detectable drops ride along for the report)."""
    from ..data.labeled import LabeledSet

    keep = set(doc["ids"])
    known = {q.query_id for q in labeled.queries}
    unknown = [i for i in doc["ids"] if i not in known]
    if len(unknown) == len(keep):
        raise RetrievalEvalError(f"none of its {len(keep)} questions is in the labeled set {labeled.name} "
                                 f"(e.g. {unknown[0]}): write it again from a run of this set", path=path, field="ids")
    record = {"name": str(doc.get("name") or path.stem), "measure": str(doc.get("measure") or ""),
              "of_n": int(doc.get("of_n") or len(labeled)), "missing": unknown,
              "full": {e: float(v["full"]) for e, v in doc.get("detectable_drop", {}).items() if "full" in v}}
    return LabeledSet(tuple(q for q in labeled.queries if q.query_id in keep), name=labeled.name,
                      provenance={**labeled.provenance, "subset": record})


def subset_drops(run: RunResults, alpha: float) -> list[SubsetDrop]:
    """Per evaluation of a subset run: the smallest drop it can detect against the full set's."""
    out = []
    for e in run.evaluations:
        record = e.labeled.provenance.get("subset")
        if not record or e.n < 2 or not record.get("measure"):
            continue
        m = record["measure"]
        out.append(SubsetDrop(record["name"], e.engine, e.labeled.name, m, e.n, int(record["of_n"]),
                              detectable_drop(Scores.of(e).values(m), alpha=alpha, clusters=e.clusters()),
                              record["full"].get(e.engine)))
    return out
