"""From a run's results to a verdict: the table's rows, engine comparisons, the baseline diff,
and every reason the gate fails. Shared by the pytest session and ``python -m
pytest_retrieval_eval report``, so both give the same answer and the same exit code."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Sequence

from .baseline import BaselineComparison, compare
from .rules import (Breach, MaxDrop, Row, Threshold, check, check_drops, check_lint, measures_needed,
                    parse_max_drops, parse_thresholds)
from ..ir.measures import DEFAULT_TABLE_MEASURES, Measure
from ..run.results import Comparison, RunResults


def table_measures(run: RunResults, configured: Sequence[Measure]) -> list[str]:
    """The configured columns; by default, nDCG@10 joins them for qrels-style judgements."""
    names = [m.name for m in configured]
    if tuple(configured) == DEFAULT_TABLE_MEASURES and any(e.labeled.multi_judged for e in run.evaluations):
        names.append("ndcg@10")
    return names


@dataclass
class Verdict:
    run: RunResults
    measures: list[str]
    rows: list[Row]
    comparisons: list[Comparison]
    alpha: float
    breaches: list[Breach] = field(default_factory=list)
    baseline: BaselineComparison | None = None
    drop_failures: list[str] = field(default_factory=list)
    other_failures: list[str] = field(default_factory=list)  # lost xdist workers
    lint: list = field(default_factory=list)  # lint.LintReport per ingestion
    lint_failures: list[str] = field(default_factory=list)

    @property
    def failures(self) -> list[str]:
        out = list(self.other_failures)
        out += [f"{r.engine}: labeled set {r.labeled} is empty; nothing was measured" for r in self.rows if r.n == 0]
        out += [str(b) for b in self.breaches]
        if self.baseline is not None:
            out += [f"baseline refused: {r}; re-save the baseline, or compare anyway with --retrieval-baseline-force"
                    for r in self.baseline.refusals]
        return out + self.drop_failures + self.lint_failures

    @property
    def failed(self) -> bool:
        return bool(self.failures)


def judge(run: RunResults, *, measures: Sequence[str], thresholds: Sequence[Threshold] = (),
          max_drops: Sequence[MaxDrop] = (), baseline: RunResults | None = None, force: bool = False,
          noise_aware: bool = False, alpha: float = 0.05, other_failures: Sequence[str] = ()) -> Verdict:
    needed = list(dict.fromkeys([*measures, *measures_needed(thresholds)]))
    rows = [Row(e.engine, e.labeled.name, {m: e.mean(m) for m in needed}, e.n, e.n_errored) for e in run.evaluations]
    verdict = Verdict(run, list(measures), rows, run.comparisons(measures), alpha,
                      breaches=check(thresholds, rows) if rows else [], other_failures=list(other_failures),
                      lint=list(run.lint), lint_failures=check_lint(thresholds, run.lint))
    if baseline is not None:
        compared = list(dict.fromkeys([*measures, *(d.measure for d in max_drops)]))
        verdict.baseline = compare(run, baseline, compared, force=force)
        verdict.drop_failures = check_drops(max_drops, verdict.baseline.diffs, noise_aware=noise_aware, alpha=alpha)
    return verdict


def record_settings(run: RunResults, *, configured: Sequence[Measure], thresholds: Sequence[Threshold] = (),
                    max_drops: Sequence[MaxDrop] = (), alpha: float = 0.05, noise_aware: bool = False,
                    baseline: str | None = None, baseline_force: bool = False,
                    failures: Sequence[str] = ()) -> RunResults:
    """Write into ``run`` how it is to be judged and rendered, in plain JSON, so a saved
    results.json is judged again (``judge_recorded``) exactly as the live run was."""
    measures = table_measures(run, configured)
    run.settings = {
        "table_measures": measures,
        "recorded_measures": list(dict.fromkeys([*measures, *measures_needed(thresholds),
                                                 *(d.measure for d in max_drops)])),
        "thresholds": [[str(t), t.source] for t in thresholds],
        "max_drops": [[str(d), d.source] for d in max_drops],
        "alpha": alpha, "noise_aware": noise_aware, "baseline": baseline, "baseline_force": baseline_force,
        "failures": list(failures),
    }
    return run


def judge_recorded(run: RunResults, *, baseline: RunResults | None = None,
                   extra_failures: Sequence[str] = ()) -> Verdict:
    """The verdict on a run under the settings recorded in it (see ``record_settings``)."""
    s = run.settings
    return judge(run, measures=s.get("table_measures") or table_measures(run, DEFAULT_TABLE_MEASURES),
                 thresholds=parse_thresholds((t, src) for t, src in s.get("thresholds", [])),
                 max_drops=parse_max_drops((t, src) for t, src in s.get("max_drops", [])),
                 baseline=baseline, force=bool(s.get("baseline_force")), noise_aware=bool(s.get("noise_aware")),
                 alpha=float(s.get("alpha", 0.05)), other_failures=[*s.get("failures", []), *extra_failures])
