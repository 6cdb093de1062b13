"""Second-order Online Active Learning (docs/algorithms/soal.md, Hao et al. 2018).

* ``soal``: Algorithm 1 (spec section 3): query with probability 1 when ``rho_t <= 0``, else
  ``delta/(delta+rho_t)``, with ``rho_t = |p_t| + c_t`` (Eq. 6).
* ``soal-m``: the same learner with the margin-only rule ``delta/(delta+|p_t|)`` (section 5).

Both take ``covariance="full"`` (Eqs. 1 and 3, O(d^2) memory, O(nnz^2) to decide and O(d^2)
per update) or ``"diagonal"`` (Eqs. 4 and 5, O(nnz) per round). The random-query baseline
SORL and the fully supervised SOL are ``query="random"`` / ``query="all"`` (base class).

Decisions where the spec is silent:

* The score is the signed margin ``p_t = mu_t.x`` (what the query rule of ``soal-m`` uses);
  the statistic ``rho_t`` of ``soal`` is internal to the query probability.
* sign(0) = +1 (spec section 3 suggestion, shared with every binary learner).
* ``v_t = x^T Sigma_t x`` is clipped at 0 (spec section 7: rounding can make it slightly
  negative).
* The full covariance is refused above :data:`MAX_FULL_FEATURES` features (its d x d matrix
  would not fit a web worker); use the diagonal variant there.
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence
from typing import Any

import numpy as np
import scipy.sparse as sp

from .base import BlockDecisions, margin_query_probability, statistic_query_probability
from .linear import (
    LinearBinary,
    block_query_probs,
    block_statistic_probs,
    canonical_csr,
    csr_row_sums,
    sign_code,
)
from .registry import Param, delta_param, register

COVARIANCES = ("full", "diagonal")
#: Largest n_features accepted with covariance="full" (4096^2 float64 = 128 MiB).
MAX_FULL_FEATURES = 4096


class SOAL(LinearBinary):
    """SOAL / SOAL-M (soal.md sections 2-3): Gaussian N(mu, Sigma) over weights, predicts with mu.

    ``w`` is the mean mu (d,). ``Sigma`` is (d, d) for ``covariance="full"`` and its diagonal
    (d,) for ``"diagonal"``; both start at the identity. ``margin_only`` selects SOAL-M.

    Query statistic (Algorithm 1): ``v = x^T Sigma_t x``,
    ``c = -eta*gamma*v/(2*(gamma+v))``, ``rho = |p| + c``; q = 1 if rho <= 0 else
    delta/(delta+rho). Update on a queried round with hinge loss ``max(0, 1 - y p) > 0``:
    first ``Sigma_{t+1} = Sigma_t - Sigma_t x x^T Sigma_t/(gamma+v)`` (Eq. 1 / Eq. 4), then
    ``mu_{t+1} = mu_t + eta*y*Sigma_{t+1} x`` (Eq. 3 / Eq. 5: the new covariance, not AROW's
    loss-scaled step). A zero loss changes nothing.

    Example (diagonal, eta = gamma = 1: v = 1, Sigma_11 = 1 - 1/(1+1), mu_1 = eta y Sigma_11 x_1):

    >>> import numpy as np, learners
    >>> lrn = learners.make("soal", n_features=2, classes=[-1, 1])
    >>> lrn.learn(np.array([1.0, 0.0]), 1)
    >>> lrn.Sigma.tolist(), lrn.w.tolist()
    ([0.5, 1.0], [0.5, 0.0])
    """

    def __init__(self, n_features: int, classes: Sequence[Hashable], *, eta: float = 1.0,
                 gamma: float = 1.0, covariance: str = "diagonal", margin_only: bool = False,
                 **common: Any) -> None:
        super().__init__(n_features, classes, **common)
        if covariance not in COVARIANCES:
            raise ValueError(f"covariance must be one of {COVARIANCES}, got {covariance!r}")
        # DEVIATION: the full d x d covariance is refused above MAX_FULL_FEATURES (docs/algorithms/soal.md).
        if covariance == "full" and self.n_features > MAX_FULL_FEATURES:
            raise ValueError(f"covariance='full' needs a {self.n_features}x{self.n_features} matrix; "
                             f"it is limited to n_features <= {MAX_FULL_FEATURES}: use 'diagonal'")
        self.eta = float(eta)
        self.gamma = float(gamma)
        self.full = covariance == "full"
        self.margin_only = bool(margin_only)
        self.Sigma = np.eye(self.n_features) if self.full else np.ones(self.n_features)

    def _own_params(self) -> dict[str, Any]:
        return {"eta": self.eta, "gamma": self.gamma, "covariance": "full" if self.full else "diagonal"}

    # ------------------------------------------------------------- decisions
    def _variance(self, idx: np.ndarray, vals: np.ndarray) -> float:
        """``v = x^T Sigma x`` from the support of x only, clipped at 0."""
        if self.full:
            v = float(vals @ self.Sigma[np.ix_(idx, idx)] @ vals)
        else:
            v = float(np.dot(self.Sigma[idx], vals * vals))
        return max(v, 0.0)

    def _rho(self, margin: float | np.ndarray, v: float | np.ndarray) -> float | np.ndarray:
        """Eq. 6: ``rho = |p| + c`` with ``c = -eta*gamma*v/(2*gamma + 2*v)``."""
        c = -self.eta * self.gamma * v / (2.0 * self.gamma + 2.0 * v)
        return np.abs(margin) + c

    def _predict_and_query(self, idx, vals, predict_only):
        m = self._scores(idx, vals)
        if predict_only:
            return sign_code(m), m, 1.0
        if self.margin_only:
            return sign_code(m), m, margin_query_probability(self.delta, m)
        rho = float(self._rho(m, self._variance(idx, vals)))
        return sign_code(m), m, statistic_query_probability(self.delta, rho)

    def decide_block(self, X: sp.csr_matrix) -> BlockDecisions:
        m = np.asarray(X @ self.w, dtype=float)
        codes = (m >= 0.0).astype(np.int64)  # sign(0) = +1, as sign_code

        def active() -> np.ndarray:
            if self.margin_only:
                return self.delta / (self.delta + np.abs(m))
            Xc = canonical_csr(X)
            if self.full:
                v = np.asarray(Xc.multiply(Xc @ self.Sigma).sum(axis=1), dtype=float).reshape(-1)
            else:
                v = csr_row_sums(Xc, Xc.data * Xc.data * self.Sigma[Xc.indices])
            return block_statistic_probs(self.delta, np.asarray(self._rho(m, np.maximum(v, 0.0))))

        return BlockDecisions(codes, m, block_query_probs(self, len(m), active))

    # ---------------------------------------------------------------- update
    def _update(self, idx, vals, code) -> None:
        y = 1.0 if code == 1 else -1.0
        if 1.0 - y * self._scores(idx, vals) <= 0.0:
            return  # zero hinge loss: no change (Algorithm 1)
        if self.full:
            u = self.Sigma[:, idx] @ vals  # Sigma_t x
            v = max(float(np.dot(u[idx], vals)), 0.0)
            self.Sigma -= np.outer(u, u) / (self.gamma + v)  # Eq. 1
            self.w += self.eta * y * (self.Sigma[:, idx] @ vals)  # Eq. 3, with Sigma_{t+1}
        else:
            sig = self.Sigma[idx]
            v = max(float(np.dot(sig, vals * vals)), 0.0)
            sig = sig - sig * vals * vals * sig / (self.gamma + v)  # Eq. 4
            self.Sigma[idx] = sig
            self.w[idx] += self.eta * y * sig * vals  # Eq. 5, with sigma_{t+1}

    # ----------------------------------------------------------------- state
    def _state_arrays(self) -> dict[str, np.ndarray]:
        return {"w": self.w, "Sigma": self.Sigma}

    def _load_arrays(self, arrays, extra) -> None:
        self.w = arrays["w"].astype(np.float64)
        self.Sigma = arrays["Sigma"].astype(np.float64)


_SOAL_PARAMS = (
    delta_param(),
    Param("eta", 1.0, float, "learning rate of the mean step (also scales the confidence term c_t)",
          low=0.0, low_open=True, log=True),
    Param("gamma", 1.0, float, "regularisation: covariance shrink per update (AROW's r)",
          low=0.0, low_open=True, log=True),
    Param("covariance", "diagonal", str, "'full' d x d covariance (small d) or its 'diagonal' "
          "(O(nnz) per round)", choices=COVARIANCES),
)
register("soal", SOAL, tasks=("binary",), margin_only=False, params=_SOAL_PARAMS,
         summary="Second-order OAL: query 1 if |w.x| + c_t <= 0 else delta/(delta+rho_t), "
                 "Sigma then mean update")
register("soal-m", SOAL, tasks=("binary",), margin_only=True, params=_SOAL_PARAMS,
         summary="SOAL-M: the SOAL update with the margin-only query delta/(delta+|w.x|)")
