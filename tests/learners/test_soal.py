"""SOAL / SOAL-M: hand-computed rounds, the spec's reference loop, diagonal == full."""

from __future__ import annotations

import numpy as np
import pytest

import learners
from learners.checks import FixedRng, trajectory


def test_soal_diagonal_three_hand_computed_rounds():
    lrn = learners.make("soal", n_features=2, classes=["neg", "pos"], delta=1.0, eta=1.0, gamma=1.0,
                        covariance="diagonal")
    # Round 1: mu = 0, p = 0 -> "pos"; v = 1 + 4 = 5, c = -5/12, rho < 0 -> q = 1, queried.
    x1 = np.array([1.0, 2.0])
    d = lrn.decide(x1, FixedRng(0.999))
    assert (d.prediction, d.score, d.query_prob, d.queried) == ("pos", 0.0, 1.0, True)
    # y = -1, loss 1: sigma_i -= sigma_i^2 x_i^2/(1+5) -> (5/6, 1/3); mu = -sigma_new * x.
    lrn.learn(x1, "neg")
    np.testing.assert_allclose(lrn.Sigma, [5 / 6, 1 / 3])
    np.testing.assert_allclose(lrn.w, [-5 / 6, -2 / 3])
    # Round 2: x = (0, 3): p = -2, v = 3, c = -3/8, rho = 13/8, q = 8/21; u = 0.9: not queried.
    d = lrn.decide(np.array([0.0, 3.0]), FixedRng(0.9))
    assert d.prediction == "neg" and d.score == pytest.approx(-2.0)
    assert d.query_prob == pytest.approx(8 / 21) and not d.queried
    # Round 3: x = (-2, 0): p = 5/3, v = 10/3, c = -5/13, rho = 50/39, q = 39/89; queried,
    # label "pos": y p = 5/3 >= 1, zero loss, nothing changes.
    x3 = np.array([-2.0, 0.0])
    d = lrn.decide(x3, FixedRng(0.1))
    assert d.prediction == "pos" and d.query_prob == pytest.approx(39 / 89) and d.queried
    lrn.learn(x3, "pos")
    np.testing.assert_allclose(lrn.Sigma, [5 / 6, 1 / 3])
    np.testing.assert_allclose(lrn.w, [-5 / 6, -2 / 3])


def test_soal_full_three_hand_computed_rounds():
    lrn = learners.make("soal", n_features=2, classes=[-1, 1], delta=1.0, eta=1.0, gamma=1.0,
                        covariance="full")
    x1 = np.array([1.0, 2.0])
    assert lrn.decide(x1, FixedRng(0.999)).query_prob == 1.0
    # Sigma = I - x x^T/6 (Eq. 1); mu = -Sigma_new x = -(1, 2)/6 (Eq. 3, new covariance).
    lrn.learn(x1, -1)
    np.testing.assert_allclose(lrn.Sigma, [[5 / 6, -1 / 3], [-1 / 3, 1 / 3]])
    np.testing.assert_allclose(lrn.w, [-1 / 6, -1 / 3])
    # Round 2: x = (0, 3): p = -1, v = 3, rho = 1 - 3/8 = 5/8, q = 8/13; not queried.
    d = lrn.decide(np.array([0.0, 3.0]), FixedRng(0.9))
    assert (d.prediction, d.queried) == (-1, False)
    assert d.score == pytest.approx(-1.0) and d.query_prob == pytest.approx(8 / 13)
    # Round 3: x = (0, -6): p = 2, v = 12, rho = 2 - 6/13 = 20/13, q = 13/33; queried, y = +1, zero loss.
    x3 = np.array([0.0, -6.0])
    d = lrn.decide(x3, FixedRng(0.1))
    assert d.query_prob == pytest.approx(13 / 33) and d.queried
    lrn.learn(x3, 1)
    np.testing.assert_allclose(lrn.Sigma, [[5 / 6, -1 / 3], [-1 / 3, 1 / 3]])
    np.testing.assert_allclose(lrn.w, [-1 / 6, -1 / 3])


def test_soal_m_uses_the_margin_rule():
    lrn = learners.make("soal-m", n_features=2, classes=[-1, 1], delta=0.5, eta=1.0, gamma=1.0)
    lrn.learn(np.array([1.0, 2.0]), -1)  # mu = (-5/6, -2/3), as in the diagonal test
    # x = (0, 3): p = -2, q = 0.5/(0.5 + 2) = 0.2 (SOAL would use rho = 13/8 instead).
    assert lrn.query_probability(np.array([0.0, 3.0])) == pytest.approx(0.2)


def soal_reference(X, y, u, eta, gamma, delta, margin_only, diag):
    """soal.md section 10 transcribed (dense, pre-drawn uniforms); one record per round."""
    T, d = X.shape
    mu = np.zeros(d)
    S = np.ones(d) if diag else np.eye(d)
    out = []
    for t in range(T):
        x, yt = X[t], y[t]
        p = mu @ x
        yhat = 1 if p >= 0 else -1
        Sx = S * x if diag else S @ x
        v = max(float(x @ Sx), 0.0)
        if margin_only:
            q = delta / (delta + abs(p))
        else:
            rho = abs(p) - eta * gamma * v / (2 * gamma + 2 * v)
            q = 1.0 if rho <= 0 else delta / (delta + rho)
        Z = u[t] < q
        if Z and 1.0 - yt * p > 0:
            if diag:
                S = S - (S * x * x * S) / (gamma + v)
                mu = mu + eta * yt * (S * x)
            else:
                S = S - np.outer(Sx, Sx) / (gamma + v)
                mu = mu + eta * yt * (S @ x)
        out.append((yhat, q, Z, mu.copy(), S.copy()))
    return out


@pytest.mark.parametrize("name", ["soal", "soal-m"])
@pytest.mark.parametrize("covariance", ["full", "diagonal"])
def test_soal_matches_the_spec_reference_loop(name, covariance):
    rng = np.random.default_rng(3)
    X = rng.normal(size=(60, 5)) * (rng.random((60, 5)) < 0.6)
    y = np.where(X @ np.array([1.0, -2.0, 0.5, 0.0, 1.0]) + 0.3 * rng.normal(size=60) >= 0, 1, -1)
    u = rng.random(60)
    params = dict(eta=0.7, gamma=2.0, delta=0.4)
    ref = soal_reference(X, y, u, **params, margin_only=name == "soal-m", diag=covariance == "diagonal")
    lrn = learners.make(name, n_features=5, classes=[-1, 1], covariance=covariance, **params)
    got = trajectory(lrn, list(X), list(y), FixedRng(*u))
    kinds = set()
    for (yhat, q, Z, mu, S), (d, state) in zip(ref, got, strict=True):
        assert (d.prediction, d.queried) == (yhat, Z)
        assert d.query_prob == pytest.approx(q, rel=1e-12)
        np.testing.assert_allclose(state["w"], mu, rtol=1e-12, atol=1e-14)
        np.testing.assert_allclose(state["Sigma"], S, rtol=1e-12, atol=1e-14)
        kinds.add("queried" if Z else "skipped")
    assert kinds == {"queried", "skipped"}


def test_diagonal_equals_full_on_axis_aligned_data():
    """With one non-zero feature per item the full Sigma stays diagonal: same trajectory."""
    rng = np.random.default_rng(7)
    n, dim = 200, 6
    X = np.zeros((n, dim))
    X[np.arange(n), rng.integers(0, dim, n)] = rng.normal(size=n) * 2
    y = np.where(rng.random(n) < 0.5, "a", "b")
    u = rng.random(n)
    runs = {}
    for cov in ("full", "diagonal"):
        lrn = learners.make("soal", n_features=dim, classes=["a", "b"], covariance=cov, delta=0.3,
                            eta=0.5, gamma=0.8)
        runs[cov] = (trajectory(lrn, list(X), list(y), FixedRng(*u)), lrn)
    for (d_full, s_full), (d_diag, s_diag) in zip(runs["full"][0], runs["diagonal"][0], strict=True):
        assert (d_full.prediction, d_full.queried) == (d_diag.prediction, d_diag.queried)
        assert d_full.query_prob == pytest.approx(d_diag.query_prob, rel=1e-12)
        np.testing.assert_allclose(s_full["w"], s_diag["w"], rtol=1e-12, atol=1e-15)
        np.testing.assert_allclose(np.diag(s_full["Sigma"]), s_diag["Sigma"], rtol=1e-12)
    full_sigma = runs["full"][1].Sigma
    assert np.count_nonzero(full_sigma - np.diag(np.diag(full_sigma))) == 0


@pytest.mark.parametrize("params,message", [
    ({"covariance": "banded"}, "covariance must be one of"),
    ({"eta": 0}, "eta must be a number > 0"),
    ({"gamma": -1}, "gamma must be a number > 0"),
])
def test_soal_bad_parameters(params, message):
    with pytest.raises(ValueError, match=message):
        learners.make("soal", n_features=3, classes=[0, 1], **params)


def test_full_covariance_refuses_huge_inputs():
    with pytest.raises(ValueError, match="use 'diagonal'"):
        learners.make("soal", n_features=100_000, classes=[0, 1], covariance="full")
