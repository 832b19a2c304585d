"""``subset``: the questions of saved runs that best separate their engines, as a named subset.
"""

from __future__ import annotations

from pathlib import Path


def main(args) -> int:
    """``subset RESULTS... --size=N --name=NAME``: write the sharpest questions (``analysis/subset.py``)."""
    from ..analysis.subset import choose, drops, spreads, write_subset
    from ..archive.saved import load_saved

    saved = [load_saved(p) for p in args.results]
    args.results = " ".join(args.results)  # how a malformed-file message names them
    run, settings = saved[0].run, saved[0].settings
    measure = args.measure or (settings.max_drops[0].measure if settings.max_drops else
                               f"hit@{settings.miss_k or settings.miss_cutoff(settings.columns(run))}")
    runs = [s.run for s in saved]
    ids, spread = choose(runs, measure, args.size)
    by_engine = drops(runs, measure, ids, settings.alpha)
    labeled = run.evaluations[0].labeled
    path = Path(args.dir) / f"{args.name}.json"
    write_subset(path, name=args.name, ids=ids, measure=measure, labeled=labeled, sources=args.results.split(),
                 spread=spread, alpha=settings.alpha, by_engine=by_engine)
    print(f"{path}: {len(ids)} of {len(labeled)} questions of {labeled.name}, by the spread of {measure} across "
          f"{sum(len(r.evaluations) for r in runs)} evaluations ({spread} of them separate some)")
    shared = len(spreads(runs, measure)[0])
    if shared < len(labeled):  # never silently: a question one run lacks, or read otherwise, separates nothing
        print(f"note: {len(labeled) - shared} question(s) of {labeled.name} not chosen from: missing from a run given, "
              "or read, labeled or quoted otherwise in one")
    print(f"smallest drop of {measure} detectable (80% power, alpha {settings.alpha:g}), subset against the full set:")
    for engine, d in by_engine.items():
        print(f"  {engine}: {d['subset']:.3f} with {len(ids)} questions, {d['full']:.3f} with {len(labeled)}")
    print(f"select it in a run with --retrieval-subset={args.name}")
    return 0

