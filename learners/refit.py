"""The final model as a batch fit: a softmax regression on the labelled items, checked against
the online learner by cross-validation on the labels (docs/algorithms/refit.md).

An online learner makes one pass over its labels, in the order they came; at the end of a
stream (a replay, an export) every label is at hand and a batch fit can use them all together.
:func:`refit` fits an L2-regularised multinomial logistic regression (binary tasks: the same
with two classes) by L-BFGS (scipy) on the labelled items. Two weightings of the labels are
candidates (:data:`WEIGHTINGS`): ``"1/q"``, each label's importance weight (q: the query
probability it was drawn with, as logged; normalised to mean 1 and clipped at
:data:`MAX_WEIGHT` times its median, so that a handful of labels drawn at tiny q cannot make the
fit a fit of those few), which targets the stream's distribution rather than the queried
items' (they over-represent the hard cases near the boundary); and ``"flat"`` (every label 1),
which has less variance. Measured on held-out items, flat fits did as well or better on SMS,
AG News and MNIST (docs/algorithms/refit.md), so the check chooses.

The check: k-fold cross-validation over the labels (:data:`FOLDS` folds, a seeded split). For
each fold, the batch fit on the other folds (each weighting x each L2 strength of
:data:`L2_GRID`) and a fresh online learner taught the other folds' labels in their order
(``learn``, as the app's rebuild does) predict the fold's items; each is scored by its
importance-weighted accuracy on them (``sum w 1[right] / sum w`` with w = 1/q, the
self-normalised estimate of the accuracy on the stream, whichever weighting the fit used). The
candidate with the best estimate is refitted on every label; the batch model is chosen when its
estimate beats the online learner's (ties keep the online learner: it is the one the app ran).

Self-training, when the caller passes the stream's items without a label (``unlabelled``: the
replay's unqueried items, the app's model-decided items; a seeded sample of at most
:data:`UNLABELLED_PER_LABEL` per label): the best candidate is also tried with one round of
pseudo-labels (:func:`self_trained`): its fit labels each unlabelled item with its most probable
class, weighted by that probability, the pseudo-labels scaled to weigh together what the labels
weigh, and the same fit is run on both. Why: a few hundred labels of hashed n-grams leave most
of the columns the stream uses without a weight; the unlabelled items carry them, and their
pseudo-labels extend the fit to them (AG News at 10%: +0.6 to +1.1 points on held-out items,
docs/algorithms/refit.md). The unlabelled items are a sample of the stream, so they need no 1/q.
Before an item's class is taken, its probabilities are averaged with those of its
:data:`NEIGHBOURS` nearest items (:class:`Neighbourhood`: cosine of the rows, among the labels
the fit saw, one-hot, and the other unlabelled items), half and half (:data:`OWN_WEIGHT`): items
that look alike mostly share a class, and the neighbours correct the fit where it is unsure (AG
News: pseudo-labels 1-1.5 points more often right and +0.3 point on held-out items at 10% and 20%;
digits up to +1.3; SMS, MNIST level; docs/algorithms/refit.md).
The check scores the self-trained fit on the same folds (a fold's labels never enter it) and
keeps it only when it beats the labels-only fit by more than one standard error of their paired
difference: where pseudo-labels do not help, the estimate's noise alone would otherwise pick
them about half the time (they cost 0.1-0.4 points on held-out URLs).

Neighbours at prediction: the final model may predict as the pseudo-labels are smoothed, its
probabilities averaged with the class distribution of each row's nearest rows among the labels
and the unlabelled items (:class:`LinearModel` ``memory``, carried by the model file). The check
scores that on the same folds and keeps it by the same one-standard-error rule; it is tried only
when labels and unlabelled items are at most :data:`MEMORY_MAX_ROWS` rows (docs/algorithms/refit.md).

:class:`LinearModel` is plain arrays (no pickle): the columns the labels use, their weights and
the intercepts (and, with neighbours, the memory's rows as CSR arrays), so a 2^19-column text
model with 1,000 labels stores tens of thousands of weights, not millions.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Sequence
from dataclasses import dataclass, field
from functools import partial
from typing import Any

import numpy as np
import scipy.sparse as sp

from .base import Learner, as_csr

#: folds of the cross-validation over the labels
FOLDS = 5
#: L2 strengths tried (weights of mean 1, so 1.0 is scikit-learn's C = 1); 1.0 and above lost
#: 0.5-3 points on held-out items of every stream measured (docs/algorithms/refit.md)
L2_GRID = (0.01, 0.1)
#: the weightings of the labels tried (module docstring)
WEIGHTINGS = ("1/q", "flat")
#: importance weights are clipped at this multiple of their median (module docstring)
MAX_WEIGHT = 20.0
#: fewer labels than this, or a class missing from them: no batch fit (the online model stays)
MIN_LABELS = 20
MAX_ITER = 300
#: L-BFGS iterations of a self-trained fit, from the labels-only fit (:func:`self_trained`): it
#: moved no held-out accuracy by more than 0.05 point between 25 and 300 iterations on AG News and
#: URLs in 4 classes (docs/algorithms/refit.md), at a third of the cost of a converged fit
SELF_TRAINING_MAX_ITER = 50
FORMAT = "softmax-regression/1"
#: the same with neighbours at prediction (a memory of rows); readers of FORMAT alone refuse it
FORMAT_MEMORY = "softmax-regression+neighbours/1"
#: at most this many unlabelled items per label (a seeded sample) are pseudo-labelled: they bound
#: a self-trained fit's rows to 11 times a labels-only fit's (a 10% budget passes about 9)
UNLABELLED_PER_LABEL = 10
#: an unlabelled item's pseudo-label averages its probabilities with its nearest items' (module
#: docstring); 5, 10 and 20 gave the same held-out accuracy on AG News within 0.2 point
NEIGHBOURS = 10
#: the share of the item's own probabilities in that average
OWN_WEIGHT = 0.5
#: entries of a block of the similarity matrix computed at once (32 MB of float64)
SIMILARITY_BLOCK = 4_000_000
#: the neighbours at prediction (:class:`LinearModel` ``memory``) are tried only when the labels
#: and unlabelled items together are at most this many rows: the model file carries them (AG News
#: rows, a 384-d embedding and ~60 n-grams, about 3.7 kB each: 37 MB at the cap)
MEMORY_MAX_ROWS = 10_000


def steps(unlabelled: bool) -> int:
    """Steps :func:`refit` reports to its ``progress``: per fold the online learner and every
    candidate (and, with unlabelled items, the best one self-trained), then the neighbourhood, per
    fold the neighbours at prediction, then the final fit (and its self-trained fit)."""
    extra = 1 if unlabelled else 0
    return FOLDS * (2 + len(WEIGHTINGS) * len(L2_GRID) + extra) + 2 + extra


#: :func:`steps` of a refit without unlabelled items
STEPS = steps(False)


@dataclass
class LinearModel:
    """A batch-fitted softmax regression over ``n_features`` columns, with or without neighbours
    at prediction.

    classes: the class values, in the learner's order. columns: int64 (m,) the feature columns
    with a weight (every other column weighs 0). coef: float (k, m). intercept: float (k,).
    Linear scores of a row x: ``coef @ x[columns] + intercept`` (k,) (:meth:`linear_scores`).
    memory / memory_probs: None, or the rows the fit saw (CSR (r, n_features), each of L2 norm 1)
    and a class distribution (r, k) for each (a label: its class, one-hot; an unlabelled item: the
    fit's probabilities); then a row's class probabilities are the fit's, averaged with the mean
    distribution of its :data:`NEIGHBOURS` nearest memory rows by cosine (:func:`smoothed_mean`),
    and its class scores their logarithm. Prediction: the argmax of the class scores (ties: first
    class). For two classes :meth:`decision_function` gives the margin of ``classes[1]``, as
    binary learners do.
    """

    classes: list[Hashable]
    n_features: int
    columns: np.ndarray
    coef: np.ndarray
    intercept: np.ndarray
    l2: float = 1.0
    memory: sp.csr_matrix | None = None
    memory_probs: np.ndarray | None = None

    def linear_scores(self, X: Any) -> np.ndarray:
        """The fit's own class scores (n, k) of a batch (2-D dense, sparse, or one 1-D row)."""
        M = as_csr(X, self.n_features)[:, self.columns]
        return np.asarray(M @ self.coef.T, dtype=float) + self.intercept

    def class_scores(self, X: Any) -> np.ndarray:
        """Class scores (n, k) of a batch: :meth:`linear_scores` without a memory, else the log of
        the probabilities smoothed over the nearest memory rows (class docstring)."""
        if self.memory is None or self.memory_probs is None:
            return self.linear_scores(X)
        rows = as_csr(X, self.n_features)
        P = softmax(self.linear_scores(rows))
        near = nearest(_unit_rows(rows), self.memory, NEIGHBOURS)
        P = smoothed_mean(P, self.memory_probs[near].mean(axis=1), np.ones(len(P), dtype=bool))
        return np.log(np.maximum(P, np.finfo(float).tiny))

    def decision_function(self, X: Any) -> np.ndarray:
        """Margins (n,) for two classes (score of ``classes[1]`` minus ``classes[0]``), class
        scores (n, k) otherwise."""
        S = self.class_scores(X)
        return S[:, 1] - S[:, 0] if len(self.classes) == 2 else S

    def predict_codes(self, X: Any) -> np.ndarray:
        """Predicted class codes (n,) (indices into ``classes``)."""
        return np.argmax(self.class_scores(X), axis=1)

    def predict(self, X: Any) -> np.ndarray:
        """Predicted class values (object array of length n)."""
        codes = self.predict_codes(X)
        out = np.empty(len(codes), dtype=object)
        out[:] = [self.classes[c] for c in codes]
        return out

    def get_state(self) -> dict[str, Any]:
        """``{"meta": JSON-able, "arrays": {...}}``, as a learner's state (``state_to_bytes``);
        a model with a memory is format :data:`FORMAT_MEMORY` (its rows as float32 CSR arrays)."""
        meta = {"format": FORMAT, "classes": list(self.classes), "n_features": self.n_features,
                "l2": self.l2}
        arrays = {"columns": self.columns, "coef": self.coef, "intercept": self.intercept}
        if self.memory is not None and self.memory_probs is not None:
            meta["format"] = FORMAT_MEMORY
            arrays.update(memory_data=self.memory.data.astype(np.float32),
                          memory_indices=self.memory.indices.astype(np.int32),
                          memory_indptr=self.memory.indptr.astype(np.int64),
                          memory_probs=self.memory_probs.astype(np.float32))
        return {"meta": meta, "arrays": arrays}

    @classmethod
    def from_state(cls, state: dict[str, Any]) -> LinearModel:
        """Inverse of :meth:`get_state`; ValueError for another format or shapes that disagree."""
        meta, arrays = state["meta"], state["arrays"]
        if meta.get("format") not in (FORMAT, FORMAT_MEMORY):
            raise ValueError(f"not a {FORMAT} model: {meta.get('format')!r}")
        columns = np.asarray(arrays["columns"], dtype=np.int64)
        coef = np.asarray(arrays["coef"], dtype=float)
        intercept = np.asarray(arrays["intercept"], dtype=float)
        k, n = len(meta["classes"]), int(meta["n_features"])
        if coef.shape != (k, len(columns)) or intercept.shape != (k,) or (
                len(columns) and (columns.min() < 0 or columns.max() >= n)):
            raise ValueError("the model's arrays do not fit its classes and width")
        memory = probs = None
        if meta["format"] == FORMAT_MEMORY:
            probs = np.asarray(arrays["memory_probs"], dtype=float)
            indptr = np.asarray(arrays["memory_indptr"], dtype=np.int64)
            indices = np.asarray(arrays["memory_indices"], dtype=np.int32)
            data = np.asarray(arrays["memory_data"], dtype=np.float32)
            if (probs.ndim != 2 or probs.shape[1] != k or not len(probs)
                    or len(indptr) != len(probs) + 1 or indptr[0] != 0 or np.any(np.diff(indptr) < 0)
                    or indptr[-1] != len(indices) or len(data) != len(indices)
                    or (len(indices) and (indices.min() < 0 or indices.max() >= n))):
                raise ValueError("the model's memory does not fit its classes and width")
            memory = sp.csr_matrix((data, indices, indptr), shape=(len(probs), n))
        return cls(list(meta["classes"]), n, columns, coef, intercept, float(meta.get("l2", 1.0)),
                   memory, probs)


def importance_weights(query_probs: np.ndarray) -> np.ndarray:
    """``1/q`` clipped at :data:`MAX_WEIGHT` times its median, normalised to mean 1.

    query_probs: float (n,) in (0, 1], the probabilities the labelled items were queried with.
    """
    q = np.asarray(query_probs, dtype=float)
    if q.size == 0:
        return q
    if not np.all((q > 0) & (q <= 1)):
        raise ValueError("query probabilities of labelled items must be in (0, 1]")
    w = 1.0 / q
    w = np.minimum(w, MAX_WEIGHT * float(np.median(w)))
    return w / w.mean()


def _objective(theta: np.ndarray, X: sp.csr_matrix, Y: np.ndarray, w: np.ndarray,
               l2: float) -> tuple[float, np.ndarray]:
    """Weighted softmax cross-entropy + (l2/2)||coef||^2 and its gradient (intercept unpenalised)."""
    m, k = X.shape[1], Y.shape[1]
    coef = theta[:m * k].reshape(m, k)
    b = theta[m * k:]
    Z = np.asarray(X @ coef) + b
    Z -= Z.max(axis=1, keepdims=True)
    expZ = np.exp(Z)
    norm = expZ.sum(axis=1, keepdims=True)
    penalty = 0.5 * l2 * float(coef.ravel() @ coef.ravel())
    loss = float(w @ (np.log(norm[:, 0]) - (Z * Y).sum(axis=1))) + penalty
    G = (expZ / norm - Y) * w[:, None]
    grad = np.concatenate([(np.asarray(X.T @ G) + l2 * coef).ravel(), G.sum(axis=0)])
    return loss, grad


def fit_softmax(X: Any, codes: np.ndarray, weights: np.ndarray, classes: Sequence[Hashable],
                l2: float = 1.0, start: LinearModel | None = None, max_iter: int = MAX_ITER) -> LinearModel:
    """Fit a :class:`LinearModel` on rows X (n, d) with class codes (n,) and sample weights (n,),
    by at most ``max_iter`` L-BFGS iterations.

    Only the columns some row uses get a weight (the others' gradient is 0: they stay at 0).
    ``start`` (a model whose columns are among these, e.g. a fit on a subset of the rows)
    warm-starts L-BFGS: its weights on its columns, 0 on the others.
    """
    M = as_csr(X, X.shape[1])
    M.sum_duplicates()
    columns = np.unique(M.indices).astype(np.int64)
    sub = M[:, columns].tocsr()
    k = len(classes)
    Y = np.zeros((M.shape[0], k))
    Y[np.arange(M.shape[0]), np.asarray(codes, dtype=np.int64)] = 1.0
    theta0 = np.zeros(len(columns) * k + k)
    if start is not None:
        at = np.searchsorted(columns, start.columns)
        if np.array_equal(columns[np.minimum(at, len(columns) - 1)], start.columns):
            coef0 = np.zeros((len(columns), k))
            coef0[at] = start.coef.T
            theta0 = np.concatenate([coef0.ravel(), start.intercept])
    # lazy: scipy.optimize costs ~0.13 s and 20 MiB at import, which a replay without --refit
    # (and the replay's start) should not pay (docs/performance.md)
    from scipy.optimize import minimize
    from threadpoolctl import threadpool_limits

    # one BLAS thread: L-BFGS-B's small vector products waited on idle BLAS threads for 10x the
    # CPU time they took on a busy 2-core machine
    with threadpool_limits(1):
        res = minimize(_objective, theta0, args=(sub, Y, np.asarray(weights, dtype=float), float(l2)),
                       jac=True, method="L-BFGS-B", options={"maxiter": max_iter})
    m = len(columns)
    coef = res.x[:m * k].reshape(m, k).T.copy()
    return LinearModel(list(classes), M.shape[1], columns, coef, res.x[m * k:].copy(), float(l2))


def _unit_rows(M: sp.csr_matrix) -> sp.csr_matrix:
    """M with every non-empty row scaled to L2 norm 1."""
    norms = np.sqrt(np.asarray(M.multiply(M).sum(axis=1)).ravel())
    norms[norms == 0] = 1.0
    return sp.csr_matrix(sp.diags(1.0 / norms) @ M)


def softmax(S: np.ndarray) -> np.ndarray:
    """Row-wise softmax of class scores (n, k): probabilities (n, k)."""
    P = np.exp(S - S.max(axis=1, keepdims=True))
    return P / P.sum(axis=1, keepdims=True)


def nearest(queries: sp.csr_matrix, rows: sp.csr_matrix, k: int, offset: int | None = None) -> np.ndarray:
    """int64 (m, k'): for each of the ``queries`` (m, d), the indices of its k' = min(k, r - (offset
    is not None)) nearest ``rows`` (r, d) by dot product (cosine for rows of norm 1), nearest
    first. ``offset``: the queries are rows ``offset ..`` of ``rows`` themselves, and none is its
    own neighbour. Columns that more than half the rows use are multiplied as a dense float32 block
    (BLAS), the rest as sparse products; :data:`SIMILARITY_BLOCK` similarities at a time."""
    r = rows.shape[0]
    k = min(k, r - (offset is not None))
    dense = np.flatnonzero(np.bincount(rows.indices, minlength=rows.shape[1]) > r / 2)
    sparse = np.setdiff1d(np.arange(rows.shape[1]), dense)
    D = rows[:, dense].toarray().astype(np.float32)
    Dq = queries[:, dense].toarray().astype(np.float32)
    S_rows = rows[:, sparse].T.tocsc()
    S_q = queries[:, sparse].tocsr()
    index = np.empty((queries.shape[0], k), dtype=np.int64)
    step = max(1, SIMILARITY_BLOCK // max(r, 1))
    for lo in range(0, queries.shape[0], step):
        hi = min(queries.shape[0], lo + step)
        sim = Dq[lo:hi] @ D.T + (S_q[lo:hi] @ S_rows).toarray()
        if offset is not None:
            sim[np.arange(hi - lo), np.arange(offset + lo, offset + hi)] = -np.inf
        top = np.argpartition(-sim, min(k, r - 1), axis=1)[:, :k]
        order = np.argsort(-np.take_along_axis(sim, top, axis=1), axis=1, kind="stable")
        index[lo:hi] = np.take_along_axis(top, order, axis=1)
    return index


def smoothed_mean(P: np.ndarray, mean: np.ndarray, has_neighbours: np.ndarray) -> np.ndarray:
    """The neighbour smoothing, one rule for pseudo-labels and predictions: :data:`OWN_WEIGHT` x
    P (a fit's probabilities, (m, c)) plus the rest x ``mean`` (m, c), the mean class distribution
    of each row's neighbours; rows where ``has_neighbours`` (m,) is False keep P."""
    return np.where(np.asarray(has_neighbours).reshape(-1, 1), OWN_WEIGHT * P + (1.0 - OWN_WEIGHT) * mean, P)


@dataclass
class Neighbourhood:
    """Each item's nearest items among the labelled and unlabelled ones.

    index: int64 (n + u, K), row i: the K rows nearest stacked row i by cosine, nearest first, as
    indices into the stacked rows ``[labelled (n); unlabelled (u)]`` (never row i itself).
    n_labelled: n.
    """

    index: np.ndarray
    n_labelled: int

    @classmethod
    def of(cls, labelled: sp.csr_matrix, unlabelled: sp.csr_matrix, k: int) -> Neighbourhood:
        """The ``k`` nearest rows of each row (k < n + u), by :func:`nearest`."""
        A = _unit_rows(sp.vstack([labelled, unlabelled], format="csr"))
        return cls(nearest(A, A, k, offset=0), labelled.shape[0])

    def smoothed(self, P: np.ndarray, codes: np.ndarray, known: np.ndarray,
                 rows: np.ndarray | None = None, own: np.ndarray | None = None) -> np.ndarray:
        """Probabilities smoothed over neighbours (:func:`smoothed_mean`) of the stacked ``rows``
        (indices; default: the unlabelled ones, n .. n + u - 1) whose own probabilities are
        ``own`` (len(rows), c; default P). P: the fit's probabilities of the unlabelled items (u,
        c). A neighbour counts by its one-hot class (a labelled row: ``codes`` (n,), usable where
        ``known`` (n,) bool, the labels the fit saw) or its row of P (an unlabelled one); the first
        :data:`NEIGHBOURS` usable ones count, and a row with none keeps its own."""
        index = self.index[self.n_labelled:] if rows is None else self.index[rows]
        table = np.vstack([np.eye(P.shape[1])[codes], P])
        usable = np.concatenate([known, np.ones(P.shape[0], dtype=bool)])[index]
        usable &= np.cumsum(usable, axis=1) <= NEIGHBOURS
        count = usable.sum(axis=1)
        mean = np.einsum("uk,ukc->uc", usable.astype(float), table[index]) / np.maximum(count, 1)[:, None]
        return smoothed_mean(P if own is None else own, mean, count > 0)


def self_trained(model: LinearModel, X: sp.csr_matrix, codes: np.ndarray, weights: np.ndarray,
                 unlabelled: sp.csr_matrix,
                 smooth: Callable[[np.ndarray], np.ndarray] | None = None) -> LinearModel:
    """One round of self-training (module docstring): ``model``, fitted on rows X (n, d) with class
    codes (n,) and sample weights (n,), labels each unlabelled row (u, d) with its most probable
    class (of its probabilities (u, c) passed through ``smooth`` when given, e.g.
    :meth:`Neighbourhood.smoothed`), weighted by that probability times ``sum(weights) /
    sum(probabilities)`` (the pseudo-labels together weigh what the labels weigh); returns the
    same fit (``model.l2``) on labels and pseudo-labels, warm-started from ``model`` and stopped
    after :data:`SELF_TRAINING_MAX_ITER` iterations."""
    P = softmax(model.class_scores(unlabelled))
    if smooth is not None:
        P = smooth(P)
    confidence = P.max(axis=1)
    pseudo_weights = confidence * (float(np.sum(weights)) / float(confidence.sum()))
    return fit_softmax(sp.vstack([X, unlabelled], format="csr"), np.concatenate([codes, P.argmax(axis=1)]),
                       np.concatenate([weights, pseudo_weights]), model.classes, model.l2, start=model,
                       max_iter=SELF_TRAINING_MAX_ITER)


def paired_gain(better: np.ndarray, base: np.ndarray, weights: np.ndarray) -> tuple[float, float]:
    """``(gain, standard error)`` of one model's importance-weighted accuracy over another's on the
    same items: ``better`` / ``base`` are 0/1 (n,) per item (right or not), ``weights`` (n,) the
    items' 1/q; gain = ``sum w (better - base) / sum w``, its standard error by the delta method
    for a ratio estimator, ``sqrt(sum (w (better - base) - w gain)^2) / sum w``."""
    total = float(weights.sum())
    d = weights * (np.asarray(better, float) - np.asarray(base, float))
    gain = float(d.sum()) / total
    return gain, float(np.sqrt(np.sum((d - weights * gain) ** 2))) / total


def weighted_accuracy(pred: np.ndarray, truth: np.ndarray, weights: np.ndarray) -> float:
    """``sum w 1[pred == truth] / sum w`` (the self-normalised importance-weighted accuracy)."""
    return float(weights @ (np.asarray(pred) == np.asarray(truth)) / weights.sum())


@dataclass
class RefitResult:
    """The outcome of :func:`refit`.

    model: the batch fit on every label with the chosen weighting and strength (None when there
        were too few labels to try).
    chosen: ``"refit"`` when ``model`` beat the online learner in the check, else ``"online"``.
    online_cv / refit_cv: importance-weighted cross-validated accuracy of each (None untried).
    check: the JSON-able record of the check for a model card (method, folds, labels, l2, ...).
    """

    model: LinearModel | None
    chosen: str
    online_cv: float | None
    refit_cv: float | None
    check: dict[str, Any] = field(default_factory=dict)


def _teach(fresh: Callable[[], Learner], X: sp.csr_matrix, codes: np.ndarray) -> Learner:
    """A fresh learner taught the rows of X in order (``learn_row``, no decisions)."""
    learner = fresh()
    for i in range(X.shape[0]):
        a, b = X.indptr[i], X.indptr[i + 1]
        learner.learn_row(X.indices[a:b].astype(np.int32, copy=False), X.data[a:b], int(codes[i]))
    return learner


def _learner_codes(learner: Learner, X: sp.csr_matrix) -> np.ndarray:
    return np.asarray(learner.decide_block(X).codes, dtype=np.int64)


def refit(fresh: Callable[[], Learner], X: Any, codes: np.ndarray, query_probs: np.ndarray,
          seed: int = 0, progress: Callable[[int], None] | None = None,
          unlabelled: Any | None = None) -> RefitResult:
    """Batch-fit the labelled items and check the fit against the online learner (module docstring).

    fresh: builds the untrained online learner (same algorithm, parameters and start as the one
        in use), for the cross-validation. X: rows (n, d) of the labelled items in label order;
        codes: int (n,) their class codes; query_probs: float (n,) in (0, 1], their query
        probabilities. seed: the fold split's (and, apart, the sample of unlabelled items').
        progress: called with the steps done so far (of :func:`steps`) after each one (not
        called when the fit is skipped); an exception it raises stops the fit (a cancelled job).
        unlabelled: rows (u, d) of the stream's items without a label, or None; when given (u >
        0), the best candidate is also tried self-trained on them (:func:`self_trained`; at most
        :data:`UNLABELLED_PER_LABEL` per label, a seeded sample).
    """
    done = 0

    def step() -> None:
        nonlocal done
        done += 1
        if progress is not None:
            progress(done)

    M = as_csr(X, X.shape[1])
    codes = np.asarray(codes, dtype=np.int64)
    n, classes = M.shape[0], list(fresh().classes)
    w = importance_weights(query_probs)
    fit_weights = {"1/q": w, "flat": np.ones(n)}
    U = None if unlabelled is None or unlabelled.shape[0] == 0 else as_csr(unlabelled, M.shape[1])
    if U is not None and U.shape[0] > UNLABELLED_PER_LABEL * n:
        sample = np.random.default_rng([seed, 1]).choice(U.shape[0], UNLABELLED_PER_LABEL * n, replace=False)
        U = U[np.sort(sample)]
    check: dict[str, Any] = {"method": f"{FOLDS}-fold cross-validation on the labels, accuracy "
                             "weighted by 1/q (q: each label's query probability)",
                             "labels": int(n), "folds": FOLDS, "max_weight": MAX_WEIGHT,
                             "unlabelled": 0 if U is None else int(U.shape[0])}
    missing = sorted(set(range(len(classes))) - set(codes.tolist()))
    if n < max(MIN_LABELS, FOLDS) or missing:
        check["skipped"] = (f"{n} labels (at least {MIN_LABELS} needed)" if not missing else
                            f"no label of class(es) {[classes[c] for c in missing]}")
        return RefitResult(None, "online", None, None, check)
    fold = np.random.default_rng(seed).permutation(n) % FOLDS
    online_right = np.zeros(n)
    candidates = [(weighting, l2) for weighting in WEIGHTINGS for l2 in L2_GRID]
    refit_right = {c: np.zeros(n) for c in candidates}
    fold_models: dict[tuple[tuple[str, float], int], LinearModel] = {}
    for f in range(FOLDS):
        train, test = np.flatnonzero(fold != f), np.flatnonzero(fold == f)
        online_right[test] = _learner_codes(_teach(fresh, M[train], codes[train]), M[test]) == codes[test]
        step()
        for weighting in WEIGHTINGS:
            start = None
            for l2 in sorted(L2_GRID, reverse=True):  # strongest first: each warm-starts the next
                start = fit_softmax(M[train], codes[train], fit_weights[weighting][train], classes, l2, start)
                fold_models[((weighting, l2), f)] = start
                refit_right[(weighting, l2)][test] = start.predict_codes(M[test]) == codes[test]
                step()
    online_cv = float(w @ online_right / w.sum())
    scores = {c: float(w @ right / w.sum()) for c, right in refit_right.items()}
    best = max(candidates, key=lambda c: (scores[c], c[1]))  # ties: the stronger L2
    best_right, pseudo = refit_right[best], False
    Ue = U if U is not None else sp.csr_matrix((0, M.shape[1]))
    with_memory = n + Ue.shape[0] <= MEMORY_MAX_ROWS
    # twice the neighbours needed: a fold's own labels are skipped (Neighbourhood.smoothed)
    hood = Neighbourhood.of(M, Ue, 2 * NEIGHBOURS) if U is not None or with_memory else None
    step()
    fold_fits = [fold_models[(best, f)] for f in range(FOLDS)]
    if U is not None and hood is not None:
        pseudo_right, trained = np.zeros(n), []
        for f in range(FOLDS):
            train, test = np.flatnonzero(fold != f), np.flatnonzero(fold == f)
            trained.append(self_trained(fold_fits[f], M[train], codes[train], fit_weights[best[0]][train], U,
                                        partial(hood.smoothed, codes=codes, known=fold != f)))
            pseudo_right[test] = trained[f].predict_codes(M[test]) == codes[test]
            step()
        gain, se = paired_gain(pseudo_right, refit_right[best], w)
        pseudo = gain > se
        if pseudo:
            best_right, fold_fits = pseudo_right, trained
        check.update(self_training={"gain": gain, "standard_error": se, "used": pseudo,
                                    "neighbours": NEIGHBOURS})
    del fold_models
    if with_memory and hood is not None:
        memory_right = _with_neighbours_right(hood, fold, fold_fits, M, codes, Ue, step)
        gain, se = paired_gain(memory_right, best_right, w)
        with_memory = gain > se
        if with_memory:
            best_right = memory_right
        check.update(neighbours_at_prediction={"gain": gain, "standard_error": se, "used": with_memory,
                                               "neighbours": NEIGHBOURS, "own_weight": OWN_WEIGHT,
                                               "memory_rows": int(n + Ue.shape[0])})
    else:
        for _ in range(FOLDS):
            step()  # counted when skipped too: the total is steps()
        check.update(neighbours_at_prediction={"used": False, "skipped": (
            f"{n + Ue.shape[0]} labels and unlabelled items, more than the {MEMORY_MAX_ROWS} rows a model "
            "file carries")})
    best_score = float(w @ best_right / w.sum())
    model = fit_softmax(M, codes, fit_weights[best[0]], classes, best[1])
    step()
    if U is not None:
        if pseudo:
            assert hood is not None
            model = self_trained(model, M, codes, fit_weights[best[0]], U,
                                 partial(hood.smoothed, codes=codes, known=np.ones(n, dtype=bool)))
        step()  # counted when skipped too: the total is steps(True)
    if with_memory:
        model.memory = _unit_rows(sp.vstack([M, Ue], format="csr")).astype(np.float32)
        model.memory_probs = np.vstack([np.eye(len(classes))[codes], softmax(model.linear_scores(Ue))])
    chosen = "refit" if best_score > online_cv else "online"
    check.update(online_accuracy=online_cv, refit_accuracy=best_score, weighting=best[0], l2=best[1],
                 pseudo_labels=pseudo,
                 refit_accuracy_by_candidate={f"{c[0]}, l2 {c[1]:g}": v for c, v in scores.items()},
                 chosen=chosen)
    return RefitResult(model, chosen, online_cv, best_score, check)


def _with_neighbours_right(hood: Neighbourhood, fold: np.ndarray, fold_fits: list[LinearModel],
                           M: sp.csr_matrix, codes: np.ndarray, unlabelled: sp.csr_matrix,
                           step: Callable[[], None]) -> np.ndarray:
    """0/1 (n,): whether each label's class is predicted with neighbours, as an exported model with
    a memory predicts (:class:`LinearModel`): per fold f, ``fold_fits[f]`` (fitted without the
    fold's labels) smoothed over each of the fold's rows' nearest rows among the other folds' labels
    (``codes`` (n,)) and the ``unlabelled`` rows (u, d), those weighing by the fit's probabilities."""
    right = np.zeros(len(codes))
    for f, model in enumerate(fold_fits):
        test = np.flatnonzero(fold == f)
        P = softmax(model.linear_scores(unlabelled))
        blended = hood.smoothed(P, codes, fold != f, rows=test, own=softmax(model.linear_scores(M[test])))
        right[test] = blended.argmax(axis=1) == codes[test]
        step()
    return right
