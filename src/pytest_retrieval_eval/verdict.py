"""From a run's results to a verdict: the table's rows, engine comparisons, the baseline diff,
and every reason the gate fails. Shared by the pytest session and ``python -m
pytest_retrieval_eval report``, so both give the same answer and the same exit code."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Sequence

from .baseline import BaselineComparison, compare
from .gate import Breach, MaxDrop, Row, Threshold, check, check_drops, check_lint, measures_needed
from .measures import DEFAULT_TABLE_MEASURES, Measure
from .results import Comparison, RunResults


def table_measures(run: RunResults, configured: Sequence[Measure]) -> list[str]:
    """The configured columns; by default, nDCG@10 joins them for qrels-style judgements."""
    names = [m.name for m in configured]
    if tuple(configured) == DEFAULT_TABLE_MEASURES and any(e.multi_judged for e in run.evaluations):
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
          noise_aware: bool = False, alpha: float = 0.05, other_failures: Sequence[str] = (),
          lint: Sequence = ()) -> Verdict:
    needed = list(dict.fromkeys([*measures, *measures_needed(thresholds)]))
    rows = run.rows(needed)
    verdict = Verdict(run, list(measures), rows, run.comparisons(measures), alpha,
                      breaches=check(thresholds, rows) if rows else [], other_failures=list(other_failures),
                      lint=list(lint), lint_failures=check_lint(thresholds, lint))
    if baseline is not None:
        compared = list(dict.fromkeys([*measures, *(d.measure for d in max_drops)]))
        verdict.baseline = compare(run, baseline, compared, force=force)
        verdict.drop_failures = check_drops(max_drops, verdict.baseline.diffs, noise_aware=noise_aware, alpha=alpha)
    return verdict
