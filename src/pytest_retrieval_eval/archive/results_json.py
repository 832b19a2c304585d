"""results.json: a run's document, and the checks a file must pass before it is read.

``results.json`` (format version 1) is written with sorted keys and without timings, so
identical inputs give byte-identical files (timings go to ``timing.json``). Per evaluation it
holds the source of truth (``evaluation/record_json.py``) and, for people and other tools, the
values the analysis derived from it. The same document is what an xdist worker ships and a CI
slice writes (``archive/combine.py`` merges them), and what a saved baseline is.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Callable, Mapping, Sequence

from .._plain import loads, strict_json
from .._textfiles import read_text
from ..data.lint import LintReport
from ..errors import RetrievalEvalError
from ..analysis.result import EvaluationResult
from ..evaluation.fingerprints import checked, with_documents
from ..evaluation.record_json import evaluation_from_dict, evaluation_to_dict
from ..evaluation.results import FORMAT, METRICS_DEFINITION, METRICS_FINGERPRINT, VERSION, Evaluation, RunResults

#: a history record's format (``archive/history.py``): results.json inside, readable as a baseline
HISTORY_FORMAT = "pytest-retrieval-eval/history"


def run_document(run: RunResults, *, timing: bool,
                 derived: Callable[[Evaluation], Mapping[str, Any]] | None = None) -> dict[str, Any]:
    """results.json's source of truth, with what the analysis made of each evaluation
    (``derived``: read, never computed, by the writer). The gate adds the settings and the
    analysis (``archive/saved.py``)."""
    doc = {
        "format": FORMAT, "version": VERSION,
        "metrics": {"definition": METRICS_DEFINITION, "fingerprint": run.metrics_fingerprint},
        "lint": [r.to_dict() for r in run.lint],
        "snippets": run.snippets,
        "evaluations": [evaluation_to_dict(e, timing=timing, derived=derived(e) if derived is not None else None)
                        for e in run.evaluations],
    }
    if run.judgments:
        doc["judgments"] = run.judgments
    if run.candidates:
        doc["candidates"] = run.candidates
    if run.coverage:
        doc["coverage"] = run.coverage
    if run.fingerprints:
        doc["fingerprints"] = run.fingerprints
    return doc


def document_text(doc: Mapping[str, Any]) -> str:
    """A results document as results.json holds it: sorted keys, one space of indent, no NaN
    (identical inputs give identical bytes)."""
    return strict_json(doc, indent=1, sort_keys=True, ensure_ascii=False) + "\n"


def load(path: str | Path, *, check_fingerprints: bool = True) -> RunResults:
    """A saved run, refused in one line (file and field) when it does not hold together.
    ``check_fingerprints=False`` (baselines) leaves a labeled-set fingerprint that does not
    match the questions to the baseline comparison, which refuses it unless forced."""
    return from_document(read_document(path), path, check_fingerprints=check_fingerprints)


def read_document(path: str | Path) -> dict[str, Any]:
    """A results file's JSON (a history record's results.json), not yet checked."""
    text = read_text(path)
    try:
        doc = loads(text)  # a NaN of a file written before results.json was strict: None, no value
    except json.JSONDecodeError as exc:
        raise RetrievalEvalError(f"not valid JSON: {exc.msg}", path=path, line=exc.lineno) from None
    if isinstance(doc, dict) and doc.get("format") == HISTORY_FORMAT and isinstance(doc.get("results"), dict):
        record, doc = doc, doc["results"]  # a history record (archive/history.py) holds a run's results.json
        if isinstance(record.get("corpora"), dict) and record["corpora"]:  # its corpus digests kept beside it
            doc = {**doc, "fingerprints": with_documents(doc.get("fingerprints"), record["corpora"], Path(path).parent)}
    return doc


def from_document(doc: Any, path: str | Path, *, check_fingerprints: bool = True,
                  cls: type[Evaluation] = EvaluationResult) -> RunResults:
    """The run a results file's JSON holds (``read_document``), refused in one line when it does
    not hold together; its settings stay as recorded (the gate reads them: ``archive/saved.py``)."""
    if not isinstance(doc, dict) or doc.get("format") != FORMAT:
        raise RetrievalEvalError(f"not a results file (expected \"format\": \"{FORMAT}\")", path=path, field="format")
    if doc.get("version") != VERSION:
        raise RetrievalEvalError(f"unsupported results version {doc.get('version')!r}; this plugin reads {VERSION}",
                                 path=path, field="version")
    evaluations = []
    metrics = doc.get("metrics")
    same_definition = isinstance(metrics, dict) and metrics.get("fingerprint") == METRICS_FINGERPRINT
    for i, e in enumerate(doc.get("evaluations") or []):
        try:
            evaluations.append(evaluation_from_dict(e, cls, recorded=same_definition))
        except RetrievalEvalError as exc:
            raise RetrievalEvalError(exc.detail, path=path, field=f"evaluations[{i}].{exc.field or ''}".rstrip(".")) from None
        except (KeyError, TypeError, ValueError) as exc:
            raise RetrievalEvalError(
                f"evaluation {i} is missing or has a malformed {exc}; results files from before the rankings "
                "were recorded cannot be read: re-save it with this version", path=path,
                field=f"evaluations[{i}]") from None
    same: dict[tuple[str, str], Evaluation] = {}
    for e in evaluations:  # engines on one labeled set were asked the same questions
        first = same.setdefault((e.labeled.name, e.labeled.fingerprint), e)
        if [q.query_id for q in first.labeled.queries] != [q.query_id for q in e.labeled.queries]:
            raise RetrievalEvalError(
                f"engines {first.engine} and {e.engine} hold different queries ({first.n} and {e.n}) for the "
                f"same labeled set {e.labeled.name} (fingerprint {e.labeled.fingerprint[:12]}): "
                f"{_id_difference(first, e)}; the file was edited or put together from two runs",
                path=path, field="evaluations")
    problem = _fit_problem(doc.get("evaluations") or [], evaluations, check_fingerprints)
    if problem:
        raise RetrievalEvalError(problem[1], path=path, field=problem[0])
    settings = doc.get("settings", {})  # checked when the gate reads it (archive.saved.load_saved)
    try:
        lint = [LintReport.from_dict(r) for r in doc.get("lint", [])]
        judgments = doc.get("judgments") or {}
        if not isinstance(judgments, dict):
            raise RetrievalEvalError("'judgments' must be an object", path=path, field="judgments")
        candidates = doc.get("candidates") or {}
        if not isinstance(candidates, dict) or not isinstance(candidates.get("items", []), list):
            raise RetrievalEvalError("'candidates' must be an object with a list of items", path=path,
                                     field="candidates")
        coverage = doc.get("coverage") or {}
        if not isinstance(coverage, dict) or (coverage and not isinstance(coverage.get("documents"), dict)):
            raise RetrievalEvalError("'coverage' must be an object with documents {judged, total}", path=path,
                                     field="coverage")
        try:
            fingerprints = checked(doc.get("fingerprints"))
        except ValueError as exc:
            raise RetrievalEvalError(str(exc), path=path, field="fingerprints") from None
        return RunResults(evaluations, doc["metrics"]["fingerprint"], lint, dict(doc.get("snippets", {})),
                          dict(settings) if isinstance(settings, dict) else settings, dict(judgments),
                          dict(candidates), dict(coverage), fingerprints)
    except (KeyError, TypeError, ValueError) as exc:
        raise RetrievalEvalError(f"results file is missing or has a malformed {exc}", path=path) from None


def _id_difference(first: Evaluation, other: Evaluation) -> str:
    """Which query ids ``other`` lacks and which it holds that ``first`` does not (or: the order)."""
    def listed(ids: list[str]) -> str:
        return ", ".join(repr(q) for q in ids[:3]) + (f" and {len(ids) - 3} more" if len(ids) > 3 else "")

    mine, theirs = [q.query_id for q in first.labeled.queries], [q.query_id for q in other.labeled.queries]
    mine_set, theirs_set = set(mine), set(theirs)
    lacks, extra = [q for q in mine if q not in theirs_set], [q for q in theirs if q not in mine_set]
    said = ([f"lacks {listed(lacks)}"] if lacks else []) + ([f"holds {listed(extra)}, which {first.engine} does not"]
                                                            if extra else [])
    return f"{other.engine} {' and '.join(said)}" if said else f"{other.engine} holds them in another order"


def _fit_problem(docs: Sequence[Mapping[str, Any]], evaluations: Sequence[Evaluation],
                 check_fingerprints: bool = True) -> tuple[str, str] | None:
    """(field, what is wrong) for the first evaluation whose questions are not the labeled set it
    names, or whose per-trial rankings and run lint do not fit those questions; every trial figure
    is rebuilt from them, so a short or long trial would be scored wrong, not refused."""
    for i, (d, e) in enumerate(zip(docs, evaluations)):
        problem = _labeled_problem(d, e, check_fingerprints) or _trials_problem(d, e) or _lint_problem(e)
        if problem:
            return f"evaluations[{i}].{problem[0]}", problem[1]
    counts = {1 + len(e.trial_results) for e in evaluations}
    if len(counts) > 1:  # one run asks every engine the same number of times: the short one was cut
        i, short = min(enumerate(evaluations), key=lambda p: len(p[1].trial_results))
        most = max(evaluations, key=lambda e: len(e.trial_results))
        return (f"evaluations[{i}].trial_rankings", f"{short.engine}: {1 + len(short.trial_results)} trials, but "
                f"{most.engine} in the same file has {1 + len(most.trial_results)}")
    return None


def _labeled_problem(d: Mapping[str, Any], e: Evaluation, check_fingerprint: bool) -> tuple[str, str] | None:
    recorded = d["labeled"].get("n", e.n)
    if recorded != e.n:
        return "queries", f"{e.engine}: {e.n} questions, but labeled set {e.labeled.name} has {recorded}"
    actual = e.labeled.computed_fingerprint if check_fingerprint else None
    if actual is not None and actual != e.labeled.fingerprint:
        return "queries", (f"{e.engine}: the questions do not make up labeled set {e.labeled.name} (fingerprint "
                           f"{e.labeled.fingerprint[:12]}, theirs {actual[:12]}): an id, question or judgement was edited")
    return None


def _trials_problem(d: Mapping[str, Any], e: Evaluation) -> tuple[str, str] | None:
    raw, ids = d.get("trial_rankings", []), [q.query_id for q in e.labeled.queries]
    if not isinstance(raw, list):
        return "trial_rankings", f"{e.engine}: must be a list of trials, each a list of [ranked doc ids, error] per question"
    for t, trial in enumerate(raw):
        field_, name = f"trial_rankings[{t}]", f"{e.engine}, trial {t + 2}"  # trial 1 is the queries' own ranking
        if not isinstance(trial, list):
            return field_, f"{name}: must be a list of [ranked doc ids, error] per question"
        if len(trial) != len(ids):
            why = (f"none for {', '.join(repr(q) for q in ids[len(trial):][:3])}" if len(trial) < len(ids) else
                   "one more than there are questions" if len(trial) == len(ids) + 1 else
                   f"{len(trial) - len(ids)} more than there are questions")
            return field_, f"{name}: {len(trial)} rankings for {len(ids)} questions ({why})"
        for qid, entry in zip(ids, trial):
            if not (isinstance(entry, list) and len(entry) == 2 and isinstance(entry[0], list)
                    and all(isinstance(x, str) for x in entry[0]) and (entry[1] is None or isinstance(entry[1], str))):
                return field_, f"{name}, question {qid!r}: expected [ranked doc ids, error or null], got {entry!r:.60}"
    derived = d.get("trials")
    if isinstance(derived, dict):  # the per-trial means written beside them, one per trial
        counts = {len(v) for v in derived.values() if isinstance(v, list)}
        if counts and counts != {1 + len(raw)} or not derived and raw:
            held = f"{sorted(counts)[0]} per measure" if counts else "none"
            return "trial_rankings", f"{e.engine}: {1 + len(raw)} trials recorded, but 'trials' holds {held}"
    return None


def _lint_problem(e: Evaluation) -> tuple[str, str] | None:
    known = e.labeled.by_id()
    for kind, ids in e.run_lint.items():
        unknown = next((q for q in ids if q not in known), None)
        if unknown is not None:
            return f"run_lint.{kind}", f"{e.engine}: unknown query id {unknown!r} (not in labeled set {e.labeled.name})"
    return None
