"""An evaluation's JSON form: what xdist workers ship, results.json and baselines hold per
evaluation, and what ``from_dict`` reads back (``Evaluation.to_dict`` / ``from_dict``). The
source of truth per query (id, question, judgements, ranked ids, error, stages, passages, the
rankings of repeated trials) and, in a saved file, the values the analysis derived from it, which
a reading whose measures are defined alike takes as they are (``recorded_values``). The whole
document, and the checks a file must pass, are the archive's (``archive/results_json.py``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping, Sequence

from ..data.freshness import Freshness
from ..data.labeled import LabeledSet
from ..engines.base import DEFAULT_DEPTH
from ..types import LabeledQuery, QueryResult, Stage, Turn
from .known import Evidence
from .lint import KINDS as RUN_LINT_KINDS
from .results import Evaluation


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
    ``derived``, what the analysis made of it, for people and other tools (``archive/saved.py``):
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
                                     **({"depends": q.depends} if q.depends is not None else {}),
                                     **({"rewrite": q.rewrite} if q.rewrite is not None else {})}
        if r.rewrite is not None:  # what the engine searched in place of the turn (a team's rewriter)
            entry["rewrite"] = r.rewrite
        if r.exact is not None:  # --retrieval-exact-check: the exact search's ranking, what the index is measured against
            entry["exact"] = list(r.exact)
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
    if self.unanswerable:  # the unanswerable turns and what came back for them: listed, never scored
        lost = {q.query_id: q for q in self.labeled.unanswerable}
        d["unanswerable"] = [{"id": r.query_id, "question": lost[r.query_id].question,
                              "relevant": dict(lost[r.query_id].relevant), "ranked": list(r.doc_ids), "error": r.error,
                              **({"conversation": {"id": lost[r.query_id].conversation, "turn": lost[r.query_id].turn,
                                                   "history": [t.to_dict() for t in lost[r.query_id].history]}}
                                 if lost[r.query_id].conversation is not None else {})} for r in self.unanswerable]
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
        if "exact" in q and not (isinstance(q["exact"], list) and all(isinstance(r, str) for r in q["exact"])):
            raise ValueError(f"'queries' entry {q['id']!r}: exact must be a list of doc ids")
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
        if not isinstance(q.get("rewrite", ""), str):
            raise ValueError(f"'queries' entry {q['id']!r}: rewrite must be the text the engine searched")
    lost = d.get("unanswerable") or []
    labeled = RecordedLabeledSet(tuple(LabeledQuery(q["id"], q["question"], q["relevant"], tags=tuple(q.get("tags", ())),
                                                    source={"evidence": q["evidence"]} if q.get("evidence") else {},
                                                    **_conversation(q))
                                       for q in queries),
                                 unanswerable=tuple(LabeledQuery(q["id"], q["question"], dict(q.get("relevant") or {}),
                                                                 answerable=False, **_conversation(q)) for q in lost),
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
                                tuple(q.get("passage_tokens", ())), q.get("rewrite"),
                                exact=tuple(q["exact"]) if "exact" in q else None)
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
                            recorded_values=_recorded_values(queries) if recorded else {},
                            unanswerable=tuple(QueryResult(q["id"], tuple(q["ranked"]), q.get("error")) for q in lost))


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
                       for t in history) or c.get("depends", None) not in (None, True, False)
            or not isinstance(c.get("rewrite", ""), str)):
        raise ValueError(f"'queries' entry {q['id']!r}: conversation must hold its id, turn (>= 1), depends "
                         "(true, false or absent), history ([{role: user|assistant, text}]) and rewrite (text or absent)")
    return {"conversation": c["id"], "turn": c["turn"], "history": tuple(Turn(t["role"], t["text"]) for t in history),
            "depends": c.get("depends"), "rewrite": c.get("rewrite")}


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
