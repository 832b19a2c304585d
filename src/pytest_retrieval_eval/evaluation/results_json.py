"""results.json: the result model's JSON form, and the checks a file must pass before it is read.

``results.json`` (format version 1) is written with sorted keys and without timings, so
identical inputs give byte-identical files (timings go to ``timing.json``). Per evaluation it
holds the source of truth (each query's id, question, judgements, ranked ids and error, and the
rankings of repeated trials) and, for people and other tools, the values derived from it. The
same per-evaluation form travels between xdist workers and makes up a saved baseline.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Mapping, Sequence

from .._plain import loads, strict_json
from .._textfiles import read_text
from ..data.freshness import Freshness
from ..data.labeled import LabeledSet
from ..data.lint import LintReport
from ..engines.base import DEFAULT_DEPTH
from ..errors import RetrievalEvalError
from ..types import LabeledQuery, QueryResult, Stage, Turn
from .known import Evidence
from .fingerprints import checked, with_documents
from .lint import KINDS as RUN_LINT_KINDS
from .results import FORMAT, METRICS_DEFINITION, METRICS_FINGERPRINT, VERSION, Evaluation, RunResults

#: a history record's format (``gate/history.py``): results.json inside, readable as a baseline
HISTORY_FORMAT = "pytest-retrieval-eval/history"


@dataclass(frozen=True)
class RecordedLabeledSet(LabeledSet):
    """A labeled set read back from a file: its identity is the fingerprint recorded with it
    (what was measured), which a check compares with the one its queries give (``computed``)."""

    recorded_fingerprint: str = ""

    @property
    def fingerprint(self) -> str:  # type: ignore[override]
        return self.recorded_fingerprint

    @property
    def computed_fingerprint(self) -> str:
        return LabeledSet(self.queries, name=self.name).fingerprint


def evaluation_to_dict(self: Evaluation, *, timing: bool = False,
                       derived: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """The source of truth; with ``timing``, each call's seconds and how they were measured
    (what xdist ships, and results.json with ``--retrieval-latency``: without it the file holds
    no time, so the same inputs give the same bytes). Calls and tokens are always kept. With
    ``derived``, what the analysis made of it, for people and other tools (``gate/saved.py``):
    its top-level entries, and under ``per_query`` each question's (query id -> entries)."""
    by_id = self.labeled.by_id()
    queries = []
    for r in self.results:
        q = by_id[r.query_id]
        entry: dict[str, Any] = {"id": q.query_id, "question": q.question, "relevant": dict(q.relevant),
                                 "ranked": list(r.doc_ids), "error": r.error}
        if timing:
            entry["seconds"] = r.seconds
            if r.stage_seconds:  # pairs, in the engine's order (the file's keys are sorted)
                entry["stage_seconds"] = [[n, s] for n, s in r.stage_seconds.items()]
        if r.usage:  # model -> [calls, input tokens, output tokens]
            entry["usage"] = {m: list(v) for m, v in sorted(r.usage.items())}
        if q.tags:
            entry["tags"] = list(q.tags)
        if q.conversation is not None:  # a turn: its conversation, position and the messages before it
            entry["conversation"] = {"id": q.conversation, "turn": q.turn, "history": [t.to_dict() for t in q.history],
                                     **({"depends": q.depends} if q.depends is not None else {})}
        if r.stages:  # where each stage put the relevant documents: what a miss's cause reads
            entry["stages"] = [st.to_list() for st in r.stages]
        if q.source.get("evidence"):  # the label's quotes: the twins' columns show where some exist
            entry["evidence"] = {d: list(x) for d, x in sorted(q.source["evidence"].items())}
        if r.passages:  # the passages returned and where each relevant document's evidence first was:
            entry["passages"] = r.passages  # all the evidence-level measures read
            entry["passage_ranks"] = dict(sorted(r.passage_ranks.items()))
            entry["first_passages"] = dict(sorted(r.first_passages.items()))
            if r.passage_tokens:  # what each passage hands a generator: the sweep's cost of quality
                entry["passage_tokens"] = list(r.passage_tokens)
        if self.judged.get(r.query_id):  # the judge's labels of the holes: what +judged measures read
            entry["judged"] = dict(sorted(self.judged[r.query_id].items()))
        if r.query_id in self.human_depth:  # people judged it completely: what ~ppi measures correct with
            entry["human"] = dict(sorted(self.human.get(r.query_id, {}).items()))
            entry["human_depth"] = self.human_depth[r.query_id]
        queries.append(entry)
    d: dict[str, Any] = {
        "engine": self.engine, "engine_info": dict(self.engine_info), "depth": self.depth,
        "labeled": {"name": self.labeled.name, "fingerprint": self.labeled.fingerprint, "n": self.n,
                    "multi_judged": self.labeled.multi_judged},
        "corpus": {"name": self.corpus, "fingerprint": self.corpus_fingerprint},
        "queries": queries,
        "trial_rankings": [[[list(r.doc_ids), r.error] for r in t] for t in self.trial_results],
        "run_lint": {k: list(self.run_lint.get(k, ())) for k in RUN_LINT_KINDS},
    }
    part = self.labeled.provenance.get("slice")
    if part:  # one CI job's slice of the labeled set: report merge puts the slices together
        d["labeled"]["slice"] = dict(part)
    chosen = self.labeled.provenance.get("subset")
    if chosen:  # a pull request's subset (--retrieval-subset): which, of how many, the full set's drops
        d["labeled"]["subset"] = dict(chosen)
    stale = self.labeled.provenance.get("stale_left_out")
    if stale:  # questions left out of the numbers as stale: the `stale` count a rule can gate
        d["labeled"]["stale_left_out"] = {q: list(why) for q, why in stale.items()}
        if self.labeled.provenance.get("stale_names"):
            d["labeled"]["stale_names"] = dict(self.labeled.provenance["stale_names"])
    if self.freshness is not None:
        d["freshness"] = self.freshness.to_dict()
    if self.judge is not None:
        d["judge"] = dict(self.judge)
    if self.evidence is not None:
        d["evidence"] = self.evidence.to_dict()
    if timing and self.measured:
        d["measured"] = dict(self.measured)
    if self.prepare_usage:
        d["prepare_usage"] = {m: list(v) for m, v in sorted(self.prepare_usage.items())}
    if self.trial_usage:
        d["trial_usage"] = {m: list(v) for m, v in sorted(self.trial_usage.items())}
    if derived is not None:
        d.update({k: v for k, v in derived.items() if k != "per_query"})
        for entry in queries:
            entry.update(derived.get("per_query", {}).get(entry["id"], {}))
    return d


def evaluation_from_dict(d: Mapping[str, Any], cls: type[Evaluation] = Evaluation, *,
                         recorded: bool = False) -> Evaluation:
    """The evaluation ``d`` records; with ``recorded`` (the file's measures are defined as this
    version defines them), with the per-question values it holds, which its ``Scores`` then
    reads instead of scoring the rankings again."""
    lab, queries = d["labeled"], d["queries"]
    for q in queries:  # what a hand-edited file could get wrong, said before anything is scored
        if not isinstance(q["id"], str) or not isinstance(q["question"], str):
            raise ValueError(f"'queries' entry {q.get('id')!r}: id and question must be strings")
        if not all(isinstance(g, int) and not isinstance(g, bool) for g in q["relevant"].values()):
            raise ValueError(f"'queries' entry {q['id']!r}: relevance grades must be whole numbers")
        if not isinstance(q["ranked"], list) or not all(isinstance(r, str) for r in q["ranked"]):
            raise ValueError(f"'queries' entry {q['id']!r}: ranked must be a list of doc ids")
        tags = q.get("tags", [])
        if not isinstance(tags, list) or not all(isinstance(t, str) and t for t in tags):
            raise ValueError(f"'queries' entry {q['id']!r}: tags must be a list of names")
        count = q.get("passages", 0)
        for key in ("passage_ranks", "first_passages"):
            ranks = q.get(key, {})
            if not isinstance(count, int) or isinstance(count, bool) or count < 0 or not isinstance(ranks, dict) or not all(
                    isinstance(r, int) and not isinstance(r, bool) and 1 <= r <= count for r in ranks.values()):
                raise ValueError(f"'queries' entry {q['id']!r}: {key} must map doc ids to ranks 1..passages")
        sizes = q.get("passage_tokens", [])
        if not isinstance(sizes, list) or len(sizes) > count or not all(
                isinstance(n, int) and not isinstance(n, bool) and n >= 0 for n in sizes):
            raise ValueError(f"'queries' entry {q['id']!r}: passage_tokens must be a count >= 0 per passage returned")
        ev = q.get("evidence", {})
        if not isinstance(ev, dict) or not all(isinstance(x, list) and all(isinstance(t, str) for t in x)
                                               for x in ev.values()):
            raise ValueError(f"'queries' entry {q['id']!r}: evidence must map doc ids to lists of quotes")
        judged = q.get("judged", {})
        if not isinstance(judged, dict) or not all(g in (0, 1, 2, 3) and not isinstance(g, bool) for g in judged.values()):
            raise ValueError(f"'queries' entry {q['id']!r}: judged must map doc ids to the judge's grades 0-3")
        human, depth = q.get("human", {}), q.get("human_depth", 1)
        if not isinstance(human, dict) or not all(g in (0, 1, 2, 3) and not isinstance(g, bool) for g in human.values()):
            raise ValueError(f"'queries' entry {q['id']!r}: human must map doc ids to a worksheet's grades 0-3")
        if not isinstance(depth, int) or isinstance(depth, bool) or depth < 1:
            raise ValueError(f"'queries' entry {q['id']!r}: human_depth must be a whole number >= 1")
        _conversation(q)
    labeled = RecordedLabeledSet(tuple(LabeledQuery(q["id"], q["question"], q["relevant"], tags=tuple(q.get("tags", ())),
                                                    source={"evidence": q["evidence"]} if q.get("evidence") else {},
                                                    **_conversation(q))
                                       for q in queries),
                                 name=lab["name"], recorded_fingerprint=lab["fingerprint"],
                                 provenance={**({"slice": dict(lab["slice"])} if lab.get("slice") else {}),
                                             **({"subset": dict(lab["subset"])} if lab.get("subset") else {}),
                                             "stale_left_out": dict(lab.get("stale_left_out") or {}),
                                             **({"stale_names": dict(lab["stale_names"])}
                                                if lab.get("stale_names") else {})})
    results = tuple(QueryResult(q["id"], tuple(q["ranked"]), q["error"], q.get("seconds", 0.0),
                                tuple(Stage.from_list(st) for st in q.get("stages", ())),
                                _seconds(q.get("stage_seconds", []), q["id"]), _usage(q.get("usage", {}), q["id"]),
                                q.get("passages", 0), dict(q.get("passage_ranks", {})), dict(q.get("first_passages", {})),
                                tuple(q.get("passage_tokens", ())))
                    for q in queries)
    trials = tuple(tuple(QueryResult(q["id"], tuple(ranked), error) for q, (ranked, error) in zip(queries, t))
                   for t in d.get("trial_rankings", []))
    corpus = d.get("corpus") or {}
    context = {"corpus": corpus.get("name"), "corpus_fingerprint": corpus.get("fingerprint")}
    run_lint = {k: tuple(v) for k, v in (d.get("run_lint") or {}).items() if k in RUN_LINT_KINDS}
    judge = d.get("judge")
    if judge is not None and not (isinstance(judge, dict) and isinstance(judge.get("fingerprint"), str)):
        raise ValueError("'judge' must be an object with the judge's fingerprint")
    return cls(d["engine"], labeled, results, d.get("engine_info", {}), d.get("depth", DEFAULT_DEPTH),
                            {k: v for k, v in context.items() if v is not None}, trials, run_lint,
                            Freshness.from_dict(d.get("freshness")),
                            {q["id"]: dict(q["judged"]) for q in queries if q.get("judged")}, judge,
                            Evidence.from_dict(d.get("evidence")), _measured(d.get("measured") or {}),
                            _usage(d.get("prepare_usage") or {}, None), _usage(d.get("trial_usage") or {}, None),
                            human={q["id"]: dict(q.get("human", {})) for q in queries if "human_depth" in q},
                            human_depth={q["id"]: q["human_depth"] for q in queries if "human_depth" in q},
                            recorded_values=_recorded_values(queries) if recorded else {})


def _recorded_values(queries: Sequence[Mapping[str, Any]]) -> dict[str, dict[str, float]]:
    """Measure -> query id -> the value results.json recorded, for each measure recorded with a
    value for every question (one without a value, null, is left to be scored)."""
    names = set.intersection(*(set(q.get("values") or {}) for q in queries)) if queries else set()
    out = {}
    for m in sorted(names):
        got = [q["values"][m] for q in queries]
        if all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in got):
            out[m] = {q["id"]: float(v) for q, v in zip(queries, got)}
    return out


def _conversation(q: Mapping[str, Any]) -> dict[str, Any]:
    """A turn's ``LabeledQuery`` fields from its entry's ``conversation`` (none for a question)."""
    c = q.get("conversation")
    if c is None:
        return {}
    history = c.get("history", []) if isinstance(c, dict) else None
    if (not isinstance(c, dict) or not isinstance(c.get("id"), str) or not isinstance(c.get("turn"), int)
            or isinstance(c.get("turn"), bool) or c["turn"] < 1 or not isinstance(history, list)
            or not all(isinstance(t, dict) and t.get("role") in ("user", "assistant") and isinstance(t.get("text"), str)
                       for t in history) or c.get("depends", None) not in (None, True, False)):
        raise ValueError(f"'queries' entry {q['id']!r}: conversation must hold its id, turn (>= 1), depends "
                         "(true, false or absent) and history ([{role: user|assistant, text}])")
    return {"conversation": c["id"], "turn": c["turn"], "history": tuple(Turn(t["role"], t["text"]) for t in history),
            "depends": c.get("depends")}


def _seconds(raw: Any, query: str) -> dict[str, float]:
    """[[stage, seconds], ...] in the engine's order."""
    if not isinstance(raw, list) or not all(
            isinstance(p, list) and len(p) == 2 and isinstance(p[0], str) and isinstance(p[1], (int, float))
            and not isinstance(p[1], bool) and p[1] >= 0 for p in raw):
        raise ValueError(f"'queries' entry {query!r}: stage_seconds must be [stage name, seconds >= 0] pairs")
    return {k: float(v) for k, v in raw}


def _usage(raw: Any, query: str | None) -> dict[str, tuple[int, int, int]]:
    """model -> (calls, input tokens, output tokens), checked."""
    whose = f"'queries' entry {query!r}: usage" if query is not None else "'prepare_usage'"
    if not isinstance(raw, dict) or not all(isinstance(v, list) and len(v) == 3 and all(
            isinstance(x, int) and not isinstance(x, bool) and x >= 0 for x in v) for v in raw.values()):
        raise ValueError(f"{whose} must map models to [calls, input tokens, output tokens], whole numbers >= 0")
    return {str(m): (v[0], v[1], v[2]) for m, v in raw.items()}


def _measured(raw: Any) -> dict[str, Any]:
    if not isinstance(raw, dict) or (raw and not (isinstance(raw.get("concurrency"), int) and raw["concurrency"] >= 1)):
        raise ValueError("'measured' must hold the concurrency the calls were timed at (a whole number >= 1)")
    return dict(raw)


def run_document(run: RunResults, *, timing: bool,
                 derived: Callable[[Evaluation], Mapping[str, Any]] | None = None) -> dict[str, Any]:
    """results.json's source of truth, with what the analysis made of each evaluation
    (``derived``: read, never computed, by the writer). The gate adds the settings and the
    analysis (``gate/saved.py``)."""
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
        record, doc = doc, doc["results"]  # a history record (gate/history.py) holds a run's results.json
        if isinstance(record.get("corpora"), dict) and record["corpora"]:  # its corpus digests kept beside it
            doc = {**doc, "fingerprints": with_documents(doc.get("fingerprints"), record["corpora"], Path(path).parent)}
    return doc


def from_document(doc: Any, path: str | Path, *, check_fingerprints: bool = True,
                  cls: type[Evaluation] = Evaluation) -> RunResults:
    """The run a results file's JSON holds (``read_document``), refused in one line when it does
    not hold together; its settings stay as recorded (the gate reads them: ``gate/saved.py``)."""
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
    settings = doc.get("settings", {})  # checked when the gate reads it (gate.saved.load_saved)
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
