"""Suspected label errors: rank human labels by the probability that they are wrong
(docs/estimates.md, "Suspected label errors"). Pure numpy, no Django.

Input per label: the class the person gave, the model's prediction for that item and the
confidence score of that prediction, both made *before* the label was learned (an out-of-sample
prediction, as confident learning needs: Northcutt, Jiang & Chuang 2021, "Confident Learning:
Estimating Uncertainty in Dataset Labels", JAIR 70). In the app these come from the decision
log: a queried item's prediction and score were logged when it was decided, before its label.

1. **Out-of-sample class probabilities** (:func:`calibrated_probabilities`). The learners give a
   score, not a probability (a margin for binary learners, the gap between the two best class
   scores for multiclass ones). Platt scaling (Platt 1999) fits ``P(label = prediction) =
   sigmoid(a |score| + b)`` by maximum likelihood on the labels themselves (two parameters, so
   the fit barely leaks into the ranking); the predicted class gets that probability and the
   others share the rest equally (:func:`spread`). The fit may weight each label (:func:`platt_fit`):
   the dataset export weights a queried item's label by ``1/q`` so that the fit speaks for the
   whole stream, not for the items the query rule favours (docs/dataset.md).
2. **The annotator's confusion** ``pi[j, l] = P(says l | true j)``: Dawid-Skene's
   (:func:`learners.aggregation.dawid_skene`) for an annotator with overlapping opinions, else a
   symmetric one with accuracy ``default_accuracy``.
3. **Suspicion** (:func:`suspicion`): the posterior that the true class is not the one given,
   ``1 - p[l] pi[l, l] / sum_j p[j] pi[j, l]``. With the symmetric confusion the ranking is the
   ranking by the model's probability of the given label (cleanlab's "self-confidence" order).
"""

from __future__ import annotations

import numpy as np


def _sigmoid(z: np.ndarray) -> np.ndarray:
    return 1.0 / (1.0 + np.exp(-np.clip(z, -40.0, 40.0)))


def platt_fit(confidence: np.ndarray, agree: np.ndarray, weight: np.ndarray | None = None,
              iterations: int = 50, ridge: float = 1e-3) -> tuple[float, float]:
    """``(a, b)`` of ``P(agree) = sigmoid(a * confidence + b)`` by Newton's method on the
    (weighted) log likelihood (a small ridge keeps it finite when the classes separate).
    ``confidence``, ``agree``: float / bool arrays (n,); ``weight``: positive floats (n,) or None
    (all 1), e.g. ``1/q`` so that a sample drawn with probabilities ``q`` stands for the whole
    stream; rescaled to sum to n, so the ridge weighs as in the unweighted fit and equal weights
    give exactly that fit. ``(0, logit of the (weighted) agreement rate)`` for fewer than 2 labels
    or a constant ``confidence``."""
    x = np.asarray(confidence, dtype=float)
    y = np.asarray(agree, dtype=float)
    w = np.ones_like(x) if weight is None else np.asarray(weight, dtype=float)
    if len(w):
        w = w * (len(w) / w.sum())
    rate = (w @ y + 0.5) / (w.sum() + 1.0)
    if len(x) < 2 or np.ptp(x) == 0:
        return 0.0, float(np.log(rate / (1.0 - rate)))
    scale = float(np.std(x)) or 1.0
    X = np.column_stack([x / scale, np.ones_like(x)])
    theta = np.array([0.0, np.log(rate / (1.0 - rate))])
    for _ in range(iterations):
        p = _sigmoid(X @ theta)
        grad = X.T @ (w * (p - y)) + ridge * theta
        hess = (X * (w * p * (1 - p))[:, None]).T @ X + ridge * np.eye(2)
        step = np.linalg.solve(hess, grad)
        theta -= step
        if np.abs(step).max() < 1e-8:
            break
    return float(theta[0] / scale), float(theta[1])


def top_probability(fit: tuple[float, float], score: np.ndarray) -> np.ndarray:
    """The calibrated probability (n,) that each prediction is right, ``sigmoid(a |score| + b)``
    for ``fit = (a, b)`` of :func:`platt_fit`, kept inside ``[1e-6, 1 - 1e-6]``; ``score``: (n,)."""
    a, b = fit
    return np.clip(_sigmoid(a * np.abs(np.asarray(score, dtype=float)) + b), 1e-6, 1 - 1e-6)


def spread(pred: np.ndarray, top: np.ndarray, n_classes: int) -> np.ndarray:
    """Class probabilities (n, k): the predicted code ``pred`` (n,) gets ``top`` (n,), the other
    classes share ``1 - top`` equally (a binary project: ``top`` and ``1 - top``)."""
    pred = np.asarray(pred, dtype=np.int64)
    top = np.asarray(top, dtype=float)
    probs = np.repeat(((1.0 - top) / max(1, n_classes - 1))[:, None], n_classes, axis=1)
    probs[np.arange(len(pred)), pred] = top
    return probs


def calibrated_probabilities(pred: np.ndarray, score: np.ndarray, given: np.ndarray,
                             n_classes: int, weight: np.ndarray | None = None) -> np.ndarray:
    """Out-of-sample class probabilities (n, k) from the predicted codes ``pred`` (n,), their
    scores (n,) and the given labels ``given`` (n,) (module docstring, step 1); ``weight``: as in
    :func:`platt_fit`."""
    pred = np.asarray(pred, dtype=np.int64)
    fit = platt_fit(np.abs(np.asarray(score, dtype=float)), pred == np.asarray(given), weight)
    return spread(pred, top_probability(fit, score), n_classes)


def symmetric_confusion(n_classes: int, accuracy: float) -> np.ndarray:
    """``pi[j, l]``: ``accuracy`` on the diagonal, the rest spread equally over the other classes."""
    pi = np.full((n_classes, n_classes), (1.0 - accuracy) / max(1, n_classes - 1))
    np.fill_diagonal(pi, accuracy)
    return pi


def suspicion(probs: np.ndarray, given: np.ndarray, annotator: np.ndarray | None = None,
              confusions: np.ndarray | None = None, default_accuracy: float = 0.9) -> np.ndarray:
    """The posterior probability that each given label is wrong (n,) (module docstring, step 3).

    probs: (n, k) out-of-sample class probabilities; given: (n,) the given class codes;
    annotator: (n,) an index into ``confusions`` (a, k, k), or -1 (or None for all) for the
    symmetric confusion of ``default_accuracy``."""
    probs = np.asarray(probs, dtype=float)
    n, k = probs.shape
    given = np.asarray(given, dtype=np.int64)
    pi = np.repeat(symmetric_confusion(k, default_accuracy)[None], n, axis=0)
    if annotator is not None and confusions is not None:
        who = np.asarray(annotator, dtype=np.int64)
        known = who >= 0
        pi[known] = np.asarray(confusions)[who[known]]
    said = pi[np.arange(n), :, given]  # (n, k): P(says the given class | true j)
    joint = probs * said
    right = joint[np.arange(n), given] / np.maximum(joint.sum(axis=1), 1e-300)
    return 1.0 - right


def top_fraction(scores: np.ndarray, fraction: float) -> np.ndarray:
    """Indices of the ``ceil(fraction * n)`` highest ``scores`` (ties: the earlier first)."""
    scores = np.asarray(scores, dtype=float)
    m = int(np.ceil(fraction * len(scores)))
    return np.argsort(-scores, kind="stable")[:m]
