"""Helpers shared by the tests of the linear learners (no learner logic lives here).

(:class:`FixedRng` and :func:`trajectory`, the per-item protocol with prepared uniforms, are
the contract battery's, :mod:`learners.checks`.)

* :func:`calibrate_delta`: bisection on log2(delta) for a target query ratio (the real-data
  tests run the replay engine, ``learners.evaluation.engine.replay``);
* :func:`assert_two_class_matches_binary`: a two-class multiclass learner tracks its binary
  counterpart.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import pytest

import learners
from learners.checks import FixedRng, trajectory


def calibrate_delta(run_ratio: Callable[[float], float], target: float, lo: float, hi: float,
                    steps: int, tolerance: float) -> float:
    """Bisection on log2(delta) for a query ratio near ``target`` (ratio grows with delta).

    run_ratio: delta -> measured query ratio. Starts from the bracket [2^lo, 2^hi] and stops
    early once the ratio is within ``tolerance`` of the target.
    """
    for _ in range(steps):
        mid = (lo + hi) / 2.0
        ratio = run_ratio(2.0 ** mid)
        if abs(ratio - target) <= tolerance:
            return 2.0 ** mid
        lo, hi = (lo, mid) if ratio > target else (mid, hi)
    return 2.0 ** ((lo + hi) / 2.0)


def assert_two_class_matches_binary(multi: learners.Learner, binary: learners.Learner, scale: float,
                                    X: np.ndarray, labels: Sequence[Any], u: np.ndarray) -> None:
    """A two-class multiclass learner tracks its binary counterpart round by round.

    Checks, on every round: the same query probability and query outcome, the same
    prediction whenever the margin is non-zero (at an exact tie the multiclass argmax picks
    classes[0] while binary learners predict classes[1]), and ``W[1] - W[0] == scale * w``.
    """
    assert multi.classes == binary.classes
    got_m = trajectory(multi, list(X), labels, FixedRng(*u))
    got_b = trajectory(binary, list(X), labels, FixedRng(*u))
    n_queried = 0
    for (dm, sm), (db, sb) in zip(got_m, got_b, strict=True):
        assert dm.query_prob == pytest.approx(db.query_prob, rel=1e-9, abs=1e-12)
        assert dm.queried == db.queried
        if abs(db.score) > 1e-12:
            assert dm.prediction == db.prediction
        np.testing.assert_allclose(sm["W"][1] - sm["W"][0], scale * sb["w"], rtol=1e-9, atol=1e-12)
        n_queried += dm.queried
    assert 0 < n_queried < len(labels)
