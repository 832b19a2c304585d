"""Analyses handed to renderer tests. A renderer reads an analysis and lays it out; a test of the
layout needs an analysis of the right shape (its engines, rows, comparisons, baseline, misses,
failures), not one whose 10,000-resample bootstraps and randomization tests were run over 2,000
questions. ``handed_analysis`` makes one with the resampling statistics replaced by fixed
stand-ins of the same form (an interval either side of the mean, a p-value from the sign of the
differences); everything else (means, misses, causes, segments, the baseline's pairing, the
rules) is the real code's. The statistics themselves are tested against scipy and statsmodels
(tests/unit/test_stats*.py) and by simulation."""

from __future__ import annotations

import contextlib
from typing import Sequence

import numpy as np
import pytest

from pytest_retrieval_eval.analysis.analyse import Analysis, analyse
from pytest_retrieval_eval.rules.settings import GateSettings
from pytest_retrieval_eval.evaluation.results import RunResults

#: the stand-in interval's half width
HALF_WIDTH = 0.02


def _interval(values: Sequence[float], **_) -> tuple[float, float]:
    x = np.asarray(values, dtype=np.float64)
    mean = float(x.mean()) if len(x) else float("nan")
    return (mean - HALF_WIDTH, mean + HALF_WIDTH)


def _wilson(rate: float, n: float, **_) -> tuple[float, float]:
    return (max(0.0, rate - HALF_WIDTH), min(1.0, rate + HALF_WIDTH))


def _difference(a: Sequence[float], b: Sequence[float], **_) -> tuple[float, float]:
    return _interval(np.asarray(a, dtype=np.float64) - np.asarray(b, dtype=np.float64))


def _p(a: Sequence[float], b: Sequence[float], **_) -> float:
    """0.001 where the engines differ on any question, else 1: a renderer sees both kinds."""
    return 0.001 if np.any(np.asarray(a, dtype=np.float64) != np.asarray(b, dtype=np.float64)) else 1.0


@contextlib.contextmanager
def fixed_statistics():
    """Inside it, the bootstrap, Wilson's interval and the paired randomization test give the
    stand-ins above."""
    import pytest_retrieval_eval.ir.paired as paired
    import pytest_retrieval_eval.ir.stats as stats

    with pytest.MonkeyPatch.context() as patch:
        for module, name, stand_in in ((stats, "bootstrap_ci", _interval), (stats, "wilson_ci", _wilson),
                                       (stats, "paired_randomization", _p), (paired, "paired_randomization", _p),
                                       (stats, "paired_difference_ci", _difference),
                                       (paired, "paired_difference_ci", _difference)):
            patch.setattr(module, name, stand_in)
        yield


def handed_analysis(run: RunResults, settings: GateSettings, baseline: RunResults | None = None) -> Analysis:
    """The analysis of ``run`` a renderer test is handed: the real one's shape, its resampling
    statistics fixed (``fixed_statistics``)."""
    with fixed_statistics():
        return analyse(run, settings, baseline)
