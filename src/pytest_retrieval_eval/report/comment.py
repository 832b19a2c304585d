"""One pull-request comment (``python -m pytest_retrieval_eval report comment results.json``),
read in a glance: the verdict and every failure with its cause in its first ``LEAD`` lines (a
long list cut there with "... and N more", given whole at the end), then each table folded in a
``<details>`` whose summary says what it holds: the scores, what moved against the baseline (the
measures that did not move only counted), the differences between engines (engines equal on
every question only counted), why the engines missed, the segments, the cost, what the labeled
set can detect. Its first line is a hidden marker, so a workflow finds the comment it posted
before and updates it in place instead of adding another.

GitHub refuses a comment body over 65,536 characters (500 tags made one of 83,084), so a longer
one is cut to ``LIMIT``: the verdict and the failures are kept, the folded sections are kept
whole while they fit and the first that does not is cut at a line (its ``<details>`` closed), and
a paragraph says so and where the full report is. The step summary (results.md, which GitHub
drops past 1024k) leads with the same verdict and is cut the same way (``step_summary``)."""

from __future__ import annotations

import html
from typing import TYPE_CHECKING, Any, NamedTuple, Sequence

from . import cost, labeled_set, table, turns
from .judged import ppi_lines
from .misses import miss_lines, segment_lines

if TYPE_CHECKING:  # the gate's verdict, read here; imported only by type checkers
    from ..gate.verdict import Failure, Verdict

MARKER = "<!-- pytest-retrieval-eval -->"
#: per-query movers the comment lists (results.md has them all)
MOVERS = 5
#: the comment's first lines that hold the verdict and the failures (a reader sees them unscrolled)
LEAD = 10
#: the most characters of one failure in those lines (the full one is in the list at the end)
FAILURE_CHARS = 1_000
#: GitHub's limit on a comment's body
GITHUB_LIMIT = 65_536
#: the most a comment holds, in UTF-8 bytes (so in characters too, however GitHub counts them),
#: with room to spare under GitHub's limit
LIMIT = 65_000
#: where the full report is, when the caller cannot name the file
FULL_REPORT = "results.md in the report folder (--retrieval-report-dir=DIR), or the workflow's artefact"


class Section(NamedTuple):
    """Lines that are kept or cut together; ``close``: what ends them however they are cut."""

    lines: list[str]
    close: list[str]


def verdict_lines(verdict: Verdict, *, room: int) -> tuple[list[str], bool]:
    """The verdict, then every failure with its cause, in at most ``room`` lines; and whether the
    failures had to be shortened there (then the caller lists them whole further down). Too many
    for a line each, the failures of one engine share a line, each said without its provenance
    (``- FAIL dense: hit@5 = 0.58, required >= 0.8; mrr dropped 0.1 ...``); too many engines even
    so, the list is cut with "... and N more"."""
    failures = verdict.failures
    if not failures:
        return ([("**PASS**: the retrieval gate passed" if verdict.settings.thresholds or verdict.baseline is not None
                  else "No gate rule is set; the numbers:")], False)
    head = _head(verdict)
    named = [(_failure(f, f.label), 1) for f in failures]
    if len(named) > room - 2:
        named = _by_engine(failures)
    lines = [line for line, _ in named]
    cut = len(failures) > room - 2 or any(line != f"- {f.label} {f}" for line, f in zip(lines, failures))
    if len(lines) > room - 2:
        shown = room - 3
        left = sum(n for _, n in named[shown:])
        lines = lines[:shown] + [f"- ... and {left} more failures (every one under \"Gate\" below)"]
    return [head, "", *lines], cut


def _head(verdict: Verdict) -> str:
    """The verdict's first line: FAIL with the failures counted (and the inconclusive rules);
    INCONCLUSIVE where only rules straddling their line remain and ``--retrieval-inconclusive=warn``
    lets the run pass; PASS, naming them, under ``=pass``."""
    n, m = len(verdict.failing), len(verdict.inconclusive)
    rules = f"{m} rule{'s' * (m != 1)} inconclusive, --retrieval-inconclusive={verdict.settings.inconclusive}"
    if n:
        return f"**FAIL**: the retrieval gate failed ({n} failure{'s' * (n != 1)}{f', {m} inconclusive' if m else ''}):"
    return {"fail": f"**FAIL**: the retrieval gate failed ({rules}):",
            "warn": f"**INCONCLUSIVE**: the retrieval gate passed with a warning ({rules}):",
            "pass": f"**PASS**: the retrieval gate passed ({rules}, noted):"}[verdict.settings.inconclusive]


def _by_engine(failures: Sequence[Failure]) -> list[tuple[str, int]]:
    """(a lead line, the failures it names): the failures about one engine on one line, where the
    first of them stood (those inconclusive on a line of their own); the others a line each."""
    groups: list[list[Failure]] = []
    at: dict[tuple[str, str], int] = {}
    for f in failures:
        if f.engine and f.brief:
            if (f.engine, f.state) in at:
                groups[at[(f.engine, f.state)]].append(f)
                continue
            at[(f.engine, f.state)] = len(groups)
        groups.append([f])
    return [(_failure(g[0], g[0].label) if len(g) == 1 else
             _failure(f"{g[0].engine}: " + "; ".join(f.brief for f in g), g[0].label), len(g)) for g in groups]


def _failure(text: str, label: str = "FAIL") -> str:
    """One failure as one line, led by its state's label (``FAIL``, ``INCONCLUSIVE``), shortened
    past ``FAILURE_CHARS`` (whole under "Gate" then)."""
    line = _one_line(text)
    return f"- {label} {line if len(line) <= FAILURE_CHARS else line[:FAILURE_CHARS - 1] + '…'}"


def _one_line(text: str) -> str:
    return " ".join(str(text).splitlines())


def comment(verdict: Verdict, *, full_report: str | None = None, limit: int = LIMIT) -> str:
    """The comment, at most ``limit`` UTF-8 bytes; ``full_report``: where the whole report is
    (the path of results.md, or a command that prints it), named where the comment is cut."""
    top = [MARKER, "## Retrieval evaluation", ""]
    lead, cut = verdict_lines(verdict, room=LEAD - len(top))
    top += lead
    sections = [s for s in (_scores(verdict), _baseline(verdict), _differences(verdict), _misses(verdict),
                            _turns(verdict), _segments(verdict), _cost(verdict), _detectable(verdict))
                if s is not None]
    gate = ["", "### Gate", "", *(f"- {f.label} {_one_line(f)}" for f in verdict.failures)] if cut else []
    return _fit(top, sections, gate, full_report or FULL_REPORT, limit, f"GitHub's limit of {GITHUB_LIMIT:,} characters")


def _folded(summary: str, lines: Sequence[str]) -> Section | None:
    """``lines`` in a ``<details>`` (GitHub renders a table in it only past a blank line)."""
    if not lines:
        return None
    return Section(["", f"<details><summary>{html.escape(summary, quote=False)}</summary>", "", *lines], ["", "</details>"])


def _names(names: Sequence[str], most: int = 6) -> str:
    names = list(dict.fromkeys(names))
    return ", ".join(names[:most]) + (f" and {len(names) - most} more" if len(names) > most else "")


def _scores(verdict: Verdict) -> Section | None:
    evaluations = verdict.run.evaluations
    sets = _names([e.labeled.name for e in evaluations])
    questions = _names([str(e.n) for e in evaluations])
    lines = table.markdown_rows(verdict) + table.no_value_lines(verdict)  # what has no value, said once
    legend = table.legend(verdict, markdown=True)
    lines += ["", *legend] if legend else []
    fresh = table.freshness_lines(verdict, markdown=True)
    lines += ["", *fresh] if fresh else []
    estimates = ppi_lines(verdict)  # what the ~ppi columns rest on
    lines += ["", *(f"- {x}" for x in estimates)] if estimates else []
    return _folded(f"Scores: {_names([e.engine for e in evaluations])} on {sets} ({questions} questions; "
                   f"{', '.join(table.with_value(verdict, verdict.measures))}; 95% intervals)", lines)


def _baseline(verdict: Verdict) -> Section | None:
    """Against the baseline: the measures that moved, the rest counted; refused, said as refused."""
    b = verdict.baseline
    if b is None:
        return None
    notes = [f"- note: {n}" for n in b.notes] + [f"- warning: {w}" for w in b.warnings]
    if b.refused:
        return _folded("Against the baseline: refused, nothing compared",
                       [f"- refused: {r}" for r in b.refusals] + notes)
    if not b.diffs:
        return _folded("Against the baseline: nothing compared", notes or ["- no evaluation of this run is in it"])
    moved = [d for d in b.diffs if d.moved]
    still = [d for d in b.diffs if not d.moved]
    summary = (f"Against the baseline: {len(moved)} of {len(b.diffs)} measures moved" if moved
               else f"Against the baseline: no measure moved ({len(b.diffs)} compared)")
    lines = [f"Paired tests corrected by {table.CORRECTION_NAMES[b.correction]} over {len(b.diffs)} comparisons; "
             "95% CI: bootstrap interval of the paired difference."]
    if moved:
        lines += ["", "| engine | measure | baseline | now | delta | 95% CI | up | down | same | p | corrected p |",
                  "|---|---|---|---|---|---|---|---|---|---|---|"]
        lines += [f"| {d.engine} | {d.measure} | {d.before:.4f} | {d.after:.4f} | {d.delta:+.4f} | "
                  f"[{d.ci[0]:+.3f}, {d.ci[1]:+.3f}] | {d.wins} | {d.losses} | {d.ties} | {d.p:.3g} | "
                  f"{d.p_adjusted:.3g} |" for d in moved]
    if still:
        lines += ["", f"{len(still)} measure{'s' * (len(still) != 1)} unchanged (the same on every question): "
                  + _unchanged(still, b.diffs) + "."]
    movers = [(d, m) for d in moved for m in d.movers][:MOVERS]
    if movers:
        lines += ["", "Biggest per-query movers:", ""]
        lines += [f"- {d.engine} {d.measure} {m.query_id}: {m.before:g} -> {m.after:g} ({m.question})" for d, m in movers]
    fell = b.regressed_segments(verdict.alpha)
    if fell:
        lines += ["", f"Segments that fell (p corrected over {len(b.segments)} segment comparisons; the total held, "
                  "or beyond noise):", ""]
        lines += [f"- {d.describe(verdict.alpha)}" for d in fell]
    lines += ["", *notes] if notes else []
    return _folded(summary, lines)


def _unchanged(still: Sequence[Any], diffs: Sequence[Any]) -> str:
    """``bm25 (all 6), hybrid (hit@1, mrr)``: the unchanged measures per engine, short."""
    per: dict[str, list[str]] = {}
    for d in still:
        per.setdefault(d.engine, []).append(d.measure)
    total = {e: sum(d.engine == e for d in diffs) for e in per}
    return "; ".join(f"{e} (all {len(ms)})" if len(ms) == total[e] > 1 else f"{e} ({', '.join(ms)})"
                     for e, ms in per.items())


def _differences(verdict: Verdict) -> Section | None:
    """Engine against engine, per measure; pairs equal on every question only counted."""
    comparisons = verdict.comparisons
    if not comparisons:
        return None
    differ = [c for c in comparisons if c.paired.wins or c.paired.losses]
    with_p = table.p_columns(verdict)  # none where no difference can be significant (the legend says why)
    lines = [f"Paired mean over {table.paired_over(verdict)}"
             + (f"; p corrected by {verdict.correction_text()}." if with_p else ".")]
    if differ:
        lines += ["", "| a − b | labeled set | measure | difference | 95% CI | p | corrected p |" if with_p
                  else "| a − b | labeled set | measure | difference | 95% CI |",
                  "|---|---|---|---|---|---|---|" if with_p else "|---|---|---|---|---|"]
        lines += [f"| {c.a} − {c.b} | {c.labeled} | {c.measure} | {table.signed(c.delta)} | [{table.signed(c.ci[0])}, "
                  f"{table.signed(c.ci[1])}] |" + (f" {c.p:.3g} | {table.shown_p(c):.3g} |" if with_p else "")
                  for c in differ]
    same = len(comparisons) - len(differ)
    if same:
        lines += ["", f"{same} comparison{'s' * (same != 1)} equal on every question (not shown)."]
    summary = (f"Differences between engines: {len(differ)} of {len(comparisons)} comparisons differ" if differ else
               f"Differences between engines: none ({len(comparisons)} comparisons, equal on every question)")
    return _folded(summary, lines)


def _misses(verdict: Verdict) -> Section | None:
    return _folded(f"Why it missed (at hit@{verdict.miss_k})", miss_lines(verdict, markdown=True))


def _turns(verdict: Verdict) -> Section | None:
    return _folded(f"By turn: {verdict.miss_measure} by turn position and the drop from first turns to follow-ups",
                   turns.comment_lines(verdict))


def _segments(verdict: Verdict) -> Section | None:
    tags = list(dict.fromkeys(r.tag for r in verdict.segments))
    return _folded(f"Segments: {len(tags)} rows", segment_lines(verdict, markdown=True))


def _cost(verdict: Verdict) -> Section | None:
    return _folded("Cost: latency, calls, tokens, dollars", cost.markdown(verdict))


def _detectable(verdict: Verdict) -> Section | None:
    lines = [f"- {d.engine} on {d.labeled}: {d.measure} {d.drop:.3f} ({d.n} queries)" for d in verdict.detectable]
    lines = ([f"Detectable drop (80% power, {table.alpha_shared(verdict)}, normal approximation from the per-query "
              "spread):", "", *lines] if lines else [])
    lines += [f"- warning: {w}" for w in verdict.warnings]
    lines += labeled_set.subset_lines(verdict, markdown=True)  # a pull request's subset: what it costs
    warned = f" and {len(verdict.warnings)} warning{'s' * (len(verdict.warnings) != 1)}" if verdict.warnings else ""
    return _folded(f"Detectable drops{warned}", lines)


#: GitHub's limit on a step's summary (``$GITHUB_STEP_SUMMARY``), in bytes: past it the summary is dropped
STEP_SUMMARY_LIMIT = 1024 * 1024


def step_summary(text: str, *, already: int = 0, full_report: str | None = None) -> str:
    """``text`` (results.md) for the step summary, cut to fit GitHub's limit with what the file
    holds ``already`` (other steps' summaries), with the same pointer as a cut comment."""
    room = max(STEP_SUMMARY_LIMIT - 1024 - already, 1024)  # a little room to spare
    if len(text.encode("utf-8")) <= room:
        return text
    lines = text.rstrip("\n").split("\n")
    return _fit([], [Section(lines, [])], [], full_report or FULL_REPORT, room,
                f"GitHub's limit of {STEP_SUMMARY_LIMIT // 1024:,}k for a step summary")


def _size(lines: Sequence[str]) -> int:
    return sum(len(line.encode("utf-8")) + 1 for line in lines)


def _lead(lines: Sequence[str], room: int) -> list[str]:
    """The first lines of ``lines`` that fit in ``room`` bytes."""
    out, used = [], 0
    for line in lines:
        used += len(line.encode("utf-8")) + 1
        if used > room:
            break
        out.append(line)
    return out


def _fit(top: list[str], sections: Sequence[Section], gate: list[str], full_report: str, limit: int,
         limit_said: str) -> str:
    """``top``, ``sections`` and ``gate`` as one text of at most ``limit`` bytes: whole if they fit;
    else the sections kept whole while they fit and the first that does not cut at a line (its
    ``close`` kept, so a ``<details>`` never swallows what follows), and past half of what is left
    the gate's failures cut too, each cut said in a paragraph of its own (never a row of a table)."""
    whole = top + [line for s in sections for line in s.lines + s.close] + gate
    if _size(whole) <= limit:
        return "\n".join(whole) + "\n"
    cut = ["", f"*Cut here to stay under {limit_said}; the full report: {full_report}.*", ""]
    room = limit - _size(top) - _size(cut)
    kept_gate = gate
    if _size(gate) > room // 2:  # so many failures: the first of them, and how many more

        def more(n: int) -> str:
            return f"- ... and {n} more failures, cut here (the full report: {full_report})"

        kept_gate = _lead(gate, room // 2 - _size([more(len(gate))]))
        kept_gate.append(more(len(gate) - len(kept_gate)))
    left, kept = room - _size(kept_gate), []
    for s in sections:
        if _size(s.lines + s.close) <= left:
            kept += s.lines + s.close
            left -= _size(s.lines + s.close)
            continue
        lead = _lead(s.lines, left - _size(s.close))
        kept += lead + s.close if lead else []
        break
    return "\n".join(top + kept + cut + kept_gate) + "\n"  # the cut paragraph, a blank line after it
