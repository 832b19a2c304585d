"""The gate calibrated on itself: the analysis reruns a saved run (``analysis/calibration.py``)
and every rerun is judged here, by the gate's own ``decide``, so what is calibrated is the verdict
a run would get, not a copy of its rules."""

from __future__ import annotations

from typing import Sequence

from ..analysis.analyse import Analysis
from ..analysis.calibration import DEFAULT_RERUNS, SEED, Calibration, calibrate as rerun
from ..evaluation.results import RunResults
from ..rules.settings import GateSettings
from .verdict import decide

#: the failures that are a rule's own verdict (a threshold's, a max-drop rule's)
RULE_FAILURES = ("rule", "drop")


def outcome(run: RunResults, settings: GateSettings, analysis: Analysis) -> str:
    """The gate's verdict on ``run`` under the one rule of ``settings``: "fail", "inconclusive"
    (its interval straddles its line: ``Failure.state``) or "pass"; the calibration counts each."""
    verdict = decide(run, settings, analysis)
    states = {f.state for f in verdict.failures if f.kind in RULE_FAILURES}
    return "fail" if "fail" in states else "inconclusive" if states else "pass"


def calibrate(run: RunResults, settings: GateSettings, *, reruns: int = DEFAULT_RERUNS,
              sizes: Sequence[float] = (), seed: int = SEED) -> Calibration:
    """How often each rule of ``settings`` fails ``run``'s engines unchanged, and catches the
    drops injected into them (``analysis.calibration.calibrate``), judged by the gate."""
    return rerun(run, settings, outcome, reruns=reruns, sizes=sizes, seed=seed)
