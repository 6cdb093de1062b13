"""Compiled (numba) update and query rules of the PAA and D-ADA / D-AMD families: their one source.

Each rule is written once here and reached two ways:

* item by item: :class:`learners.paa.PAA`, :class:`~learners.paa.CSPAA`, :class:`~learners.paa.MPAA`,
  :class:`learners.dada.DADA` and :class:`~learners.dada.MDADA` call these kernels from their
  ``_update`` / query code on one sparse row ``(idx, vals)``;
* a whole stream: :func:`paa_stream` and :func:`dada_stream` run decide + learn over the rows
  of a CSR matrix with pre-drawn uniforms, calling the same kernels; the learners expose them
  through :meth:`learners.base.Learner.compiled_loop`.

So the per-item and the compiled paths make the same arithmetic in the same order (tests
check identical decisions and states). The formulas and their sources are documented on the
learner classes (``docs/algorithms/paa.md``, ``docs/algorithms/dada.md``).

Conventions: one sparse row is ``idx[a:b]`` (int feature indices) and ``vals[a:b]`` (float64
values), so a stream loop passes the CSR buffers without slicing them and a single item is
``(idx, vals, 0, len(idx))``; ``y`` is the label as a float in {-1.0, +1.0}; weight arrays are
updated in place. numba caches the machine code on disk (``cache=True``), so only the first run
after an install compiles. The per-row kernels are inlined into the stream loops (``inline="always"``: a call
per row cost a quarter of the loop's time).
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit

#: PA variants by code (the ``variant`` argument of :func:`pa_step`).
PA_VARIANTS = ("PA", "PA-I", "PA-II")
#: D-ADA query weights a_t by code (the ``a_rule`` argument of :func:`a_weight`).
A_RULES = ("feature", "one", "zero")


# The query-probability rules of every learner: plain Python for the per-item path (re-exported
# by learners.base), compiled as they are for the loops below.
def margin_query_probability(delta: float, margin: float) -> float:
    """``delta / (delta + |margin|)``: the margin-based query rule (1 when margin is 0)."""
    return delta / (delta + abs(margin))


def statistic_query_probability(delta: float, statistic: float) -> float:
    """``1`` if ``statistic <= 0`` else ``delta / (delta + statistic)`` (SOAL, D-ADA/D-AMD)."""
    return 1.0 if statistic <= 0.0 else delta / (delta + statistic)


def mode_probability(mode: int, p: float, active_q: float) -> float:
    """The query probability under query mode ``QUERY_MODES[mode]``.

    "active" (0): ``active_q``, the learner's published rule; "random" (1): ``p``;
    "all" (2): 1 (the modes of ``learners.base.QUERY_MODES``).
    """
    if mode == 2:
        return 1.0
    if mode == 1:
        return p
    return active_q


_mode_probability = njit(cache=True, inline="always")(mode_probability)
_margin_query_probability = njit(cache=True, inline="always")(margin_query_probability)
_statistic_query_probability = njit(cache=True, inline="always")(statistic_query_probability)


@njit(cache=True, inline="always")
def margin(w: np.ndarray, idx: np.ndarray, vals: np.ndarray, a: int, b: int) -> float:
    """``w.x`` of the sparse row held in ``idx[a:b]``, ``vals[a:b]``."""
    m = 0.0
    for k in range(a, b):
        m += w[idx[k]] * vals[k]
    return m


@njit(cache=True, inline="always")
def sq_norm(vals: np.ndarray, a: int, b: int) -> float:
    """``||x||^2`` of the sparse row held in ``vals[a:b]``."""
    sq = 0.0
    for k in range(a, b):
        sq += vals[k] * vals[k]
    return sq


@njit(cache=True, inline="always")
def pa_step(variant: int, loss: float, sq: float, C: float, multiclass: bool) -> float:
    """Step size tau of the PA family (paa.md Eq. 1; multiclass Eq. 4 uses ``2||x||^2``).

    variant: index in :data:`PA_VARIANTS`; loss: hinge loss (> 0); sq: ``||x||^2`` (> 0);
    C: aggressiveness (> 0). PA: ``loss/sq``, PA-I: ``min(C, loss/sq)``, PA-II:
    ``loss/(sq + 1/(2C))``.
    """
    denom = 2.0 * sq if multiclass else sq
    if variant == 0:
        return loss / denom
    if variant == 1:
        return min(C, loss / denom)
    return loss / (denom + 1.0 / (2.0 * C))


@njit(cache=True, inline="always")
def pa_update(w: np.ndarray, idx: np.ndarray, vals: np.ndarray, a: int, b: int, y: float, m: float,
              target: float, variant: int, C: float) -> None:
    """Binary PA update in place: ``w += tau y x`` when ``loss = max(0, target - y m) > 0``.

    m: the margin ``w.x`` before the update (:func:`margin`); target: the margin asked for, 1
    for PAA (paa.md Algorithm 2) and ``rho_t`` for CSPAA (Algorithm 4, with variant PA-I).
    An all-zero row (``||x|| = 0``) changes nothing.
    """
    loss = max(0.0, target - y * m)
    sq = sq_norm(vals, a, b)
    if loss > 0.0 and sq > 0.0:
        step = pa_step(variant, loss, sq, C, False) * y
        for k in range(a, b):
            w[idx[k]] += step * vals[k]


@njit(cache=True, inline="always")
def a_weight(a_rule: int, sq: float) -> float:
    """Weight a_t of D-ADA's feature term: ``1/max(1, ||x||^2)``, 1 or 0 (codes of :data:`A_RULES`)."""
    if a_rule == 0:
        return 1.0 / max(1.0, sq)
    return 1.0 if a_rule == 1 else 0.0


@njit(cache=True)
def a_weights(a_rule: int, sq: np.ndarray) -> np.ndarray:
    """:func:`a_weight` of each row of a block, from the squared norms (n,)."""
    out = np.empty(len(sq))
    for i in range(len(sq)):
        out[i] = a_weight(a_rule, sq[i])
    return out


@njit(cache=True, inline="always")
def dada_statistic(w: np.ndarray, s: np.ndarray, idx: np.ndarray, vals: np.ndarray, a: int, b: int,
                   a_rule: int, eta: float, smoothing: float) -> tuple[float, float]:
    """``(p, q_stat)`` of binary D-ADA (dada.md Algorithm 1): the margin ``p = w.x`` and
    ``q_stat = |p| - (eta/2) a_t sum_i x_i^2/(smoothing + s_i)``."""
    m = 0.0
    v = 0.0
    sq = 0.0
    for k in range(a, b):
        j = idx[k]
        x2 = vals[k] * vals[k]
        m += w[j] * vals[k]
        v += x2 / (smoothing + s[j])
        sq += x2
    return m, abs(m) - 0.5 * eta * a_weight(a_rule, sq) * v


@njit(cache=True, inline="always")
def adaptive_step(w: np.ndarray, s: np.ndarray, theta: np.ndarray, idx: np.ndarray, vals: np.ndarray,
                  a: int, b: int, sign: float, eta: float, smoothing: float, dual_averaging: bool) -> None:
    """One D-ADA (``dual_averaging``) or D-AMD step in place, subgradient ``g = sign * x``.

    w, s, theta: (d,) arrays or rows of the multiclass matrices (theta unused, may be empty,
    for D-AMD); the row x is ``idx[a:b]``, ``vals[a:b]``. ``s_i = sqrt(s_i^2 + g_i^2)`` first
    (line 10, so H_t includes g_t), then DA ``theta_i += g_i; w_i = -eta theta_i/(smoothing + s_i)``
    (line 13) or MD ``w_i -= eta g_i/(smoothing + s_i)`` (line 14).
    """
    for k in range(a, b):
        j = idx[k]
        g = sign * vals[k]
        new_s = math.hypot(s[j], g)
        s[j] = new_s
        if dual_averaging:
            theta[j] += g
            w[j] = -eta * theta[j] / (smoothing + new_s)
        else:
            w[j] -= eta * g / (smoothing + new_s)


@njit(cache=True, inline="always")
def dada_update(w: np.ndarray, s: np.ndarray, theta: np.ndarray, idx: np.ndarray, vals: np.ndarray,
                a: int, b: int, y: float, m: float, eta: float, smoothing: float,
                dual_averaging: bool) -> None:
    """Binary D-ADA / D-AMD update: when ``y m < 1`` (m = ``w.x`` before the update),
    :func:`adaptive_step` with ``g = -y x``."""
    if y * m >= 1.0:
        return  # hinge loss 0 (including the kink y p = 1): g = 0, nothing changes
    adaptive_step(w, s, theta, idx, vals, a, b, -y, eta, smoothing, dual_averaging)


@njit(cache=True)
def paa_stream(data, indices, indptr, codes, u, w, delta, variant, C, mode, p, pred, qp, queried):
    """Decide + learn each row of a CSR stream for binary PAA; returns the number of labels used.

    codes: revealed class codes (n,) (1 = +1); u: uniforms (n,), row i queried iff u[i] < q_i;
    mode: index in ``learners.base.QUERY_MODES``. Fills pred (n,), qp (n,), queried (n,).
    """
    labels = 0
    for i in range(len(indptr) - 1):
        a, b = indptr[i], indptr[i + 1]
        m = margin(w, indices, data, a, b)
        pred[i] = 1 if m >= 0.0 else 0
        q = _mode_probability(mode, p, _margin_query_probability(delta, m))
        qp[i] = q
        if u[i] < q:
            queried[i] = True
            labels += 1
            pa_update(w, indices, data, a, b, 1.0 if codes[i] == 1 else -1.0, m, 1.0, variant, C)
    return labels


@njit(cache=True)
def dada_stream(data, indices, indptr, codes, u, w, s, theta, dual_averaging, a_rule, eta, smoothing,
                delta, mode, p, pred, qp, queried):
    """Decide + learn each row of a CSR stream for binary D-ADA / D-AMD (as :func:`paa_stream`)."""
    # the same loop as paa_stream around other rules: a numba-forced twin (a rule passed in as a
    # function would not be inlined, and these loops are the replay's hot path)
    labels = 0
    for i in range(len(indptr) - 1):
        a, b = indptr[i], indptr[i + 1]
        m, stat = dada_statistic(w, s, indices, data, a, b, a_rule, eta, smoothing)
        pred[i] = 1 if m >= 0.0 else 0
        q = _mode_probability(mode, p, _statistic_query_probability(delta, stat))
        qp[i] = q
        if u[i] < q:
            queried[i] = True
            labels += 1
            dada_update(w, s, theta, indices, data, a, b, 1.0 if codes[i] == 1 else -1.0, m, eta,
                        smoothing, dual_averaging)
    return labels
