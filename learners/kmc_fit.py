"""The batch fit of one binary KMC (docs/algorithms/kmc.md, "Model").

One one-vs-rest kernel machine ``p(y=+1|x) = sigmoid(w^T phi(x))`` with the ARD prior
``w_j ~ N(0, 1/alpha_j)``, the Jaakkola-Jordan bound with parameters ``gamma`` and the
expected-margin constraints ``y_i m^T phi(x_i) >= -xi_i`` (reading (1') of spec 1.3).
Block-coordinate iterations in the order of the paper (spec 2.8): ``q(w)`` by eq. 8, the dual
QP for ``u`` by eq. 11, ``gamma`` by eq. 14, ``alpha`` by eq. 17 or MacKay's rule.

Everything is computed on the *active* bases (``alpha_j < alpha_max``): a pruned basis has
``w_j = 0`` and is dropped from ``Phi`` (a basis, not a data row: every labelled point stays
in the likelihood and the constraints, spec 2.4).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

CONSTRAINTS = ("simplex", "box")
ALPHA_UPDATES = ("mackay", "em")


def jj_lambda(gamma: np.ndarray) -> np.ndarray:
    """``lambda(g) = (sigmoid(g) - 1/2) / (2 g)`` elementwise, with its limit 1/8 at g = 0.

    Uses ``(sigmoid(g) - 1/2) = tanh(g/2)/2`` for accuracy near 0; even in g.
    """
    g = np.abs(np.asarray(gamma, dtype=np.float64))
    out = np.full(g.shape, 0.125)
    nz = g > 1e-8
    out[nz] = np.tanh(g[nz] / 2.0) / (4.0 * g[nz])
    return out


def project_simplex(v: np.ndarray, total: float) -> np.ndarray:
    """Euclidean projection of ``v`` on ``{u >= 0, sum u = total}`` (spec 2.8)."""
    mu = np.sort(v)[::-1]
    cs = np.cumsum(mu) - total
    k = np.arange(1, len(v) + 1)
    rho = np.nonzero(mu - cs / k > 0)[0][-1]
    return np.maximum(v - cs[rho] / (rho + 1), 0.0)


def solve_dual_qp(G: np.ndarray, C: float, constraint: str, u0: np.ndarray | None = None,
                  max_iter: int = 300, tol: float = 1e-6) -> np.ndarray:
    """Minimise ``f(u) = 1/2 ||G^T (u + 1/2)||^2`` over the feasible set of eq. 11 (spec 2.3).

    G: (M, r) with ``G G^T = Q = Y Phi S_q Phi^T Y``. constraint ``"simplex"``: ``sum u = C,
    u >= 0`` (the paper as printed); ``"box"``: ``0 <= u <= C`` (the dual of the primal as
    written, spec errata). u0: warm start (M,) or None. Accelerated projected gradient (FISTA)
    with step ``1 / ||G||_2^2``; stops when the Frank-Wolfe duality gap ``max_v (u - v).grad f(u)``
    over the feasible set, an upper bound of ``f(u) - min f``, is at most ``tol * f(u)``, or
    after ``max_iter`` iterations. Returns u (M,).
    """
    M = G.shape[0]
    simplex = constraint == "simplex"

    def project(v):
        return project_simplex(v, C) if simplex else np.clip(v, 0.0, C)

    def gap(u, grad):  # u.grad - min over feasible v of v.grad
        best = C * float(grad.min()) if simplex else C * float(np.minimum(grad, 0.0).sum())
        return float(u @ grad) - best

    u = project(np.full(M, C / M) if u0 is None or len(u0) != M else np.asarray(u0, float))
    # ||G||_2^2 = the largest eigenvalue of the (r, r) Gram G^T G: cheaper than an SVD of G
    lip = float(np.linalg.eigvalsh(G.T @ G)[-1]) if G.size else 0.0
    if lip <= 0.0:
        return u
    step = 1.0 / lip
    z, t = u.copy(), 1.0
    for it in range(max_iter):
        if it % 5 == 0:
            r = G.T @ (u + 0.5)
            if gap(u, G @ r) <= tol * 0.5 * float(r @ r):
                break
        grad = G @ (G.T @ (z + 0.5))
        u_new = project(z - step * grad)
        t_new = (1.0 + np.sqrt(1.0 + 4.0 * t * t)) / 2.0
        z = u_new + ((t - 1.0) / t_new) * (u_new - u)
        u, t = u_new, t_new
    return u


@dataclass
class BinaryFit:
    """The state of one binary KMC over M labelled points (all arrays indexed by point).

    alpha: (M,) ARD precisions, ``inf`` for pruned bases. gamma: (M,) JJ parameters.
    u: (M,) margin multipliers. m: (M,) posterior mean weights (0 for pruned bases).
    S: (Ma, Ma) posterior covariance on the active bases (``active`` mask order).
    iterations: outer iterations run by the last fit.
    """

    alpha: np.ndarray
    gamma: np.ndarray
    u: np.ndarray
    m: np.ndarray
    S: np.ndarray
    iterations: int = 0

    @property
    def active(self) -> np.ndarray:
        """Boolean mask (M,) of the bases still in the model (the KMC vectors)."""
        return np.isfinite(self.alpha)

    @classmethod
    def initial(cls, M: int, C: float, constraint: str) -> BinaryFit:
        """Spec 2.8's initial values: alpha = gamma = 1, u uniform on the simplex (box: 0)."""
        u = np.full(M, C / M) if constraint == "simplex" else np.zeros(M)
        return cls(np.ones(M), np.ones(M), u, np.zeros(M), np.eye(M))

    def extended(self, n_new: int, C: float, constraint: str) -> BinaryFit:
        """Warm start for ``n_new`` more points: new bases start at alpha = gamma = 1."""
        M = len(self.alpha) + n_new
        u = np.concatenate([self.u, np.zeros(n_new)])
        if constraint == "simplex":
            u = project_simplex(u if u.sum() > 0 else np.full(M, C / M), C)
        return BinaryFit(np.concatenate([self.alpha, np.ones(n_new)]),
                         np.concatenate([self.gamma, np.ones(n_new)]), u,
                         np.concatenate([self.m, np.zeros(n_new)]), self.S, self.iterations)


def posterior(K_act: np.ndarray, y: np.ndarray, alpha_act: np.ndarray, gamma: np.ndarray,
              u: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``q(w) = N(m, S)`` by eq. 8 on the active bases.

    K_act: (M, Ma) kernel between all labelled points and the active bases; y: (M,) in
    {-1, +1}. ``S^-1 = A + 2 Phi^T Lambda Phi``, ``m = S Phi^T Y (u + 1/2)``.
    Returns (m (Ma,), S (Ma, Ma)).
    """
    lam = jj_lambda(gamma)
    P = np.diag(alpha_act) + 2.0 * (K_act.T * lam) @ K_act
    import scipy.linalg as sla  # lazy: ~40 ms at import, needed only by a KMC fit

    S = sla.cho_solve(sla.cho_factor(P, lower=True), np.eye(len(alpha_act)))
    S = (S + S.T) / 2.0
    m = S @ (K_act.T @ (y * (u + 0.5)))
    return m, S


def fit_binary(K: np.ndarray, y: np.ndarray, C: float, *, constraint: str = "simplex",
               alpha_update: str = "mackay", init: BinaryFit | None = None, max_iter: int = 100,
               tol: float = 1e-3, alpha_min: float = 1e-2, alpha_max: float = 1e6,
               qp_iter: int = 50) -> BinaryFit:
    """Fit one binary KMC (spec 2.8) on the Gram matrix ``K`` (M, M) and labels ``y`` in {-1,+1}.

    alpha_update: ``"mackay"`` (default) ``alpha = (1 - alpha S_jj) / m_j^2`` or ``"em"``
    ``alpha = 1 / (S_jj + m_j^2)`` (eq. 17); both have the same fixed points (spec 2.6), MacKay's
    prunes in tens of iterations where EM needs thousands (spec 2.10), hence the default.
    Guards (spec 2.10, [RECOMMENDATION]): ``alpha >= alpha_min`` keeps the simplex variant from
    diverging on separable data; a basis whose alpha exceeds ``alpha_max`` is pruned (alpha =
    inf, m = 0) and not revisited, but an update that would prune every basis is not taken (the
    fit stops at the iterate before it, so it always keeps at least one basis); at most
    ``max_iter`` outer iterations. Stops when the largest
    change of ``log alpha`` over the active bases is below ``tol`` (the paper's threshold 1e-3;
    the quantity it applies to is unstated). ``init`` warm-starts alpha, gamma and u.
    """
    if constraint not in CONSTRAINTS:
        raise ValueError(f"constraint must be one of {CONSTRAINTS}, got {constraint!r}")
    if alpha_update not in ALPHA_UPDATES:
        raise ValueError(f"alpha_update must be one of {ALPHA_UPDATES}, got {alpha_update!r}")
    M = len(y)
    fit = init if init is not None else BinaryFit.initial(M, C, constraint)
    alpha, gamma, u = fit.alpha.copy(), fit.gamma.copy(), fit.u.copy()
    it = 0
    for it in range(1, max_iter + 1):  # noqa: B007 - read after the loop (iterations run)
        act = np.isfinite(alpha)
        if not act.any():
            break
        Ka = K[:, act]
        m, S = posterior(Ka, y, alpha[act], gamma, u)
        # dual QP (eq. 11): Q = Y Phi S Phi^T Y = G G^T with G = Y Phi L, L L^T = S
        G = (y[:, None] * Ka) @ np.linalg.cholesky(S + 1e-12 * np.eye(len(S)))
        u = solve_dual_qp(G, C, constraint, u, max_iter=qp_iter)
        m, S = posterior(Ka, y, alpha[act], gamma, u)
        # gamma (eq. 14): gamma_i^2 = phi_i^T (S + m m^T) phi_i
        gamma = np.sqrt(np.einsum("ij,ij->i", Ka @ S, Ka) + (Ka @ m) ** 2)
        old = alpha[act]
        diag = np.diag(S)
        if alpha_update == "em":
            new = 1.0 / (diag + m ** 2)
        else:
            with np.errstate(divide="ignore"):
                new = np.clip(1.0 - old * diag, 0.0, None) / (m ** 2)
        new = np.maximum(new, alpha_min)
        if (new > alpha_max).all():
            # Deviation (docs/algorithms/kmc.md, "Deviations"): an update that would prune
            # every basis is not taken and the fit stops at the previous iterate. With every
            # basis gone the model scores 0 for every item (one constant class); on noisy data
            # with a large C the box variant did that for some seeds.
            break
        new[new > alpha_max] = np.inf
        alpha[act] = new
        kept = np.isfinite(new)
        change = np.max(np.abs(np.log(new[kept]) - np.log(old[kept]))) if kept.any() else 0.0
        if change < tol and kept.all():
            break
    act = np.isfinite(alpha)
    m_full = np.zeros(M)
    S = np.zeros((0, 0))
    if act.any():
        m_act, S = posterior(K[:, act], y, alpha[act], gamma, u)
        m_full[act] = m_act
    return BinaryFit(alpha, gamma, u, m_full, S, it)
