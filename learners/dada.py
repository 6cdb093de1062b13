"""D-ADA / D-AMD and MD-ADA / MD-AMD (docs/algorithms/dada.md, Zhai et al. 2022).

* :class:`DADA`: binary Algorithm 1 (spec section 3) with the dual-averaging update (D-ADA,
  line 13) or the mirror-descent update (D-AMD, line 14).
* :class:`MDADA`: multiclass Algorithm 2 (section 5): one weight row and one diagonal
  matrix per class.

Parameter names (issue 3, "one meaning of delta everywhere"): ``delta`` is the spec's query
scale ``b`` (larger, more queries); ``smoothing`` is the spec's ``delta`` added to the
diagonal ``H = smoothing*I + diag(s)``; ``eta`` is the step size; ``a_t`` picks the weight of
the feature-based term: ``"feature"`` = 1/max(1, ||x||^2) (D-ADA / D-AMD), ``"one"`` = 1
(the -I variants), ``"zero"`` = 0 (M-ADA / M-AMD, the margin rule). The random-query
variants R-* and the fully supervised DA / MD are ``query="random"`` / ``query="all"``.

Per-coordinate state (``s``, ``theta`` and ``w``) is read and written on the support of x
only, so a round costs O(nnz(x)) (O(k nnz(x)) multiclass); this is exact because the
subgradient is zero elsewhere (spec section 3).

Decisions where the spec is silent or the authors' code differs:

* sign(0): the authors' C code predicts -1 when ``w.x == 0`` (spec section 3, [CODE]). We
  predict +1, like every other binary learner of the product (PAA, SOAL), so that a margin of
  exactly 0 means the same thing in the app and in replays whatever the algorithm; the
  paper itself only says sgn(a) in {-1, +1}. It matters only for exact zeros (the first
  round, or items whose features were never updated). The update rule (``y*p < 1``) does not
  depend on it.
* Multiclass argmax ties (including the all-zero start): the first class, as np.argmax and
  the authors' code.
* ``s_i = sqrt(s_i^2 + g_i^2)`` is computed with ``np.hypot`` (same value, no overflow).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import scipy.sparse as sp

from .base import BlockDecisions, statistic_query_probability
from .linear import (
    LinearBinary,
    MulticlassLinear,
    block_query_probs,
    block_statistic_probs,
    canonical_csr,
    csr_row_sums,
    sign_code,
)
from .registry import Param, delta_param, register

UPDATES = ("DA", "MD")
A_RULES = ("feature", "one", "zero")


def a_weight(rule: str, sq_norm: float | np.ndarray) -> float | np.ndarray:
    """The weight a_t of the feature-based query term (spec section 4 table).

    rule: "feature" -> 1/max(1, ||x||^2), "one" -> 1, "zero" -> 0; sq_norm: ||x||^2
    (a float for one item, an array for a block).
    """
    if rule == "feature":
        if isinstance(sq_norm, float):
            return 1.0 / max(1.0, sq_norm)
        return 1.0 / np.maximum(1.0, sq_norm)
    return 1.0 if rule == "one" else 0.0


def _check(update: str, a_t: str) -> None:
    if update not in UPDATES:
        raise ValueError(f"update must be one of {UPDATES}, got {update!r}")
    if a_t not in A_RULES:
        raise ValueError(f"a_t must be one of {A_RULES}, got {a_t!r}")


def adaptive_step(w: np.ndarray, s: np.ndarray, theta: np.ndarray | None, idx: np.ndarray,
                  g: np.ndarray, eta: float, smoothing: float) -> None:
    """One D-ADA (``theta`` given) or D-AMD (``theta`` None) step, in place, on coordinates ``idx``.

    w, s, theta: 1-D float arrays (d,) or row views of the multiclass matrices; g: the
    subgradient on ``idx``. ``s = sqrt(s^2 + g^2)`` first (line 10, so H_t includes g_t), then
    DA ``theta += g; w = -eta theta/(smoothing + s)`` (line 13) or MD
    ``w -= eta g/(smoothing + s)`` (line 14).
    """
    new_s = np.hypot(s[idx], g)
    s[idx] = new_s
    if theta is not None:
        theta[idx] += g
        w[idx] = -eta * theta[idx] / (smoothing + new_s)
    else:
        w[idx] -= eta * g / (smoothing + new_s)


class AdaptiveDiagonal:
    """Parameters and state handling shared by :class:`DADA` and :class:`MDADA`.

    ``_array_names``: the attribute names of (weights, diagonal s, subgradient sum theta).
    """

    _array_names: tuple[str, str, str]

    def _init_adaptive(self, update: str, a_t: str, smoothing: float, eta: float,
                       shape: tuple[int, ...]) -> None:
        _check(update, a_t)
        self.dual_averaging = update == "DA"
        self.a_t = a_t
        self.smoothing = float(smoothing)
        self.eta = float(eta)
        weights, diag, theta = self._array_names
        setattr(self, weights, np.zeros(shape))
        setattr(self, diag, np.zeros(shape))
        setattr(self, theta, np.zeros(shape) if self.dual_averaging else None)

    def _state_arrays(self) -> dict[str, np.ndarray]:
        names = self._array_names if self.dual_averaging else self._array_names[:2]
        return {name: getattr(self, name) for name in names}

    def _load_arrays(self, arrays, extra) -> None:
        for name in self._array_names if self.dual_averaging else self._array_names[:2]:
            setattr(self, name, arrays[name].astype(np.float64))


class DADA(AdaptiveDiagonal, LinearBinary):
    """Binary D-ADA / D-AMD (dada.md section 3, Algorithm 1).

    State: ``w`` (d,), ``s`` (d,) with ``s_i = ||G_{1:t,i}||_2``, and for DA ``theta`` (d,),
    the sum of subgradients. Score: the signed margin ``p = w.x``.
    Query: ``v = sum_i x_i^2/(smoothing + s_i)`` (H_{t-1}, before this round's update),
    ``q_stat = |p| - (eta/2) a_t v``; q = 1 if q_stat <= 0 else delta/(delta+q_stat).
    Update when queried and ``y p < 1``: ``g = -y x``; ``s = sqrt(s^2 + g^2)`` first, then
    DA: ``theta += g; w = -eta theta/(smoothing + s)``, MD: ``w -= eta g/(smoothing + s)``.
    """

    _array_names = ("w", "s", "theta")

    def __init__(self, n_features: int, classes, *, update: str = "DA", a_t: str = "feature",
                 smoothing: float = 1.0, eta: float = 1.0, **params: Any) -> None:
        super().__init__(n_features, classes, a_t=a_t, smoothing=smoothing, eta=eta, **params)
        self._init_adaptive(update, a_t, smoothing, eta, (self.n_features,))

    def _predict_and_query(self, idx, vals, predict_only):
        m = self._scores(idx, vals)
        if predict_only:
            return sign_code(m), m, 1.0
        sq = vals * vals
        v = float(np.dot(sq, 1.0 / (self.smoothing + self.s[idx])))
        stat = abs(m) - 0.5 * self.eta * a_weight(self.a_t, float(np.dot(vals, vals))) * v
        return sign_code(m), m, statistic_query_probability(self.delta, stat)

    def decide_block(self, X: sp.csr_matrix) -> BlockDecisions:
        m = np.asarray(X @ self.w, dtype=float)
        codes = (m >= 0.0).astype(np.int64)  # sign(0) = +1 (module docstring)

        def active() -> np.ndarray:
            Xc = canonical_csr(X)
            sq = Xc.data * Xc.data
            v = csr_row_sums(Xc, sq / (self.smoothing + self.s[Xc.indices]))
            a = a_weight(self.a_t, csr_row_sums(Xc, sq))
            return block_statistic_probs(self.delta, np.abs(m) - 0.5 * self.eta * a * v)

        return BlockDecisions(codes, m, block_query_probs(self, len(m), active))

    def _update(self, idx, vals, code) -> None:
        y = 1.0 if code == 1 else -1.0
        if y * self._scores(idx, vals) >= 1.0:
            return  # hinge loss 0 (including the kink y p = 1): g = 0, nothing changes
        adaptive_step(self.w, self.s, self.theta, idx, -y * vals, self.eta, self.smoothing)


class MDADA(AdaptiveDiagonal, MulticlassLinear):
    """Multiclass MD-ADA / MD-AMD (dada.md section 5, Algorithm 2).

    State: ``W`` (k, d), ``S`` (k, d) (one diagonal per class) and for DA ``Theta`` (k, d).
    Score: the top-1 minus top-2 class-score gap ``p`` (Eq. 7).
    Query (Eqs. 8-9): ``D_i = sum_j x_j^2/(smoothing + S_ij)``,
    ``v = D_yhat + max_{i != yhat} D_i`` (the max taken independently of the scores),
    ``q_stat = p - (eta/2) a_t v``; q = 1 if q_stat <= 0 else delta/(delta+q_stat).
    Update when queried and ``1 + z_r - z_y > 0`` (r = best wrong class): rows r (g = +x)
    and y (g = -x) get ``S = sqrt(S^2 + g^2)`` then the DA or MD step; other rows unchanged.
    """

    _array_names = ("W", "S", "Theta")

    def __init__(self, n_features: int, classes, *, update: str = "DA", a_t: str = "feature",
                 smoothing: float = 1.0, eta: float = 1.0, **params: Any) -> None:
        super().__init__(n_features, classes, a_t=a_t, smoothing=smoothing, eta=eta, **params)
        self._init_adaptive(update, a_t, smoothing, eta, self.W.shape)

    def _active_query(self, idx, vals, code, gap) -> float:
        sq = vals * vals
        D = (sq / (self.smoothing + self.S[:, idx])).sum(axis=1)  # (k,)
        v = D[code] + np.delete(D, code).max()
        stat = gap - 0.5 * self.eta * a_weight(self.a_t, float(sq.sum())) * v
        return statistic_query_probability(self.delta, float(stat))

    def _block_active_query(self, X, codes, gaps) -> np.ndarray:
        Xc = canonical_csr(X)
        sq = Xc.data * Xc.data
        D = csr_row_sums(Xc, sq / (self.smoothing + self.S[:, Xc.indices]))  # (n, k)
        rows = np.arange(len(codes))
        v_top = D[rows, codes]
        D[rows, codes] = -np.inf
        v = v_top + D.max(axis=1)
        a = a_weight(self.a_t, csr_row_sums(Xc, sq))
        return block_statistic_probs(self.delta, gaps - 0.5 * self.eta * a * v)

    def _update(self, idx, vals, code) -> None:
        z = self._scores(idx, vals)
        r = self.best_wrong(z, code)
        if 1.0 + z[r] - z[code] <= 0.0:
            return  # zero loss: all g = 0, nothing changes
        for row, g in ((r, vals), (code, -vals)):  # g^(r) = +x, g^(y) = -x
            theta = self.Theta[row] if self.dual_averaging else None
            adaptive_step(self.W[row], self.S[row], theta, idx, g, self.eta, self.smoothing)


def _dada_params() -> tuple[Param, ...]:
    return (
        delta_param(1.0, "query scale (the spec's b): q = delta/(delta + q_t); larger delta "
                         "queries more labels"),
        Param("smoothing", 1.0, float, "the spec's delta: added to the diagonal H = smoothing*I "
              "+ diag(s); larger is more conservative", low=0.0, low_open=True, log=True),
        Param("eta", 1.0, float, "step size; also scales the feature term (eta/2) a_t v_t",
              low=0.0, low_open=True, log=True),
        Param("a_t", "feature", str, "weight of the feature-based query term: 'feature' = "
              "1/max(1, ||x||^2) (D-*), 'one' = 1 (D-*-I), 'zero' = 0 (margin only, M-*)",
              choices=A_RULES),
    )


for _name, _cls, _update, _task, _what in (
        ("d-ada", DADA, "DA", "binary", "adaptive dual averaging"),
        ("d-amd", DADA, "MD", "binary", "adaptive mirror descent"),
        ("md-ada", MDADA, "DA", "multiclass", "multiclass adaptive dual averaging"),
        ("md-amd", MDADA, "MD", "multiclass", "multiclass adaptive mirror descent")):
    register(_name, _cls, tasks=(_task,), update=_update, params=_dada_params(),
             summary=f"{_name.upper()}: {_what}; query 1 if margin - (eta/2) a_t v_t <= 0 "
                     f"else delta/(delta + that)")
