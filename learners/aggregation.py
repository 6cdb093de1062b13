"""Aggregating several annotators' labels per item (docs/teams.md): Dawid-Skene EM. Pure numpy,
no Django. (The majority vote it is measured against: :mod:`learners.evaluation.majority`.)

Opinions are integer triples ``(item, annotator, class)`` with ``0 <= item < n_items``,
``0 <= annotator < n_annotators`` and ``0 <= class < n_classes`` (callers map their own ids).

Dawid & Skene (1979), "Maximum Likelihood Estimation of Observer Error-Rates Using the EM
Algorithm", Applied Statistics 28(1): each annotator ``a`` has a confusion matrix
``pi[a, j, l]`` = P(a says l | true class j), classes have priors ``p[j]``, and EM alternates

* E-step: ``T[i, j]`` proportional to ``p[j] * prod over a's opinions on i of pi[a, j, l]``;
* M-step: ``p[j] = mean_i T[i, j]``, ``pi[a, j, l]`` = sum over a's opinions ``(i, l)`` of
  ``T[i, j]``, normalised over ``l``;

starting, as in the paper, from ``T`` = each item's vote proportions, until no posterior moves by
``tol`` or more in an iteration (the paper iterates "until convergence" without a rule).

Deviation (tagged below, listed in docs/teams.md): the M-step adds ``smoothing`` (default 0.01)
pseudo-counts to every confusion cell and prior. The paper's maximum-likelihood estimates put
exact zeros in the confusion matrices of annotators with few opinions (log 0 in the E-step, and
an item then can never take a class that one annotator never said for it); a hundredth of an
opinion per cell avoids it and changes nothing visible once annotators have tens of opinions.

No well-kept library was taken: the one maintained package with Dawid-Skene (``crowd-kit``)
pulls pandas, pyarrow, nltk and transformers into the install for these forty lines.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp


@dataclass(frozen=True)
class DawidSkene:
    """A Dawid-Skene fit. ``posterior[i, j]`` = P(item i is class j); ``confusion[a, j, l]`` =
    P(annotator a says l | class j); ``priors[j]``; ``n_iter`` EM iterations run."""

    posterior: np.ndarray
    confusion: np.ndarray
    priors: np.ndarray
    n_iter: int

    def labels(self) -> np.ndarray:
        """The most probable class of each item (ties: the lowest class)."""
        return np.argmax(self.posterior, axis=1)

    def reliability(self) -> np.ndarray:
        """Each annotator's estimated accuracy: sum over j of ``priors[j] * confusion[a, j, j]``
        (the probability the annotator gives the true class of a random item): the weight of
        their votes falls with it."""
        diag = np.einsum("ajj->aj", self.confusion)
        return diag @ self.priors


def check_opinions(opinions: np.ndarray, n_items: int, n_annotators: int, n_classes: int) -> np.ndarray:
    """The opinions as an ``(n, 3)`` int array; ValueError for an index out of range."""
    ops = np.asarray(opinions, dtype=np.int64).reshape(-1, 3)
    for col, size, what in ((0, n_items, "item"), (1, n_annotators, "annotator"), (2, n_classes, "class")):
        if ops.size and (ops[:, col].min() < 0 or ops[:, col].max() >= size):
            raise ValueError(f"{what} index out of range [0, {size})")
    return ops


def dawid_skene(opinions: np.ndarray, n_items: int, n_annotators: int, n_classes: int, *,
                max_iter: int = 100, tol: float = 1e-4, smoothing: float = 0.01) -> DawidSkene:
    """Fit Dawid-Skene by EM (module docstring) until no posterior moves by ``tol`` or more in an
    iteration (or ``max_iter`` iterations). Items without an opinion keep the priors."""
    ops = check_opinions(opinions, n_items, n_annotators, n_classes)
    items, annotators, said = ops[:, 0], ops[:, 1], ops[:, 2]
    # item x opinion incidence: sums over an item's opinions become one sparse product
    incidence = sp.csr_matrix((np.ones(len(ops)), (items, np.arange(len(ops)))), shape=(n_items, len(ops)))
    said_hot = np.eye(n_classes)[said]
    by_annotator = [np.flatnonzero(annotators == a) for a in range(n_annotators)]
    counts = incidence @ said_hot
    totals = counts.sum(axis=1, keepdims=True)
    T = np.divide(counts, totals, out=np.full_like(counts, 1.0 / n_classes), where=totals > 0)
    n_iter = 0
    for n_iter in range(1, max_iter + 1):  # noqa: B007  (the count is reported)
        # M-step; deviation: + smoothing pseudo-counts (module docstring)
        priors = T.sum(axis=0) + smoothing
        priors /= priors.sum()
        confusion = np.full((n_annotators, n_classes, n_classes), smoothing)
        for a, rows in enumerate(by_annotator):
            confusion[a] += T[items[rows]].T @ said_hot[rows]
        confusion /= confusion.sum(axis=2, keepdims=True)
        # E-step in logs: log p[j] + sum of log pi[a, j, l] over the item's opinions
        log_t = np.log(priors) + incidence @ np.log(confusion[annotators, :, said])
        likelihood = np.exp(log_t - log_t.max(axis=1, keepdims=True))
        previous, T = T, likelihood / likelihood.sum(axis=1, keepdims=True)
        if np.abs(T - previous).max() < tol:
            break
    return DawidSkene(T, confusion, priors, n_iter)
