"""The drill-down page (``--retrieval-html PATH``): one self-contained HTML file, no network
needed to open it, rendered with Jinja2 with autoescaping on, so questions, document text and
ids are shown as text and can never inject markup or script."""

from __future__ import annotations

import importlib.resources
import math
from typing import TYPE_CHECKING, Any, Iterable

from ..data.grades import is_judged_relevant
from . import ceiling, cost, errors, plot, shadow, sweep, table, turns, turns_given
from .judged import candidate_lines, judged_lines
from . import labeled_set
from .misses import coverage_lines, miss_lines
from .terminal import baseline_lines

if TYPE_CHECKING:  # the gate's verdict, read here; imported only by type checkers
    from ..gate.verdict import Verdict

#: the ranked documents each row shows at least (the run's miss cutoff, when deeper, shows all of its);
#: a miss is the analysis's, at the run's cutoff (``Analysis.miss_k``), as the gate and the terminal count it
MISS_AT = 10
SNIPPET = 140
SNIPPETS_PER_QUERY = 3


def snippets(evaluations: Iterable[Any], corpus: Any) -> dict[str, str]:
    """The text the page shows for each document in the top 3 of a query, taken from the corpus
    when the run ends and kept in results.json, so a saved run renders the same page."""
    out: dict[str, str] = {}
    for e in evaluations:
        for r in e.results:
            for doc_id in r.doc_ids[:SNIPPETS_PER_QUERY]:
                doc = corpus.get(doc_id) if doc_id not in out else None
                if doc is not None:
                    text = " ".join((doc.title + ". " + doc.content).split()) if doc.title else " ".join(doc.content.split())
                    out[doc_id] = text if len(text) <= SNIPPET else text[: SNIPPET - 1] + "…"
    return dict(sorted(out.items()))


def _movement(rank: int | None, before: int | None, k: int) -> str | None:
    """How a question moved against the baseline at the run's miss cutoff ``k``."""
    hit, was = rank is not None and rank <= k, before is not None and before <= k
    if hit and not was:
        return "new hit"
    if was and not hit:
        return "new miss"
    if hit and was and rank != before:
        return "up" if rank < before else "down"
    return None


def _ranks(stage: Any, q: Any) -> str:
    """Where a stage put the question's relevant documents: ``4`` (one), ``2, -`` (two, one absent)."""
    ranks = [str(stage.ranks[d]) if d in stage.ranks else "-" for d in q.gold]
    return f"{', '.join(ranks) or '-'} of {stage.size}"


def in_conversations(rows: list[dict[str, Any]], by_id: Any) -> list[dict[str, Any]]:
    """The rows with each conversation's turns together, in turn order, where its first turn
    stood; the first turn of each carries ``conv_start`` (its count of turns shown), and each turn
    ``before``: the messages since the previous turn shown (the assistant's reply, a turn that
    searches nothing), as ``(role, text)``. Single questions stay as they are."""
    groups: dict[str, list[dict[str, Any]]] = {}
    for row in rows:
        groups.setdefault(by_id[row["id"]].cluster, []).append(row)
    out = []
    for turns in groups.values():
        turns.sort(key=lambda row: by_id[row["id"]].turn)
        said: tuple = ()
        for i, row in enumerate(turns):
            q = by_id[row["id"]]
            if q.conversation is None:
                out.append(row)
                continue
            kept = len(said) if q.history[:len(said)] == said else 0  # a turn left out (stale, a slice): all again
            row.update(conversation=q.conversation, turn=q.turn, conv_start=len(turns) if i == 0 else 0,
                       before=[(t.role, t.text) for t in q.history[kept:]])
            said = q.turns
            out.append(row)
    return out


def said_once(engines: list[dict[str, Any]]) -> list[tuple[tuple[str, str], ...]]:
    """Each history the engines' rows show (``before``), once: a row keeps its index into the list
    (``said``) and the page copies the history into the row when it opens. Four engines on 377
    turns of long conversations otherwise write every history four times (much of an 8 MB page)."""
    out: list[tuple[tuple[str, str], ...]] = []
    index: dict[tuple[tuple[str, str], ...], int] = {}
    for engine in engines:
        for row in engine["rows"]:
            before = tuple(row.pop("before", ()))
            if before:
                if before not in index:
                    index[before] = len(out)
                    out.append(before)
                row["said"] = index[before]
    return out


def compared(verdict: Verdict, baseline: Any) -> Any:
    """The baseline the verdict compared the run with, or None: a refused comparison compared
    nothing, so no section of the page (curve, movements, filter) may show one."""
    comparison = verdict.baseline
    return baseline if comparison is not None and not comparison.refused else None


def against_baseline(verdict: Verdict) -> dict[str, Any] | None:
    """The page's "Against the baseline" section as the verdict judged it: refused with the
    reasons, or what moved (None without a baseline)."""
    comparison = verdict.baseline
    if comparison is None:
        return None
    notes = [f"note: {n}" for n in comparison.notes]
    if comparison.refused:
        return {"state": "refused", "about": "nothing was compared: the runs did not measure the same thing",
                "lines": [*comparison.refusals, "re-save the baseline, or compare anyway with "
                                                "--retrieval-baseline-force", *notes]}
    return {"state": "", "about": f"p corrected: {table.CORRECTION_NAMES[comparison.correction]} over "
                                  f"{len(comparison.diffs)} comparisons",
            "lines": [line.strip() for line in baseline_lines(verdict)[1:]]}


def render(verdict: Verdict, *, baseline: Any = None, subtitle: str = "", trend: str | None = None) -> str:
    from jinja2 import Environment

    names, beaten = table.letters(verdict), table.wins(verdict)
    columns = table.with_value(verdict, verdict.measures)  # a measure no engine has a value of: no column
    summary = []
    for e in verdict.run.evaluations:
        row = next(r for r in verdict.rows if (r.engine, r.labeled) == e.key)
        cells = []
        for m in columns:
            lo, hi = verdict.interval(e.key, m)
            cells.append({"value": table.fmt(row.values[m]), "wins": table.superscript(beaten.get((e.key, m), "")),
                          "ci": "" if math.isnan(lo) or row.values[m] is None else f"[{lo:.3f}, {hi:.3f}]"})
        summary.append({"engine": e.engine, "letter": table.superscript(names.get(e.key, "")), "labeled": e.labeled.name,
                        "cells": cells, "n": row.n, "errored": row.errors})

    baseline = compared(verdict, baseline)
    engines, by_query, text = [], {}, verdict.run.snippets
    k, shown = verdict.miss_k, max(MISS_AT, verdict.miss_k)
    for r in verdict.run.evaluations:
        base = baseline.get(r.engine, r.labeled.name) if baseline is not None else None
        base_ranks = base.first_relevant_rank if base is not None else {}
        by_id = r.labeled.by_id()
        causes = verdict.causes(r.key)  # the misses at the run's cutoff, as the terminal and the gate count them
        rows = []
        for res in r.results:
            q = by_id[res.query_id]
            rank = r.gold_rank(q, res)
            known = base is not None and q.query_id in base_ranks
            before = base_ranks.get(q.query_id) if known else None
            moved = _movement(rank, before, k) if known else None
            stale = r.freshness.stale if r.freshness is not None else {}
            judged = r.judged.get(q.query_id, {})
            ranked = [{"doc": d, "gold": q.relevant.get(d, 0) >= 1, "stale": stale.get(d, ""),
                       "snippet": text.get(d, "") if i < SNIPPETS_PER_QUERY else "",
                       "judged": judged.get(d), "judged_relevant": is_judged_relevant(judged.get(d, 0))}
                      for i, d in enumerate(res.doc_ids[:shown])]
            row = {"id": q.query_id, "question": q.question, "rewrite": res.rewrite or "", "told": q.rewrite or "",
                   "gold": sorted(q.relevant.items(), key=lambda kv: -kv[1]),
                   "ranked": ranked, "rank": rank, "error": res.error, "miss": q.query_id in causes,
                   "stale": any(x["stale"] for x in ranked),
                   "moved": moved, "base_rank": before, "tags": " ".join(q.tags),
                   "why": causes[q.query_id].text if q.query_id in causes else "",
                   "stages": [f"{st.name} {_ranks(st, q)}" for st in res.stages],
                   "search": " ".join([q.question, *([res.rewrite] if res.rewrite else []), q.query_id,
                                       *q.relevant, *res.doc_ids[:shown]]).lower()}
            rows.append(row)
            by_query.setdefault((r.labeled.name, q.query_id), {"id": q.query_id, "question": q.question, "cells": [],
                                                               "search": row["search"], "miss": False, "error": False,
                                                               "moved": False, "tags": row["tags"]})["cells"].append(row)
        if r.labeled.has_conversations:
            rows = in_conversations(rows, by_id)
        groups: dict[str, list] = {}
        for qid, c in causes.items():
            groups.setdefault(c.group, []).append({"id": qid, "name": by_id[qid].name, "why": c.text})
        engines.append({"name": r.engine, "labeled": r.labeled.name, "info": sorted(r.engine_info.items()),
                        "causes": sorted(groups.items(), key=lambda g: -len(g[1])),
                        "rows": rows, "misses": sum(x["miss"] for x in rows), "errors": sum(bool(x["error"]) for x in rows),
                        "stale": sum(x["stale"] for x in rows),
                        "as_of": r.freshness.as_of if r.freshness is not None else None})
    template = importlib.resources.files(__package__).joinpath("page.html.j2").read_text(encoding="utf-8")
    env = Environment(autoescape=True, keep_trailing_newline=True)
    return env.from_string(template).render(
        subtitle=subtitle, measures=columns, judge=verdict.analysis.judge, said=said_once(engines),
        judged_lines=[line.strip() for line in judged_lines(verdict, width=10 ** 6) + candidate_lines(verdict.run)],
        miss_k=verdict.miss_k, miss_lines=[line[2:] for line in miss_lines(verdict, markdown=True)],
        coverage=[line[2:] for line in (*coverage_lines(verdict, markdown=True),
                                         *labeled_set.subset_lines(verdict, markdown=True),
                                         *labeled_set.lines(verdict, markdown=True))],
        ceilings=ceiling.page(verdict), ceiling_about=ceiling.ABOUT,
        cost=cost.rows(verdict),
        sweeps=[{"title": sweep.title(t), "cells": sweep.cells(t), "latency": sweep.scatter_svg(t, "latency"),
                 "size": sweep.scatter_svg(t, "size"),
                 "tokens": sweep.scatter_svg(t, "tokens") if t.handed else ""} for t in verdict.sweeps],
        segments=[{"tag": row.tag, "labeled": row.labeled, "n": row.n, "few": row.few,
                   "cells": [{"engine": e, "value": table.fmt(v[0]), "ci": f"[{v[1]:.3f}, {v[2]:.3f}]",
                              "beats": ", ".join(row.wins.get(e, ())), "drop": "n/a" if math.isnan(v[3]) else f"{v[3]:.3f}"}
                             for e, v in row.values.items()]} for row in verdict.segments],
        segment_measure=verdict.segments[0].measure if verdict.segments else "",
        by_turn=turns.page_rows(verdict),
        tags=sorted({t for e in verdict.run.evaluations for q in e.labeled.queries for t in q.tags}),
        summary=summary, legend=" ".join([*table.legend(verdict, markdown=True), *table.handed_line(verdict),
                                          *table.no_value_lines(verdict)[1:]]),
        turns_given=turns_given.line(verdict.run, None),
        miss_at=shown, svg=plot.run_svg(verdict.analysis, baseline is not None), engines=engines, trend=trend,
        compare=[q for q in by_query.values() if len(q["cells"]) == len(engines)] if len(engines) > 1 else [],
        lint=[{"summary": l.summary(), "findings": [str(f) for f in l.findings]} for l in verdict.lint],
        engine_errors=[g.describe() for g in errors.groups(verdict.run.evaluations)],
        against=against_baseline(verdict), has_baseline=baseline is not None, **_verdict_box(verdict),
        no_moves="no baseline given" if verdict.baseline is None else "the baseline was refused: nothing was compared",
        correction=verdict.correction_text(), p_columns=table.p_columns(verdict),
        effects=[{"a": c.a, "b": c.b, "labeled": c.labeled, "measure": c.measure, "delta": table.signed(c.delta),
                  "ci": f"[{table.signed(c.ci[0])}, {table.signed(c.ci[1])}]", "p": f"{c.p:.3g}",
                  "p_adjusted": f"{table.shown_p(c):.3g}"} for c in verdict.comparisons],
        shadows=[{"headline": shadow.headline(sh), "queries": shadow.queries_text(sh),
                  "deltas": [{"measure": d.measure, "candidate": f"{d.candidate:.4f}", "baseline": f"{d.baseline:.4f}",
                              "delta": table.signed(d.delta), "ci": shadow.interval_text(d.ci), "p": f"{d.p:.3g}"}
                             for d in sh.deltas],
                  "movers": shadow.movers(sh),
                  "documents": [*shadow.documents(sh), *filter(None, [shadow.skipped_text(sh)])]}
                 for sh in verdict.shadows],
        detectable=[f"{d.engine} on {d.labeled}: {d.measure} {d.drop:.3f} at 80% power, {table.alpha_shared(verdict)} "
                    f"({d.n} queries)" for d in verdict.detectable] + [f"warning: {w}" for w in verdict.warnings],
    )


def _verdict_box(verdict: Verdict) -> dict[str, Any]:
    """The page's verdict box: its class (fail, inconclusive where ``--retrieval-inconclusive=warn``
    lets a run with inconclusive rules pass, else pass), heading, note and each failure with its
    state's label (``FAIL``, ``INCONCLUSIVE``)."""
    headline = verdict.headline()
    if verdict.failed:
        klass, head, note = "fail", "FAIL: " + headline.removeprefix("FAILED, "), ""
    elif verdict.inconclusive and verdict.settings.inconclusive == "warn":
        klass, head, note = "inconclusive", "INCONCLUSIVE: " + headline.removeprefix("INCONCLUSIVE, "), ""
    else:
        klass, head, note = "pass", "PASS", headline if verdict.failures else ""
    return {"verdict_class": klass, "verdict_head": head, "verdict_note": note,
            "failures": [{"label": f.label, "text": str(f)} for f in verdict.failures]}
