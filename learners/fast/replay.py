"""Compiled replay loops for the binary PAA family and the binary D-ADA / D-AMD family.

``compiled_replay(learner, X, y, u)`` runs the whole stream in one numba function: the same
per-round arithmetic as the learner's ``_predict_and_query`` / ``_update`` (paa.py, dada.py),
the same query modes (active / random / all), and the same uniforms ``u`` that
:func:`learners.evaluation.engine.replay_fast` draws (``rng.random(n)``), so the decisions are those
of the per-item loop. Sums run left to right over the stored entries of each row; numpy's dot
may add in another order, so weights can differ from the per-item loop in the last bits
(tests: identical decisions, weights equal to 1e-12).

It returns None for a learner it does not know (the caller uses the block or per-item loop).
"""

from __future__ import annotations

import math

import numpy as np
import scipy.sparse as sp
from numba import njit

from ..base import Learner
from ..dada import DADA
from ..paa import PAA

_MODES = {"active": 0, "random": 1, "all": 2}
_PA_VARIANTS = {"PA": 0, "PA-I": 1, "PA-II": 2}
_A_RULES = {"feature": 0, "one": 1, "zero": 2}


@njit(cache=True)
def _query(mode, p, active_q):
    if mode == 2:
        return 1.0
    if mode == 1:
        return p
    return active_q


@njit(cache=True)
def _paa_loop(data, indices, indptr, y, u, w, delta, variant, C, mode, p, pred, qp, queried):
    """PAA family (paa.py ``PAA``): margin query, PA / PA-I / PA-II update. Returns labels used."""
    labels = 0
    for i in range(len(indptr) - 1):
        a, b = indptr[i], indptr[i + 1]
        m = 0.0
        for k in range(a, b):
            m += w[indices[k]] * data[k]
        pred[i] = 1 if m >= 0.0 else 0
        q = _query(mode, p, delta / (delta + abs(m)))
        qp[i] = q
        if u[i] < q:
            queried[i] = True
            labels += 1
            ys = 1.0 if y[i] == 1 else -1.0
            loss = max(0.0, 1.0 - ys * m)
            sq = 0.0
            for k in range(a, b):
                sq += data[k] * data[k]
            if loss > 0.0 and sq > 0.0:
                if variant == 0:
                    tau = loss / sq
                elif variant == 1:
                    tau = min(C, loss / sq)
                else:
                    tau = loss / (sq + 1.0 / (2.0 * C))
                for k in range(a, b):
                    w[indices[k]] += tau * ys * data[k]
    return labels


@njit(cache=True)
def _dada_loop(data, indices, indptr, y, u, w, s, theta, dual_averaging, a_rule, eta, smoothing,
               delta, mode, p, pred, qp, queried):
    """D-ADA / D-AMD (dada.py ``DADA``): statistic query, adaptive diagonal step. Returns labels."""
    labels = 0
    for i in range(len(indptr) - 1):
        a, b = indptr[i], indptr[i + 1]
        m = 0.0
        v = 0.0
        sq = 0.0
        for k in range(a, b):
            j = indices[k]
            x2 = data[k] * data[k]
            m += w[j] * data[k]
            v += x2 / (smoothing + s[j])
            sq += x2
        pred[i] = 1 if m >= 0.0 else 0
        if a_rule == 0:
            a_t = 1.0 / max(1.0, sq)
        elif a_rule == 1:
            a_t = 1.0
        else:
            a_t = 0.0
        stat = abs(m) - 0.5 * eta * a_t * v
        q = _query(mode, p, 1.0 if stat <= 0.0 else delta / (delta + stat))
        qp[i] = q
        if u[i] < q:
            queried[i] = True
            labels += 1
            ys = 1.0 if y[i] == 1 else -1.0
            if ys * m < 1.0:
                for k in range(a, b):
                    j = indices[k]
                    g = -ys * data[k]
                    new_s = math.hypot(s[j], g)
                    s[j] = new_s
                    if dual_averaging:
                        theta[j] += g
                        w[j] = -eta * theta[j] / (smoothing + new_s)
                    else:
                        w[j] -= eta * g / (smoothing + new_s)
    return labels


def has_compiled_loop(learner: Learner) -> bool:
    """True for the learners :func:`compiled_replay` runs (exact classes PAA and DADA)."""
    return type(learner) in (PAA, DADA)


def compiled_replay(learner: Learner, X: sp.csr_matrix, y: np.ndarray, u: np.ndarray
                    ) -> tuple[np.ndarray, np.ndarray, np.ndarray] | None:
    """Run the stream X (n, d) CSR with class codes y (n,) and uniforms u (n,) in place.

    Updates the learner's weights and counters as n rounds of decide + learn would. Returns
    ``(pred codes (n,), query probabilities (n,), queried (n,))`` or None when the learner has
    no compiled loop.
    """
    if not has_compiled_loop(learner):
        return None
    n = X.shape[0]
    pred = np.empty(n, dtype=np.int64)
    qp = np.empty(n)
    queried = np.zeros(n, dtype=bool)
    data = np.ascontiguousarray(X.data, dtype=np.float64)
    yc = np.ascontiguousarray(y, dtype=np.int64)
    mode = _MODES[learner.query]
    if isinstance(learner, PAA):
        labels = _paa_loop(data, X.indices, X.indptr, yc, u, learner.w, learner.delta,
                           _PA_VARIANTS[learner.variant], learner.C, mode, learner.p, pred, qp, queried)
    else:
        theta = learner.theta if learner.dual_averaging else np.zeros(0)
        labels = _dada_loop(data, X.indices, X.indptr, yc, u, learner.w, learner.s, theta,
                            learner.dual_averaging, _A_RULES[learner.a_t], learner.eta, learner.smoothing,
                            learner.delta, mode, learner.p, pred, qp, queried)
    learner.n_seen += n
    learner.n_labels += int(labels)
    return pred, qp, queried
