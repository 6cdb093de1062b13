"""Machinery shared by the linear learners (PAA, SOAL, D-ADA/D-AMD, perceptron baselines).

* :class:`LinearBinary`: one weight vector ``w`` (d,), signed margin ``w.x`` as the score,
  prediction ``classes[1]`` (+1) when ``w.x >= 0``, margin query rule ``delta/(delta+|w.x|)``.
* :class:`MulticlassLinear`: one weight row per class (k, d), prediction = argmax of the
  class scores (ties: first class), score = top-1 minus top-2 gap, query ``delta/(delta+gap)``.
* :func:`top_two_gap` / :func:`block_top_two`: the gap for one score vector / a block.
* :func:`block_query_probs`: applies the common ``query`` mode ("all" / "random") to a block.

Subclasses implement ``_update`` (and may replace the active query rule).
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Sequence
from typing import Any

import numpy as np
import scipy.sparse as sp

from . import kernels
from .base import BlockDecisions, Learner, margin_query_probability


def top_two_gap(s: np.ndarray) -> tuple[int, float]:
    """``(argmax, s[argmax] - max of the others)`` of a score vector (k >= 2; ties: first index)."""
    code = int(np.argmax(s))
    return code, float(s[code] - max_except(s, code))


def max_except(v: np.ndarray, i: int) -> float:
    """The largest entry of ``v`` (k >= 2) but entry ``i``: the max of the others, as
    ``np.delete(v, i).max()`` (NaN included) without its index arrays (an item's decision in
    a multiclass learner asks for it twice)."""
    others = v.copy()
    others[i] = -np.inf
    return float(others.max())


def block_top_two(S: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Row-wise :func:`top_two_gap` of scores S (n, k).

    Returns ``(codes, gaps, runner_up)``: argmax per row (ties: first index), top-1 minus
    top-2 score, and the index of the best other class (ties: first index).
    """
    rows = np.arange(S.shape[0])
    codes = np.argmax(S, axis=1)
    others = S.copy()
    others[rows, codes] = -np.inf
    runner = np.argmax(others, axis=1)
    return codes, S[rows, codes] - S[rows, runner], runner


def csr_row_sums(X: sp.csr_matrix, entries: np.ndarray) -> np.ndarray:
    """Per-row sums of values given for each stored entry of the CSR matrix ``X``.

    entries: (nnz,) -> returns (n,); or (k, nnz) -> returns (n, k).
    ``X`` must be in canonical format (see :func:`canonical_csr`). Pure numpy (no sparse
    matrix products, no d-sized temporaries), which keeps block decisions cheap.
    """
    n = X.shape[0]
    rows = np.repeat(np.arange(n), np.diff(X.indptr))
    if entries.ndim == 1:
        return np.bincount(rows, weights=entries, minlength=n)
    return np.stack([np.bincount(rows, weights=e, minlength=n) for e in entries], axis=1)


def block_scores(X: sp.csr_matrix, W: np.ndarray) -> np.ndarray:
    """``X @ W.T`` (n, k) for a CSR block X (n, d) and weights W (k, d), reading only the columns
    the block uses: the same products summed in the same (stored) order as scipy's product, so
    the same numbers, without the C-ordered copy of ``W.T`` that ``X @ W.T`` makes of all d
    columns on every call (8 MiB per block for 4 classes of 2^18 hashed features). A block that
    stores more entries than a quarter of d is multiplied as it is (the copy is then cheaper)."""
    if 4 * X.nnz >= X.shape[1]:
        return np.asarray(X @ W.T, dtype=float)
    cols, pos = np.unique(X.indices, return_inverse=True)
    used = sp.csr_matrix((X.data, pos.astype(X.indices.dtype, copy=False), X.indptr),
                         shape=(X.shape[0], len(cols)))
    return np.asarray(used @ np.ascontiguousarray(W[:, cols].T), dtype=float)


def canonical_csr(X: sp.csr_matrix) -> sp.csr_matrix:
    """``X`` itself when its entries are sorted and unique, else a summed-duplicates copy.

    Needed before squaring stored entries: a duplicated (i, j) entry squares differently
    from its sum.
    """
    if X.has_canonical_format:
        return X
    Y = X.copy()
    Y.sum_duplicates()
    return Y


def block_query_probs(learner: Learner, n: int, active: Callable[[], np.ndarray]) -> np.ndarray:
    """Query probabilities (n,) of a block under ``learner.query``.

    ``active`` computes the published rule's probabilities and is only called in "active" mode,
    mirroring :meth:`Learner._decision_parts` for single items.
    """
    if learner.query == "all":
        return np.ones(n)
    if learner.query == "random":
        return np.full(n, learner.p)
    return np.asarray(active(), dtype=float)


def block_statistic_probs(delta: float, stat: np.ndarray) -> np.ndarray:
    """Vectorised :func:`learners.base.statistic_query_probability`: 1 where stat <= 0."""
    return np.where(stat <= 0.0, 1.0, delta / (delta + np.maximum(stat, 0.0)))


def sign_code(margin: float) -> int:
    """Class code of a binary margin: 1 (+1) when ``margin >= 0``, else 0 (-1).

    Decision shared by every binary learner of the product: sign(0) = +1 (paa.md section 1,
    step 2, the LIBOL convention the PAA and SOAL specs recommend).
    """
    # DEVIATION (D-ADA only): its authors' code predicts -1 at 0 (docs/algorithms/dada.md).
    return 1 if margin >= 0.0 else 0


class LinearBinary(Learner):
    """Shared machinery of binary linear learners with weight vector ``w`` (d,).

    Subclasses define :meth:`_update`; the margin rule ``delta/(delta+|w.x|)`` is the
    default active query rule and the score is the signed margin ``w.x``.
    """

    accepts_prior = True

    def __init__(self, n_features: int, classes: Sequence[Hashable], **common: Any) -> None:
        super().__init__(n_features, classes, **common)
        self.w = np.zeros(self.n_features)

    def _start_from(self, prior: np.ndarray) -> None:
        # DEVIATION (cold start, docs/algorithms/cold_start.md): the papers start from w = 0
        self.w = prior

    def _scores(self, idx: np.ndarray, vals: np.ndarray) -> float:
        return kernels.margin(self.w, idx, vals, 0, len(idx))

    def _current_delta(self) -> float:
        """Delta used for the next decision (constant unless a subclass adapts it)."""
        return self.delta

    def _predict_and_query(self, idx, vals, predict_only):
        m = self._scores(idx, vals)
        return sign_code(m), m, margin_query_probability(self._current_delta(), m)

    def decide_block(self, X: sp.csr_matrix) -> BlockDecisions:
        m = np.asarray(X @ self.w, dtype=float)
        codes = (m >= 0.0).astype(np.int64)  # sign(0) = +1, as sign_code

        def active() -> np.ndarray:
            deltas = self._block_deltas(len(m))
            return deltas / (deltas + np.abs(m))

        return BlockDecisions(codes, m, block_query_probs(self, len(m), active))

    def _block_deltas(self, n: int) -> np.ndarray | float:
        return self.delta

    def _state_arrays(self) -> dict[str, np.ndarray]:
        return {"w": self.w}

    def _load_arrays(self, arrays, extra) -> None:
        self.w = arrays["w"].astype(np.float64)


class MulticlassLinear(Learner):
    """Shared machinery of multi-prototype learners: weight matrix ``W`` (k, d).

    Score: the gap ``p_t = s^(yhat) - max_{r != yhat} s^r`` between the top two class scores
    (>= 0). Default active query: ``delta/(delta+p_t)`` (paa.md Eq. 5). Subclasses define
    :meth:`_update` and may override :meth:`_active_query` / :meth:`_block_active_query`.
    """

    binary = False
    accepts_prior = True

    def __init__(self, n_features: int, classes: Sequence[Hashable], **common: Any) -> None:
        super().__init__(n_features, classes, **common)
        self.W = np.zeros((len(self.classes), self.n_features))

    def _start_from(self, prior: np.ndarray) -> None:
        # DEVIATION (cold start, docs/algorithms/cold_start.md): the papers start from W = 0
        self.W = prior

    def _scores(self, idx, vals) -> np.ndarray:
        return self.W[:, idx] @ vals

    def _predict_and_query(self, idx, vals, predict_only):
        s = self._scores(idx, vals)
        code, gap = top_two_gap(s)  # ties, including the all-zero start: first class
        q = 1.0 if predict_only else self._active_query(idx, vals, code, gap)
        return code, gap, q

    def _active_query(self, idx: np.ndarray, vals: np.ndarray, code: int, gap: float) -> float:
        return margin_query_probability(self.delta, gap)

    def _block_active_query(self, X: sp.csr_matrix, codes: np.ndarray, gaps: np.ndarray) -> np.ndarray:
        return self.delta / (self.delta + gaps)

    def decide_block(self, X: sp.csr_matrix) -> BlockDecisions:
        S = block_scores(X, self.W)
        codes, gaps, _ = block_top_two(S)
        q = block_query_probs(self, len(codes), lambda: self._block_active_query(X, codes, gaps))
        return BlockDecisions(codes.astype(np.int64), gaps, q)

    @staticmethod
    def best_wrong(s: np.ndarray, code: int) -> int:
        """Highest-scoring class other than ``code`` (ties: first index)."""
        wrong = s.copy()
        wrong[code] = -np.inf
        return int(np.argmax(wrong))

    def _state_arrays(self) -> dict[str, np.ndarray]:
        return {"W": self.W}

    def _load_arrays(self, arrays, extra) -> None:
        self.W = arrays["W"].astype(np.float64)
