"""Repeated trials (spread, pass@k / pass^k) and engine variants side by side."""

from __future__ import annotations


import pytest

from pytest_retrieval_eval.analysis.stability import pass_at_k, pass_hat_k


def test_pass_at_k_estimators_match_their_definitions():
    # n=5 trials, c=2 passed: P(at least one of 2 draws passes) = 1 - C(3,2)/C(5,2) = 0.7
    assert pass_at_k(5, 2, 2) == pytest.approx(0.7)
    assert pass_hat_k(5, 2, 2) == pytest.approx(0.1)  # both pass: C(2,2)/C(5,2)
    assert pass_at_k(3, 3, 3) == pass_hat_k(3, 3, 3) == 1.0
    assert pass_at_k(3, 0, 1) == pass_hat_k(3, 0, 1) == 0.0
