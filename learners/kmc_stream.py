"""Streaming pieces of KMC (docs/algorithms/kmc.md, "Query rule on a stream").

The paper's sampling is pool-based (top-S entropy candidates, then eq. 18 over them); a stream
must decide each item at once. These helpers hold what that needs: the RBF kernel with its
width heuristic, the windows of recent scores that turn heavy-tailed scores into ranks, and
the phase-2 score of one new item against the current fits (fast-marginal-likelihood
quantities of spec 2.7).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp

from .kmc_fit import BinaryFit, jj_lambda


class ScoreWindow:
    """The last ``size`` values of one score, as a ring buffer (spec 6.3 step 1)."""

    def __init__(self, size: int) -> None:
        self.values = np.zeros(int(size))
        self.count = 0  # values held (<= size)
        self.next = 0  # slot of the next push

    def push(self, value: float) -> None:
        self.values[self.next] = value
        self.next = (self.next + 1) % len(self.values)
        self.count = min(self.count + 1, len(self.values))

    def rank(self, value: float) -> float:
        """Empirical CDF ``F_W(value)``: the fraction of held values <= value (0.5 when empty)."""
        if self.count == 0:
            return 0.5
        return float(np.count_nonzero(self.values[:self.count] <= value)) / self.count

    def mean(self) -> float | None:
        """Mean of the held values, None when empty."""
        return float(self.values[:self.count].mean()) if self.count else None


class RBFWidth:
    """RBF width ``g = kernel_scale / total variance`` of the items seen so far (spec 3).

    ``total variance = E||x||^2 - ||E x||^2 = d * (mean per-feature variance)``, so this is the
    spec's "scale" heuristic ``g = 1/(d Var(X))``, estimated online from every item the learner
    is told about (labelled or not) since the stream has no pool to compute it on. The caller
    freezes it once the model is built on it, so that the Gram matrix stays valid.
    """

    def __init__(self, n_features: int) -> None:
        self.n = 0
        self.total = np.zeros(n_features)
        self.sq = 0.0

    def add(self, x: sp.csr_matrix) -> None:
        """Count one item (a (1, d) CSR row)."""
        self.n += 1
        self.total[x.indices] += x.data
        self.sq += float(x.data @ x.data)

    def gamma(self, scale: float) -> float:
        """``scale / total variance``; ``scale`` alone while the variance is unknown or 0."""
        if self.n < 2:
            return scale
        mean = self.total / self.n
        var = self.sq / self.n - float(mean @ mean)
        return scale / var if var > 1e-12 else scale


def rbf(A: sp.csr_matrix, sq_a: np.ndarray, B: sp.csr_matrix, sq_b: np.ndarray, g: float) -> np.ndarray:
    """``exp(-g ||a - b||^2)`` for the rows of A (n, d) and B (m, d): dense (n, m).

    sq_a, sq_b: squared norms of the rows. Distances are clipped at 0 (rounding). One row of B
    (a decision) takes a sparse-times-dense product: the sparse-times-sparse one cost 10x more
    on dense-ish features such as HOG.
    """
    cross = np.asarray(A @ B.toarray()[0])[:, None] if B.shape[0] == 1 else (A @ B.T).toarray()
    d2 = np.maximum(sq_a[:, None] + sq_b[None, :] - 2.0 * cross, 0.0)
    return np.exp(-g * d2)


@dataclass
class Phase2Scorer:
    """Precomputed per-class quantities for the phase-2 score of spec 6.3 step 3.

    For class k with active bases ``a`` and JJ precisions ``beta = 2 lambda(gamma)``:
    ``H = Phi_a^T B`` (Ma, n), ``r = y (u + 1/2)`` (n,), ``S`` (Ma, Ma), ``m_a`` (Ma,).
    ``n`` is the number of labelled points the fits were made on.
    """

    H: list[np.ndarray]
    beta: list[np.ndarray]
    r: list[np.ndarray]
    S: list[np.ndarray]
    m: list[np.ndarray]
    n: int

    @classmethod
    def build(cls, gram: np.ndarray, codes: np.ndarray, fits: list[BinaryFit]) -> Phase2Scorer:
        """From the Gram matrix (n, n), the labelled class codes (n,) and the K fits."""
        H, beta, r, S, m = [], [], [], [], []
        for k, fit in enumerate(fits):
            act = fit.active
            b = 2.0 * jj_lambda(fit.gamma)
            y = np.where(codes == k, 1.0, -1.0)
            H.append(gram[:, act].T * b)
            beta.append(b)
            r.append(y * (fit.u + 0.5))
            S.append(fit.S)
            m.append(fit.m[act])
        return cls(H, beta, r, S, m, len(codes))

    def score(self, phi: np.ndarray) -> float:
        """``sum_k mu_k / alpha_k`` for a new basis ``phi = [k(x_i, x)]_i`` (n,) (0 for alpha = inf).

        Per class (spec 2.7 "else" branch, x not yet a basis): ``s = phi^T B phi - v^T S v``,
        ``q = phi^T r - v^T m_a`` with ``v = H phi``; ``alpha = s^2 / (q^2 - s)`` if ``q^2 > s``,
        ``mu = q / (alpha + s)``. Literal signed sum of eq. 18 (small = query first).
        """
        phi = phi[:self.n]
        total = 0.0
        for H, b, r, S, m in zip(self.H, self.beta, self.r, self.S, self.m, strict=True):
            v = H @ phi
            s = float(phi @ (b * phi) - v @ S @ v)
            q = float(phi @ r - v @ m)
            if s > 0.0 and q * q > s:
                alpha = s * s / (q * q - s)
                total += (q / (alpha + s)) / alpha
        return total
