"""Putting parts of one evaluation back together: the shares xdist workers evaluated
(``--retrieval-shard``), the evaluations several workers shipped, and the slices CI jobs
evaluated (``--retrieval-slice I/N``, combined by ``python -m pytest_retrieval_eval report
merge``). As ``coverage combine`` does, it refuses what does not fit, naming the files: a slice
missing or given twice, slices of different labeled sets, settings or metric definitions, and
parts not evaluated alike (``misfit``: corpus, engine settings, depth, trials, judge; one check
for slices, shares and workers). The result is the run an unsliced job would have written, so
every artefact and the gate's verdict are the same (timing aside)."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any, Mapping, Sequence

from .._usage import summed
from ..errors import RetrievalEvalError
from .results import EvaluationResult, RunResults

_FRACTION = re.compile(r"^(\d+)/(\d+)$")
#: what an engine's description says its run met on its own questions, not how it was set up:
#: each part's own (counts like ``keyword_empty`` 3/17 are added up, the rest shown per part)
OBSERVED = frozenset({"keyword_empty", "prepare_error", "chunk_ids_folded", "unknown_ids"})
#: what to do about a part that does not fit, by what the parts are
_ADVICE = {"slice": "every CI job must evaluate the same corpus with the same engines and options",
           "share": "every xdist worker must evaluate the same corpus with the same engines and options"}


def whole_of(d: Mapping[str, Any], of: str | None = None) -> str:
    """The fingerprint of the whole labeled set a part (``EvaluationResult.to_dict`` form) is of:
    as its slice or share says, else ``of``, else its own (a whole evaluation)."""
    part = d["labeled"].get("slice") or d.get("share") or {}
    return part.get("of") or of or d["labeled"]["fingerprint"]


def _of(d: Mapping[str, Any], key: str) -> Mapping[str, Any]:
    return d.get(key) or {}


def _said_corpus(d: Mapping[str, Any], of: str | None) -> str:
    c = _of(d, "corpus")
    return f"corpus {c.get('name')} (fingerprint {c['fingerprint'][:12]})" if c.get("fingerprint") else "no corpus"


def _said_freshness(d: Mapping[str, Any], of: str | None) -> str:
    f = _of(d, "freshness")
    return f"as of {f['as_of']} ({len(f.get('stale', {}))} stale documents)" if f else "against no versions"


def _trials(d: Mapping[str, Any], of: str | None) -> int:
    return 1 + len(d.get("trial_rankings") or ())


#: (field, verb, what is compared, how it is said), in the order they are checked
_FIELDS = (
    ("labeled", "is of", lambda d, of: (d["labeled"]["name"], whole_of(d, of)),
     lambda d, of: f"labeled set {d['labeled']['name']} (fingerprint {whole_of(d, of)[:12]})"),
    # the fingerprint is the corpus: its folder may be named otherwise on each machine
    ("corpus", "searched", lambda d, of: _of(d, "corpus").get("fingerprint"), _said_corpus),
    ("depth", "was asked for", lambda d, of: d.get("depth"), lambda d, of: f"{d.get('depth')} results a question"),
    ("trial_rankings", "was run", _trials, lambda d, of: f"{_trials(d, of)} time{'s' * (_trials(d, of) != 1)}"),
    ("judge", "was judged by", lambda d, of: _of(d, "judge").get("fingerprint"),
     lambda d, of: f"judge {_of(d, 'judge')['fingerprint'][:12]}" if d.get("judge") else "no judge"),
    ("freshness", "was judged fresh", lambda d, of: d.get("freshness"), _said_freshness),
)


def misfit(first: Mapping[str, Any], other: Mapping[str, Any], first_name: str,
           of: str | None = None) -> tuple[str, str] | None:
    """(field, what differs) where ``other`` was not evaluated as ``first`` (called ``first_name``)
    was, two parts (``EvaluationResult.to_dict`` forms) of one engine's evaluation: the whole
    labeled set (``of`` where a part does not say), the corpus searched (by fingerprint), the
    depth, the trials, the judge, the freshness, and the engine's description but for what each
    part met (``OBSERVED``, counts); None when they fit. Slices (``merge_slices``), shares
    (``join``) and the evaluations xdist workers ship (``plugin/roles.py``) all pass this one check."""
    engine = other["engine"]
    if engine != first["engine"]:
        return "engine", f"engine {engine}, {first_name}'s engine {first['engine']}"
    for field, verb, value, say in _FIELDS:
        if value(other, of) != value(first, of):
            return field, f"{engine} {verb} {say(other, of)}, {first_name}'s {say(first, of)}"
    a, b = first.get("engine_info") or {}, other.get("engine_info") or {}
    for key in dict.fromkeys([*a, *b]):
        counts = _FRACTION.match(str(a.get(key))) and _FRACTION.match(str(b.get(key)))
        if key in OBSERVED or counts or a.get(key) == b.get(key):
            continue
        said = [f"{key} {d[key]}" if key in d else f"no {key}" for d in (b, a)]
        return f"engine_info.{key}", f"{engine} is described with {said[0]}, {first_name}'s with {said[1]}"
    return None


def check_fit(parts: Sequence[Mapping[str, Any]], names: Sequence[str] | None, label: str,
              of: str | None = None) -> None:
    """Refuse, in one line naming the part (its file, where ``names`` are files) and the field,
    the first part not evaluated as the first one was (``misfit``)."""
    shown = list(names) if names else [f"{label} 1 of {len(parts)}"]
    for i, part in enumerate(parts[1:], start=2):
        found = misfit(parts[0], part, shown[0], of)
        if found:
            field, said = found
            advice = _ADVICE.get(label, "every part must evaluate the same corpus with the same engines and options")
            raise RetrievalEvalError(f"{label} {i} of {len(parts)} of {part['labeled']['name']}: {said}: {advice}",
                                     path=names[i - 1] if names else None, field=field)


def join(parts: Sequence[Mapping[str, Any]], positions: Sequence[Sequence[int]], of: str, *,
         label: str = "part", names: Sequence[str] | None = None) -> EvaluationResult:
    """One evaluation from its parts (``EvaluationResult.to_dict`` forms), each with the position
    of each of its questions in the whole labeled set (fingerprint ``of``): queries, trials and
    run lint back in labeled-set order, the evidence merged, the engine's description the
    parts' (counts like ``66/68`` summed; what each part met shown per ``label``). Parts not
    evaluated alike are refused (``check_fit``), naming the part (by ``names``, its file)."""
    from .causes import Evidence

    check_fit(parts, names, label, of)

    order = sorted((pos, i, j) for i, ps in enumerate(positions) for j, pos in enumerate(ps))
    whole = dict(parts[0])
    whole["queries"] = [parts[i]["queries"][j] for _, i, j in order]
    whole["trial_rankings"] = [[parts[i]["trial_rankings"][t][j] for _, i, j in order]
                               for t in range(len(parts[0].get("trial_rankings", [])))]
    whole["engine_info"] = _info([p.get("engine_info", {}) for p in parts], label)
    ids = [q["id"] for q in whole["queries"]]
    whole["run_lint"] = {k: [q for q in ids if any(q in p.get("run_lint", {}).get(k, ()) for p in parts)]
                         for k in parts[0].get("run_lint", {})}
    labeled = {k: v for k, v in whole["labeled"].items() if k != "slice"}
    whole["labeled"] = {**labeled, "fingerprint": of, "n": len(ids)}
    measured = [p["measured"] for p in parts if p.get("measured")]
    if measured:  # one figure per question, timed in each part: how each part timed them, said once
        whole["measured"] = {**_info(measured, label), "concurrency": measured[0]["concurrency"],
                             "prepare_seconds": sum(m.get("prepare_seconds", 0.0) for m in measured)}
    for key in ("prepare_usage", "trial_usage"):  # each part's engine prepared (and repeated) its own questions
        found = summed(*(p.get(key) or {} for p in parts))
        if found:
            whole[key] = found
    if any("evidence" in p for p in parts):  # each part gathered it on its own questions
        whole["evidence"] = Evidence.merged([Evidence.from_dict(p.get("evidence")) for p in parts]).to_dict()
    result = EvaluationResult.from_dict(whole)
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


def merge_slices(paths: Sequence[str | Path]) -> RunResults:
    """The run the slices in ``paths`` (results.json files of ``--retrieval-slice I/N`` jobs) make
    up together, refused in one line naming the files when they do not fit."""
    from .results_json import load

    if not paths:
        raise RetrievalEvalError("report merge needs the results.json of every slice: report merge a.json b.json ...")
    docs = []
    for path in paths:
        run = load(path)
        docs.append((str(path), run, [e.to_dict() for e in run.evaluations]))
    counts: dict[int, list[str]] = {}
    by_key: dict[tuple[str, str], dict[int, tuple[str, dict]]] = {}
    of: dict[str, tuple[str, str]] = {}
    for path, run, evaluations in docs:
        if not evaluations:
            raise RetrievalEvalError("holds no evaluation", path=path)
        for d in evaluations:
            part = d["labeled"].get("slice")
            if not part:
                raise RetrievalEvalError(f"{d['engine']} on {d['labeled']['name']} is not a slice: run each job "
                                         "with --retrieval-slice I/N", path=path)
            counts.setdefault(part["count"], []).append(path)
            name = d["labeled"]["name"]
            seen = of.setdefault(name, (part["of"], path))
            if seen[0] != part["of"]:
                raise RetrievalEvalError(f"slices of different labeled sets named {name}: {seen[1]} (fingerprint "
                                         f"{seen[0][:12]}) and {path} (fingerprint {part['of'][:12]})")
            slot = by_key.setdefault((d["engine"], name), {})
            if part["index"] in slot:
                raise RetrievalEvalError(f"slice {part['index']} of {part['count']} of {d['engine']} on {name} is in "
                                         f"both {slot[part['index']][0]} and {path}")
            slot[part["index"]] = (path, d)
    if len(counts) > 1:
        shown = "; ".join(f"{n}: {', '.join(dict.fromkeys(p))}" for n, p in sorted(counts.items()))
        raise RetrievalEvalError(f"the files slice the labeled set into different counts ({shown})")
    n = next(iter(counts))
    for (engine, name), slot in sorted(by_key.items()):
        missing = [i for i in range(1, n + 1) if i not in slot]
        if missing:
            given = ", ".join(f"{i} ({slot[i][0]})" for i in sorted(slot))
            raise RetrievalEvalError(f"{engine} on {name}: slice(s) {', '.join(map(str, missing))} of {n} never given "
                                     f"(given: {given}); pass every job's results.json")
    for (engine, name), slot in sorted(by_key.items()):  # what each engine searched and how, before the run's settings
        check_fit([slot[i][1] for i in range(1, n + 1)], [slot[i][0] for i in range(1, n + 1)], "slice")
    settings = _same_settings(docs)
    first = docs[0][1]
    for path, run, _ in docs[1:]:
        for field, mine, theirs in (("metrics", first.metrics_fingerprint, run.metrics_fingerprint),
                                    ("coverage", first.coverage, run.coverage),
                                    ("judgments", _of_file(first.judgments), _of_file(run.judgments)),
                                    ("candidates", first.candidates, run.candidates)):
            if mine != theirs:
                keys = (f" in {', '.join(k for k in dict.fromkeys([*mine, *theirs]) if mine.get(k) != theirs.get(k))}"
                        if isinstance(mine, dict) and isinstance(theirs, dict) else "")
                raise RetrievalEvalError(f"its {field} differ from {docs[0][0]}'s{keys}: the jobs ran with different "
                                         "settings or inputs", path=path, field=field)
    evaluations = [join([slot[i][1] for i in range(1, n + 1)],
                        [slot[i][1]["labeled"]["slice"]["positions"] for i in range(1, n + 1)],
                        of[name][0], label="slice", names=[slot[i][0] for i in range(1, n + 1)])
                   for (engine, name), slot in sorted(by_key.items())]
    judgments = dict(first.judgments)
    if judgments:  # the judged holes of every slice's questions, counted as attaching them to the whole set does
        judgments["used"] = len({(q, d) for e in evaluations for q, docs in e.judged.items() for d in docs})
        judgments["unkeyed"] = sum(int(run.judgments.get("unkeyed", 0)) for _, run, _ in docs)
        judgments["reworded"] = [list(p) for p in sorted({tuple(p) for _, run, _ in docs
                                                          for p in run.judgments.get("reworded", [])})]
    lint = {json.dumps(r.to_dict(), sort_keys=True): r for _, run, _ in docs for r in run.lint}
    snippets = {k: v for _, run, _ in docs for k, v in run.snippets.items()}
    return RunResults(evaluations, first.metrics_fingerprint, list(lint.values()), dict(sorted(snippets.items())),
                      settings, judgments, first.candidates, first.coverage)


#: what a judgments record counts over the run's own questions: a slice's share, added up on merging
_OF_QUESTIONS = ("used", "unkeyed", "reworded")


def _of_file(judgments: Mapping[str, Any]) -> dict[str, Any]:
    """What a run's judgments record says of the file and the judge, not of the run's own
    questions (``_OF_QUESTIONS``), which every slice of one run shares."""
    return {k: v for k, v in judgments.items() if k not in _OF_QUESTIONS}


def _same_settings(docs: Sequence[tuple[str, RunResults, Any]]) -> dict[str, Any]:
    """The slices' recorded settings, which must agree (their failures are put together)."""
    first = dict(docs[0][1].settings)
    failures = list(first.get("failures", []))
    for path, run, _ in docs[1:]:
        mine = dict(run.settings)
        differ = sorted(k for k in {*first, *mine} if k != "failures" and first.get(k) != mine.get(k))
        if differ:
            raise RetrievalEvalError(f"its settings differ from {docs[0][0]}'s in {', '.join(differ)}: the jobs must "
                                     "run with the same rules and options", path=path, field="settings")
        failures += [f for f in mine.get("failures", []) if f not in failures]
    return {**first, "failures": failures}
