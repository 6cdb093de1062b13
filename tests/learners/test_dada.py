"""D-ADA / D-AMD and MD-ADA / MD-AMD: hand-computed rounds, the spec's reference loops,
the two-class equivalence with the binary learners."""

from __future__ import annotations

import numpy as np
import pytest

import learners
from learners.checks import FixedRng, trajectory
from tests.support.linear import assert_two_class_matches_binary


@pytest.mark.parametrize("name,w_after_round4", [
    ("d-ada", [0.0, -2 / 3]),                                # w_0 = -eta * theta_0/(1+s_0), theta_0 = 0
    ("d-amd", [-0.5 + 1 / (1 + np.sqrt(2)), -2 / 3]),        # w_0 -= eta * g_0/(1+s_0)
])
def test_dada_binary_hand_computed_rounds(name, w_after_round4):
    lrn = learners.make(name, n_features=2, classes=["neg", "pos"], delta=1.0, smoothing=1.0, eta=1.0,
                        a_t="feature")
    # Round 1: p = 0 -> "pos" (sign(0) = +1, our decision); v = 1 + 4 = 5, a_t = 1/5,
    # q_stat = 0 - 0.5 * 1/5 * 5 = -0.5 <= 0 -> q = 1.
    x1 = np.array([1.0, 2.0])
    d = lrn.decide(x1, FixedRng(0.999))
    assert (d.prediction, d.score, d.query_prob, d.queried) == ("pos", 0.0, 1.0, True)
    # y = -1, y p = 0 < 1: g = (1, 2), s = (1, 2), theta = (1, 2); w = -(1/2, 2/3) (both rules).
    lrn.learn(x1, "neg")
    np.testing.assert_allclose(lrn.s, [1.0, 2.0])
    np.testing.assert_allclose(lrn.w, [-0.5, -2 / 3])
    # Round 2: x = (0, 3): p = -2, v = 9/3 = 3, a_t = 1/9, q_stat = 2 - 1/6 = 11/6, q = 6/17.
    d = lrn.decide(np.array([0.0, 3.0]), FixedRng(0.9))
    assert (d.prediction, d.queried) == ("neg", False)
    assert d.score == pytest.approx(-2.0) and d.query_prob == pytest.approx(6 / 17)
    # Round 3: x = (-3, 0): p = 3/2, v = 9/2, a_t = 1/9, q_stat = 5/4, q = 4/9; queried, label
    # "pos": y p >= 1, zero loss, nothing changes.
    x3 = np.array([-3.0, 0.0])
    d = lrn.decide(x3, FixedRng(0.1))
    assert d.query_prob == pytest.approx(4 / 9) and d.queried
    lrn.learn(x3, "pos")
    np.testing.assert_allclose(lrn.s, [1.0, 2.0])
    np.testing.assert_allclose(lrn.w, [-0.5, -2 / 3])
    # Round 4: x = (1, 0), label "pos": p = -1/2, g = (-1, 0), s_0 = sqrt(2).
    lrn.learn(np.array([1.0, 0.0]), "pos")
    np.testing.assert_allclose(lrn.s, [np.sqrt(2), 2.0])
    np.testing.assert_allclose(lrn.w, w_after_round4, atol=1e-15)
    if name == "d-ada":
        np.testing.assert_allclose(lrn.theta, [0.0, 2.0])


@pytest.mark.parametrize("a_t,q_round2", [("one", 1.0), ("feature", 0.8), ("zero", 0.5)])
def test_md_ada_hand_computed_rounds(a_t, q_round2):
    lrn = learners.make("md-ada", n_features=2, classes=["a", "b", "c"], delta=1.0, smoothing=1.0,
                        eta=1.0, a_t=a_t)
    # Round 1: all scores 0 -> "a", gap 0; q = 1 for every a_t (q_stat <= 0).
    x1 = np.array([1.0, 1.0])
    d = lrn.decide(x1, FixedRng(0.999))
    assert (d.prediction, d.score, d.query_prob) == ("a", 0.0, 1.0)
    # Label "c": r = "a" (first best wrong class), loss 1: rows a (g = +x) and c (g = -x).
    lrn.learn(x1, "c")
    np.testing.assert_allclose(lrn.S, [[1, 1], [0, 0], [1, 1]])
    np.testing.assert_allclose(lrn.Theta, [[1, 1], [0, 0], [-1, -1]])
    np.testing.assert_allclose(lrn.W, [[-0.5, -0.5], [0, 0], [0.5, 0.5]])
    # Round 2: x = (2, 0): z = (-1, 0, 1) -> "c", gap 1; D = (2, 4, 2), v = 2 + 4 = 6;
    # q_stat = 1 - 0.5 * a_t * 6: a_t = 1 -> -2 (q = 1); 1/4 -> 1/4 (q = 0.8); 0 -> 1 (q = 0.5).
    x2 = np.array([2.0, 0.0])
    d = lrn.decide(x2, FixedRng(0.9))
    assert d.prediction == "c" and d.score == pytest.approx(1.0)
    assert d.query_prob == pytest.approx(q_round2) and d.queried == (q_round2 > 0.9)
    # Round 3: the same item queried with label "c": r = "b", loss 1 + 0 - 1 = 0, no change.
    lrn.learn(x2, "c")
    np.testing.assert_allclose(lrn.W, [[-0.5, -0.5], [0, 0], [0.5, 0.5]])
    np.testing.assert_allclose(lrn.S, [[1, 1], [0, 0], [1, 1]])


def test_md_amd_update_is_mirror_descent():
    lrn = learners.make("md-amd", n_features=2, classes=["a", "b", "c"], smoothing=1.0, eta=1.0)
    lrn.learn(np.array([1.0, 1.0]), "c")
    lrn.learn(np.array([1.0, 0.0]), "b")  # z = (-1/2, 0, 1/2): r = c, loss 1.5: rows c (+x), b (-x)
    s_c = np.hypot(1.0, 1.0)
    np.testing.assert_allclose(lrn.W, [[-0.5, -0.5], [0.5, 0.0], [0.5 - 1 / (1 + s_c), 0.5]])
    assert lrn.Theta.size == 0 and "Theta" not in lrn.get_state()["arrays"]  # MD keeps no subgradient sum


def a_rule(x, kind):
    """dada.md section 3.1, with our a_t names."""
    return {"zero": 0.0, "feature": 1.0 / max(1.0, float(x @ x)), "one": 1.0}[kind]


def dada_reference(X, y, u, smoothing, eta, b, update, a_t):
    """dada.md section 3.1 transcribed (dense rows, pre-drawn uniforms, sign(0) = +1 as ours)."""
    T, d = X.shape
    w, s, theta = np.zeros(d), np.zeros(d), np.zeros(d)
    out = []
    for t in range(T):
        idx = np.flatnonzero(X[t])
        x, yt = X[t, idx], y[t]
        p_hat = float(w[idx] @ x)
        y_hat = 1 if p_hat >= 0 else -1  # the authors' code: 1 if p_hat > 0 (module decision)
        v = float(np.sum(x * x / (smoothing + s[idx])))
        q = abs(p_hat) - 0.5 * eta * a_rule(x, a_t) * v
        P = 1.0 if q <= 0 else b / (b + q)
        Z = u[t] < P
        if Z and yt * p_hat < 1.0:
            g = -yt * x
            s[idx] = np.sqrt(s[idx] ** 2 + g ** 2)
            Hn = smoothing + s[idx]
            if update == "DA":
                theta[idx] += g
                w[idx] = -eta * theta[idx] / Hn
            else:
                w[idx] = w[idx] - eta * g / Hn
        out.append((y_hat, P, Z, w.copy(), s.copy()))
    return out


def md_reference(X, y, C, u, smoothing, eta, b, update, a_t):
    """dada.md section 5.1 transcribed (dense rows, pre-drawn uniforms)."""
    T, d = X.shape
    W, S, TH = np.zeros((C, d)), np.zeros((C, d)), np.zeros((C, d))
    out = []
    for t in range(T):
        idx = np.flatnonzero(X[t])
        x, yt = X[t, idx], y[t]
        z = W[:, idx] @ x
        yhat = int(np.argmax(z))
        z2 = z.copy()
        z2[yhat] = -np.inf
        runner = int(np.argmax(z2))
        p = z[yhat] - z[runner]
        Dv = (x * x / (smoothing + S[:, idx])).sum(axis=1)
        Dm = Dv.copy()
        Dm[yhat] = -np.inf
        v = Dv[yhat] + Dm.max()
        q = p - 0.5 * eta * a_rule(x, a_t) * v
        P = 1.0 if q <= 0 else b / (b + q)
        Z = u[t] < P
        if Z:
            r = runner if yt == yhat else yhat
            if 1.0 + z[r] - z[yt] > 0:
                for cls, g in ((r, x), (yt, -x)):
                    S[cls, idx] = np.sqrt(S[cls, idx] ** 2 + g ** 2)
                    Hn = smoothing + S[cls, idx]
                    if update == "DA":
                        TH[cls, idx] += g
                        W[cls, idx] = -eta * TH[cls, idx] / Hn
                    else:
                        W[cls, idx] -= eta * g / Hn
        out.append((yhat, P, Z, W.copy(), S.copy()))
    return out


def _stream(n, d, seed, k=2):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d)) * 2 * (rng.random((n, d)) < 0.5)  # continuous: no exact score ties
    centers = rng.normal(size=(k, d))
    y = np.argmax(X @ centers.T + 0.5 * rng.normal(size=(n, k)), axis=1)
    return X, y, rng.random(n)


@pytest.mark.parametrize("name,update", [("d-ada", "DA"), ("d-amd", "MD")])
@pytest.mark.parametrize("a_t", ["feature", "one", "zero"])
def test_dada_matches_the_spec_reference_loop(name, update, a_t):
    X, y01, u = _stream(80, 6, seed=11)
    y = np.where(y01 == 1, 1, -1)
    params = dict(smoothing=0.5, eta=0.3, b=0.2)
    ref = dada_reference(X, y, u, **params, update=update, a_t=a_t)
    lrn = learners.make(name, n_features=6, classes=[-1, 1], smoothing=0.5, eta=0.3, delta=0.2, a_t=a_t)
    got = trajectory(lrn, list(X), list(y), FixedRng(*u))
    for (yhat, P, Z, w, s), (d, state) in zip(ref, got, strict=True):
        assert (d.prediction, d.queried) == (yhat, Z)
        assert d.query_prob == pytest.approx(P, rel=1e-12)
        np.testing.assert_allclose(state["w"], w, rtol=1e-12, atol=1e-15)
        np.testing.assert_allclose(state["s"], s, rtol=1e-12)
    assert 0 < sum(d.queried for d, _ in got) < len(y)


@pytest.mark.parametrize("name,update", [("md-ada", "DA"), ("md-amd", "MD")])
@pytest.mark.parametrize("a_t", ["feature", "one", "zero"])
def test_md_matches_the_spec_reference_loop(name, update, a_t):
    X, y, u = _stream(80, 6, seed=12, k=4)
    ref = md_reference(X, y, 4, u, smoothing=0.5, eta=0.3, b=0.2, update=update, a_t=a_t)
    lrn = learners.make(name, n_features=6, classes=[0, 1, 2, 3], smoothing=0.5, eta=0.3, delta=0.2,
                        a_t=a_t)
    got = trajectory(lrn, list(X), list(y), FixedRng(*u))
    for (yhat, P, Z, W, S), (d, state) in zip(ref, got, strict=True):
        assert (d.prediction, d.queried) == (yhat, Z)
        assert d.query_prob == pytest.approx(P, rel=1e-12)
        np.testing.assert_allclose(state["W"], W, rtol=1e-12, atol=1e-15)
        np.testing.assert_allclose(state["S"], S, rtol=1e-12)
    assert 0 < sum(d.queried for d, _ in got) < len(y)


@pytest.mark.parametrize("multi,binary", [("md-ada", "d-ada"), ("md-amd", "d-amd")])
@pytest.mark.parametrize("a_t", ["feature", "one", "zero"])
def test_two_class_md_equals_binary_with_half_the_step(multi, binary, a_t):
    """With two classes both rows get the same s, the rows stay opposite (W[1] = -W[0]) and
    W[1] - W[0] = 2 eta' H^-1 (...): MD-*(eta/2) reproduces D-*(eta) exactly (same loss
    1 - y w.x, same gap |w.x|, v = 2 x^T H^-1 x cancels the halved eta in q_t)."""
    X, y01, u = _stream(150, 5, seed=13)
    y = list(np.where(y01 == 1, "pos", "neg"))
    kw = dict(n_features=5, classes=["neg", "pos"], smoothing=0.7, delta=0.3, a_t=a_t)
    assert_two_class_matches_binary(learners.make(multi, eta=0.2, **kw),
                                    learners.make(binary, eta=0.4, **kw), 1.0, X, y, u)


@pytest.mark.parametrize("params,message", [
    ({"a_t": "two"}, "a_t must be one of"),
    ({"smoothing": 0}, "smoothing must be a number > 0"),
    ({"eta": -1}, "eta must be a number > 0"),
    ({"delta": 0}, "delta must be a number > 0"),
])
def test_dada_bad_parameters(params, message):
    with pytest.raises(ValueError, match=message):
        learners.make("d-ada", n_features=3, classes=[0, 1], **params)
