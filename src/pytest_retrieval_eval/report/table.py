"""The summary table, for the terminal (fits 80 columns with the default measures) and for
Markdown: one row per evaluation, its 95% interval (Wilson for hit@k, bootstrap for graded
measures), and ranx-style superscripts that mark which engines it beats significantly."""

from __future__ import annotations

import math
import textwrap
from typing import TYPE_CHECKING, Any, Iterable, Sequence

from ..ir.stats import CORRECTION_NAMES  # noqa: F401  (read by the other renderers as table.CORRECTION_NAMES)

if TYPE_CHECKING:  # the gate's verdict, read here; imported only by type checkers
    from ..gate.verdict import Verdict

SUPERSCRIPTS = dict(zip("abcdefghijklmnoprstuvwxyz", "ᵃᵇᶜᵈᵉᶠᵍʰⁱʲᵏˡᵐⁿᵒᵖʳˢᵗᵘᵛʷˣʸᶻ"))


def resampled(verdict: Verdict) -> str:
    """What the intervals and paired tests resample: queries, or for turns of conversations,
    the conversations (``ir.stats``: their turns are not independent)."""
    return "conversations" if verdict.analysis.turns else "queries"


def paired_over(verdict: Verdict) -> str:
    """How a paired difference is taken: ``queries, 95% bootstrap interval``, or over turns with
    the interval resampling conversations."""
    if verdict.analysis.turns:
        return "turns, 95% bootstrap interval over conversations"
    return "queries, 95% bootstrap interval"


#: the cell of a measure an engine has no value of (``Row.values``: None), where others have one
NO_VALUE = "—"
#: why a measure has no value, by its kind (said once: ``no_value_line``, ``no_value_cells``)
NO_VALUE_WHY = {"evidence": "document ids returned, no passages", "ppi": "no question judged by people to its cutoff",
                "judged": "no judgments read", "freshness": "no versioned documents"}


def fmt(value: float | None) -> str:
    return NO_VALUE if value is None or math.isnan(value) else f"{value:.3f}"


def with_value(verdict: Verdict, measures: Sequence[str]) -> list[str]:
    """The measures of ``measures`` some engine has a value of: the columns shown (one no engine
    has a value of is left out, and said once: ``no_value_line``)."""
    return [m for m in measures if any(r.values.get(m) is not None for r in verdict.rows)]


def no_value_line(verdict: Verdict) -> str | None:
    """The table's columns left out for having no value in any engine, and why, in one line."""
    shown = set(with_value(verdict, verdict.measures))
    missing = [m for m in verdict.measures if m not in shown]
    if not missing or not verdict.rows:
        return None
    return f"no value in any engine: {', '.join(missing)}" + _why_none(missing)


def no_value_cells(verdict: Verdict, measures: Sequence[str], *, valued: bool = False) -> str | None:
    """What a ``NO_VALUE`` cell among ``measures`` means, per engine that shows one, in one line;
    ``valued``: the table leaves out a row without any value (``_grid``)."""
    said = [f"{r.engine}{_why_none(missing)}" for r in verdict.rows
            if (missing := [m for m in measures if r.values.get(m) is None])
            and not (valued and len(missing) == len(measures))]
    return f"{NO_VALUE} no value: {', '.join(dict.fromkeys(said))}" if said else None


def _why_none(measures: Sequence[str]) -> str:
    """`` (document ids returned, no passages)``: why ``measures`` have no value, by their kinds."""
    from ..ir.measures import Measure

    kinds = dict.fromkeys(next((k for k in NO_VALUE_WHY if getattr(Measure.parse(m), k)), "") for m in measures)
    why = "; ".join(NO_VALUE_WHY[k] for k in kinds if k)
    return f" ({why})" if why else ""


def letters(verdict: Verdict) -> dict[tuple[str, str], str]:
    """A letter per engine within each labeled set (a, b, ...), when there is something to compare
    (not on a set no difference can be significant on: ``Analysis.powerless``)."""
    out: dict[tuple[str, str], str] = {}
    by_set: dict[str, list] = {}
    cannot = {x.labeled for x in verdict.analysis.powerless}
    for e in verdict.run.evaluations:
        if e.labeled.name not in cannot:
            by_set.setdefault(e.labeled.name, []).append(e.key)
    for keys in by_set.values():
        if len(keys) > 1:
            out.update((k, "abcdefghijklmnoprstuvwxyz"[i % 25]) for i, k in enumerate(keys))
    return out


def wins(verdict: Verdict) -> dict[tuple[tuple[str, str], str], str]:
    """(engine key, measure) -> letters of the engines it beats significantly (p corrected for
    every comparison of the table below alpha: ``Comparison.significant``, the analysis's)."""
    names = letters(verdict)
    out: dict[tuple[tuple[str, str], str], str] = {}
    for c in verdict.comparisons:
        if not c.significant or c.delta == 0 or math.isnan(c.delta):
            continue
        winner, loser = ((c.a, c.b) if c.delta > 0 else (c.b, c.a))
        key = ((winner, c.labeled), c.measure)
        out[key] = "".join(sorted(out.get(key, "") + names[(loser, c.labeled)]))
    return out


def shown_p(c: Any) -> float:
    """The p a comparison is judged by: the corrected one, where there is one."""
    return c.p if math.isnan(c.p_adjusted) else c.p_adjusted


def signed(x: float | None) -> str:
    """A difference as the reports print it: signed, three decimals; no difference, ``NO_VALUE``."""
    return NO_VALUE if x is None or math.isnan(x) else f"{x:+.3f}"


def p_columns(verdict: Verdict) -> bool:
    """Whether the differences show p and the significance mark: not where every comparison is
    on a labeled set no difference can be significant on (``Analysis.powerless``)."""
    cannot = {x.labeled for x in verdict.analysis.powerless}
    return any(c.labeled not in cannot for c in verdict.comparisons)


def effect_lines(verdict: Verdict, *, markdown: bool = False) -> list[str]:
    """Per engine pair, each measure's paired mean difference with its 95% bootstrap interval and
    corrected p: how big a difference is, not only whether it is one. Compact in the terminal
    (one wrapped paragraph per pair), a table in Markdown. No p (nor mark) where no comparison
    can be significant (``p_columns``)."""
    if not verdict.comparisons:
        return []
    with_p = p_columns(verdict)
    if markdown:
        out = (["| a − b | labeled set | measure | difference | 95% CI | p | corrected p |", "|---|---|---|---|---|---|---|"]
               if with_p else ["| a − b | labeled set | measure | difference | 95% CI |", "|---|---|---|---|---|"])
        out += [f"| {c.a} − {c.b} | {c.labeled} | {c.measure} | {signed(c.delta)} | [{signed(c.ci[0])}, "
                f"{signed(c.ci[1])}] |" + (f" {c.p:.3g} | {shown_p(c):.3g} |" if with_p else "")
                for c in verdict.comparisons]
        return out
    pairs: dict[tuple[str, str, str], list[str]] = {}
    for c in verdict.comparisons:
        mark = "*" if c.significant else ""
        pairs.setdefault((c.a, c.b, c.labeled), []).append(
            f"{c.measure} {signed(c.delta)}{mark} [{signed(c.ci[0])}, {signed(c.ci[1])}]")
    lines = ["differences (paired mean, 95% CI; * significant after correction):" if with_p
             else "differences (paired mean, 95% CI):"]
    for (a, b, _), cells in pairs.items():
        lines += textwrap.wrap(f"{a} − {b}: " + ", ".join(cells), width=80, initial_indent="  ",
                               subsequent_indent="    ", break_on_hyphens=False)
    return lines


def alpha_shared(verdict: Verdict) -> str:
    """The alpha a detectable drop is stated at: the run's, shared by the comparisons with the
    baseline the gate corrects a drop over where it does (``analysis.power.family_alpha``)."""
    most = max((d.comparisons for d in verdict.detectable), default=1)
    return f"alpha {verdict.alpha:g}" + (f" shared by {most} comparisons" if most > 1 else "")


def detectable_lines(verdict: Verdict) -> list[str]:
    """Per gated measure, the drop each engine's labeled set can detect (80% power, the run's
    alpha), then any max-drop rule that asks for less."""
    if not verdict.detectable:
        return []
    text = (f"detectable drop (80% power, {alpha_shared(verdict)}, normal approximation): "
            + ", ".join(str(d) for d in verdict.detectable))
    lines = textwrap.wrap(text, width=80, subsequent_indent="  ", break_on_hyphens=False)
    return lines + [f"warning: {w}" for w in verdict.warnings]


def superscript(text: str) -> str:
    """Letters as superscripts (the significance markers)."""
    return "".join(SUPERSCRIPTS.get(ch, ch) for ch in text)


def legend(verdict: Verdict, *, markdown: bool = False) -> list[str]:
    """What the superscripts mean, then, once per labeled set too small for a paired test to reach
    alpha, that no difference can be significant on it (``Analysis.powerless``): every renderer
    prints it here, in place of marks, p columns and detectable drops that cannot move."""
    names = letters(verdict)
    sets = {e.labeled.name for e in verdict.run.evaluations}
    texts = [str(x) + (f" (labeled set {x.labeled})" if len(sets) > 1 else "") for x in verdict.analysis.powerless]
    if names:
        engines = ", ".join(f"{superscript(l)} {e}" for (e, _), l in sorted(names.items(), key=lambda kv: kv[1]))
        texts.insert(0, f"{engines}: a superscript marks a significant win over that engine (paired randomization "
                        f"test over {resampled(verdict)}, p < {verdict.alpha:g}, {verdict.correction_text()})")
    if markdown:
        return texts
    return [line for text in texts for line in textwrap.wrap(text, width=80, break_on_hyphens=False)]


def short(measure: str) -> str:
    """A column header: freshness measures without their family prefix, judged and evidence twins
    without their suffix (their table says so; a ``~ppi`` estimate keeps its own), so that each table fits."""
    for suffix in ("+judged", "+evidence"):
        if measure.endswith(suffix):
            measure = measure[: -len(suffix)]
    return measure.split(".", 1)[1] if measure.startswith("freshness.") else measure


def freshness_lines(verdict: Verdict, *, markdown: bool = False, limit: int = 3) -> list[str]:
    """Under the table, per engine and freshness column: how many queries got a stale document
    (or two versions of one) in the top k and which, then why each document shown is stale
    (the analysis's ``FreshnessFinding``)."""
    findings = verdict.analysis.freshness
    if not findings:
        return []
    entries, why = [], {}
    for f in findings:
        what = (f"{len(f.found)} of {f.n} queries with a stale document in the top {f.k}" if f.stale_free
                else f"{len(f.found)} of {f.n} queries with two versions of one document in the top {f.k}")
        if f.found:
            shown = f.found[:limit]
            if f.stale_free:
                why.update((d, f.stale[d]) for _, docs in shown for d in docs)
            more = f"; ... {len(f.found) - limit} more" if len(f.found) > limit else ""
            listed = "; ".join(f"{q}: {', '.join(v)}" for q, v in shown)
            entries.append(f"{f.engine}: {what} ({listed}{more})")
    entries = entries or ["no stale document and no two versions of one in any top k"]
    entries += [f"{d} is stale: {reason}" for d, reason in sorted(why.items())]
    day = ", ".join(sorted({f.as_of for f in findings}))
    if markdown:
        return [f"Freshness as of {day}:", ""] + [f"- {t}" for t in entries]
    lines = [f"freshness as of {day}:"]
    for text in entries:
        lines += textwrap.wrap(text, width=80, initial_indent="  ", subsequent_indent="    ", break_on_hyphens=False)
    return lines


def render(verdict: Verdict, *, ci: bool = True, detail: bool = True) -> list[str]:
    """Terminal lines. Under each row, ``±`` is the larger side of the 95% interval; then the
    legend, the freshness columns in a table of their own, and the judged twins (``hit@5+judged``)
    in a table of their own too, so the main table keeps its width. ``detail`` adds the queries
    behind the freshness columns, the engines' differences (not with ``ci=False``, the quiet form)
    and what the labeled set can detect; the terminal leaves them to ``-v``."""
    from ..ir.measures import Measure

    shown = with_value(verdict, verdict.measures)  # a column no engine has a value of: left out, said once
    relevance = [m for m in shown if not m.startswith("freshness.")]
    judged = [m for m in relevance if Measure.parse(m).judge_dependent]  # +judged and ~ppi twins
    evidence = [m for m in relevance if Measure.parse(m).evidence]  # +evidence twins
    relevance = [m for m in relevance if m not in judged and m not in evidence]
    fresh = [m for m in shown if m.startswith("freshness.")]
    lines = _grid(verdict, relevance, "engine", ci=ci) + legend(verdict)
    if evidence:  # an engine without a value of any twin (ids only): no row, said by evidence_lines
        lines += _grid(verdict, evidence, EVIDENCE_HEADER, ci=ci, valued=True) + evidence_lines(verdict)
    elif any(Measure.parse(m).evidence for m in verdict.measures):  # no twin has a value: which questions had ids
        lines += evidence_lines(verdict, mixed_only=True)
    if judged:
        # ~ppi estimates beside +judged values: each column says which it is (they rest on other questions)
        lines += _grid(verdict, judged, JUDGED_HEADER, ci=ci, suffixes=any(Measure.parse(m).ppi for m in judged),
                       valued=True)
    if fresh:
        lines += _grid(verdict, fresh, "freshness", ci=False) + (freshness_lines(verdict)[1:] if detail else [])
    said = [no_value_cells(verdict, relevance), no_value_cells(verdict, evidence, valued=True),
            no_value_cells(verdict, judged, valued=True), no_value_cells(verdict, fresh), no_value_line(verdict)]
    for text in dict.fromkeys(x for x in said if x):
        lines += textwrap.wrap(text, width=80, subsequent_indent="  ", break_on_hyphens=False)
    return lines + (effect_lines(verdict) if ci and detail else []) + (detectable_lines(verdict) if detail else [])


#: the first header of the table of judged twins: the same measures, the holes filled by the judge
JUDGED_HEADER = "with the judgments"
#: the first header of the table of evidence-level twins: ranks are passages, one counts when it
#: carries the label's evidence
EVIDENCE_HEADER = "passages with the evidence"


def handed_line(verdict: Verdict) -> list[str]:
    """What each engine returning passages hands a generator, beside its quality: whole documents
    win recall and cost tokens. Said with the evidence-level twins, which it qualifies."""
    from ..ir.measures import Measure

    found = verdict.analysis.handed
    if not found or not any(Measure.parse(m).evidence for m in verdict.measures):
        return []
    several = len({h.labeled for h in found}) > 1
    ks = sorted({h.k for h in found})
    each = ", ".join(f"{h.engine}{f' ({h.labeled})' if several else ''} {h.tokens:.0f}" for h in found)
    return [f"handed to a generator, word tokens of the top {'/'.join(map(str, ks))} passages (mean per question): "
            f"{each}"]


def evidence_lines(verdict: Verdict, *, mixed_only: bool = False) -> list[str]:
    """Said once, under the evidence-level table: what each engine returning passages hands a
    generator, and the engines for which that level is unavailable: those that return ids only,
    and those that answered some questions with ids (named). ``mixed_only``: the latter alone
    (no twin has a value: ``no_value_line`` says the rest)."""
    handed = [] if mixed_only else [w for line in handed_line(verdict)
                                    for w in textwrap.wrap(line, width=80, subsequent_indent="  ",
                                                           break_on_hyphens=False)]
    ids_only = [e.engine for e in verdict.run.evaluations if not e.returns_passages and not e.ids_answered
                and not mixed_only]
    some = [e for e in verdict.run.evaluations if e.ids_answered]  # ids for some questions: why, per engine
    if not ids_only and not some:
        return handed
    said = [f"evidence level unavailable for {e.engine}: it {e.evidence_unavailable()}" for e in some]
    if ids_only:
        said.append(f"evidence level unavailable for {', '.join(dict.fromkeys(ids_only))}: "
                    f"{'it returns' if len(set(ids_only)) == 1 else 'they return'} document ids, not passages")
    said[-1] += " (return pytest_retrieval_eval.Passage(doc_id, text) to score passages)"
    return handed + [w for line in said
                     for w in textwrap.wrap(line, width=80, subsequent_indent="  ", break_on_hyphens=False)]


def _grid(verdict: Verdict, measures: Sequence[str], first: str, *, ci: bool, suffixes: bool = False,
          valued: bool = False) -> list[str]:
    """One table of ``measures``; ``valued``: without the rows of engines that have no value of
    any of them (a table of twins: its caller says why)."""
    names, beaten = letters(verdict), wins(verdict)
    several_sets = len({e.labeled.name for e in verdict.run.evaluations}) > 1
    if first == "freshness":
        days = sorted({e.freshness.as_of for e in verdict.run.evaluations if e.freshness is not None})
        first = f"freshness as of {', '.join(days)}" if days else first
    header = [first] + (["labeled set"] if several_sets else []) + [m if suffixes else short(m) for m in measures] \
        + ["n", "errored"]
    lines: list[list[str]] = [header]
    rows = {(r.engine, r.labeled): r for r in verdict.rows}
    for e in verdict.run.evaluations:
        r = rows[e.key]
        if valued and all(r.values[m] is None for m in measures):
            continue
        label = e.engine + (" " + superscript(names[e.key]) if e.key in names else "")
        cells = [label] + ([e.labeled.name] if several_sets else [])
        cells += [fmt(r.values[m]) + superscript(beaten.get((e.key, m), "")) for m in measures]
        lines.append(cells + [str(r.n), str(r.errors)])
        if ci and r.n:
            spread = []
            for m in measures:
                lo, hi = verdict.interval(e.key, m)
                half = math.nan if r.values[m] is None else max(r.values[m] - lo, hi - r.values[m])
                spread.append("" if math.isnan(half) else "±" + f"{half:.3f}".lstrip("0"))
            lines.append(["  95% CI"] + ([""] if several_sets else []) + spread + ["", ""])
    n_text = 2 if several_sets else 1
    widths = [max(len(row[i]) for row in lines) for i in range(len(header))]

    def line(cells: Sequence[str]) -> str:
        parts = [c.ljust(w) if i < n_text else c.rjust(w) for i, (c, w) in enumerate(zip(cells, widths))]
        return "  ".join(parts).rstrip()

    return [line(cells) for cells in lines]


def markdown(verdict: Verdict) -> list[str]:
    """A Markdown table with the interval spelled out: ``0.984ᵇ [0.952, 1.000]``, then its legend,
    the freshness lines, the differences between engines and what the labeled set can detect."""
    out = markdown_rows(verdict) + no_value_lines(verdict)
    out += [""] + legend(verdict)
    handed = handed_line(verdict)
    out += ["", *handed] if handed else []
    fresh = freshness_lines(verdict, markdown=True)
    if fresh:
        out += [""] + fresh
    effects = effect_lines(verdict, markdown=True)
    if effects:
        corrected = f"; p corrected by {verdict.correction_text()}" if p_columns(verdict) else ""
        out += ["", f"Differences between engines (paired mean over {paired_over(verdict)}{corrected}):", ""] + effects
    if verdict.detectable:
        out += ["", f"Detectable drop (80% power, {alpha_shared(verdict)}, normal approximation from the "
                "per-query spread):", ""]
        out += [f"- {d.engine} on {d.labeled}: {d.measure} {d.drop:.3f} ({d.n} queries)" for d in verdict.detectable]
        out += [f"- warning: {w}" for w in verdict.warnings]
    return out


def no_value_lines(verdict: Verdict) -> list[str]:
    """Under the Markdown table: what its ``NO_VALUE`` cells mean, and the columns left out."""
    said = [x for x in (no_value_cells(verdict, with_value(verdict, verdict.measures)), no_value_line(verdict)) if x]
    return ["", *(f"{x[0].upper()}{x[1:]}." for x in said)] if said else []


def markdown_rows(verdict: Verdict) -> list[str]:
    """The table alone (the pull-request comment folds the parts of ``markdown`` one by one)."""
    names, beaten = letters(verdict), wins(verdict)
    shown = with_value(verdict, verdict.measures)  # a measure no engine has a value of: no column
    header = ["engine", "labeled set", *shown, "n", "errored"]
    out = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    rows = {(r.engine, r.labeled): r for r in verdict.rows}
    for e in verdict.run.evaluations:
        r = rows[e.key]
        cells = [e.engine + (" " + superscript(names[e.key]) if e.key in names else ""), e.labeled.name]
        for m in shown:
            lo, hi = verdict.interval(e.key, m)
            interval = "" if math.isnan(lo) or r.values[m] is None else f" [{lo:.3f}, {hi:.3f}]"
            cells.append(fmt(r.values[m]) + superscript(beaten.get((e.key, m), "")) + interval)
        out.append("| " + " | ".join(cells + [str(r.n), str(r.errors)]) + " |")
    return out


def describe_engines(evaluations: Iterable[Any], width: int = 80) -> list[str]:
    """One wrapped paragraph per engine: the configuration that produced its row."""
    seen: dict[str, dict] = {}
    for e in evaluations:
        seen.setdefault(e.engine, dict(e.engine_info))
    lines = []
    for name in sorted(seen):
        info = ", ".join(f"{k}={v}" for k, v in sorted(seen[name].items()) if k != "engine")  # as results.json keeps it
        lines += textwrap.wrap(info, width=width, initial_indent=f"{name}: ", subsequent_indent="    ",
                               break_on_hyphens=False, break_long_words=False) or [f"{name}:"]
    return lines
