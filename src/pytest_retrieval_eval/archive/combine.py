"""Putting parallel data back together in one function, as ``coverage combine`` does
(``combine``): the evaluations xdist workers shipped (one kept per engine and labeled set), the
shares of one evaluation (``--retrieval-shard``) and the slices CI jobs evaluated
(``--retrieval-slice I/N``, their results.json given to ``python -m pytest_retrieval_eval report
merge``). One set of checks refuses what does not fit, in one line naming the part (its file or
worker) and the field: parts not evaluated alike (``misfit``: labeled set, corpus, engine
description, depth, trials, judge, freshness), a slice missing or given twice, and jobs run with
other settings, metric definitions or inputs. The result is the run one unsliced process would
have written, so every artefact and the gate's verdict are the same (timing aside)."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping, Sequence, Union

from .._usage import summed
from ..errors import RetrievalEvalError
from ..evaluation.results import Evaluation, RunResults

_FRACTION = re.compile(r"^(\d+)/(\d+)$")
#: what an engine's description says its run met on its own questions, not how it was set up:
#: each part's own (counts like ``keyword_empty`` 3/17 are added up, the rest shown per part)
OBSERVED = frozenset({"keyword_empty", "prepare_error", "chunk_ids_folded", "unknown_ids",
                      "embedder_canary", "exact_error"})  # each job's own cache: stamped where it ran
#: what to do about a part that does not fit, by what the parts are
_ADVICE = {"slice": "every CI job must evaluate the same corpus with the same engines and options",
           "share": "every xdist worker must evaluate the same corpus with the same engines and options",
           "evaluation": "every xdist worker must evaluate the same corpus with the same engines and options"}
#: a part: a CI job's results.json (its path, or the run read from it), or what a worker shipped
#: in results.json's form ({"evaluations": [...], "lint": [...], "snippets": {...}}), where an
#: evaluation with a "share" is a share of one
Part = Union[str, Path, RunResults, Mapping[str, Any]]


@dataclass
class Combined:
    """The run the parts make up, with what combining noticed (workers that ranked differently)
    and the shares that never arrived (the run happened: a gate failure, not a refusal)."""

    run: RunResults
    notes: list[str] = field(default_factory=list)
    missing: list[str] = field(default_factory=list)


def whole_of(d: Mapping[str, Any]) -> str:
    """The fingerprint of the whole labeled set a part (``Evaluation.to_dict`` form) is of:
    as its slice or share says, else its own (a whole evaluation)."""
    part = d["labeled"].get("slice") or d.get("share") or {}
    return part.get("of") or d["labeled"]["fingerprint"]


def _of(d: Mapping[str, Any], key: str) -> Mapping[str, Any]:
    return d.get(key) or {}


def _said_corpus(d: Mapping[str, Any]) -> str:
    c = _of(d, "corpus")
    return f"corpus {c.get('name')} (fingerprint {c['fingerprint'][:12]})" if c.get("fingerprint") else "no corpus"


def _said_freshness(d: Mapping[str, Any]) -> str:
    f = _of(d, "freshness")
    return f"as of {f['as_of']} ({len(f.get('stale', {}))} stale documents)" if f else "against no versions"


def _trials(d: Mapping[str, Any]) -> int:
    return 1 + len(d.get("trial_rankings") or ())


#: (field, verb, what is compared, how it is said), in the order they are checked
_FIELDS = (
    ("labeled", "is of", lambda d: (d["labeled"]["name"], whole_of(d)),
     lambda d: f"labeled set {d['labeled']['name']} (fingerprint {whole_of(d)[:12]})"),
    # the fingerprint is the corpus: its folder may be named otherwise on each machine
    ("corpus", "searched", lambda d: _of(d, "corpus").get("fingerprint"), _said_corpus),
    ("depth", "was asked for", lambda d: d.get("depth"), lambda d: f"{d.get('depth')} results a question"),
    ("trial_rankings", "was run", _trials, lambda d: f"{_trials(d)} time{'s' * (_trials(d) != 1)}"),
    ("judge", "was judged by", lambda d: _of(d, "judge").get("fingerprint"),
     lambda d: f"judge {_of(d, 'judge')['fingerprint'][:12]}" if d.get("judge") else "no judge"),
    ("freshness", "was judged fresh", lambda d: d.get("freshness"), _said_freshness),
)


def misfit(first: Mapping[str, Any], other: Mapping[str, Any], first_name: str) -> tuple[str, str] | None:
    """(field, what differs) where ``other`` was not evaluated as ``first`` (called ``first_name``)
    was, two parts (``Evaluation.to_dict`` forms) of one engine's evaluation: the whole
    labeled set, the corpus searched (by fingerprint), the depth, the trials, the judge, the
    freshness, and the engine's description but for what each part met (``OBSERVED``, counts);
    None when they fit. ``combine`` asks it of every part, and the xdist controller of each
    worker as it goes down (``plugin/roles.py``)."""
    engine = other["engine"]
    if engine != first["engine"]:
        return "engine", f"engine {engine}, {first_name}'s engine {first['engine']}"
    for name, verb, value, say in _FIELDS:
        if value(other) != value(first):
            return name, f"{engine} {verb} {say(other)}, {first_name}'s {say(first)}"
    a, b = first.get("engine_info") or {}, other.get("engine_info") or {}
    for key in dict.fromkeys([*a, *b]):
        counts = _FRACTION.match(str(a.get(key))) and _FRACTION.match(str(b.get(key)))
        if key in OBSERVED or counts or a.get(key) == b.get(key):
            continue
        said = [f"{key} {d[key]}" if key in d else f"no {key}" for d in (b, a)]
        return f"engine_info.{key}", f"{engine} is described with {said[0]}, {first_name}'s with {said[1]}"
    return None


@dataclass(frozen=True)
class _Piece:
    """One evaluation as it came (``to_dict`` form) and the part that held it: its name (a file
    or worker; None: said by position) and whether it is a CI job's file (its evaluations are slices)."""

    d: Mapping[str, Any]
    name: str | None
    from_file: bool

    @property
    def cut(self) -> Mapping[str, Any] | None:
        """The share or (in a job's file) the slice this is of the whole, or None: a whole evaluation."""
        return self.d.get("share") or (self.d["labeled"].get("slice") if self.from_file else None)

    @property
    def kind(self) -> str:
        return "share" if self.d.get("share") else "slice" if self.from_file else "evaluation"

    @property
    def index(self) -> int:
        """1-based, among its whole's parts."""
        cut = self.cut or {}
        return cut["index"] if "index" in cut else cut.get("k", 0) + 1

    @property
    def count(self) -> int:
        cut = self.cut or {}
        return cut.get("count") or cut.get("n") or 1


def combine(parts: Sequence[Part], *, names: Sequence[str | None] | None = None) -> Combined:
    """The run ``parts`` make up: whole evaluations kept once (the first part's, a disagreement
    noted), shares and slices put back together query for query. ``names`` name the parts in a
    refusal (a path names itself; None: by position). Refused in one line naming the part and
    the field when a part does not fit; a share that never arrived is ``missing``."""
    from ..data.lint import LintReport
    from .results_json import load

    names = list(names) if names is not None else [str(p) if isinstance(p, (str, Path)) else None for p in parts]
    read = [load(p) if isinstance(p, (str, Path)) else p for p in parts]
    runs: list[tuple[str, RunResults]] = []
    pieces: list[_Piece] = []
    lint: dict[str, LintReport] = {}
    snippets: dict[str, str] = {}
    for i, (part, name) in enumerate(zip(read, names)):
        if isinstance(part, RunResults):
            runs.append((name or f"part {i + 1}", part))
            if not part.evaluations:
                raise RetrievalEvalError("holds no evaluation", path=name)
            found = [e.to_dict() for e in part.evaluations]
            reports = part.lint
        else:
            found = [*part.get("evaluations", ())]
            reports = [LintReport.from_dict(r) for r in part.get("lint", ())]
        for r in reports:  # one ingestion, reported by several parts
            lint.setdefault(json.dumps(r.to_dict(), sort_keys=True), r)
        snippets.update(part.snippets if isinstance(part, RunResults) else part.get("snippets", {}))
        pieces += [_Piece(d, name, isinstance(part, RunResults)) for d in found]
    groups = _grouped(pieces)
    notes: list[str] = []
    missing: list[str] = []
    chosen: dict[tuple[str, str, str], list[_Piece]] = {}
    for key, group in sorted(groups.items()):
        wholes = [p for p in group if p.cut is None]
        if wholes:  # the whole set evaluated (on one worker, or several): the first stands
            _check_fit(wholes)
            first = wholes[0].d
            notes += [f"engine '{key[0]}' ranked differently on {p.name}; kept the first worker's run"
                      for p in wholes[1:] if _ranked(p.d) != _ranked(first)]
            chosen[key] = wholes[:1]
            continue
        by_index: dict[int, _Piece] = {}
        for p in group:
            by_index.setdefault(p.index, p)
        n = group[0].count
        absent = [i for i in range(1, n + 1) if i not in by_index]
        if absent and group[0].kind == "share":
            missing.append(f"engine '{key[0]}': share(s) {', '.join(map(str, absent))} of {n} never arrived")
            continue
        if absent:
            given = ", ".join(f"{i} ({by_index[i].name})" for i in sorted(by_index))
            raise RetrievalEvalError(f"{key[0]} on {key[1]}: slice(s) {', '.join(map(str, absent))} of {n} never "
                                     f"given (given: {given}); pass every job's results.json")
        chosen[key] = [by_index[i] for i in range(1, n + 1)]
    for group in chosen.values():  # what each engine searched and how, before the run's settings
        _check_fit(group)
    records = _run_records(runs)
    evaluations = [Evaluation.from_dict(group[0].d) if group[0].cut is None else _joined(group)
                   for group in chosen.values()]
    if runs:
        records["judgments"] = _judgments(records["judgments"], [r for _, r in runs], evaluations)
        if records["fingerprints"]:  # the whole labeled sets', not the first slice's
            records["fingerprints"]["labeled"] = {e.labeled.name: e.labeled.fingerprint for e in evaluations}
    run = RunResults(evaluations, lint=list(lint.values()), snippets=dict(sorted(snippets.items())), **records)
    return Combined(run, notes, missing)


def _grouped(pieces: Sequence[_Piece]) -> dict[tuple[str, str, str], list[_Piece]]:
    """Pieces by (engine, labeled set, whole fingerprint), in the order they came; a job's file
    is refused where it holds what is not a slice, a slice of another set of the same name, a
    slice another file holds, or slices cut into another count."""
    groups: dict[tuple[str, str, str], list[_Piece]] = {}
    counts: dict[int, list[str]] = {}
    of: dict[str, tuple[str, str | None]] = {}
    for p in pieces:
        d, d_name = p.d, p.d["labeled"]["name"]
        key = (d["engine"], d_name, p.cut["of"] if p.cut else d["labeled"]["fingerprint"])
        if p.from_file:
            if p.cut is None:
                raise RetrievalEvalError(f"{d['engine']} on {d_name} is not a slice: run each job with "
                                         "--retrieval-slice I/N", path=p.name)
            counts.setdefault(p.count, []).append(str(p.name))
            seen = of.setdefault(d_name, (key[2], p.name))
            if seen[0] != key[2]:
                raise RetrievalEvalError(f"slices of different labeled sets named {d_name}: {seen[1]} (fingerprint "
                                         f"{seen[0][:12]}) and {p.name} (fingerprint {key[2][:12]})")
            twin = next((q for q in groups.get(key, ()) if q.index == p.index), None)
            if twin is not None:
                raise RetrievalEvalError(f"slice {p.index} of {p.count} of {d['engine']} on {d_name} is in both "
                                         f"{twin.name} and {p.name}")
        groups.setdefault(key, []).append(p)
    if len(counts) > 1:
        shown = "; ".join(f"{n}: {', '.join(dict.fromkeys(p))}" for n, p in sorted(counts.items()))
        raise RetrievalEvalError(f"the files slice the labeled set into different counts ({shown})")
    return groups


def _ranked(d: Mapping[str, Any]) -> list[list[str]]:
    return [q["ranked"] for q in d["queries"]]


def _check_fit(group: Sequence[_Piece]) -> None:
    """Refuse, in one line naming the part (its file or worker, where named) and the field, the
    first piece not evaluated as the first one was (``misfit``)."""
    label, n = group[0].kind, len(group)
    first = group[0].name or f"{label} 1 of {n}"
    for i, p in enumerate(group[1:], start=2):
        found = misfit(group[0].d, p.d, first)
        if found:
            raise RetrievalEvalError(f"{label} {i} of {n} of {p.d['labeled']['name']}: {found[1]}: {_ADVICE[label]}",
                                     path=p.name, field=found[0])


def _joined(group: Sequence[_Piece]) -> Evaluation:
    """One evaluation from its shares or slices (in order): queries, trials and run lint back in
    labeled-set order, the evidence merged, the engine's description the parts' (counts like
    ``66/68`` summed; what each part met shown per part)."""
    from ..evaluation.known import Evidence

    label, of = group[0].kind, group[0].cut["of"]
    parts = [p.d for p in group]
    order = sorted((pos, i, j) for i, p in enumerate(group) for j, pos in enumerate(p.cut["positions"]))
    whole = dict(parts[0])
    whole.pop("share", None)
    whole["queries"] = [parts[i]["queries"][j] for _, i, j in order]
    whole["trial_rankings"] = [[parts[i]["trial_rankings"][t][j] for _, i, j in order]
                               for t in range(len(parts[0].get("trial_rankings", [])))]
    whole["engine_info"] = _info([p.get("engine_info", {}) for p in parts], label)
    ids = [q["id"] for q in whole["queries"]]
    whole["run_lint"] = {k: [q for q in ids if any(q in p.get("run_lint", {}).get(k, ()) for p in parts)]
                         for k in parts[0].get("run_lint", {})}
    labeled = {k: v for k, v in whole["labeled"].items() if k != "slice" or label != "slice"}
    whole["labeled"] = {**labeled, "fingerprint": of, "n": len(ids)}
    measured = [p["measured"] for p in parts if p.get("measured")]
    if measured:  # one figure per question, timed in each part: how each part timed them, said once
        whole["measured"] = {**_info(measured, label), "concurrency": measured[0]["concurrency"],
                             "prepare_seconds": sum(m.get("prepare_seconds", 0.0) for m in measured),
                             **({"exact_seconds": sum(m.get("exact_seconds", 0.0) for m in measured)}
                                if any("exact_seconds" in m for m in measured) else {})}
    for key in ("prepare_usage", "trial_usage"):  # each part's engine prepared (and repeated) its own questions
        found = summed(*(p.get(key) or {} for p in parts))
        if found:
            whole[key] = found
    lost = [x for p in parts for x in p.get("unanswerable") or ()]  # each part asked its own unanswerable turns
    if lost:
        whole["unanswerable"] = lost
    if any("evidence" in p for p in parts):  # each part gathered it on its own questions
        whole["evidence"] = Evidence.merged([Evidence.from_dict(p.get("evidence")) for p in parts]).to_dict()
    result = Evaluation.from_dict(whole)
    if result.labeled.computed_fingerprint != of:  # the joined queries: the whole set
        raise RetrievalEvalError(f"the {label}s of {whole['engine']} do not make up labeled set "
                                 f"{labeled.get('name')} (fingerprint {of[:12]})")
    return result


def _info(infos: Sequence[Mapping[str, Any]], label: str) -> dict[str, Any]:
    """The parts' descriptions as one: counts added up, other values that differ (or that only
    some parts have: what they met) shown per part, ``-`` for a part without."""
    out: dict[str, Any] = {}
    for key in dict.fromkeys(k for i in infos for k in i):
        values = [i.get(key) for i in infos]
        if all(v == values[0] for v in values):
            out[key] = values[0]
            continue
        counts = [_FRACTION.match(str(v)) for v in values if v is not None]
        if all(counts):
            out[key] = f"{sum(int(m[1]) for m in counts)}/{sum(int(m[2]) for m in counts)}"
        else:
            out[key] = " | ".join("-" if v is None else str(v) for v in values) + f" (per {label})"
    return out


#: what a judgments record counts over the run's own questions: a slice's share, added up on merging
_OF_QUESTIONS = ("used", "unkeyed", "reworded")


def _of_file(judgments: Mapping[str, Any]) -> dict[str, Any]:
    """What a run's judgments record says of the file and the judge, not of the run's own
    questions (``_OF_QUESTIONS``), which every slice of one run shares."""
    return {k: v for k, v in judgments.items() if k not in _OF_QUESTIONS}


def _run_records(runs: Sequence[tuple[str, RunResults]]) -> dict[str, Any]:
    """What the jobs' runs record beside their evaluations, which must agree: their settings
    (failures put together), metric definitions, coverage, judgments file and candidates."""
    if not runs:
        return {}
    (first_name, first), failures = runs[0], list(runs[0][1].settings.get("failures", []))
    settings = dict(first.settings)
    for name, run in runs[1:]:
        mine = dict(run.settings)
        differ = sorted(k for k in {*settings, *mine} if k != "failures" and settings.get(k) != mine.get(k))
        if differ:
            raise RetrievalEvalError(f"its settings differ from {first_name}'s in {', '.join(differ)}: the jobs must "
                                     "run with the same rules and options", path=name, field="settings")
        failures += [f for f in mine.get("failures", []) if f not in failures]
    for name, run in runs[1:]:
        for key, mine, theirs in (("metrics", first.metrics_fingerprint, run.metrics_fingerprint),
                                  ("coverage", first.coverage, run.coverage),
                                  ("judgments", _of_file(first.judgments), _of_file(run.judgments)),
                                  ("candidates", first.candidates, run.candidates)):
            if mine != theirs:
                keys = (f" in {', '.join(k for k in dict.fromkeys([*mine, *theirs]) if mine.get(k) != theirs.get(k))}"
                        if isinstance(mine, dict) and isinstance(theirs, dict) else "")
                raise RetrievalEvalError(f"its {key} differ from {first_name}'s{keys}: the jobs ran with different "
                                         "settings or inputs", path=name, field=key)
    return {"metrics_fingerprint": first.metrics_fingerprint, "settings": {**settings, "failures": failures},
            "judgments": dict(first.judgments), "candidates": first.candidates, "coverage": first.coverage,
            "fingerprints": dict(first.fingerprints)}


def _judgments(judgments: dict[str, Any], runs: Sequence[RunResults],
               evaluations: Sequence[Evaluation]) -> dict[str, Any]:
    """The judged holes of every slice's questions, counted as attaching them to the whole set does."""
    if not judgments:
        return judgments
    judgments["used"] = len({(q, d) for e in evaluations for q, docs in e.judged.items() for d in docs})
    judgments["unkeyed"] = sum(int(run.judgments.get("unkeyed", 0)) for run in runs)
    judgments["reworded"] = [list(p) for p in sorted({tuple(p) for run in runs for p in run.judgments.get("reworded", [])})]
    return judgments
