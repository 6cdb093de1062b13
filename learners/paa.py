"""Passive-Aggressive Active learning (docs/algorithms/paa.md, Lu, Zhao & Hoi 2016).

* :class:`PAA`: binary PAA / PAA-I / PAA-II (spec section 1, Algorithm 2).
* :class:`MPAA`: multiclass MPAA / MPAA-I / MPAA-II (section 2, Algorithm 3).
* :class:`CSPAA`: cost-sensitive CSPAA with optional adaptive delta (section 3, Algorithm 4).
* :class:`PAStep`: the variant and ``C`` that PAA and MPAA share.

Decisions taken where the spec is silent (each also marked where it is applied):

* sign(0): binary learners predict ``classes[1]`` (+1) when the margin is exactly 0
  (spec section 1, step 2, recommended LIBOL convention).
* argmax ties (multiclass, including the all-zero start): the first class in ``classes``.
* ``||x|| = 0``: the update ``tau * y * x`` is the zero vector whatever tau is, so an
  all-zero item never changes the model (spec's [EXT] note; avoids 0/0).
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence
from typing import Any

import numpy as np
import scipy.sparse as sp

from . import kernels
from .base import QUERY_MODES, Learner, StreamDecisions

# LinearBinary, MulticlassLinear and top_two_gap lived here first; they are re-exported so
# that code written against this module keeps working.
from .linear import LinearBinary, MulticlassLinear, top_two_gap
from .registry import Param, delta_param, register

__all__ = ["CSPAA", "MPAA", "PAA", "LinearBinary", "MulticlassLinear", "PAStep", "c_param",
           "pa_step", "top_two_gap"]

VARIANTS = kernels.PA_VARIANTS


def pa_step(variant: str, loss: float, sq_norm: float, C: float, multiclass: bool = False) -> float:
    """Step size tau of the PA family (paa.md Eq. 1; multiclass Eq. 4 uses 2||x||^2).

    variant: one of :data:`VARIANTS`; loss: hinge loss (> 0); sq_norm: ||x||^2 (> 0);
    C: aggressiveness (> 0). The rule is :func:`learners.kernels.pa_step`.
    """
    return kernels.pa_step(VARIANTS.index(variant), loss, sq_norm, C, multiclass)


class PAStep(Learner):
    """What the binary and multiclass PA families share (mixed in before their base class):
    the variant (one of :data:`VARIANTS`) and its aggressiveness ``C`` (> 0; PA has none)."""

    def __init__(self, n_features: int, classes: Sequence[Hashable], *, variant: str = "PA-I",
                 C: float = 1.0, **common: Any) -> None:
        super().__init__(n_features, classes, **common)
        if variant not in VARIANTS:
            raise ValueError(f"variant must be one of {VARIANTS}, got {variant!r}")
        self.variant = variant
        self.C = float(C)

    def _own_params(self) -> dict[str, Any]:
        return {} if self.variant == "PA" else {"C": self.C}  # PA (hard margin) has no C


class PAA(PAStep, LinearBinary):
    """Binary PAA family (paa.md section 1, Algorithm 2).

    Score: the margin ``p_t = w.x``. Query: ``delta/(delta+|p_t|)``. On a queried round with
    hinge loss ``l = max(0, 1 - y p_t) > 0``: ``w += tau y x`` with tau from :func:`pa_step`
    (PA: ``l/||x||^2``, PA-I: ``min(C, l/||x||^2)``, PA-II: ``l/(||x||^2 + 1/(2C))``).
    Has a compiled loop (:meth:`compiled_loop`, :func:`learners.kernels.paa_stream`).

    Example (PA-I, C = 1: each label has loss 1 and ||x|| = 1, so tau = 1):

    >>> import numpy as np, learners
    >>> lrn = learners.make("paa-i", n_features=2, classes=["ham", "spam"], C=1.0)
    >>> lrn.learn(np.array([1.0, 0.0]), "spam")
    >>> lrn.learn(np.array([0.0, 1.0]), "ham")
    >>> lrn.w.tolist()
    [1.0, -1.0]
    >>> lrn.predict(np.array([[2.0, 1.0]])).tolist()
    ['spam']
    >>> lrn.query_probability(np.array([2.0, 1.0]))  # delta/(delta + |w.x|) = 1/(1 + 1)
    0.5
    """

    def _update(self, idx, vals, code) -> None:
        # ||x|| = 0 leaves w unchanged (module docstring)
        kernels.pa_update(self.w, idx, vals, 0, len(idx), 1.0 if code == 1 else -1.0,
                          self._scores(idx, vals), 1.0, VARIANTS.index(self.variant), self.C)

    def _compiled_stream(self, X: sp.csr_matrix, codes: np.ndarray, u: np.ndarray) -> StreamDecisions:
        n = X.shape[0]
        out = StreamDecisions(np.empty(n, dtype=np.int64), np.empty(n), np.zeros(n, dtype=bool))
        kernels.paa_stream(np.ascontiguousarray(X.data, dtype=np.float64), X.indices, X.indptr, codes,
                           u, self.w, self.delta, VARIANTS.index(self.variant), self.C,
                           QUERY_MODES.index(self.query), self.p, out.codes, out.query_probs, out.queried)
        return out


class CSPAA(LinearBinary):
    """Cost-sensitive PAA (paa.md section 3, Algorithm 4), optionally with adaptive delta.

    Loss ``l = max(0, rho_t - y p_t)`` with ``rho_t = rho`` for the positive class
    (``classes[1]``) and 1 for the negative one; step ``tau = min(C, l/||x||^2)`` (the
    general form of Eq. 11, identical to ``min(C, l)`` when ``||x|| = 1``; spec [AMBIG]).
    ``adaptive``: round t (1-based, counting every decision) uses
    ``delta_t = delta_0/(t+1)`` with ``delta_0 = delta`` (spec: delta updated before q_t).

    Example (a positive item is pushed to margin rho = 2: loss 2, tau = min(C, 2/1) = 2):

    >>> import numpy as np, learners
    >>> lrn = learners.make("cspaa", n_features=2, classes=["ok", "fraud"], C=5.0, rho=2.0)
    >>> lrn.learn(np.array([1.0, 0.0]), "fraud")
    >>> lrn.w.tolist()
    [2.0, 0.0]
    """

    def __init__(self, n_features: int, classes: Sequence[Hashable], *, C: float = 1.0,
                 rho: float = 1.0, adaptive: bool = False, **common: Any) -> None:
        super().__init__(n_features, classes, **common)
        self.C = float(C)
        self.rho = float(rho)
        self.adaptive = bool(adaptive)

    def _own_params(self) -> dict[str, Any]:
        return {"C": self.C, "rho": self.rho}

    def _current_delta(self) -> float:
        if not self.adaptive:
            return self.delta
        t = self.n_seen + 1  # the round being decided, 1-based
        return self.delta / (t + 1)

    def set_budget_knob(self, knob: str, value: float) -> None:
        """Budget mode sets the current ``delta_t`` itself: delta_0 = value (t+1) for the round t
        being decided, so the decaying schedule does not fight the constant target ratio."""
        if knob == "delta" and self.adaptive:
            # DEVIATION (budget mode): the budget, not the 1/(t+1) schedule, sets delta_t
            # (docs/budget.md).
            value *= self.n_seen + 2
        super().set_budget_knob(knob, value)

    def _block_deltas(self, n: int) -> np.ndarray | float:
        if not self.adaptive:
            return self.delta
        t = self.n_seen + 1 + np.arange(n)
        return self.delta / (t + 1.0)

    def _update(self, idx, vals, code) -> None:
        y = 1.0 if code == 1 else -1.0
        rho_t = self.rho if code == 1 else 1.0
        kernels.pa_update(self.w, idx, vals, 0, len(idx), y, self._scores(idx, vals), rho_t,
                          VARIANTS.index("PA-I"), self.C)


class MPAA(PAStep, MulticlassLinear):
    """Multiclass PAA family (paa.md section 2, Algorithm 3), one weight row per class.

    Score: the gap ``p_t = s^(yhat) - max_{r != yhat} s^r`` between the top two class
    scores (>= 0). Query: ``delta/(delta+p_t)``. On a queried round with
    ``gamma = s^y - max_{r != y} s^r < 1``: ``tau`` from :func:`pa_step` with ``2||x||^2``,
    ``w^y += tau x`` and ``w^s -= tau x`` for the highest-scoring wrong class s.

    Example (MPAA-I: scores all 0, so gamma = 0, loss 1, tau = min(C, 1/(2*1)) = 0.5; the
    best wrong class is the first one, "a"):

    >>> import numpy as np, learners
    >>> lrn = learners.make("mpaa-i", n_features=2, classes=["a", "b", "c"], C=1.0)
    >>> lrn.learn(np.array([1.0, 0.0]), "b")
    >>> lrn.W.tolist()
    [[-0.5, 0.0], [0.5, 0.0], [0.0, 0.0]]
    >>> lrn.predict(np.array([[1.0, 0.0]])).tolist()
    ['b']
    """

    def _update(self, idx, vals, code) -> None:
        s = self._scores(idx, vals)
        r = self.best_wrong(s, code)  # highest-scoring wrong class; ties: first
        loss = max(0.0, 1.0 - (s[code] - s[r]))
        sq = float(np.dot(vals, vals))
        if loss > 0.0 and sq > 0.0:
            tau = pa_step(self.variant, loss, sq, self.C, multiclass=True)
            self.W[code, idx] += tau * vals
            self.W[r, idx] -= tau * vals


def c_param(default: float = 1.0) -> Param:
    """The PA aggressiveness C (> 0)."""
    return Param("C", default, float, "aggressiveness: cap (PA-I) or softness (PA-II) of the step",
                 low=0.0, low_open=True, log=True)


_BINARY_SUMMARY = "Passive-Aggressive Active ({v}): margin query delta/(delta+|w.x|), {u} update"
for _name, _variant in (("paa", "PA"), ("paa-i", "PA-I"), ("paa-ii", "PA-II")):
    register(_name, PAA, tasks=("binary",), variant=_variant,
             params=(delta_param(), *(() if _variant == "PA" else (c_param(),))),
             summary=_BINARY_SUMMARY.format(v=_name.upper(), u=_variant))
for _name, _variant in (("mpaa", "PA"), ("mpaa-i", "PA-I"), ("mpaa-ii", "PA-II")):
    register(_name, MPAA, tasks=("multiclass",), variant=_variant,
             params=(delta_param(), *(() if _variant == "PA" else (c_param(),))),
             summary=f"Multiclass PAA ({_name.upper()}): query delta/(delta+top-2 gap), "
                     f"two-row {_variant} update")

_RHO = Param("rho", 1.0, float, "cost bias: positives are pushed to margin rho (e.g. T_n/T_p)",
             low=0.0, low_open=True, log=True)
register("cspaa", CSPAA, tasks=("binary", "cost-sensitive"), adaptive=False,
         params=(delta_param(), c_param(), _RHO),
         summary="Cost-sensitive PAA: loss max(0, rho_t - y w.x), tau = min(C, loss/||x||^2)")
register("cspaa-adaptive", CSPAA, tasks=("binary", "cost-sensitive"), adaptive=True,
         params=(delta_param(2.0 ** 14, "initial query parameter delta_0; round t uses "
                                        "delta_0/(t+1)"), c_param(), _RHO),
         summary="CSPAA(a): cost-sensitive PAA with decaying delta_t = delta_0/(t+1)")
