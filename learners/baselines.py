"""Perceptron baselines of the PAA paper (docs/algorithms/paa.md, "Baselines").

* ``pea``: label-efficient / selective-sampling perceptron (Cesa-Bianchi et al. 2006): the
  PAA margin query ``delta/(delta+|w.x|)`` and, on a queried mistake, ``w += y x``.
* ``mpea``: multiclass max-score perceptron with the MPAA query rule: on a queried mistake
  ``w^y += x`` and ``w^s -= x`` (s = highest-scoring wrong class).

The other baselines of the papers are parameters every learner accepts (base class):
random querying (RPE, RPA*, SORL, R-ADA, MRPE, ...) is ``query="random"`` with rate ``p``,
fully supervised learning (PE, PA, SOL, DA/MD, ...) is ``query="all"``.

Decision where the spec is silent: a "mistake" is ``y * (w.x) <= 0`` (multiclass:
``s^y - max_{r != y} s^r <= 0``), so a margin of exactly 0 counts as a mistake whatever the
tie-broken prediction was. This is the perceptron's classic condition (paa.md Lemma 1:
M_t = 1 implies y w.x <= 0; soal.md's APE: "y_t p_t <= 0"); with the prediction-based reading
(``yhat != y`` and sign(0) = +1) a perceptron started at w = 0 would never update on a
positive item until it had erred on a negative one.
"""

from __future__ import annotations

from .linear import LinearBinary, MulticlassLinear
from .registry import delta_param, register


class PEA(LinearBinary):
    """Label-efficient perceptron (paa.md section 7, "PEA"; query rule of section 1).

    Score: the margin ``p = w.x``. Query: ``delta/(delta+|p|)``. Update when queried and
    ``y p <= 0``: ``w += y x`` (module docstring for the p = 0 decision).

    Example (w = 0: the margin is 0, so q = 1 and the first item is queried; y p = 0 is a
    mistake, w += y x):

    >>> import numpy as np, learners
    >>> lrn = learners.make("pea", n_features=2, classes=[0, 1])
    >>> lrn.decide(np.array([1.0, 2.0]), np.random.default_rng(0)).query_prob
    1.0
    >>> lrn.learn(np.array([1.0, 2.0]), 0)
    >>> lrn.w.tolist()
    [-1.0, -2.0]
    """

    def _update(self, idx, vals, code) -> None:
        y = 1.0 if code == 1 else -1.0
        if y * self._scores(idx, vals) <= 0.0:
            self.w[idx] += y * vals


class MPEA(MulticlassLinear):
    """Multiclass label-efficient perceptron (paa.md section 2, "MPEA").

    Score: the top-1 minus top-2 class-score gap. Query: ``delta/(delta+gap)``. Update when
    queried and ``s^y - s^r <= 0`` (r = highest-scoring wrong class, ties: first):
    ``w^y += x``, ``w^r -= x``.

    Example (all scores 0: a mistake; r = "x", the first wrong class):

    >>> import numpy as np, learners
    >>> lrn = learners.make("mpea", n_features=2, classes=["x", "y", "z"])
    >>> lrn.learn(np.array([1.0, 2.0]), "z")
    >>> lrn.W.tolist()
    [[-1.0, -2.0], [0.0, 0.0], [1.0, 2.0]]
    """

    def _update(self, idx, vals, code) -> None:
        s = self._scores(idx, vals)
        r = self.best_wrong(s, code)
        if s[code] - s[r] <= 0.0:
            self.W[code, idx] += vals
            self.W[r, idx] -= vals


register("pea", PEA, tasks=("binary",), params=(delta_param(),),
         summary="Label-efficient perceptron: query delta/(delta+|w.x|), w += y x on queried mistakes")
register("mpea", MPEA, tasks=("multiclass",), params=(delta_param(),),
         summary="Multiclass label-efficient perceptron: query delta/(delta+top-2 gap), "
                 "max-score perceptron update on queried mistakes")
