"""Online metrics over a stream of decisions (docs/algorithms/common.md, "Protocol";
docs/architecture.md, "Metrics").

All functions take whole-stream arrays: ``y_true`` and ``y_pred`` hold one entry per round
(every round counts, queried or not), ``queried`` is boolean, ``query_prob`` in (0, 1].
"""

from __future__ import annotations

import math
from collections.abc import Hashable
from dataclasses import dataclass

import numpy as np

Z95 = 1.959963984540054  # two-sided 95% normal quantile


@dataclass(frozen=True)
class BinaryCounts:
    """Confusion counts with ``positive`` as the positive class."""

    tp: int
    fp: int
    tn: int
    fn: int

    @classmethod
    def of(cls, y_true: np.ndarray, y_pred: np.ndarray, positive: Hashable) -> BinaryCounts:
        t = np.asarray(y_true) == positive
        p = np.asarray(y_pred) == positive
        return cls(int(np.sum(t & p)), int(np.sum(~t & p)), int(np.sum(~t & ~p)), int(np.sum(t & ~p)))


def binary_metrics(y_true: np.ndarray, y_pred: np.ndarray, positive: Hashable,
                   eta_p: float = 0.5, c_p: float | None = None) -> dict[str, float]:
    """Online binary metrics (paa.md Eq. 6-7 and section 6).

    accuracy, precision, recall (= sensitivity), f1 (0 when precision + recall = 0),
    specificity, ``sum = eta_p*sensitivity + (1-eta_p)*specificity`` and, when ``c_p`` is
    given, ``cost = c_p*FN + (1-c_p)*FP`` (an un-normalised count). A ratio whose
    denominator is 0 is reported as 0.
    """
    c = BinaryCounts.of(y_true, y_pred, positive)
    n = c.tp + c.fp + c.tn + c.fn
    precision = c.tp / (c.tp + c.fp) if c.tp + c.fp else 0.0
    recall = c.tp / (c.tp + c.fn) if c.tp + c.fn else 0.0
    specificity = c.tn / (c.tn + c.fp) if c.tn + c.fp else 0.0
    f1 = 2 * precision * recall / (precision + recall) if precision + recall > 0 else 0.0
    out = {
        "accuracy": (c.tp + c.tn) / n if n else 0.0,
        "precision": precision, "recall": recall, "sensitivity": recall,
        "specificity": specificity, "f1": f1,
        "sum": eta_p * recall + (1.0 - eta_p) * specificity,
        "mistakes": float(c.fp + c.fn),
    }
    if c_p is not None:
        out["cost"] = c_p * c.fn + (1.0 - c_p) * c.fp
    return out


def accuracy(y_true: np.ndarray, y_pred: np.ndarray) -> float:
    """Fraction of rounds predicted correctly (0 for an empty stream)."""
    y_true = np.asarray(y_true)
    return float(np.mean(y_true == np.asarray(y_pred))) if len(y_true) else 0.0


@dataclass(frozen=True)
class Estimate:
    """A point estimate with a 95% confidence interval; all None when there is no data."""

    value: float | None
    low: float | None
    high: float | None
    n: int


def importance_weighted_accuracy(correct: np.ndarray, query_prob: np.ndarray,
                                 n_seen: int) -> Estimate:
    """Estimate accuracy on all ``n_seen`` items from the queried ones only.

    correct: bool (m,), whether the prediction of each *queried* item was right.
    query_prob: (m,), the probability q with which each was queried (0 < q <= 1).
    n_seen: number of items decided so far, queried or not (>= m).

    Horvitz-Thompson estimator ``(1/n) sum_i c_i / q_i`` over queried items, which is
    unbiased for the online accuracy because item i was queried with probability q_i
    independently given the past. Its variance is estimated by
    ``(1/n^2) sum_i c_i (1 - q_i) / q_i^2`` (each term is the conditional variance of
    ``Z_i c_i / q_i`` divided by its selection probability); the interval is the
    normal approximation ``value +- 1.96 sd`` clipped to [0, 1].
    """
    correct, q = _weighted_sample(correct, query_prob, "query_prob")
    return iw_estimate(float(np.sum(correct / q)), float(np.sum(correct * (1.0 - q) / q**2)), len(q), n_seen)


def _weighted_sample(correct: np.ndarray, prob: np.ndarray, name: str) -> tuple[np.ndarray, np.ndarray]:
    """``(correct, prob)`` as float arrays of one length, each probability in (0, 1]: the inputs
    of an inverse-probability-weighted estimate. ValueError naming ``name`` otherwise."""
    c, p = np.asarray(correct, dtype=float), np.asarray(prob, dtype=float)
    if c.shape != p.shape:
        raise ValueError(f"correct and {name} must have the same length")
    if np.any(p <= 0) or np.any(p > 1):
        raise ValueError(f"{name} must lie in (0, 1]")
    return c, p


def iw_estimate(s1: float, s2: float, m: int, n_seen: int) -> Estimate:
    """:func:`importance_weighted_accuracy` from its running sums over the ``m`` queried items:
    ``s1`` = sum of c/q, ``s2`` = sum of c(1-q)/q^2 (kept incrementally by the app).

    The value and both ends are clipped to [0, 1]: the Horvitz-Thompson sum can pass ``n_seen``
    when a few items drawn at a small q happen to be right (an accuracy of 103% says no more than
    100%; docs/estimates.md); the interval's width still comes from the unclipped sum."""
    if n_seen <= 0 or m == 0:
        return Estimate(None, None, None, 0)
    value = s1 / n_seen
    half = Z95 * math.sqrt(max(0.0, s2) / n_seen**2)
    return Estimate(min(1.0, value), min(1.0, max(0.0, value - half)), min(1.0, value + half), m)


#: metric -> True when larger is better (the replay marks the best setting with it)
HIGHER_IS_BETTER = {
    "accuracy": True, "f1": True, "precision": True, "recall": True, "sensitivity": True,
    "specificity": True, "sum": True, "cost": False, "mistakes": False, "query_ratio": False,
    "macro_f1": True, "balanced_accuracy": True,
}


def stream_metrics(y_true: np.ndarray, y_pred: np.ndarray, queried: np.ndarray,
                   binary: bool) -> dict[str, float]:
    """Online metrics of one replayed stream, every round counted whether queried or not.

    y_true, y_pred: int class codes (n,); for ``binary`` streams code 1 is the positive class.
    queried: bool (n,). Returns ``accuracy``, ``mistakes``, ``queries`` and ``query_ratio``
    (queries / n) and, for binary streams, the :func:`binary_metrics` with
    ``eta_p = 1/2`` (sum = balanced accuracy) and ``c_p = T_n / T`` (paa.md section 5: the
    costs of the paper's experiments, c_p = T_n/T and c_n = T_p/T).
    """
    y_true = np.asarray(y_true)
    y_pred = np.asarray(y_pred)
    queried = np.asarray(queried, dtype=bool)
    if not (len(y_true) == len(y_pred) == len(queried)):
        raise ValueError("y_true, y_pred and queried must have the same length")
    n = len(y_true)
    if binary:
        c_p = float(np.sum(y_true != 1)) / n if n else 0.5
        out = binary_metrics(y_true, y_pred, 1, eta_p=0.5, c_p=c_p)
    else:
        out = {"accuracy": accuracy(y_true, y_pred), "mistakes": float(np.sum(y_true != y_pred))}
    q = int(np.sum(queried))
    out["queries"] = float(q)
    out["query_ratio"] = q / n if n else 0.0
    return out


def audit_accuracy(correct: np.ndarray, sample_prob: np.ndarray, z: float = Z95) -> Estimate:
    """Estimate the accuracy of a population of auto-decided items from an audited sample
    (docs/teams.md, "Audit of auto-decisions").

    correct: bool (m,), whether the model's label of each *audited* item was right.
    sample_prob: (m,), the probability pi_i in (0, 1] with which each was sampled; every item of
    the population was sampled independently (Poisson sampling) with its logged pi.

    Point estimate: the Hajek (ratio) estimator ``sum_i w_i c_i / sum_i w_i``, ``w_i = 1/pi_i``,
    the inverse-probability-weighted mean (the plain mean when all pi are equal). Its variance
    by Taylor linearisation, with the finite-population factor (1 - pi_i):
    ``v = sum_i (1 - pi_i) w_i^2 (c_i - a)^2 / (sum_i w_i)^2``. Interval: Wilson's score interval
    at the effective sample size ``n_eff = a (1 - a) / v`` (Kish's design effect), so it stays
    inside [0, 1] and is not empty when every audited label was right (or wrong); there (v = 0)
    ``n_eff`` is Kish's ``(sum w)^2 / sum w^2`` divided by the mean (1 - pi). ``n`` is m; ``z``:
    the interval's normal quantile (1.96: 95%).
    """
    c, p = _weighted_sample(correct, sample_prob, "sample_prob")
    if len(c) == 0:
        return Estimate(None, None, None, 0)
    w = 1.0 / p
    value = float(np.sum(w * c) / np.sum(w))
    var = float(np.sum((1.0 - p) * w**2 * (c - value) ** 2) / np.sum(w) ** 2)
    kish = float(np.sum(w) ** 2 / np.sum(w**2))
    fpc = float(np.mean(1.0 - p))  # 0: every item of the population was audited, the accuracy is known
    return wilson_effective(value, var, kish / fpc if fpc > 0 else None, len(c), z)


def wilson_effective(value: float, var: float, n_eff_if_exact: float | None, n: int,
                     z: float = Z95) -> Estimate:
    """Wilson's score interval for a proportion-like ``value`` in [0, 1] with (linearised)
    variance ``var``, at the effective sample size ``value (1 - value) / var`` (Kish's design
    effect). With ``var == 0`` (the estimate is 0 or 1, or the sample is the whole population)
    ``n_eff_if_exact`` is used; None there means the value is known exactly. ``n``: the sample
    size reported."""
    value = min(1.0, max(0.0, value))
    if var > 0 and 0.0 < value < 1.0:
        n_eff = value * (1.0 - value) / var
    elif n_eff_if_exact is None or n_eff_if_exact <= 0:
        return Estimate(value, value, value, n)
    else:
        n_eff = n_eff_if_exact
    z2 = z * z
    centre = (value + z2 / (2 * n_eff)) / (1 + z2 / n_eff)
    half = z / (1 + z2 / n_eff) * math.sqrt(value * (1 - value) / n_eff + z2 / (4 * n_eff**2))
    return Estimate(value, max(0.0, centre - half), min(1.0, centre + half), n)
