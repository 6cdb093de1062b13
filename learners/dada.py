"""D-ADA / D-AMD and MD-ADA / MD-AMD (docs/algorithms/dada.md, Zhai et al. 2022).

* :class:`DADA`: binary Algorithm 1 (spec section 3) with the dual-averaging update (D-ADA,
  line 13) or the mirror-descent update (D-AMD, line 14).
* :class:`MDADA`: multiclass Algorithm 2 (section 5): one weight row and one diagonal
  matrix per class.
* :class:`AdaptiveDiagonal`: the parameters and the state layout the two share.

Parameter names ("one meaning of delta everywhere"): ``delta`` is the spec's query
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
* ``s_i = sqrt(s_i^2 + g_i^2)`` is computed with ``hypot`` (same value, no overflow).
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence
from typing import Any, ClassVar

import numpy as np
import scipy.sparse as sp

from . import kernels
from .base import QUERY_MODES, BlockDecisions, Learner, StreamDecisions, statistic_query_probability
from .linear import (
    LinearBinary,
    MulticlassLinear,
    block_query_probs,
    block_statistic_probs,
    canonical_csr,
    csr_row_sums,
    max_except,
    sign_code,
)
from .registry import Param, delta_param, register

UPDATES = ("DA", "MD")
A_RULES = kernels.A_RULES
#: default ``smoothing`` of the binary learners (D-ADA, D-AMD) and of the multiclass ones. The
#: paper tunes it per data set and gives no value (dada.md section 6); 0.5 for the binary ones
#: gained 0.1-0.4 point of online accuracy at 5-20% labels on every raw text and URL stream, where
#: for MD-ADA / MD-AMD it lost up to 1.5 points (docs/algorithms/dada.md, "Parameters")
BINARY_SMOOTHING = 0.5
MULTICLASS_SMOOTHING = 1.0


def a_weight(rule: str, sq_norm: np.ndarray) -> np.ndarray:
    """The weights a_t of the feature-based query term for a block (spec section 4 table).

    rule: "feature" -> 1/max(1, ||x||^2), "one" -> 1, "zero" -> 0; sq_norm: ||x||^2 per row
    (n,). Computed by :func:`learners.kernels.a_weight`, the rule of one item.
    """
    return kernels.a_weights(A_RULES.index(rule), np.ascontiguousarray(sq_norm, dtype=np.float64))


class AdaptiveDiagonal(Learner):
    """What the binary and multiclass families share (mixed in before their base class): the
    update rule (``update``: "DA" dual averaging or "MD" mirror descent), ``a_t``, ``smoothing``
    (None: the class's :attr:`DEFAULT_SMOOTHING`) and ``eta``, and the state beside the weights.

    :attr:`ARRAYS` names the weights, the diagonal ``s`` of accumulated gradient norms (the
    weights' shape, zeros) and the sum of subgradients ``theta`` (DA only: the weights' shape;
    MD keeps an empty last axis), the arrays of the learner's state.
    """

    ARRAYS: ClassVar[tuple[str, str, str]]
    DEFAULT_SMOOTHING: ClassVar[float]

    def __init__(self, n_features: int, classes: Sequence[Hashable], *, update: str = "DA",
                 a_t: str = "feature", smoothing: float | None = None, eta: float = 1.0,
                 **common: Any) -> None:
        super().__init__(n_features, classes, **common)
        if update not in UPDATES:
            raise ValueError(f"update must be one of {UPDATES}, got {update!r}")
        if a_t not in A_RULES:
            raise ValueError(f"a_t must be one of {A_RULES}, got {a_t!r}")
        self.dual_averaging = update == "DA"
        self.a_t = a_t
        self.smoothing = float(self.DEFAULT_SMOOTHING if smoothing is None else smoothing)
        self.eta = float(eta)
        weights, diagonal, sums = self.ARRAYS
        shape = getattr(self, weights).shape
        setattr(self, diagonal, np.zeros(shape))
        setattr(self, sums, np.zeros((*shape[:-1], shape[-1] if self.dual_averaging else 0)))

    def _own_params(self) -> dict[str, Any]:
        return {"a_t": self.a_t, "smoothing": self.smoothing, "eta": self.eta}

    def _stored(self) -> tuple[str, ...]:
        return self.ARRAYS if self.dual_averaging else self.ARRAYS[:2]

    def _state_arrays(self) -> dict[str, np.ndarray]:
        return {name: getattr(self, name) for name in self._stored()}

    def _load_arrays(self, arrays, extra) -> None:
        for name in self._stored():
            setattr(self, name, arrays[name].astype(np.float64))


class DADA(AdaptiveDiagonal, LinearBinary):
    """Binary D-ADA / D-AMD (dada.md section 3, Algorithm 1).

    State: ``w`` (d,), ``s`` (d,) with ``s_i = ||G_{1:t,i}||_2``, and for DA ``theta`` (d,),
    the sum of subgradients (empty for MD). Score: the signed margin ``p = w.x``.
    Query: ``v = sum_i x_i^2/(smoothing + s_i)`` (H_{t-1}, before this round's update),
    ``q_stat = |p| - (eta/2) a_t v``; q = 1 if q_stat <= 0 else delta/(delta+q_stat).
    Update when queried and ``y p < 1``: ``g = -y x``; ``s = sqrt(s^2 + g^2)`` first, then
    DA: ``theta += g; w = -eta theta/(smoothing + s)``, MD: ``w -= eta g/(smoothing + s)``.
    Both rules are :mod:`learners.kernels`' (``dada_statistic``, ``dada_update``), which the
    compiled loop (:meth:`compiled_loop`) runs too.

    Example (D-ADA, eta = smoothing = 1: g = -x, s = |g| = 1, theta = -1, w = -theta/(1+1)):

    >>> import numpy as np, learners
    >>> lrn = learners.make("d-ada", n_features=2, classes=[-1, 1], smoothing=1.0)
    >>> lrn.learn(np.array([1.0, 0.0]), 1)
    >>> lrn.s.tolist(), lrn.theta.tolist(), lrn.w.tolist()
    ([1.0, 0.0], [-1.0, 0.0], [0.5, 0.0])
    """

    ARRAYS = ("w", "s", "theta")
    DEFAULT_SMOOTHING = BINARY_SMOOTHING
    s: np.ndarray
    theta: np.ndarray

    def _start_from(self, prior: np.ndarray) -> None:
        # DEVIATION (cold start, docs/algorithms/cold_start.md): the paper starts from w = 0.
        # Dual averaging recomputes w from the summed subgradients, so the prior enters as the
        # theta that gives w = prior at s = 0; it then fades as s grows on each coordinate.
        self.w = prior
        if self.dual_averaging:
            self.theta = -prior * self.smoothing / self.eta

    def _predict_and_query(self, idx, vals, predict_only):
        m, stat = kernels.dada_statistic(self.w, self.s, idx, vals, 0, len(idx), A_RULES.index(self.a_t),
                                         self.eta, self.smoothing)
        return sign_code(m), m, 1.0 if predict_only else statistic_query_probability(self.delta, stat)

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
        kernels.dada_update(self.w, self.s, self.theta, idx, vals, 0, len(idx), 1.0 if code == 1 else -1.0,
                            self._scores(idx, vals), self.eta, self.smoothing, self.dual_averaging)

    def _compiled_stream(self, X: sp.csr_matrix, codes: np.ndarray, u: np.ndarray) -> StreamDecisions:
        n = X.shape[0]
        out = StreamDecisions(np.empty(n, dtype=np.int64), np.empty(n), np.zeros(n, dtype=bool))
        kernels.dada_stream(np.ascontiguousarray(X.data, dtype=np.float64), X.indices, X.indptr, codes,
                            u, self.w, self.s, self.theta, self.dual_averaging, A_RULES.index(self.a_t),
                            self.eta, self.smoothing, self.delta, QUERY_MODES.index(self.query), self.p,
                            out.codes, out.query_probs, out.queried)
        return out


class MDADA(AdaptiveDiagonal, MulticlassLinear):
    """Multiclass MD-ADA / MD-AMD (dada.md section 5, Algorithm 2).

    State: ``W`` (k, d), ``S`` (k, d) (one diagonal per class) and for DA ``Theta`` (k, d)
    (k empty rows for MD). Score: the top-1 minus top-2 class-score gap ``p`` (Eq. 7).
    Query (Eqs. 8-9): ``D_i = sum_j x_j^2/(smoothing + S_ij)``,
    ``v = D_yhat + max_{i != yhat} D_i`` (the max taken independently of the scores),
    ``q_stat = p - (eta/2) a_t v``; q = 1 if q_stat <= 0 else delta/(delta+q_stat).
    Update when queried and ``1 + z_r - z_y > 0`` (r = best wrong class): rows r (g = +x)
    and y (g = -x) get ``S = sqrt(S^2 + g^2)`` then the DA or MD step
    (:func:`learners.kernels.adaptive_step`); other rows unchanged.

    Example (MD-AMD: all scores 0, so r = "a" gets g = +x and the label's row g = -x, each
    a step eta/(smoothing + 1) = 0.5):

    >>> import numpy as np, learners
    >>> lrn = learners.make("md-amd", n_features=2, classes=["a", "b", "c"])
    >>> lrn.learn(np.array([1.0, 0.0]), "c")
    >>> lrn.W.tolist()
    [[-0.5, 0.0], [0.0, 0.0], [0.5, 0.0]]
    """

    ARRAYS = ("W", "S", "Theta")
    DEFAULT_SMOOTHING = MULTICLASS_SMOOTHING
    S: np.ndarray
    Theta: np.ndarray

    def _start_from(self, prior: np.ndarray) -> None:
        # DEVIATION (cold start, docs/algorithms/cold_start.md): as DADA._start_from, per class row
        self.W = prior
        if self.dual_averaging:
            self.Theta = -prior * self.smoothing / self.eta

    def _active_query(self, idx, vals, code, gap) -> float:
        sq = vals * vals
        D = (sq / (self.smoothing + self.S[:, idx])).sum(axis=1)  # (k,)
        v = D[code] + max_except(D, code)
        stat = gap - 0.5 * self.eta * kernels.a_weight(A_RULES.index(self.a_t), float(sq.sum())) * v
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
        for row, sign in ((r, 1.0), (code, -1.0)):  # g^(r) = +x, g^(y) = -x
            kernels.adaptive_step(self.W[row], self.S[row], self.Theta[row], idx, vals, 0, len(idx), sign,
                                  self.eta, self.smoothing, self.dual_averaging)


def _dada_params(smoothing: float) -> tuple[Param, ...]:
    """The parameters of one of the four learners, ``smoothing`` its default."""
    return (
        delta_param(1.0, "query scale (the spec's b): q = delta/(delta + q_t); larger delta "
                         "queries more labels"),
        Param("smoothing", smoothing, float, "the spec's delta: added to the diagonal H = smoothing*I "
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
    register(_name, _cls, tasks=(_task,), update=_update,
             params=_dada_params(BINARY_SMOOTHING if _task == "binary" else MULTICLASS_SMOOTHING),
             summary=f"{_name.upper()}: {_what}; query 1 if margin - (eta/2) a_t v_t <= 0 "
                     f"else delta/(delta + that)")
