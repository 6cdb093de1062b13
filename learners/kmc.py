"""KMC: Kernel Machine Committee for multi-class active learning, run on a stream.

Docs: docs/algorithms/kmc.md (Shi & Yu, NeurIPS 2019). The model is sections 1-3: K
one-vs-rest binary KMCs (:mod:`learners.kmc_fit`: ARD prior, closed-form ``q(w)`` of eq. 8,
dual QP of eq. 11, ``gamma`` by eq. 14, ``alpha`` by MacKay's rule with eq. 17's fixed points)
and prediction by the softmax of the K mean scores (section 1.6). The query rule is the
streaming adaptation of section 6.3 (the paper is pool-based):

1. **Cold start**: query with probability 1 until every class has a label (the paper starts
   with at least one label per class, section 5.4), or, once two classes have one, until
   ``cold_start_patience`` labels in a row bring no new class (a declared class may never
   appear in a stream; waiting for it queried every item forever). A class without a label
   has all -1 targets in its one-vs-rest machine until its first label arrives.
2. **Phase-1 analogue (entropy gate)**: the normalised entropy ``h = H(p)/ln K`` of the
   softmax; the item passes the gate when its rank among the recent entropies is in the top
   ``rho`` (``rho = max(gate, 2 b)``, so that a large target rate is reachable).
3. **Phase-2 analogue**: the eq. 18 term of the item as a new basis, from the spec 2.7
   quantities against the current fits (:class:`learners.kmc_stream.Phase2Scorer`);
   ``pi = 1 - rank`` of that score among recent scores (argmin of eq. 18 = query first).
4. **Probability**: ``omega = pi * gate + eps``, ``q = clip(c b omega / mean_W(omega), floor b, 1)``
   with the target rate ``b = delta / (1 + delta)`` (larger delta, more queries, as for every
   learner: delta 0.1 asks for about 9% of the items while ``b <= 1/2``). The product's budget
   controller (:mod:`learners.budget`) adapts delta on top when a budget is set.
5. **Rate correction** ``c``: the windows hold scores computed against older fits, and the
   phase-2 score grows as the labelled set grows, so a new item ranks above the window more often
   than not and ``mean(q)`` fell to 0.05-0.07 for ``b = 0.091`` (three blobs); the clips move it
   too. ``log c`` follows ``rate_gain (b - q) / b`` after each item (clipped to
   ``[-log 64, log 64]``), so the long-run query ratio is ``b`` (``rate_gain = 0``: ``c = 1``,
   spec 6.3 as written).

``score="entropy"`` replaces steps 2-3 by the entropy rank alone (``omega = rank(h) + eps``):
the streaming entropy-only baseline of the evidence test.

Learning: each label is appended to the labelled set and the K fits are refitted warm-started
(``warm_iter`` outer iterations) once ``max(refit_every, refit_fraction * labelled points)``
labels arrived since the last refit, and from scratch (``max_iter``) every ``full_refit_every``
labels (default: practically never; a from-scratch refit costs up to a minute at 500 labelled
points; the reproduction uses 1, 0 and 50). Refits are the expensive part; in the app they run inside
the Celery ``apply_labels`` task (``learn``), never in a web request.

Decisions where the spec is silent ([UNSPECIFIED] / [RECOMMENDATION] in the spec):

* Kernel: RBF ``exp(-g ||x - x'||^2)`` with ``g = kernel_scale / (d Var(X))`` estimated online
  from every item seen (labelled or observed) and frozen after ``freeze_width_after`` labels;
  until then every refit recomputes the Gram matrix and starts from scratch.
* No bias basis (the paper has none); items are used as given (the app's featurizers already
  scale them: images to [0, 1], text L2-normalised).
* Memory: at most ``max_basis`` labelled points are kept; beyond it the oldest point that is a
  basis of no class (pruned everywhere) is forgotten, or the oldest point if all are bases.
* ``Decision.score`` is the normalised entropy ``h`` in [0, 1] (0: confident).
* The calibration windows are updated by ``observe`` and ``learn`` with the numbers ``decide``
  computed for the same item (cached), so a replay and the app see the same sequence.
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Hashable, Sequence
from typing import Any

import numpy as np
import scipy.sparse as sp
from threadpoolctl import threadpool_limits

from .base import Learner
from .kmc_fit import ALPHA_UPDATES, CONSTRAINTS, BinaryFit, fit_binary
from .kmc_stream import Phase2Scorer, RBFWidth, ScoreWindow, rbf
from .registry import Param, delta_param, register

SCORES = ("kmc", "entropy")
EPS = 1e-3  # spec 6.3 step 4's eps: keeps omega > 0 for gated-out items
LOG_C_LIMIT = math.log(64.0)  # the rate correction c stays within [1/64, 64]


class KMC(Learner):
    """Streaming multi-class KMC (see the module docstring for the rule and the decisions).

    Example (three well separated points, five labels each):

    >>> import numpy as np, learners
    >>> lrn = learners.make("kmc", n_features=2, classes=["a", "b", "c"])
    >>> for x, label in zip([[0.0, 0.0], [3.0, 0.0], [0.0, 3.0]] * 5, ["a", "b", "c"] * 5):
    ...     lrn.learn(np.array(x), label)
    >>> lrn.predict(np.array([[0.1, 0.0], [2.9, 0.1], [0.0, 3.2]])).tolist()
    ['a', 'b', 'c']
    """

    binary = False
    static_between_labels = False

    def __init__(self, n_features: int, classes: Sequence[Hashable], *, C: float = 1.0,
                 constraint: str = "simplex", alpha_update: str = "mackay", kernel_scale: float = 1.0,
                 score: str = "kmc", gate: float = 0.2, floor: float = 0.1, window: int = 500,
                 refit_every: int = 1, refit_fraction: float = 0.1, full_refit_every: int = 100_000,
                 warm_iter: int = 3,
                 max_iter: int = 50, max_basis: int = 500, freeze_width_after: int = 20,
                 alpha_min: float = 1e-2, cold_start_patience: int = 50, rate_gain: float = 0.005,
                 **common: Any) -> None:
        super().__init__(n_features, classes, **common)
        self.C, self.constraint, self.alpha_update = float(C), constraint, alpha_update
        self.kernel_scale, self.alpha_min = float(kernel_scale), float(alpha_min)
        self.score_rule = score  # the "score" parameter (``score`` is the contract's method)
        self.gate, self.floor, self.window = float(gate), float(floor), int(window)
        self.refit_every, self.full_refit_every = int(refit_every), int(full_refit_every)
        self.refit_fraction = float(refit_fraction)
        self.warm_iter, self.max_iter = int(warm_iter), int(max_iter)
        self.max_basis, self.freeze_width_after = int(max_basis), int(freeze_width_after)
        self.cold_start_patience = int(cold_start_patience)
        self.rate_gain = float(rate_gain)
        self.log_c = 0.0  # log of the rate correction c (step 5 of the module docstring)
        k = len(self.classes)
        self.X = sp.csr_matrix((0, n_features))  # labelled items (n, d)
        self.sq = np.zeros(0)  # their squared norms (n,)
        self.codes = np.zeros(0, dtype=np.int64)  # their class codes (n,)
        self.gram = np.zeros((0, 0))  # kernel among them (n, n) at width self.g
        self.fits: list[BinaryFit] | None = None
        self.scorer: Phase2Scorer | None = None
        self.width = RBFWidth(n_features)
        self.g = float(kernel_scale)
        self.frozen = False
        self.since_full = 0
        self.since_fit = 0  # labels since the last refit (warm or full)
        self.cold_streak = 0  # cold-start labels in a row that brought no new class
        self.windows = {name: ScoreWindow(window) for name in ("h", "sc", "omega")}
        self._cache: tuple[bytes, float, float, float, float] | None = None
        self._k = k

    def _own_params(self) -> dict[str, Any]:
        return {"C": self.C, "constraint": self.constraint, "alpha_update": self.alpha_update,
                "kernel_scale": self.kernel_scale, "score": self.score_rule, "gate": self.gate,
                "floor": self.floor, "window": self.window, "refit_every": self.refit_every,
                "refit_fraction": self.refit_fraction,
                "full_refit_every": self.full_refit_every, "warm_iter": self.warm_iter,
                "max_iter": self.max_iter, "max_basis": self.max_basis,
                "freeze_width_after": self.freeze_width_after, "alpha_min": self.alpha_min,
                "cold_start_patience": self.cold_start_patience, "rate_gain": self.rate_gain}

    # ------------------------------------------------------------- scoring
    def _row(self, idx: np.ndarray, vals: np.ndarray) -> sp.csr_matrix:
        return sp.csr_matrix((vals, idx, [0, len(idx)]), shape=(1, self.n_features))

    def _kernel_to_labelled(self, x: sp.csr_matrix) -> np.ndarray:
        """``[k(x_i, x)]_i`` over the labelled points (n,)."""
        return rbf(self.X, self.sq, x, np.array([float(x.data @ x.data)]), self.g)[:, 0]

    def _class_scores(self, phi: np.ndarray) -> np.ndarray:
        """The K mean scores ``m_k^T phi(x)`` (section 1.6); zeros before the first fit."""
        if self.fits is None:
            return np.zeros(self._k)
        return np.array([fit.m @ phi[:len(fit.m)] for fit in self.fits])

    def _scores(self, idx: np.ndarray, vals: np.ndarray) -> np.ndarray:
        if len(self.codes) == 0:
            return np.zeros(self._k)
        return self._class_scores(self._kernel_to_labelled(self._row(idx, vals)))

    @property
    def rate(self) -> float:
        """Target query rate ``b = delta / (1 + delta)``."""
        return self.delta / (1.0 + self.delta)

    def _predict_and_query(self, idx, vals, predict_only):
        if len(self.codes) == 0:
            return 0, 1.0, 1.0
        phi = self._kernel_to_labelled(self._row(idx, vals))
        f = self._class_scores(phi)
        p = np.exp(f - f.max())
        p /= p.sum()
        code = int(np.argmax(p))
        h = float(-(p * np.log(np.maximum(p, 1e-300))).sum() / math.log(self._k))
        if predict_only:
            return code, h, 0.0
        # DEVIATION: a per-item query probability (entropy gate, phase-2 rank, target rate b) in
        # place of the paper's pool-based top-S / eq. 18 argmin (docs/algorithms/kmc.md).
        if self.fits is None:  # cold start (see the module docstring)
            self._cache = None
            return code, h, 1.0
        sc = self.scorer.score(phi) if self.scorer is not None and self.score_rule == "kmc" else 0.0
        omega = self._omega(h, sc)
        b = self.rate
        mean = self.windows["omega"].mean()
        # DEVIATION (docs/algorithms/kmc.md, rate correction): c scales the spec's probability
        # so that the long-run ratio is b although the windows' scores lag the fits.
        q = math.exp(self.log_c) * b * omega / mean if mean else b
        q = float(min(1.0, max(self.floor * b, q)))
        self._cache = (_key(idx, vals), h, sc, omega, q)
        return code, h, q

    def _omega(self, h: float, sc: float) -> float:
        """Spec 6.3 step 4's ``omega`` from the entropy and the phase-2 score of one item."""
        rank_h = self.windows["h"].rank(h)
        if self.score_rule == "entropy":
            return rank_h + EPS
        rho = max(self.gate, min(1.0, 2.0 * self.rate))
        passed = rank_h >= 1.0 - rho
        pi = 1.0 - self.windows["sc"].rank(sc)
        return pi * passed + EPS

    def _remember(self, idx: np.ndarray, vals: np.ndarray) -> None:
        """Push the item's (h, sc, omega) into the windows (computed by decide, else now)."""
        if self.fits is None:
            return
        key = _key(idx, vals)
        if self._cache is None or self._cache[0] != key:
            self._predict_and_query(idx, vals, False)
        assert self._cache is not None  # set by _predict_and_query once the fits exist
        _, h, sc, omega, q = self._cache
        self.windows["h"].push(h)
        self.windows["sc"].push(sc)
        self.windows["omega"].push(omega)
        self._cache = None
        b = self.rate
        self.log_c = min(LOG_C_LIMIT, max(-LOG_C_LIMIT, self.log_c + self.rate_gain * (b - q) / b))

    def _observe(self, idx, vals):
        self._remember(idx, vals)
        if not self.frozen:
            self.width.add(self._row(idx, vals))

    # ------------------------------------------------------------- learning
    def _update(self, idx, vals, code):
        self._remember(idx, vals)
        x = self._row(idx, vals)
        if not self.frozen:
            self.width.add(x)
        new_class = not np.any(self.codes == code)
        self._append(x, code)
        forced = len(self.codes) > self.max_basis and self._forget_one()
        self.since_full += 1
        self.since_fit += 1
        if self.fits is None:
            self.cold_streak = 0 if new_class else self.cold_streak + 1
            seen = len(np.unique(self.codes))
            # DEVIATION (docs/algorithms/kmc.md): the cold start also ends after
            # cold_start_patience labels in a row bring no new class; the paper starts with a
            # label of every class, but a declared class may never appear in a stream.
            if seen < self._k and (seen < 2 or self.cold_streak < self.cold_start_patience):
                return
        n_labels = self.n_labels + 1
        if not self.frozen:
            self.g = self.width.gamma(self.kernel_scale)
            self.frozen = n_labels >= self.freeze_width_after
            self.gram = rbf(self.X, self.sq, self.X, self.sq, self.g)
            self._refit(full=True)
        elif self.fits is None or self.since_full >= self.full_refit_every:
            self._refit(full=True)
        elif forced or self.since_fit >= self.refit_interval():
            self._refit(full=False)

    def refit_interval(self) -> int:
        """Labels between warm refits: ``max(refit_every, floor(refit_fraction * labelled points))``,
        so the refit work per label stays bounded as the labelled set grows (docs/algorithms/kmc.md)."""
        return max(self.refit_every, int(self.refit_fraction * len(self.codes)))

    def _append(self, x: sp.csr_matrix, code: int) -> None:
        sq = float(x.data @ x.data)
        if self.frozen and len(self.codes):
            col = rbf(self.X, self.sq, x, np.array([sq]), self.g)[:, 0]
            n = len(self.codes)
            gram = np.empty((n + 1, n + 1))
            gram[:n, :n], gram[:n, n], gram[n, :n], gram[n, n] = self.gram, col, col, 1.0
            self.gram = gram
        self.X = sp.vstack([self.X, x], format="csr")
        self.sq = np.append(self.sq, sq)
        self.codes = np.append(self.codes, code)

    def _forget_one(self) -> bool:
        """Drop one labelled point to keep at most ``max_basis`` (see the module docstring).

        Returns True when the point was a basis of some class (the fits then need a refit); a
        point no class uses leaves the fits' weights and covariances as they were, so only the
        phase-2 scorer is rebuilt on the remaining points.
        """
        n_fit = len(self.fits[0].alpha) if self.fits else 0
        unused = np.ones(len(self.codes), dtype=bool)
        for fit in self.fits or []:
            unused[:n_fit] &= ~fit.active
        drop = int(np.argmax(unused)) if unused.any() else 0
        keep = np.arange(len(self.codes)) != drop
        self.X, self.sq, self.codes = self.X[keep], self.sq[keep], self.codes[keep]
        self.gram = self.gram[np.ix_(keep, keep)] if self.gram.shape[0] == len(keep) else self.gram
        if drop >= n_fit:
            return False
        assert self.fits is not None  # n_fit > drop >= 0
        self.fits = [_drop_point(fit, keep[:n_fit], self.C, self.constraint) for fit in self.fits]
        if unused[drop]:
            self.scorer = Phase2Scorer.build(self.gram[:n_fit - 1, :n_fit - 1], self.codes[:n_fit - 1],
                                             self.fits)
            return False
        return True

    @threadpool_limits.wrap(limits=1, user_api="blas")
    def _refit(self, full: bool) -> None:
        """Refit the K one-vs-rest machines (warm-started unless ``full``) and the scorer.

        BLAS is held to one thread: the matrices are small (at most ``max_basis`` square) and a
        multi-threaded BLAS made these refits 3x slower on a 2-core machine (thread start-up
        and spinning dominate).
        """
        fits = []
        for k in range(self._k):
            y = np.where(self.codes == k, 1.0, -1.0)
            init = None if full or self.fits is None else \
                self.fits[k].extended(len(y) - len(self.fits[k].alpha), self.C, self.constraint)
            fits.append(fit_binary(self.gram, y, self.C, constraint=self.constraint,
                                   alpha_update=self.alpha_update, init=init,
                                   max_iter=self.max_iter if init is None else self.warm_iter,
                                   alpha_min=self.alpha_min))
        self.fits = fits
        if full:
            self.since_full = 0
        self.since_fit = 0
        self.scorer = Phase2Scorer.build(self.gram, self.codes, fits)

    def n_bases(self) -> int:
        """Labelled points that are a basis (KMC vector) of at least one class."""
        if self.fits is None:
            return 0
        return int(np.logical_or.reduce([fit.active for fit in self.fits]).sum())

    # ---------------------------------------------------------------- state
    def _state_meta(self) -> dict[str, Any]:
        return {"g": self.g, "frozen": self.frozen, "since_full": self.since_full,
                "since_fit": self.since_fit,
                "cold_streak": self.cold_streak, "log_c": self.log_c,
                "fitted": self.fits is not None, "width_n": self.width.n, "width_sq": self.width.sq,
                "windows": {k: [w.count, w.next] for k, w in self.windows.items()}}

    def _state_arrays(self) -> dict[str, np.ndarray]:
        X = self.X
        arrays = {"X_data": X.data, "X_indices": X.indices, "X_indptr": X.indptr, "sq": self.sq,
                  "codes": self.codes, "gram": self.gram, "width_total": self.width.total}
        for name, w in self.windows.items():
            arrays[f"win_{name}"] = w.values
        for k, fit in enumerate(self.fits or []):
            for field in ("alpha", "gamma", "u", "m", "S"):
                arrays[f"fit{k}_{field}"] = getattr(fit, field)
        return arrays

    def _load_arrays(self, arrays: dict[str, np.ndarray], extra: dict[str, Any]) -> None:
        self.X = sp.csr_matrix((arrays["X_data"], arrays["X_indices"], arrays["X_indptr"]),
                               shape=(len(arrays["codes"]), self.n_features))
        self.sq, self.codes, self.gram = arrays["sq"], arrays["codes"].astype(np.int64), arrays["gram"]
        self.width.total, self.width.n, self.width.sq = (arrays["width_total"], int(extra["width_n"]),
                                                         float(extra["width_sq"]))
        self.g, self.frozen = float(extra["g"]), bool(extra["frozen"])
        self.since_full = int(extra["since_full"])
        self.since_fit = int(extra.get("since_fit", 0))
        self.cold_streak = int(extra.get("cold_streak", 0))
        self.log_c = float(extra.get("log_c", 0.0))
        for name, (count, nxt) in extra["windows"].items():
            w = self.windows[name]
            w.values, w.count, w.next = arrays[f"win_{name}"], int(count), int(nxt)
        self.fits, self.scorer = None, None
        if extra["fitted"]:
            self.fits = [BinaryFit(arrays[f"fit{k}_alpha"], arrays[f"fit{k}_gamma"], arrays[f"fit{k}_u"],
                                   arrays[f"fit{k}_m"], arrays[f"fit{k}_S"]) for k in range(self._k)]
            n_fit = len(self.fits[0].alpha)
            self.scorer = Phase2Scorer.build(self.gram[:n_fit, :n_fit], self.codes[:n_fit], self.fits)


def _key(idx: np.ndarray, vals: np.ndarray) -> bytes:
    """Identity of one item's sparse row, to reuse the numbers decide computed for it."""
    return hashlib.blake2b(idx.tobytes() + b"|" + vals.tobytes(), digest_size=16).digest()


def _drop_point(fit: BinaryFit, keep: np.ndarray, C: float, constraint: str) -> BinaryFit:
    """``fit`` without the points outside ``keep``; u re-projected, S rebuilt at the next refit."""
    u = fit.u[keep]
    if constraint == "simplex" and u.sum() > 0:
        u = u * (C / u.sum())
    was_active = fit.active
    # S no longer matches once a basis left; the caller refits at once, which recomputes it
    S = fit.S if not was_active[~keep].any() else np.eye(int((was_active & keep).sum()))
    return BinaryFit(fit.alpha[keep], fit.gamma[keep], u, fit.m[keep], S, fit.iterations)


register(
    "kmc", KMC, tasks=("multiclass",),
    params=(
        delta_param(0.1, "query knob: target query rate b = delta/(1+delta) (0.1 -> ~9% of items)"),
        Param("C", 1.0, float, "large-margin coefficient (paper: 1 on real data, 1e-2 synthetic)",
              low=0.0, low_open=True, log=True),
        Param("constraint", "simplex", str, "dual QP feasible set: 'simplex' sum u = C (the paper "
              "as printed) or 'box' 0 <= u <= C (the dual of the primal as written)",
              choices=CONSTRAINTS),
        # DEVIATION: MacKay's rule by default, eq. 17's fixed points but far fewer iterations
        # (docs/algorithms/kmc.md).
        Param("alpha_update", "mackay", str, "ARD update: 'mackay' (fast) or 'em' (eq. 17); "
              "same fixed points", choices=ALPHA_UPDATES),
        Param("kernel_scale", 1.0, float, "RBF width g = kernel_scale / (d Var(X))",
              low=0.0, low_open=True, log=True),
        Param("score", "kmc", str, "query score: 'kmc' (entropy gate + eq. 18 score) or "
              "'entropy' (entropy rank only, a baseline)", choices=SCORES),
        Param("gate", 0.2, float, "fraction of items (by entropy rank) that pass the phase-1 gate",
              low=0.0, high=1.0, low_open=True),
        Param("floor", 0.1, float, "least query probability, as a fraction of the target rate",
              low=0.0, high=1.0),
        Param("window", 500, int, "number of recent items whose scores calibrate the ranks",
              low=10, high=100_000, log=True),
        Param("refit_every", 1, int, "warm-started refit after at least N labels", low=1, high=10_000),
        Param("refit_fraction", 0.1, float, "warm refits also wait for this fraction of the labelled "
              "points in new labels (0: after every refit_every labels)", low=0.0, high=1.0),
        Param("full_refit_every", 100_000, int, "refit from scratch every M labels (one costs seconds "
              "to a minute at hundreds of labels; the reproduction uses 50)", low=1, high=100_000),
        Param("warm_iter", 3, int, "outer iterations of a warm-started refit", low=1, high=10_000),
        Param("max_iter", 50, int, "outer iterations of a full refit", low=1, high=100_000),
        Param("max_basis", 500, int, "most labelled points (basis vectors) kept in memory",
              low=2, high=100_000, log=True),
        Param("freeze_width_after", 20, int, "labels after which the RBF width stops changing",
              low=1, high=100_000),
        Param("alpha_min", 1e-2, float, "floor on the ARD precisions (keeps separable fits finite)",
              low=0.0, low_open=True, log=True),
        Param("cold_start_patience", 50, int, "the cold start (every item queried) ends when every "
              "class has a label, or after this many labels in a row bring no new class",
              low=1, high=100_000, log=True),
        # DEVIATION (docs/algorithms/kmc.md, rate correction): spec 6.3 has c = 1.
        Param("rate_gain", 0.005, float, "step of the query-rate correction per item: the query "
              "probabilities are scaled so that the long-run ratio is b = delta/(1+delta) "
              "(0: no correction, spec 6.3 as written)", low=0.0, high=1.0),
    ),
    summary="KMC: Bayesian + max-margin kernel machine committee (one-vs-rest, RBF), "
            "entropy gate + KMC-vector score on a stream",
)
