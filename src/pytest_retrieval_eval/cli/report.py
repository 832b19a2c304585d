"""``report``: judge a saved results.json again (``report merge``: CI slices combined; ``report
comment``: a pull-request comment), with the pytest gate's exit codes; ``--out`` rebuilds its artefacts.
"""

from __future__ import annotations

import sys
from pathlib import Path

from ..errors import RetrievalEvalError


def main(args) -> int:
    from dataclasses import replace

    from ..archive.saved import load_baseline
    from ..gate.verdict import conclude, for_run
    from ..ir.measures import DEFAULT_TABLE_MEASURES, parse_measures, split_measures
    from ..report.files import markdown
    from ..report.outputs import metadata, write_outputs

    saved = _results_of(args)
    run, settings = saved.run, saved.settings
    if args.judges is not None and args.judgments is None:
        raise RetrievalEvalError("--judges reads a panel of the judges of a judgments file: give --judgments=PATH too")
    if args.judgments is not None:
        run = _judged(run, args.judgments, args.corpus, results=None if getattr(args, "merged", None) else args.results,
                      panel=args.judges)
    baseline_path = args.baseline if args.baseline is not None else settings.baseline
    if args.max_drop and baseline_path is None:
        raise RetrievalEvalError("--max-drop compares with a baseline: give --baseline PATH")
    # judged anew with what the command line changes, everything else (shadows too) as recorded
    given = {key: value for key in ("alpha", "noise_aware", "baseline_force", "correction", "confidence",
                                    "allow_failed_judge", "inconclusive")
             if (value := getattr(args, key)) is not None}
    given.update({key: [(text, f"--{key.replace('_', '-')}") for text in value]
                  for key in ("threshold", "max_drop", "by", "prices") if (value := getattr(args, key)) is not None})
    if given or args.measures is not None or args.baseline is not None or args.judgments is not None:
        columns = split_measures(args.measures) if args.measures else list(settings.table_measures)
        if args.judgments is not None and not args.measures:  # the judged twins are laid out again
            columns = [c for c in columns if not parse_measures([c])[0].judge_dependent]
        settings = for_run(run, replace(settings.with_options(given), baseline=baseline_path),
                           configured=tuple(parse_measures(columns)) if columns else DEFAULT_TABLE_MEASURES)
    baseline, problems = load_baseline(Path(baseline_path)) if baseline_path else (None, [])
    verdict = conclude(run, settings, baseline, failures=saved.failures, problems=problems, recorded=saved.analysis,
                       notes=saved.notes, run_warnings=saved.run_warnings, run_usage=saved.run_usage)
    if args.out or args.html:
        write_outputs(verdict, report_dir=Path(args.out) if args.out else None,
                      html=Path(args.html) if args.html else None, baseline=baseline)
    if getattr(args, "comment", False):
        from ..report.comment import comment

        print(comment(verdict, full_report=_full_report(args)), end="")
    elif args.markdown:
        print(markdown(verdict, metadata(verdict)), end="")
    else:  # the run's own summary, by the run's own writer (detail with -v, as in the run)
        from ..report.terminal import LineWriter, Outcome, write_summary

        write_summary(LineWriter(sys.stdout), Outcome(verdict),
                      report=True, thresholds=len(verdict.settings.thresholds), unavailable={},
                      verbosity=args.verbose)
    if args.markdown and not getattr(args, "comment", False):  # results.md holds no gate lines of its own
        for failure in verdict.failures:
            print(f"{failure.label} retrieval gate: {failure}")
    return 1 if verdict.failed else 0


def _full_report(args) -> str:
    """Where a cut comment points for the whole report: the results.md written now (--out) or
    beside the results.json, else the command that prints it."""
    import shlex

    folder = " (the report folder; in CI, the workflow's artefact)"
    if args.out:
        return str(Path(args.out) / "results.md") + folder
    merged = getattr(args, "merged", None)
    beside = Path(args.results).with_name("results.md") if not merged else None
    if beside is not None and beside.is_file():
        return str(beside) + folder
    files = " ".join(map(shlex.quote, merged or [args.results]))
    return f"python -m pytest_retrieval_eval report {'merge ' if merged else ''}{files} --markdown"


def _results_of(args):
    """``report RESULTS``: the saved run; ``report merge A B ...``: the run its slices make up;
    ``report comment ...``: either, printed as a pull-request comment (``args.comment``)."""
    from ..archive.saved import Saved, load_saved, run_failures
    from ..rules.settings import GateSettings

    if args.results[0] == "comment":
        args.comment = True
        args.results = args.results[1:]
        if not args.results:
            raise RetrievalEvalError("report comment reads the run's results.json: report comment results.json")
        if args.results[0] == "merge":  # report comment merge a.json b.json
            return _results_of(args)
    if args.results[0] != "merge":
        if len(args.results) > 1:
            raise RetrievalEvalError(f"report reads one results.json (got {len(args.results)}); to combine the "
                                     f"slices of CI jobs: python -m pytest_retrieval_eval report merge "
                                     f"{' '.join(args.results)}")
        args.results = args.results[0]
        return load_saved(args.results)
    from ..archive.combine import combine

    paths = args.results[1:]
    if not paths:
        raise RetrievalEvalError("report merge needs the results.json of every slice: report merge a.json b.json ...")
    args.results, args.merged = " ".join(paths), paths  # how a message names them; the files
    run = combine(paths).run
    try:
        settings = GateSettings.from_dict(run.settings) if run.settings else GateSettings()
    except RetrievalEvalError as exc:
        raise RetrievalEvalError(exc.detail, path=paths[0], field=exc.field or "settings") from None
    return Saved(run, settings, failures=run_failures(run))


def _judged(run, judgments: str, corpus: str | None, *, results: str | None = None, panel: str | None = None):
    """A new run with the file's judgments on every evaluation of ``run`` (staleness checked with
    a corpus), by the newest judge or the ``panel`` (``--judges``), and the file's digest."""
    from dataclasses import replace

    from ..data.corpus import open_corpus
    from ..evaluation.judging import with_judgments_file
    from ..plugin.config import panel_of

    judged, found = with_judgments_file(run, Path(judgments), shown_path=str(judgments),
                                        corpus=open_corpus(corpus).load() if corpus else None,
                                        results=results, panel=panel_of(panel), corpus_path=corpus)
    if found is None:
        raise RetrievalEvalError(f"{judgments}: no judgment by an LLM judge in the file (a worksheet's human "
                                 "grades fill no hole; python -m pytest_retrieval_eval judge --help)")
    from ..evaluation.fingerprints import file_digest

    return replace(judged, fingerprints={**judged.fingerprints,  # the file now used
                                         "judgments": {"sha256": file_digest(judgments)}})

