"""Per-class figures of a stream of predictions, exact and importance-weighted (docs/estimates.md).

Classes are integer codes ``0 .. k-1``. A confusion matrix ``T[a, b]`` counts items of true class
``a`` predicted ``b``. Every figure is a function of ``T``:

* per class ``c``: precision ``T[c,c] / sum_a T[a,c]``, recall ``T[c,c] / sum_b T[c,b]`` and
  F1 ``2 T[c,c] / (row_c + col_c)`` (0 where the denominator is 0, as scikit-learn's
  ``zero_division=0``);
* ``macro_f1``: the mean F1 over the classes that occur as a truth or a prediction;
  ``balanced_accuracy``: the mean recall over the classes that occur as a truth; ``accuracy``;
* the majority-class baseline: the figures of a predictor that always answers the most frequent
  true class ``M``: accuracy ``pi = row_M / n``, balanced accuracy ``1 / (classes that occur as a
  truth)``, macro-F1 ``2 pi / (1 + pi) / (classes of the truth and of that predictor)``.

**Exact** (:func:`exact_figures`): ``T`` counted on items whose class is known (gold).

**Estimated** (:func:`estimated_figures`): from the queried items only, each weighted by ``1/q``
(``q`` its logged query probability, > 0). :class:`Cells` keeps per cell ``m`` (queried items),
``s1 = sum 1/q`` (the Horvitz-Thompson estimate of ``T[a, b]``) and ``s2 = sum (1-q)/q^2`` (the
estimate of that cell's variance). The item i joins exactly one cell and is queried by an
independent draw given the past, so the cell estimates are uncorrelated and the variance of any
smooth figure ``g(T)`` is, by Taylor linearisation (the delta method),
``sum over cells of (dg/dT[a,b])^2 s2[a,b]``. A ratio ``<A,T> / <B,T>`` (precision, recall, F1, the
baseline's accuracy) has gradient ``(A - g B) / <B,T>``; a mean of ratios (macro-F1, balanced
accuracy) has the mean of their gradients. The interval (:func:`logit_t_interval`) is the
delta-method interval on the logit scale, ``logit g +- t * sqrt(v) / (g (1 - g))`` mapped back,
with ``t`` the Student quantile at Satterthwaite's degrees of freedom
``(sum_c v_c)^2 / sum_c v_c^2 / (m_c - 1)`` (``v_c`` the cell's share of ``v``, ``m_c`` its
queried items): a variance estimated from a few heavily weighted labels is itself uncertain, and
the logit scale follows the skew of a ratio near 0 or 1. Where ``g`` is 0 or 1 (``v = 0``) it
falls back to Wilson's score interval at the effective sample size (:func:`wilson_effective`),
which is not empty there. Its coverage is checked by simulation:
``benchmarks/interval_coverage.py`` (INTERVAL_COVERAGE.md).
Accuracy keeps the Horvitz-Thompson estimate over the ``n_seen`` items of the stream
(:func:`.metrics.iw_estimate`), and so does the baseline's accuracy (the majority class's labels
``sum 1/q`` over ``n_seen``, its variance ``sum (1-q)/q^2`` over the same labels): the two are
compared ("not above the baseline", docs/estimates.md), so they are estimated alike; the
baseline's macro-F1 keeps the ratio ``pi = row_M / n`` of ``T``, as macro-F1 is a ratio estimate.

When every item is queried (``q = 1``) ``s1`` is the confusion matrix itself, ``s2 = 0`` and
every estimate equals its exact figure with an empty-width interval.

**Model labels** (:func:`auto_label_error`): the items decided without a query are the model's own
labels. Their errors per predicted class ``b`` are estimated without bias by
``U_b = sum over queried items predicted b and labelled otherwise of (1 - q)/q`` (the
Horvitz-Thompson count of all errors less the errors among the queried, which are known), with
variance ``sum (1 - q)/q^2`` over the same items; the error rate is ``U_b / A_b`` (``A_b``: items
predicted ``b`` and not queried, a known count).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from statistics import NormalDist
from typing import Any

import numpy as np
from scipy.special import stdtrit

from .metrics import Z95, Estimate, iw_estimate, wilson_effective

#: the figures of one class, in the order tables show them
PER_CLASS = ("precision", "recall", "f1")
#: the figures of the whole stream (and the keys of :func:`exact_figures` but ``classes``)
OVERALL = ("accuracy", "macro_f1", "balanced_accuracy")


def z_of(confidence: float) -> float:
    """The two-sided normal quantile of ``confidence`` in (0, 1) (1.96 for 0.95)."""
    if not 0.0 < confidence < 1.0:
        raise ValueError(f"confidence must lie in (0, 1), got {confidence}")
    return Z95 if confidence == 0.95 else NormalDist().inv_cdf(0.5 + confidence / 2)


@dataclass(frozen=True)
class Cells:
    """Importance-weighted confusion sums over the queried, labelled items: ``m[a, b]`` items of
    label ``a`` predicted ``b``, ``s1[a, b]`` = sum of 1/q, ``s2[a, b]`` = sum of (1-q)/q^2.
    All (k, k) float arrays."""

    m: np.ndarray
    s1: np.ndarray
    s2: np.ndarray

    @classmethod
    def empty(cls, k: int) -> Cells:
        return cls(np.zeros((k, k)), np.zeros((k, k)), np.zeros((k, k)))

    @classmethod
    def of(cls, truth: np.ndarray, pred: np.ndarray, q: np.ndarray, k: int) -> Cells:
        """The sums of queried items given as codes ``truth``, ``pred`` (int (m,)) and their query
        probabilities ``q`` (m,) in (0, 1]; ValueError otherwise."""
        q = np.asarray(q, dtype=float)
        if np.any(q <= 0) or np.any(q > 1):
            raise ValueError("query probabilities must lie in (0, 1]")
        out = cls.empty(k)
        at = (np.asarray(truth, dtype=np.int64), np.asarray(pred, dtype=np.int64))
        np.add.at(out.m, at, 1.0)
        np.add.at(out.s1, at, 1.0 / q)
        np.add.at(out.s2, at, (1.0 - q) / q**2)
        return out


def _ratio(A: np.ndarray, B: np.ndarray, T: np.ndarray) -> tuple[float, np.ndarray]:
    """``(<A,T>/<B,T>, its gradient in T)``; ``(0, 0)`` when the denominator is 0."""
    den = float(np.sum(B * T))
    if den <= 0:
        return 0.0, np.zeros_like(T)
    value = float(np.sum(A * T)) / den
    return value, (A - value * B) / den


def _unit(k: int, a: int, b: int) -> np.ndarray:
    e = np.zeros((k, k))
    e[a, b] = 1.0
    return e


def _row(k: int, a: int) -> np.ndarray:
    e = np.zeros((k, k))
    e[a, :] = 1.0
    return e


def _figures(T: np.ndarray) -> dict[str, tuple[float, np.ndarray]]:
    """Every figure of the module docstring as ``(value, gradient in T)``; keys
    ``precision:c``, ``recall:c``, ``f1:c`` per class code c, the :data:`OVERALL` ones (accuracy as
    the ratio to the total of T) and ``baseline_accuracy``, ``baseline_macro_f1``,
    ``baseline_balanced_accuracy``."""
    k = T.shape[0]
    rows, cols = T.sum(axis=1), T.sum(axis=0)
    truth = [c for c in range(k) if rows[c] > 0]
    occurs = [c for c in range(k) if rows[c] > 0 or cols[c] > 0]
    out: dict[str, tuple[float, np.ndarray]] = {}
    for c in range(k):
        out[f"precision:{c}"] = _ratio(_unit(k, c, c), _row(k, c).T, T)
        out[f"recall:{c}"] = _ratio(_unit(k, c, c), _row(k, c), T)
        out[f"f1:{c}"] = _ratio(2 * _unit(k, c, c), _row(k, c) + _row(k, c).T, T)
    zero = (0.0, np.zeros_like(T))
    for name, key, over in (("macro_f1", "f1", occurs), ("balanced_accuracy", "recall", truth)):
        parts = [out[f"{key}:{c}"] for c in over]
        out[name] = (float(np.mean([p[0] for p in parts])), np.mean([p[1] for p in parts], axis=0)) \
            if parts else zero
    out["accuracy"] = _ratio(np.eye(k), np.ones((k, k)), T)
    if not truth:
        out.update(baseline_accuracy=zero, baseline_macro_f1=zero, baseline_balanced_accuracy=zero)
        return out
    major = int(np.argmax(rows))
    pi, grad = _ratio(_row(k, major), np.ones((k, k)), T)
    n_classes = len(truth)  # the baseline predicts M, a class of the truth: the union is the truth
    out["baseline_accuracy"] = (pi, grad)
    out["baseline_balanced_accuracy"] = (1.0 / n_classes, np.zeros_like(T))
    out["baseline_macro_f1"] = (2 * pi / (1 + pi) / n_classes, 2 / (1 + pi) ** 2 / n_classes * grad)
    return out


def _nest(flat: dict[str, Any], classes: Sequence[Any]) -> dict[str, Any]:
    """``{"classes": [{"cls", "precision", "recall", "f1", "support"?}], "accuracy", "macro_f1",
    "balanced_accuracy", "baseline": {"class", "accuracy", "macro_f1", "balanced_accuracy"}}``."""
    return {
        "classes": [{"cls": c, **{f: flat[f"{f}:{k}"] for f in PER_CLASS}} for k, c in enumerate(classes)],
        **{f: flat[f] for f in OVERALL},
        "baseline": {f: flat[f"baseline_{f}"] for f in OVERALL},
    }


def confusion(truth: np.ndarray, pred: np.ndarray, k: int) -> np.ndarray:
    """``T[a, b]``: items of class code ``a`` predicted ``b`` (float (k, k))."""
    T = np.zeros((k, k))
    np.add.at(T, (np.asarray(truth, dtype=np.int64), np.asarray(pred, dtype=np.int64)), 1.0)
    return T


def exact_figures(T: np.ndarray, classes: Sequence[Any]) -> dict[str, Any]:
    """The figures of the module docstring from a counted confusion matrix ``T`` (k, k), as floats,
    nested as :func:`_nest` (per class also ``support``: items of that true class; the baseline
    also ``class``: the majority class, None without items). ``n`` = items counted."""
    flat = {name: value for name, (value, _) in _figures(T).items()}
    out = _nest(flat, classes)
    rows = T.sum(axis=1)
    for k, row in enumerate(out["classes"]):
        row["support"] = int(rows[k])
    out["baseline"]["class"] = classes[int(np.argmax(rows))] if rows.sum() > 0 else None
    out["n"] = int(T.sum())
    return out


def satterthwaite_df(grad: np.ndarray, cells: Cells) -> float:
    """Satterthwaite's degrees of freedom of the delta-method variance ``sum_c grad_c^2 s2_c``:
    each cell's variance estimate counted with ``m_c - 1`` (at least 1) degrees of freedom;
    ``inf`` when the variance is 0."""
    parts = (grad**2 * cells.s2).ravel()
    keep = parts > 0
    if not keep.any():
        return math.inf
    return float(parts.sum() ** 2 / np.sum(parts[keep] ** 2 / np.maximum(cells.m.ravel()[keep] - 1.0, 1.0)))


def logit_t_interval(value: float, var: float, df: float, n_eff_if_exact: float | None, n: int,
                     z: float = Z95) -> Estimate:
    """The interval of the module docstring for a figure ``value`` in [0, 1] with delta-method
    variance ``var`` and Satterthwaite's ``df``: the normal quantile ``z`` is replaced by the
    Student quantile of the same two-sided level, and ``logit(value) +- t sqrt(var) / (value
    (1 - value))`` is mapped back to [0, 1]. ``value`` at 0 or 1, or ``var == 0``: Wilson's
    interval at ``n_eff_if_exact`` (:func:`.metrics.wilson_effective`)."""
    value = min(1.0, max(0.0, value))
    if not (var > 0 and 0.0 < value < 1.0):
        return wilson_effective(value, var, n_eff_if_exact, n, z)
    t = z if math.isinf(df) else float(stdtrit(max(df, 1.0), NormalDist().cdf(z)))
    centre, half = math.log(value / (1.0 - value)), t * math.sqrt(var) / (value * (1.0 - value))
    return Estimate(value, _expit(centre - half), _expit(centre + half), n)


def _expit(x: float) -> float:
    return 1.0 / (1.0 + math.exp(-x)) if x >= 0 else math.exp(x) / (1.0 + math.exp(x))


def estimated_figures(cells: Cells, n_seen: int, classes: Sequence[Any], z: float = Z95) -> dict[str, Any]:
    """The importance-weighted estimates of the figures (module docstring), each an
    :class:`.metrics.Estimate` with its interval (``z``: 1.96 for 95%), nested as
    :func:`_nest`; accuracy is the Horvitz-Thompson estimate over the ``n_seen`` items of the
    stream. The baseline's ``class`` is the class with the largest estimated count. All values
    None when no item was queried."""
    m_total = int(cells.m.sum())
    figures = _figures(cells.s1)
    if m_total == 0 or n_seen <= 0:
        none = Estimate(None, None, None, 0)
        out = _nest({name: none for name in figures}, classes)
        out["baseline"]["class"] = None
        return out
    s1, s2 = float(cells.s1.sum()), float(cells.s2.sum())
    n_eff = s1 * s1 / s2 if s2 > 0 else None  # Kish / mean (1 - q), weighted: exact when every q = 1
    flat = {name: logit_t_interval(value, float(np.sum(grad**2 * cells.s2)), satterthwaite_df(grad, cells),
                                   n_eff, m_total, z)
            for name, (value, grad) in figures.items()}
    base = flat["baseline_balanced_accuracy"].value  # 1 / (classes seen): no sampling error
    flat["baseline_balanced_accuracy"] = Estimate(base, base, base, m_total)
    acc = iw_estimate(float(np.trace(cells.s1)), float(np.trace(cells.s2)), m_total, n_seen)
    flat["accuracy"] = acc if z == Z95 else _rescale(acc, z)
    major = int(np.argmax(cells.s1.sum(axis=1)))
    # the baseline's accuracy by the accuracy's own estimator (Horvitz-Thompson over the n_seen
    # items), as the two are compared: the labels of the majority class M, each counted 1/q
    base_acc = iw_estimate(float(cells.s1[major].sum()), float(cells.s2[major].sum()), m_total, n_seen)
    flat["baseline_accuracy"] = base_acc if z == Z95 else _rescale(base_acc, z)
    out = _nest(flat, classes)
    out["baseline"]["class"] = classes[major]
    return out


def _rescale(est: Estimate, z: float) -> Estimate:
    """A normal 95% interval ``est`` widened to the quantile ``z``."""
    if est.value is None or est.low is None or est.high is None:
        return est
    half = max(est.high - est.value, est.value - est.low) * z / Z95
    return Estimate(est.value, max(0.0, est.value - half), min(1.0, est.value + half), est.n)


def auto_label_error(cells: Cells, auto: np.ndarray, classes: Sequence[Any],
                     z: float = Z95) -> dict[str, Any]:
    """The error rate of the model's own labels (module docstring, "Model labels"), per predicted
    class and overall: ``{"classes": [{"cls", "auto", "error": Estimate}], "error": Estimate,
    "auto": items}``. ``auto``: items decided without a query per predicted class code (k,),
    counted over the same stream as ``cells``. An Estimate is all None where a class has no
    model label."""
    k = len(classes)
    off = 1.0 - np.eye(k)
    errors = ((cells.s1 - cells.m) * off).sum(axis=0)  # per predicted class
    var = (cells.s2 * off).sum(axis=0)
    col_s1, col_s2 = cells.s1.sum(axis=0), cells.s2.sum(axis=0)

    def rate(u: float, v: float, a: float, s1: float, s2: float, m: int) -> Estimate:
        if a <= 0:
            return Estimate(None, None, None, 0)
        if m == 0:  # no queried item of this prediction: nothing is known of its errors
            return Estimate(None, 0.0, 1.0, 0)
        return wilson_effective(u / a, v / a**2, s1 * s1 / s2 if s2 > 0 else None, m, z)

    rows = [{"cls": c, "auto": int(auto[b]),
             "error": rate(float(errors[b]), float(var[b]), float(auto[b]), float(col_s1[b]),
                           float(col_s2[b]), int(cells.m[:, b].sum()))}
            for b, c in enumerate(classes)]
    total = rate(float(errors.sum()), float(var.sum()), float(np.sum(auto)), float(col_s1.sum()),
                 float(col_s2.sum()), int(cells.m.sum()))
    return {"classes": rows, "error": total, "auto": int(np.sum(auto))}


#: the stream-wide figures :func:`stream_figures` reports (exact, and with ``_iw`` estimated)
STREAM_FIGURES = ("macro_f1", "balanced_accuracy", "baseline_accuracy", "baseline_macro_f1",
                  "baseline_balanced_accuracy")


def stream_figures(truth: np.ndarray, pred: np.ndarray, query_prob: np.ndarray, queried: np.ndarray,
                   classes: Sequence[Any]) -> dict[str, float]:
    """The figures of one replayed stream as flat floats (the replay's and the planner's results):
    exact over every round (each round's class is known in a replay) ``macro_f1``,
    ``balanced_accuracy``, ``baseline_accuracy``, ``baseline_macro_f1``,
    ``baseline_balanced_accuracy`` and per class ``precision[c]``, ``recall[c]``, ``f1[c]``; and
    each of them (and ``accuracy``) estimated from the queried rounds alone as ``<name>_iw`` with
    its 95% interval ``<name>_iw_low`` / ``<name>_iw_high`` (0, 0 and 1 when no round was
    queried). ``truth``, ``pred``: int class codes (n,); ``query_prob``: (n,) in [0, 1].

    The estimates speak for the rounds that could have been queried (``query_prob > 0``), as the
    app's do (docs/estimates.md, "What the estimates cover"): a round drawn at q = 0 (a budget's
    hard cap, docs/budget.md) can never be observed, so no unbiased estimate covers it, and
    counting it in the Horvitz-Thompson denominator would pull every estimate towards 0."""
    k = len(classes)
    truth, pred = np.asarray(truth, dtype=np.int64), np.asarray(pred, dtype=np.int64)
    queried = np.asarray(queried, dtype=bool)
    query_prob = np.asarray(query_prob, dtype=float)
    exact = exact_figures(confusion(truth, pred, k), classes)
    est = estimated_figures(Cells.of(truth[queried], pred[queried], query_prob[queried], k),
                            int(np.count_nonzero(query_prob > 0)), classes)
    out: dict[str, float] = {}

    def put(name: str, value: float, e: Estimate) -> None:
        out[name] = float(value)
        none = e.value is None
        out[f"{name}_iw"] = 0.0 if none else float(e.value)  # type: ignore[arg-type]
        out[f"{name}_iw_low"] = 0.0 if none else float(e.low)  # type: ignore[arg-type]
        out[f"{name}_iw_high"] = 1.0 if none else float(e.high)  # type: ignore[arg-type]

    for name in ("macro_f1", "balanced_accuracy"):
        put(name, exact[name], est[name])
    for name in ("accuracy", "macro_f1", "balanced_accuracy"):
        put(f"baseline_{name}", exact["baseline"][name], est["baseline"][name])
    for t, e in zip(exact["classes"], est["classes"], strict=True):
        for f in PER_CLASS:
            put(f"{f}[{t['cls']}]", t[f], e[f])
    acc = est["accuracy"]
    out["accuracy_iw"] = 0.0 if acc.value is None else float(acc.value)
    out["accuracy_iw_low"] = 0.0 if acc.low is None else float(acc.low)
    out["accuracy_iw_high"] = 1.0 if acc.high is None else float(acc.high)
    return out


def beats_baseline(mean: dict[str, float], metric: str) -> bool:
    """Whether a result's ``metric`` (a flat dict as :func:`stream_figures`') is above the
    majority-class baseline's; a metric without a baseline figure counts as beating it."""
    base = mean.get(f"baseline_{metric}")
    return base is None or mean.get(metric, float("-inf")) > base
