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
    correct = np.asarray(correct, dtype=float)
    q = np.asarray(query_prob, dtype=float)
    if correct.shape != q.shape:
        raise ValueError("correct and query_prob must have the same length")
    if np.any(q <= 0) or np.any(q > 1):
        raise ValueError("query probabilities must lie in (0, 1]")
    return iw_estimate(float(np.sum(correct / q)), float(np.sum(correct * (1.0 - q) / q**2)), len(q), n_seen)


def iw_estimate(s1: float, s2: float, m: int, n_seen: int) -> Estimate:
    """:func:`importance_weighted_accuracy` from its running sums over the ``m`` queried items:
    ``s1`` = sum of c/q, ``s2`` = sum of c(1-q)/q^2 (kept incrementally by the app, issue 18)."""
    if n_seen <= 0 or m == 0:
        return Estimate(None, None, None, 0)
    value = s1 / n_seen
    half = Z95 * math.sqrt(max(0.0, s2) / n_seen**2)
    return Estimate(value, max(0.0, value - half), min(1.0, value + half), m)


#: metric -> True when larger is better (the replay marks the best setting with it)
HIGHER_IS_BETTER = {
    "accuracy": True, "f1": True, "precision": True, "recall": True, "sensitivity": True,
    "specificity": True, "sum": True, "cost": False, "mistakes": False, "query_ratio": False,
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
