"""The report folder (``--retrieval-report-dir``):

- ``results.md``: the comparison table with intervals and significance, run metadata, baseline;
- ``results.json``: machine-readable, versioned, every per-query value (``results.RunResults``);
- ``per_query.jsonl``: engine, query, question, gold, ranked ids, rank of gold, error;
- ``runs/<engine>.trec`` and ``qrels.txt``: re-score with trec_eval, ranx or ir_measures;
- ``hit_at_k.svg``: the Hit@k curve per engine (baseline dashed);
- ``timing.json``: wall times and the date, kept apart so the files above are byte-identical
  for identical inputs.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import TYPE_CHECKING, Any, Mapping

from .._atomic import write_text_atomic
from .._plain import strict_json
from ..archive.saved import results_json as results_text
from ..types import sha256_text
from . import ceiling, cost, plot, shadow, sweep, table, turns, turns_given, unanswerable
from .errors import error_lines
from .judged import candidate_lines, judged_lines, stale_lines
from . import labeled_set
from .misses import coverage_lines, miss_lines, segment_lines, why_of

if TYPE_CHECKING:  # the gate's verdict, read here; imported only by type checkers
    from ..gate.verdict import Verdict


def safe_name(name: str) -> str:
    """A file name for an engine or labeled-set name; names that need changing get a hash of the
    name appended, so two names never share a file (``a b`` and ``a_b`` would)."""
    if re.fullmatch(r"[A-Za-z0-9._-]+", name) and name not in (".", ".."):
        return name
    return (re.sub(r"[^A-Za-z0-9._-]+", "_", name).strip(".") or "_") + "-" + sha256_text(name)[:8]


def per_query_lines(verdict: Verdict) -> str:
    """One line per engine and question; ``why``: the cause of its miss at the verdict's cutoff
    (``miss_k``), null for a hit."""
    lines = []
    for r in verdict.run.evaluations:
        by_id = r.labeled.by_id()
        why = why_of(verdict, r)
        for res in r.results:
            q = by_id[res.query_id]
            lines.append(strict_json({
                "engine": r.engine, "labeled": r.labeled.name, "query_id": q.query_id, "question": q.question,
                "gold": dict(q.relevant), "ranked": list(res.doc_ids), "rank_of_gold": r.gold_rank(q, res),
                "error": res.error, "tags": list(q.tags), "why": why.get(q.query_id),
                "stages": {s.name: s.ranks for s in res.stages} if res.stages else None,
            }, sort_keys=True, ensure_ascii=False))
    return "\n".join(lines) + ("\n" if lines else "")


def markdown(verdict: Verdict, metadata: Mapping[str, Any]) -> str:
    """results.md: the verdict and every failure first (as the PR comment leads), then the table
    and the detail; the whole list of failures under "Gate" where the lead had to cut it."""
    from .comment import LEAD, verdict_lines

    lead, _ = verdict_lines(verdict, room=LEAD - 2)
    out = ["# Retrieval evaluation", "", *lead, ""]
    out += table.markdown(verdict)
    out += ["", "95% intervals in brackets (Wilson for hit@k and the rates, a bootstrap over queries for graded measures)."
            if not verdict.analysis.turns else "95% intervals in brackets, over conversations (their turns are not "
            "independent): Wilson over their number for hit@k and the rates, a bootstrap drawing whole "
            "conversations for graded measures."]
    given = turns_given.line(verdict.run, None)
    out += ["", given] if given else []
    judged = [*stale_lines(verdict), *judged_lines(verdict, markdown=True),
              *(f"- {line.strip()}" for line in candidate_lines(verdict.run))]
    out += ["", *judged] if judged else []
    why = [*miss_lines(verdict, markdown=True), *coverage_lines(verdict, markdown=True)]
    out += ["", *why] if why else []
    out += ceiling.markdown(verdict)
    out += turns.markdown(verdict)
    out += unanswerable.markdown(verdict)
    chosen = labeled_set.subset_lines(verdict, markdown=True) + labeled_set.lines(verdict, markdown=True)
    out += ["", "## Labeled set", "", *chosen] if chosen else []
    segments = segment_lines(verdict, markdown=True)
    out += ["", "## Segments", "", *segments] if segments else []
    costs = cost.markdown(verdict)
    out += ["", "## Cost", "", *costs] if costs else []
    sweeps = sweep.markdown(verdict)
    out += ["", "## Sweeps", "", *sweeps] if sweeps else []
    out += _misses_table(verdict)
    errors = error_lines(verdict, markdown=True)
    out += ["", *errors] if errors else []
    out += ["", "## Run", ""]
    out += [f"- {k}: {v}" for k, v in metadata.items()]
    for e in verdict.run.evaluations:
        out += ["", f"### {e.engine} on {e.labeled.name}", "",
                f"- corpus: {e.corpus} (fingerprint {str(e.corpus_fingerprint)[:16]})",
                f"- labeled set: {e.labeled.name} (fingerprint {e.labeled.fingerprint[:16]}), {e.n} queries, "
                f"{e.n_errored} errored"]
        if e.freshness is not None:
            out.append(f"- freshness as of {e.freshness.as_of}: {len(e.freshness.stale)} stale of "
                       f"{len({*e.freshness.versions, *e.freshness.stale})} versioned documents")
        out += [f"- {k}: {v}" for k, v in sorted(e.engine_info.items()) if k != "engine"]
    out += baseline_section(verdict)
    out += shadow.markdown_lines(verdict)
    lints = [(e.engine, k, v) for e in verdict.run.evaluations for k, v in e.run_lint.items() if v]
    if lints:
        out += ["", "## Run lint", "", "| engine | kind | queries | first |", "|---|---|---|---|"]
        out += [f"| {engine} | {k} | {len(v)} | {', '.join(v[:5])} |" for engine, k, v in lints]
    if verdict.failures:
        out += ["", "## Gate", ""] + [f"- {f.label} {f}" for f in verdict.failures]
    return "\n".join(out) + "\n"


def baseline_section(verdict: Verdict, *, movers: int | None = None) -> list[str]:
    """The run against its baseline, in Markdown: every diff with its interval and corrected p,
    the queries that moved (the first ``movers``), the segments that fell, the notes."""
    if verdict.baseline is None:
        return []
    if verdict.baseline.refused:
        return ["", "## Against the baseline", "", "Refused: nothing was compared (the runs did not measure the same "
                "thing); re-save the baseline, or compare anyway with `--retrieval-baseline-force`.", "",
                *[f"- refused: {r}" for r in verdict.baseline.refusals],
                *[f"- note: {n}" for n in verdict.baseline.notes]]
    out = ["", "## Against the baseline", "",
           f"Paired tests corrected by {table.CORRECTION_NAMES[verdict.baseline.correction]} over "
           f"{len(verdict.baseline.diffs)} comparisons; 95% CI: bootstrap interval of the paired difference.", "",
           "| engine | measure | baseline | now | delta | 95% CI | up | down | same | p | corrected p |",
           "|---|---|---|---|---|---|---|---|---|---|---|"]
    for d in verdict.baseline.diffs:
        out.append(f"| {d.engine} | {d.measure} | {d.before:.4f} | {d.after:.4f} | {d.delta:+.4f} | "
                   f"[{d.ci[0]:+.3f}, {d.ci[1]:+.3f}] | {d.wins} | {d.losses} | {d.ties} | {d.p:.3g} | "
                   f"{d.p_adjusted:.3g} |")
    moved = [(d, m) for d in verdict.baseline.diffs if d.moved for m in d.movers][:movers]
    if moved:
        out += ["", "Biggest per-query movers:", ""]
        out += [f"- {d.engine} {d.measure} {m.query_id}: {m.before:g} -> {m.after:g} ({m.question})" for d, m in moved]
    fell = verdict.baseline.regressed_segments(verdict.alpha)
    if fell:
        out += ["", f"Segments that fell (p corrected over {len(verdict.baseline.segments)} segment comparisons; the "
                "total held, or beyond noise):", ""]
        out += [f"- {d.describe(verdict.alpha)}" for d in fell]
    out += [f"- note: {n}" for n in verdict.baseline.notes]
    return out


def _misses_table(verdict: Verdict) -> list[str]:
    """Every missed question with its cause, per engine (results.md's "why" column)."""
    out = []
    for e in verdict.run.evaluations:
        causes = verdict.causes(e.key)
        if not causes:
            continue
        by_id = e.labeled.by_id()
        out += ["", f"### Misses of {e.engine} at hit@{verdict.miss_k}", "", "| question | tags | why |", "|---|---|---|"]
        out += [f"| {_asked(by_id[q])} | {', '.join(by_id[q].tags)} | {_cell(c.text)} |" for q, c in causes.items()]
    return (["", "## Misses"] + out) if out else []


def _asked(q: Any) -> str:
    """The question with its id, or alone where its id was made from its text."""
    return _cell(q.question) if q.name != q.query_id else f"{_cell(q.query_id)}: {_cell(q.question)}"


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def write_report(folder: str | Path, verdict: Verdict, *, metadata: Mapping[str, Any], baseline: Any = None,
                 timing: Mapping[str, Any] | None = None, results_json: str | None = None) -> Path:
    """Every file of the report folder from the verdict on a run (``timing.json`` only when
    timings are known: a live run has them, a saved ``results.json`` does not); ``results_json``:
    the run's results.json when the caller made it already."""
    folder = Path(folder)
    evaluations = verdict.run.evaluations
    (folder / "runs").mkdir(parents=True, exist_ok=True)
    write_text_atomic(folder / "results.json", results_json if results_json is not None else results_text(verdict))
    write_text_atomic(folder / "results.md", markdown(verdict, metadata))
    write_text_atomic(folder / "per_query.jsonl", per_query_lines(verdict))
    several_sets = len({r.labeled.name for r in evaluations}) > 1
    qrels_written = set()
    for r in evaluations:
        stem = safe_name(r.engine + (f"__{r.labeled.name}" if several_sets else ""))
        r.run.to_trec(folder / "runs" / f"{stem}.trec", tag=safe_name(r.engine))
        qname = f"qrels__{safe_name(r.labeled.name)}.txt" if several_sets else "qrels.txt"
        if qname not in qrels_written:
            r.labeled.qrels.to_trec(folder / qname)
            qrels_written.add(qname)
    write_text_atomic(folder / "hit_at_k.svg", plot.run_svg(verdict.analysis, baseline is not None))
    if timing is not None:
        write_text_atomic(folder / "timing.json", strict_json(timing, indent=1, sort_keys=True) + "\n")
    return folder
