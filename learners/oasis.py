"""OASIS: Online Active SemI-Supervised learning (docs/algorithms/oasis.md, Goldberg et al.
2011).

A particle filter over linear classifiers ``w`` with the null-category likelihood, so that
unlabelled items push the decision boundary into low-density regions (spec sections 1-3).

Registered learners (all three are the same :class:`OASIS` class, spec section 5):

* ``oasis``: active + semi-supervised (Algorithm 1).
* ``osis``: semi-supervised, never queries actively: its ``query="active"`` rule has query
  probability 0. Labels reach it only as the caller reveals them (``learn``), e.g. the
  paper's "same number of labels at random positions" protocol, or via ``query="random"``.
* ``os``: supervised particle filter, never queries actively, and its posterior ignores
  unlabelled items (spec section 5 item 3, [INFERRED] reading: weight factor 1 and not put
  in the buffer, so the buffer holds the last ``tau`` *labelled* items).

Per item (``decide`` then ``learn``/``observe``; spec section 2.8):

* prediction by eq. 4, ``P(+1|x) = sum_i pi_i sigmoid(ln 8 * clip(W_i.x, -1, 1))``, made
  before the update; predict ``classes[1]`` iff ``P > 0.5`` (tie rule [UNSPECIFIED]: -1);
* **Decision.score is the disagreement score** of eq. 6, ``|sum_i pi_i sign(W_i.x)|`` in
  [0, 1] (0: the posterior mass is split evenly, 1: unanimous); a particle with
  ``W_i.x = 0`` casts no vote (tie-break [UNSPECIFIED], measure zero);
* active query rule (``rule`` parameter; the base class's ``query`` parameter keeps its
  common meaning active/random/all): ``"threshold"`` is the paper's rule, probability 1 if
  ``score < s0`` else 0; ``"bernoulli"`` is ``delta / (delta + score)`` so that ``delta`` is
  the admin's knob as for every other learner;
* ``learn(x, y)`` reweights by ``p(y|x,w)``, ``observe(x)`` by ``p(+1|x,w) + p(-1|x,w)``
  (os: no reweighting); the item enters the bounded buffer of the last ``tau`` items; if
  ESS < m/2: systematic resampling, one Metropolis-Hastings move per particle targeting
  ``prior * prod_{buffer} L_k`` with a Cauchy(0, ``proposal_scale``) random walk, weights
  reset to 1/m. Everything is in log space and vectorised over particles.

Decisions where the spec or the paper is silent, or where the product needs a deviation:

* **Online standardisation (deviation, spec section 4 / 8.2).** The paper scales each
  feature to mean 0, SD 0.5 with the statistics of the whole trial; a stream cannot see
  the future, so the learner keeps a running mean and (population) variance, updated by
  every ``learn`` and ``observe`` before the item reweights the particles, and maps
  ``x -> 0.5 (x - mean) / sd``. A feature with no observed spread yet (fewer than two items,
  or constant) maps to 0. Buffered items are stored raw and re-standardised with the
  current statistics at each MH move. While the scaler warms up (its first ``tau`` items) the
  filter does not resample-move: the prior's particles keep their importance weights, rebuilt
  at each item from the buffered items under the current statistics, and the first move comes
  after the warm-up. ``os`` updates these statistics from every item too
  (the paper's scaling was common preprocessing for all compared methods), only its
  posterior ignores unlabelled items. ``standardize=False`` uses the raw features.
* **Bias feature (spec section 1.1 / 8.1).** Off by default (``bias=False``): the data are
  centred by the standardisation, and a boundary through the running mean acts as the
  class-balance constraint that the null-category likelihood otherwise lacks; with a free
  intercept, unlabelled items favour boundaries that leave all the data on one side (every
  unlabelled item beyond the margin has the maximal likelihood 0.9). ``bias=True`` appends
  a constant 1 (not standardised) with the same Cauchy(0, nu) prior as the other weights.
* **Multiclass (extension; the paper is binary only, spec section 4).** With k >= 3
  classes the learner runs k independent one-vs-rest binary filters on the same stream
  (a label c is +1 for filter c and -1 for the others; an unlabelled item is unlabelled
  for all). It predicts the class whose filter gives the largest eq. 4 probability (ties:
  first class) and its score is the **smallest** disagreement score over the k filters
  (query when any filter's posterior is split). Each filter resamples on its own ESS.
  With two classes there is one filter: ``classes[0]`` is -1 and ``classes[1]`` is +1.
* **Contract shape.** The class accepts k >= 2 classes, so its class attribute ``binary``
  is False (the registry then allows both tasks); an instance with two classes sets
  ``binary = True`` so that :meth:`score` and ``decision_function`` return the binary
  margin ``2 P(+1|x) - 1`` in [-1, 1]. With k >= 3 they return the k one-vs-rest eq. 4
  probabilities.
* **Randomness.** Particle initialisation, resampling and MH use an internal
  ``numpy.random.Generator`` seeded by ``seed``; its bit-generator state is part of the
  saved state, so a reloaded learner continues identically. The caller's ``rng`` passed
  to ``decide`` is used only for the base class's one query draw.
"""

from __future__ import annotations

import math
from collections.abc import Hashable, Sequence
from typing import Any

import numpy as np

from .base import Learner, margin_query_probability
from .registry import Param, delta_param, register

# Likelihood constants (spec section 1.2 [PAPER]) and the exact closed form [DERIVED]:
# p(y|z) = C exp(KAPPA y clip(z, -1, 1)), clipping points exactly at z = +-1.
GAMMA, ALPHA = 0.2, 0.5
C = math.sqrt((1.0 - GAMMA) * GAMMA * ALPHA)
KAPPA = math.log(C / (GAMMA * ALPHA))  # = -C' = 0.5 ln 8
LOG_C = math.log(C)
RULES = ("threshold", "bernoulli")
#: default input width of the filter; wider inputs are randomly projected to it. 385, the width
#: of a new project's text embedding (minilm's 384 and its intercept column), which then reaches
#: the filter as it is: projecting the 384 to 256 lost 2-4 points of online accuracy and cost
#: twice the time per item (benchmarks/OASIS_MAX_DIM.md); a 16x16 image keeps its pixels, hashed
#: text and HOG are projected
MAX_DIM = 385
#: largest particle memory a learner may hold (refused above, with the numbers, at construction)
MAX_PARTICLE_BYTES = 512 * 2**20


# --------------------------------------------------------------------------- building blocks
def log_lik_labelled(Z: np.ndarray, Y: np.ndarray | int) -> np.ndarray:
    """``log p(y|z) = log C + KAPPA y clip(z, -1, 1)`` for labels ``Y`` in {-1, +1} (broadcast)."""
    return LOG_C + KAPPA * np.asarray(Y) * np.clip(Z, -1.0, 1.0)


def log_lik_unlabelled(Z: np.ndarray) -> np.ndarray:
    """``log(p(+1|z) + p(-1|z)) = log(2 C cosh(KAPPA clip(z)))``: the log-probability of "not null"."""
    zc = KAPPA * np.clip(Z, -1.0, 1.0)
    return LOG_C + np.logaddexp(zc, -zc)


def log_likelihood(Z: np.ndarray, Y: np.ndarray | int) -> np.ndarray:
    """Per-item log-likelihood (spec section 1.2) with labels ``Y`` in {-1, 0, +1}, 0 = unlabelled."""
    return np.where(np.asarray(Y) == 0, log_lik_unlabelled(Z), log_lik_labelled(Z, Y))


def log_prior(W: np.ndarray, nu: float) -> np.ndarray:
    """Log density of iid Cauchy(0, nu) coordinates; ``W`` (..., d) -> (...)."""
    return np.sum(-math.log(math.pi * nu) - np.log1p((W / nu) ** 2), axis=-1)


def predictive_margin(Z: np.ndarray, pi: np.ndarray) -> np.ndarray:
    """Eq. 4 as a margin, ``2 P(+1|x) - 1``, over the last axis (Z, weights pi: (..., m)).

    ``P(+1|x) = sum_i pi_i p(+1|z_i) / (p(+1|z_i) + p(-1|z_i))`` and per particle the ratio
    is ``sigmoid(2 KAPPA clip(z)) = (1 + tanh(KAPPA clip(z))) / 2`` [DERIVED], so the margin
    is ``sum_i pi_i tanh(KAPPA clip(z_i))``: exactly 0 when every z is 0 (no rounding tie).
    """
    return np.sum(pi * np.tanh(KAPPA * np.clip(Z, -1.0, 1.0)), axis=-1)


def disagreement_score(Z: np.ndarray, pi: np.ndarray) -> np.ndarray:
    """Eq. 6: ``|sum_i pi_i sign(z_i)|`` over the last axis, in [0, 1] (z = 0 casts no vote)."""
    return np.abs(np.sum(pi * np.sign(Z), axis=-1))


def normalise_log_weights(logw: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``(log pi, pi)``: log-weights normalised by log-sum-exp along the last axis, and pi."""
    shifted = logw - np.max(logw, axis=-1, keepdims=True)
    e = np.exp(shifted)
    total = np.sum(e, axis=-1, keepdims=True)
    return shifted - np.log(total), e / total


def effective_sample_size(pi: np.ndarray) -> np.ndarray:
    """``1 / sum_i pi_i^2`` of normalised weights (last axis); m for equal weights (spec 2.6)."""
    return 1.0 / np.sum(pi * pi, axis=-1)


def systematic_resample(p: np.ndarray, u0: float) -> np.ndarray:
    """Systematic resampling (spec section 2.7 step 1): indices of m draws from weights ``p``.

    p: (m,) normalised weights; u0 in [0, 1). Draw j takes the first index whose cumulative
    weight exceeds ``(u0 + j) / m``.
    """
    m = len(p)
    cs = np.cumsum(p)
    cs[-1] = 1.0  # guard against rounding: the last particle closes the interval
    u = (u0 + np.arange(m)) / m
    return np.minimum(np.searchsorted(cs, u, side="right"), m - 1)


def log_target(W: np.ndarray, Xb: np.ndarray, Yb: np.ndarray, nu: float) -> np.ndarray:
    """``log f(w | D_t, tau)``: log prior plus buffered log-likelihoods (spec section 2.7).

    W: (S, m, d) particles of S filters; Xb: (n, d) standardised buffer; Yb: (S, n) labels
    in {-1, 0, +1}. Returns (S, m).
    """
    Z = W @ Xb.T  # (S, m, n)
    return log_prior(W, nu) + np.sum(log_likelihood(Z, Yb[:, None, :]), axis=-1)


def mh_move(W: np.ndarray, Xb: np.ndarray, Yb: np.ndarray, nu: float, scale: float,
            rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """One random-walk Metropolis-Hastings step per particle (spec eq. 5).

    Proposal ``W + scale * standard_cauchy`` (symmetric, so no q-ratio); accept iff
    ``log U < log f(proposal) - log f(current)``. Draws ``rng.standard_cauchy(W.shape)``
    then ``rng.random(W.shape[:-1])``. Returns the moved particles and the accept mask (S, m).
    """
    proposal = W + scale * rng.standard_cauchy(W.shape)
    log_u = np.log(rng.random(W.shape[:-1]))
    accept = log_u < log_target(proposal, Xb, Yb, nu) - log_target(W, Xb, Yb, nu)
    return np.where(accept[..., None], proposal, W), accept


class RunningScaler:
    """Online per-feature standardisation to mean 0, SD 0.5 (Welford running moments).

    ``update(x)`` adds one item; ``transform(X)`` maps ``(..., d)`` to ``0.5 (x - mean)/sd``
    with the population SD, and features with zero observed variance to 0.
    """

    def __init__(self, d: int) -> None:
        self.set(0, np.zeros(d), np.zeros(d))

    def set(self, n: int, mean: np.ndarray, m2: np.ndarray) -> None:
        """Restore the count, running mean and sum of squared deviations (d,)."""
        self.n, self.mean, self.m2 = int(n), mean, m2
        self._refresh()

    def update(self, x: np.ndarray) -> None:
        self.n += 1
        diff = x - self.mean
        self.mean += diff / self.n
        self.m2 += diff * (x - self.mean)
        self._refresh()

    def _refresh(self) -> None:
        var = self.m2 / max(self.n, 1)  # population variance
        spread = var > 0.0
        self.mult = np.where(spread, 0.5 / np.sqrt(np.where(spread, var, 1.0)), 0.0)

    def transform(self, X: np.ndarray) -> np.ndarray:
        return (X - self.mean) * self.mult


class Buffer:
    """FIFO of the last ``tau`` items (spec section 2.5): raw x (tau, d) and labels (K, tau).

    Labels are per filter in {-1, 0, +1} (0 = unlabelled). Stored as a ring; the order of
    the items does not matter to the MH target (a sum over items).
    """

    def __init__(self, tau: int, d: int, K: int) -> None:
        self.X = np.zeros((tau, d))
        self.Y = np.zeros((K, tau), dtype=np.int8)
        self.size = 0
        self.next = 0

    def push(self, x: np.ndarray, y: np.ndarray) -> None:
        self.X[self.next] = x
        self.Y[:, self.next] = y
        self.next = (self.next + 1) % len(self.X)
        self.size = min(self.size + 1, len(self.X))

    def items(self) -> tuple[np.ndarray, np.ndarray]:
        """The held items ``(X (n, d), Y (K, n))``, n = min(items pushed, tau)."""
        return self.X[: self.size], self.Y[:, : self.size]

    def recent(self, n: int) -> tuple[np.ndarray, np.ndarray]:
        """The ``n <= size`` most recently pushed items ``(X (n, d), Y (K, n))``."""
        pos = (self.next - 1 - np.arange(n)) % len(self.X)
        return self.X[pos], self.Y[:, pos]


# ----------------------------------------------------------------------------- the learner
class OASIS(Learner):
    """OASIS / OSIS / OS particle filter (oasis.md sections 1-3 and 5); see the module docstring.

    Parameters (validated by the registry): ``m`` particles per filter, ``tau`` buffer
    length, ``nu`` Cauchy prior scale, ``proposal_scale`` of the MH random walk,
    ``standardize``, ``bias``, ``seed`` of the internal generator, and for ``oasis`` only
    ``rule`` ("threshold" with ``s0``, or "bernoulli" with ``delta``). ``active`` and
    ``use_unlabeled`` are fixed by the registered variant.

    Score (``Decision.score``): the disagreement score (eq. 6), the minimum over the
    one-vs-rest filters for k >= 3 classes; small means uncertain.

    Example (two clusters on the first feature; the particles agree after two labels and
    the unlabelled items, so OASIS queries no more):

    >>> import numpy as np, learners
    >>> X = np.array([[-2.0, 0.1], [-1.5, -0.3], [1.8, 0.2], [2.2, -0.1]] * 10)
    >>> y = ["a", "a", "b", "b"] * 10
    >>> lrn = learners.make("oasis", n_features=2, classes=["a", "b"], m=200, seed=0)
    >>> rng = np.random.default_rng(0)
    >>> for x, label in zip(X, y):
    ...     if lrn.decide(x, rng).queried:
    ...         lrn.learn(x, label)
    ...     else:
    ...         lrn.observe(x)
    >>> lrn.n_labels
    2
    >>> lrn.predict(np.array([[-2.0, 0.0], [2.0, 0.0]])).tolist()
    ['a', 'b']
    """

    binary = False  # accepts k >= 2 classes; two-class instances set binary = True
    static_between_labels = False  # observe() changes the posterior and the scaling

    def __init__(self, n_features: int, classes: Sequence[Hashable], *, m: int = 1000, tau: int = 100,
                 nu: float = 2.5, proposal_scale: float = 0.025, mh_steps: int = 1, standardize: bool = True,
                 bias: bool = False, seed: int = 0, max_dim: int = MAX_DIM, rule: str = "threshold",
                 s0: float = 0.01, active: bool = True, use_unlabeled: bool = True, **common: Any) -> None:
        super().__init__(n_features, classes, **common)
        if rule not in RULES:
            raise ValueError(f"rule must be one of {RULES}, got {rule!r}")
        self.binary = len(self.classes) == 2
        self.m, self.tau, self.nu, self.proposal_scale = int(m), int(tau), float(nu), float(proposal_scale)
        self.mh_steps = int(mh_steps)
        self.standardize, self.bias, self.seed = bool(standardize), bool(bias), int(seed)
        self.max_dim = int(max_dim)
        self.rule, self.s0 = rule, float(s0)
        self.active, self.use_unlabeled = bool(active), bool(use_unlabeled)
        self.n_filters = 1 if self.binary else len(self.classes)
        # DEVIATION: inputs wider than max_dim are projected (docs/algorithms/oasis.md): the
        # filter's memory and time per item are bounded whatever the featurizer's width.
        self.projection = (RandomProjection(self.n_features, int(max_dim), int(seed))
                           if self.n_features > int(max_dim) else None)
        self.in_dim = self.n_features if self.projection is None else int(max_dim)
        self.dim = self.in_dim + (1 if self.bias else 0)
        need = particle_bytes(self.n_filters, self.m, self.dim, self.tau)
        if need > MAX_PARTICLE_BYTES:
            raise ValueError(f"OASIS would hold {need / 2**20:.0f} MiB of particles and buffers "
                             f"({self.n_filters} filter(s) x m={self.m} x {self.dim} dimensions); the "
                             f"limit is {MAX_PARTICLE_BYTES // 2**20} MiB: lower m or max_dim")
        self.rng = np.random.default_rng(int(seed))
        # Initialisation (spec section 2.2): W_i ~ prior, pi_i = 1/m, in log space.
        self.W = self.nu * self.rng.standard_cauchy((self.n_filters, self.m, self.dim))
        self._set_log_weights(np.full((self.n_filters, self.m), -math.log(self.m)))
        self.scaler = RunningScaler(self.in_dim)
        self.buffer = Buffer(self.tau, self.in_dim, self.n_filters)
        self.n_moves = 0  # resample-move events, summed over filters (diagnostic)
        # posterior updates since each filter's particles last moved (K,): one counter per
        # filter, so a filter that did not move keeps all of its evidence
        self.since_move = np.zeros(self.n_filters, dtype=np.int64)

    def _own_params(self) -> dict[str, Any]:
        own: dict[str, Any] = {"m": self.m, "tau": self.tau, "nu": self.nu,
                               "proposal_scale": self.proposal_scale, "mh_steps": self.mh_steps,
                               "standardize": self.standardize,
                               "bias": self.bias, "seed": self.seed, "max_dim": self.max_dim}
        if self.active:  # osis / os have no query rule: rule and s0 are not among their parameters
            own.update(rule=self.rule, s0=self.s0)
        return own

    def _set_log_weights(self, logpi: np.ndarray) -> None:
        """Store normalised log-weights (K, m) and their exponentials ``pi``."""
        self.logpi = logpi
        self.pi = np.exp(logpi)

    # ----------------------------------------------------------------- features
    def _features(self, X: np.ndarray) -> np.ndarray:
        """Raw items (..., n_features) -> model features (..., dim): scaled, plus bias."""
        # DEVIATION: running mean / SD instead of the paper's whole-trial statistics, which a
        # stream cannot see (docs/algorithms/oasis.md).
        F = self.scaler.transform(X) if self.standardize else X
        if self.bias:
            F = np.concatenate([F, np.ones((*F.shape[:-1], 1))], axis=-1)
        return F

    def _input(self, idx: np.ndarray, vals: np.ndarray) -> np.ndarray:
        """One raw item as the filter's dense input (in_dim,): itself, or its projection."""
        if self.projection is None:
            return dense_row_from(idx, vals, self.n_features)
        return self.projection(idx, vals)

    def model_notes(self) -> list[str]:
        if self.projection is None:
            return []
        return [f"OASIS input: the {self.n_features} features are projected to {self.in_dim} "
                f"dimensions by a seeded random +-1 projection (seed {self.projection.seed}) "
                f"before the particle filter (max_dim; docs/algorithms/oasis.md)"]

    def _margins(self, x: np.ndarray) -> np.ndarray:
        """``W_i . x`` of every particle of every filter, (K, m)."""
        return self.W @ self._features(x)

    def _filter_labels(self, code: int | None) -> np.ndarray:
        """Per-filter labels (K,) in {-1, 0, +1}: None = unlabelled, one-vs-rest for k >= 3."""
        # DEVIATION: multiclass by one-vs-rest filters; the paper is binary (docs/algorithms/oasis.md).
        if code is None:
            return np.zeros(self.n_filters, dtype=np.int8)
        if self.binary:
            return np.array([1 if code == 1 else -1], dtype=np.int8)
        y = np.full(self.n_filters, -1, dtype=np.int8)
        y[code] = 1
        return y

    # -------------------------------------------------------------- decisions
    def _scores(self, idx, vals) -> float | np.ndarray:
        M = predictive_margin(self._margins(self._input(idx, vals)), self.pi)
        return float(M[0]) if self.binary else (1.0 + M) / 2.0

    def _predict_and_query(self, idx, vals, predict_only):
        Z = self._margins(self._input(idx, vals))
        M = predictive_margin(Z, self.pi)
        code = (1 if M[0] > 0.0 else 0) if self.binary else int(np.argmax(M))  # ties: -1 / first
        score = float(np.min(disagreement_score(Z, self.pi)))
        if not self.active:
            q = 0.0  # osis / os never query actively (the caller reveals labels)
        elif self.rule == "threshold":
            q = 1.0 if score < self.s0 else 0.0
        else:  # DEVIATION: rule="bernoulli", delta as the knob of every learner (docs/algorithms/oasis.md)
            q = margin_query_probability(self.delta, score)
        return code, score, q

    # ---------------------------------------------------------------- updates
    def _update(self, idx, vals, code) -> None:
        self._step(self._input(idx, vals), code)

    def _observe(self, idx, vals) -> None:
        self._step(self._input(idx, vals), None)

    def _step(self, x: np.ndarray, code: int | None) -> None:
        """One filtering step for item x with class code (None = unlabelled); spec section 2.8."""
        if self.standardize:
            self.scaler.update(x)  # statistics include the current item (module docstring)
        updates_posterior = code is not None or self.use_unlabeled  # os ignores unlabelled items
        if updates_posterior:
            y = self._filter_labels(code)
            self.buffer.push(x, y)  # the buffer includes the current item (section 2.5)
            self.since_move += 1
        warm = self.standardize and self.scaler.n <= self.tau
        # Scaler warm-up (module docstring): every item since a filter's particles last moved
        # is still buffered, so its weights are recomputed under the current statistics, from
        # its own last move (each filter resamples on its own).
        rebuilt = [f for f in range(self.n_filters) if warm and self.since_move[f] <= self.buffer.size]
        if not rebuilt and not updates_posterior:
            return
        logw = self.logpi.copy()
        if updates_posterior and len(rebuilt) < self.n_filters:
            # Reweight with the particles of the previous step (section 2.4).
            Z = self._margins(x)
            logw = logw + (log_lik_unlabelled(Z) if code is None else log_lik_labelled(Z, y[:, None]))
        for f in rebuilt:
            Xb, Yb = self.buffer.recent(int(self.since_move[f]))
            Z = self.W[f] @ self._features(Xb).T  # (m, n)
            logw[f] = np.sum(log_likelihood(Z, Yb[f][None, :]), axis=-1)
        self.logpi, self.pi = normalise_log_weights(logw)
        low = np.flatnonzero(effective_sample_size(self.pi) < self.m / 2.0)
        # DEVIATION (running scaler only, docs/algorithms/oasis.md): no resample-move while the
        # scaler warms up (its first tau items); the prior's particles keep importance weights
        # rebuilt above under the current statistics. Moves made under the first items' unstable
        # scaling cost diced-cube-32 2.6x the mistakes of the paper's trial-wide scaling.
        if len(low) and not warm:
            self._resample_move(low)

    def _resample_move(self, which: np.ndarray) -> None:
        """Systematic resampling + one MH move per particle for the filters ``which`` (2.7)."""
        u0 = self.rng.random(len(which))
        idx = np.stack([systematic_resample(self.pi[f], u)
                        for f, u in zip(which, u0, strict=True)])
        W = np.take_along_axis(self.W[which], idx[:, :, None], axis=1)
        Xb, Yb = self.buffer.items()
        Fb = self._features(Xb)
        for _ in range(self.mh_steps):  # the paper: one step (mh_steps = 1)
            W, _ = mh_move(W, Fb, Yb[which], self.nu, self.proposal_scale, self.rng)
        self.W[which] = W
        logpi = self.logpi.copy()
        logpi[which] = -math.log(self.m)
        self._set_log_weights(logpi)
        self.n_moves += len(which)
        self.since_move[which] = 0

    # ------------------------------------------------------------------ params
    def set_params(self, **params: Any) -> None:
        """Besides delta / p / query, ``oasis`` may change ``rule`` and ``s0`` mid-stream."""
        if self.active and "rule" in params:
            self.rule = params.pop("rule")
        if self.active and "s0" in params:
            self.s0 = float(params.pop("s0"))
        super().set_params(**params)

    def budget_knob(self) -> str:
        """Budget mode's knob (``docs/budget.md``): ``s0`` for the threshold rule, ``p`` for
        ``osis`` / ``os`` (they never query actively, so the budget samples at random, as the
        paper's protocol gives them labels at random positions)."""
        if not self.active:
            return "p"  # DEVIATION (budget mode): osis / os sampled at random (docs/budget.md)
        if self.query == "active" and self.rule == "threshold":
            # DEVIATION (budget mode): the threshold s0 adapts (docs/budget.md)
            return "s0"
        return super().budget_knob()

    # ------------------------------------------------------------------- state
    def _state_meta(self) -> dict[str, Any]:
        return {"rng": self.rng.bit_generator.state, "scaler_n": self.scaler.n,
                "buffer_size": self.buffer.size, "buffer_next": self.buffer.next,
                "n_moves": self.n_moves, "since_move": self.since_move.tolist()}

    def _state_arrays(self) -> dict[str, np.ndarray]:
        return {"W": self.W, "logpi": self.logpi, "pi": self.pi, "scaler_mean": self.scaler.mean,
                "scaler_m2": self.scaler.m2, "buffer_x": self.buffer.X, "buffer_y": self.buffer.Y}

    def _load_arrays(self, arrays, extra) -> None:
        shapes = {"W": self.W.shape, "logpi": self.logpi.shape, "pi": self.pi.shape,
                  "scaler_mean": self.scaler.mean.shape,
                  "scaler_m2": self.scaler.m2.shape, "buffer_x": self.buffer.X.shape,
                  "buffer_y": self.buffer.Y.shape}
        for key, shape in shapes.items():
            if key not in arrays or arrays[key].shape != shape:
                got = arrays[key].shape if key in arrays else "missing"
                raise ValueError(f"state array {key!r} must have shape {shape}, got {got}")
        self.W = arrays["W"].astype(np.float64)
        # pi is saved too: it is the exact cache the live learner predicts with.
        self.logpi, self.pi = arrays["logpi"].astype(np.float64), arrays["pi"].astype(np.float64)
        self.scaler.set(int(extra["scaler_n"]), arrays["scaler_mean"].astype(np.float64),
                        arrays["scaler_m2"].astype(np.float64))
        self.buffer.X = arrays["buffer_x"].astype(np.float64)
        self.buffer.Y = arrays["buffer_y"].astype(np.int8)
        self.buffer.size, self.buffer.next = int(extra["buffer_size"]), int(extra["buffer_next"])
        self.n_moves = int(extra["n_moves"])
        # a state saved before the counters were per filter holds one shared int
        self.since_move = np.zeros(self.n_filters, dtype=np.int64) + np.asarray(extra["since_move"])
        self.rng.bit_generator.state = extra["rng"]


def particle_bytes(n_filters: int, m: int, dim: int, tau: int) -> int:
    """Bytes of the arrays one OASIS step touches: particles (and an MH proposal of the same
    size), the buffer's margins (K, m, tau) and the buffer itself (tau, dim), in float64."""
    return 8 * (2 * n_filters * m * dim + n_filters * m * tau + tau * dim)


class RandomProjection:
    """Seeded random +-1 projection ``R^n_features -> R^k``, ``x -> x R / sqrt(k)``.

    ``R[j, c]`` is the top bit of a splitmix64 hash of ``(seed, j k + c)``: nothing of size
    ``n_features`` is stored, and one item costs O(nnz(x) k). Norms are kept in expectation
    (Johnson-Lindenstrauss), so margins on projected items approximate those of the raw ones.
    """

    def __init__(self, n_features: int, k: int, seed: int) -> None:
        self.n_features, self.k, self.seed = int(n_features), int(k), int(seed)
        self._key = _splitmix64(np.array([self.seed], dtype=np.uint64))[0]
        self._cols = np.arange(self.k, dtype=np.uint64)

    def signs(self, idx: np.ndarray) -> np.ndarray:
        """``R[idx]`` as +-1 floats (len(idx), k)."""
        keys = idx.astype(np.uint64)[:, None] * np.uint64(self.k) + self._cols[None, :]
        return np.where(_splitmix64(keys ^ self._key) >> np.uint64(63), -1.0, 1.0)

    def __call__(self, idx: np.ndarray, vals: np.ndarray) -> np.ndarray:
        return (np.asarray(vals, dtype=np.float64) @ self.signs(np.asarray(idx))) / math.sqrt(self.k)


def _splitmix64(z: np.ndarray) -> np.ndarray:
    """The splitmix64 finaliser on uint64 arrays (wrapping arithmetic)."""
    with np.errstate(over="ignore"):
        z = z + np.uint64(0x9E3779B97F4A7C15)
        z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
        z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
        return z ^ (z >> np.uint64(31))


def dense_row_from(idx: np.ndarray, vals: np.ndarray, n_features: int) -> np.ndarray:
    """Dense float64 vector (n_features,) from the ``(indices, values)`` of one item."""
    out = np.zeros(n_features)
    out[idx] = vals
    return out


# ---------------------------------------------------------------------------- registry
def _filter_params() -> tuple[Param, ...]:
    """Particle-filter parameters shared by oasis, osis and os (spec section 6.1 defaults)."""
    return (
        Param("m", 1000, int, "number of particles per binary filter (cost grows linearly)",
              low=2, high=100_000, log=True),
        Param("tau", 100, int, "buffer length: the last tau items used by the MH move",
              low=1, high=10_000, log=True),
        Param("nu", 2.5, float, "scale of the iid Cauchy(0, nu) prior on each weight",
              low=0.0, low_open=True, log=True),
        Param("proposal_scale", 0.025, float, "scale of the Cauchy random-walk MH proposal",
              low=0.0, low_open=True, log=True),
        Param("mh_steps", 1, int, "Metropolis-Hastings steps per particle at each resample-move "
              "(the paper: 1)", low=1, high=1000, log=True),
        Param("standardize", True, bool, "scale features online to mean 0, SD 0.5 "
              "(running mean and variance; the paper used whole-trial statistics)"),
        Param("bias", False, bool, "append a constant feature 1 (intercept) with the same prior"),
        Param("seed", 0, int, "seed of the learner's own random generator (particles, "
              "resampling, MH moves) and of the input projection", low=0, high=2**32 - 1),
        Param("max_dim", MAX_DIM, int, "inputs with more features are projected to this many "
              "dimensions by a seeded random projection (bounds memory and time per item)",
              low=1, high=4096, log=True),
    )


_OASIS_PARAMS = (
    delta_param(0.01, "query knob of rule='bernoulli': probability delta/(delta + score); "
                      "unused by rule='threshold'"),
    Param("rule", "threshold", str, "active query rule: 'threshold' queries iff the "
          "disagreement score < s0 (the paper's rule); 'bernoulli' queries with probability "
          "delta/(delta + score)", choices=RULES),
    Param("s0", 0.01, float, "threshold of rule='threshold' on the disagreement score in [0, 1] "
          "(paper: 0.01; 0.1 for MNIST)", low=0.0, high=1.0),
    *_filter_params(),
)
_PASSIVE_DELTA = delta_param(1.0, "unused: this learner never queries actively (query='active' "
                                  "has probability 0); use query='random' for random labels")

register("oasis", OASIS, tasks=("binary", "multiclass"), params=_OASIS_PARAMS,
         active=True, use_unlabeled=True,
         summary="OASIS: semi-supervised particle filter (null-category likelihood), queries "
                 "when the particles disagree; multiclass by one-vs-rest")
register("osis", OASIS, tasks=("binary", "multiclass"), params=(_PASSIVE_DELTA, *_filter_params()),
         active=False, use_unlabeled=True,
         summary="OSIS: OASIS without active queries (learns from revealed labels and "
                 "unlabelled items)")
register("os", OASIS, tasks=("binary", "multiclass"), params=(_PASSIVE_DELTA, *_filter_params()),
         active=False, use_unlabeled=False,
         summary="OS: supervised particle filter of OASIS (revealed labels only, no active queries)")
