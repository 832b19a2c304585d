"""results.json as the gate writes and reads it: the run's source of truth, the settings it was
judged by, and its analysis, so ``report results.json`` renders what the run rendered.

Besides the analysis in its exact form (``"analysis"``, which ``report`` reads back), the file
keeps the derived values for people and other tools under their long-standing keys
(``comparisons``, ``misses``, ``segments``, ``stability``, ``sweeps``, ``shadows``), written from
the same analysis: nothing here computes a statistic.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .._plain import from_plain, to_plain
from ..errors import RetrievalEvalError
from ..analysis.cost import RunUsage
from ..analysis.result import EvaluationResult
from ..evaluation.results import Evaluation, RunResults, measure_names
from ..ir.measures import Measure
from .results_json import document_text, from_document, read_document, run_document
from ..rules.settings import GateSettings
from ..analysis.analyse import Analysis
from ..analysis.recorded import restored

if TYPE_CHECKING:
    from ..gate.verdict import Verdict


@dataclass(frozen=True)
class Saved:
    """A results file read back: the run, its settings, and its analysis (None when the file
    holds none of this form: it is then made again)."""

    run: RunResults
    settings: GateSettings
    analysis: Analysis | None = None
    #: what the run's ending noted and warned of, and its HTTP calls in all (``Verdict``)
    notes: tuple[str, ...] = ()
    run_warnings: tuple[str, ...] = ()
    run_usage: RunUsage | None = None
    #: what the run carried beside its rules (``Verdict.run_failures``), as its settings record them
    failures: tuple[str, ...] = ()


def load_saved(path: str | Path, *, check_fingerprints: bool = True) -> Saved:
    """A saved run with its settings and analysis, refused in one line naming the file and the field."""
    doc = read_document(path)
    run = from_document(doc, path, check_fingerprints=check_fingerprints, cls=EvaluationResult)  # read as tests read
    try:
        settings = GateSettings.from_dict(run.settings) if run.settings else GateSettings()
    except RetrievalEvalError as exc:
        raise RetrievalEvalError(exc.detail, path=path, field=exc.field or "settings") from None
    try:
        analysis = Analysis.from_dict(doc.get("analysis"))
    except (KeyError, TypeError, ValueError):
        analysis = None  # a damaged analysis is made again from the run, never read half
    if analysis is not None:  # the per-question values it shows, held once under each question
        values = restored(analysis.recorded, run)
        analysis = replace(analysis, recorded=values) if values is not None else None
    said = doc.get("verdict") if isinstance(doc.get("verdict"), dict) else {}
    try:
        usage = from_plain(RunUsage | None, said.get("run_usage"))
        notes, warned = tuple(map(str, said.get("notes") or ())), tuple(map(str, said.get("warnings") or ()))
    except (KeyError, TypeError, ValueError):
        raise RetrievalEvalError("'verdict' must hold notes and warnings (lists of text) and the run's usage",
                                 path=path, field="verdict") from None
    return Saved(run, settings, analysis, notes, warned, usage, run_failures(run))


def run_failures(run: RunResults) -> tuple[str, ...]:
    """The failures a saved run carried beside its rules (results.json's ``settings.failures``,
    checked with the settings: ``rules.settings.settings_problem``)."""
    return tuple(run.settings.get("failures", ()))


def results_json(verdict: Verdict) -> str:
    """The run's results.json (sorted keys, no timings unless ``--retrieval-latency``: identical
    inputs give identical bytes)."""
    run, s, a = verdict.run, verdict.settings, verdict.analysis
    measures = measure_names(s.recorded_measures)
    doc = run_document(run, timing=s.latency, derived=lambda e: _derived(e, measures, s, a))
    doc["settings"] = s.to_dict(verdict.run_failures)
    doc["verdict"] = {"failed": verdict.failed, "state": verdict.state,  # what the gate said, as every surface says it
                      "failures": [{"kind": f.kind, "state": f.state, "text": str(f), "causes": list(f.causes)}
                                   for f in verdict.failures],
                      "notes": list(verdict.notes), "warnings": list(verdict.run_warnings),
                      "run_usage": to_plain(verdict.run_usage)}
    doc.update(to_plain(_for_people(run, s, a)))  # a statistic of nothing (a shadow's gain without weights): null
    doc["analysis"] = a.to_dict()
    return document_text(doc)


def _derived(e: Evaluation, measures: list[str], s: GateSettings, a: Analysis) -> dict[str, Any]:
    """What results.json shows of one evaluation besides its record, as the analysis holds it
    (writing computes nothing): latency, usage, errors, the trials' means, each measure's mean and
    interval, and per question its values and the rank of its first relevant document."""
    found = next(x for x in a.recorded if (x.engine, x.labeled) == e.key)
    d: dict[str, Any] = {}
    latency = next((x for x in a.latency if (x.engine, x.labeled) == e.key), None) if s.latency else None
    if latency is not None:  # derived, for people and other tools: p50, p95, p99, max
        d["latency"] = {k: v for k, v in latency.to_dict().items() if k not in ("engine", "labeled")}
    used = next((x for x in a.usage if (x.engine, x.labeled) == e.key), None)
    if used is not None:
        d["usage"] = {k: v for k, v in used.to_dict().items() if k not in ("engine", "labeled")}
    d["errors"] = e.errors
    d["trials"] = {m: list(v) for m, v in found.trials.items()}
    # a measure without a value (mean None: an ids-only engine's +evidence twin) is null, as its interval
    d["summary"] = {m: {"mean": mean, "ci95": None if mean is None or lo != lo else [lo, hi]}
                    for m in sorted(measures) for mean, (lo, hi) in ((found.means[m], a.interval(e.key, m)),)}
    ranks = e.first_relevant_rank
    shown = [m for m in sorted(measures) if not Measure.parse(m).ppi]  # an estimate over questions: none per question
    d["per_query"] = {r.query_id: {"first_relevant_rank": ranks[r.query_id],
                                   "values": {m: found.values[m][i] if found.values[m] is not None else None
                                              for m in shown}}
                      for i, r in enumerate(e.results)}
    return d


def _for_people(run: RunResults, s: GateSettings, a: Analysis) -> dict[str, Any]:
    """The analysis's figures in the forms results.json has always shown them."""
    doc: dict[str, Any] = {}
    if s.miss_k:
        doc["misses"] = [{**m.to_dict(), "queries": [{"id": c.query_id, "kind": c.kind, "why": c.text}
                                                     for c in m.causes]} for m in a.misses]
        if any(e.trial_results for e in run.evaluations):  # how much each engine moved between trials
            doc["stability"] = [x.to_dict() for x in a.stability]
        if s.sweeps:
            doc["sweeps"] = [t.to_dict() for t in a.sweeps]
        if s.by:
            doc["segments"] = [row.to_dict() for row in a.segments]
    if s.table_measures:  # the effect sizes the reports show
        doc["comparisons"] = [c.to_dict() for c in a.comparisons]
    if s.shadows:  # what each candidate gained over its baseline, on the columns and the weighted measures
        names = [*s.table_measures, *s.weights]
        order = {m: i for i, m in enumerate(dict.fromkeys(names))}
        pairs = set(s.shadows)
        doc["shadows"] = [replace(sh, deltas=tuple(sorted((d for d in sh.deltas if d.measure in order),
                                                           key=lambda d: order[d.measure]))).to_dict()
                          for sh in a.shadows if (sh.candidate, sh.baseline) in pairs]
    return doc


def load_run(path: str | Path, *, check_fingerprints: bool = True) -> RunResults:
    """A saved run alone (a baseline): its settings and analysis are this run's business."""
    return load_saved(path, check_fingerprints=check_fingerprints).run


def load_baseline(path: Path | None) -> tuple[RunResults | None, list[str]]:
    """The saved baseline, or why it cannot be used (a gate failure, never a silent pass)."""
    if path is None:
        return None, []
    try:
        return load_run(path, check_fingerprints=False), []  # compare() refuses, or is forced
    except RetrievalEvalError as exc:
        return None, [f"baseline unusable: {exc}"]

