"""Every artefact of a run, written in one place from the verdict on it: the report folder, the
drill-down page, a saved baseline, GitHub's step summary. The pytest session and ``python -m
pytest_retrieval_eval report --out`` both call ``write_outputs``, so a saved results.json
rebuilds byte-identical files."""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING, Any, Mapping

from .._atomic import write_text_atomic
from ..archive.saved import results_json as results_text
from ..ir.measures import METRICS_DEFINITION

if TYPE_CHECKING:  # the gate's verdict, read here; imported only by type checkers
    from ..gate.verdict import Verdict


def metadata(verdict: Verdict) -> dict[str, Any]:
    """The run's description in results.md and under the page's title."""
    return {"measures": ", ".join(verdict.measures), "metric definition": METRICS_DEFINITION,
            "alpha": verdict.alpha, "baseline": verdict.settings.baseline or "none"}


def write_outputs(verdict: Verdict, *, report_dir: Path | None = None, html: Path | None = None,
                  save_baseline: Path | None = None, baseline: Any = None,
                  timing: Mapping[str, Any] | None = None, step_summary: str | None = None,
                  trend: str | None = None, results_json: str | None = None) -> None:
    """Every output asked for; ``trend``: the history's trend SVG, shown on the page;
    ``results_json``: the run's results.json when the caller made it already."""
    from .files import markdown, write_report
    from .html import compared

    baseline = compared(verdict, baseline)  # a refused baseline compared nothing: no artefact draws it
    meta = metadata(verdict)
    if results_json is None and (save_baseline is not None or report_dir is not None):
        results_json = results_text(verdict)  # made once: the baseline and the report folder's are one text
    if save_baseline is not None:
        write_text_atomic(save_baseline, results_json)
    if report_dir is not None:
        write_report(report_dir, verdict, metadata=meta, timing=timing, baseline=baseline, results_json=results_json)
    if html is not None:
        from .html import render

        write_text_atomic(html, render(verdict, baseline=baseline, trend=trend,
                                       subtitle=", ".join(f"{k}: {v}" for k, v in meta.items())))
    if step_summary:  # results.md (led by the verdict), cut to GitHub's limit, pointing at the full results.md
        from .comment import step_summary as fitted

        already = os.path.getsize(step_summary) if os.path.exists(step_summary) else 0
        full = f"{Path(report_dir) / 'results.md'} (in CI, the workflow's artefact)" if report_dir is not None else None
        with open(step_summary, "a", encoding="utf-8") as fh:
            fh.write(fitted(markdown(verdict, meta), already=already, full_report=full))


def step_summary_path() -> str | None:
    return os.environ.get("GITHUB_STEP_SUMMARY") or None
