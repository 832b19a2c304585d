"""``history``: the runs ``--retrieval-history`` kept, listed, or a measure charted across commits.
"""

from __future__ import annotations

import sys

from ..errors import RetrievalEvalError


def main(args) -> int:
    """``history``: a line per record, each number named by its measure, and under it what it
    measured otherwise than the job's record before (corpus, labeled sets, judgments file);
    ``history trend``: the measure across commits, as SVG. A file of the folder that is not a
    record is skipped, said."""
    from .._atomic import write_text_atomic
    from ..archive.history import History, changes_since
    from ..ir.measures import Measure
    from ..analysis.trend import trend_points
    from ..report.trend import trend_svg

    history = History(args.history)
    records = history.records()
    try:
        if not records:
            raise RetrievalEvalError(f"{args.history}: no history record; keep one per run with "
                                     f"pytest --retrieval-history={args.history}")
        measure = Measure.parse(args.measure).name
        if args.action == "list":
            last: dict = {}  # each job's record before, what a record is said to have changed from
            for r in records:
                git = r.git
                where = (f"{(r.commit or 'no commit')[:10]}{' (dirty)' if git.get('dirty') else ''}"
                         f"{' on ' + git['branch'] if git.get('branch') else ''}")
                engines = ", ".join(f"{e['engine']} {m} {_mean_text(e, m)}" for e in r.results["evaluations"]
                                    for m in [_shown_measure(e, measure)] if m)
                print(f"{r.time}  {where}  {engines}  ({r.path.name})")
                before = last.get(r.job.get("name"))
                for said in changes_since(before, r) if before is not None else []:
                    print(f"  changed since the record before: {said}")
                last[r.job.get("name")] = r
            return 0
        found = trend_points(records, measure, args.engine, history.warnings)
        if not found:
            raise RetrievalEvalError(f"no record holds engine {args.engine!r}" if args.engine
                                     else "no record holds an evaluation")
        write_text_atomic(args.out, trend_svg(found, measure, args.engine))
        series = len({p.series for p in found})
        print(f"{args.out}: {measure} over {len(records)} record(s), {len(found)} point(s) in {series} series")
        return 0
    finally:  # each file of the folder that is not a record (or cannot be read), named once
        for warning in history.warnings:
            print(f"warning: {warning}", file=sys.stderr)


def _mean_text(evaluation: dict, measure: str) -> str:
    mean = (evaluation["summary"][measure] or {}).get("mean")
    return f"{mean:.3f}" if isinstance(mean, (int, float)) else "n/a"


def _shown_measure(evaluation: dict, measure: str) -> str | None:
    """The measure a history line shows: ``measure`` (--measure) where recorded, else the first
    one recorded (the line names it either way)."""
    summary = evaluation.get("summary") or {}
    return measure if measure in summary else next(iter(summary), None)

