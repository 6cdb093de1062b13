"""PAA family: hand-computed rounds, state round trip and registry validation."""

from __future__ import annotations

import numpy as np
import pytest

import learners
from learners.checks import FixedRng


def test_paa_i_three_hand_computed_rounds():
    lrn = learners.make("paa-i", n_features=3, classes=["neg", "pos"], delta=1.0, C=0.5)
    x1 = np.array([1.0, 2.0, 0.0])
    # Round 1: w = 0, margin 0 -> predict +1 ("pos"), q = 1/(1+0) = 1, queried.
    d = lrn.decide(x1, FixedRng(0.99))
    assert (d.prediction, d.score, d.query_prob, d.queried) == ("pos", 0.0, 1.0, True)
    # Label "neg" (y=-1): loss = 1, ||x||^2 = 5, tau = min(0.5, 1/5) = 0.2, w = -0.2 x.
    lrn.learn(x1, "neg")
    np.testing.assert_allclose(lrn.w, [-0.2, -0.4, 0.0])
    # Round 2: x2 = (0, 1, 1): margin -0.4, q = 1/1.4; u = 0.9 > q -> not queried.
    x2 = np.array([0.0, 1.0, 1.0])
    d = lrn.decide(x2, FixedRng(0.9))
    assert d.prediction == "neg" and d.score == pytest.approx(-0.4)
    assert d.query_prob == pytest.approx(1 / 1.4) and not d.queried
    # Round 3: x3 = (-5, 0, 0): margin 1.0, q = 0.5, queried; label "pos": loss 0, no change.
    x3 = np.array([-5.0, 0.0, 0.0])
    d = lrn.decide(x3, FixedRng(0.1))
    assert d.score == pytest.approx(1.0) and d.query_prob == pytest.approx(0.5) and d.queried
    lrn.learn(x3, "pos")
    np.testing.assert_allclose(lrn.w, [-0.2, -0.4, 0.0])
    assert lrn.n_seen == 3 and lrn.n_labels == 2


@pytest.mark.parametrize("name,tau", [("paa", 1 / 5), ("paa-i", 0.1), ("paa-ii", 1 / (5 + 1 / (2 * 0.1)))])
def test_paa_step_sizes(name, tau):
    params = {} if name == "paa" else {"C": 0.1}
    lrn = learners.make(name, n_features=2, classes=[-1, 1], **params)
    x = np.array([1.0, 2.0])
    lrn.learn(x, 1)
    np.testing.assert_allclose(lrn.w, tau * x)


def test_mpaa_two_row_update():
    lrn = learners.make("mpaa-i", n_features=2, classes=["a", "b", "c"], C=10.0)
    x = np.array([1.0, 1.0])
    # All scores 0: gamma = 0, loss 1, tau = 1/(2*2) = 0.25; w_c += tau x, w_a (first wrong) -= tau x.
    lrn.learn(x, "c")
    np.testing.assert_allclose(lrn.W, [[-0.25, -0.25], [0, 0], [0.25, 0.25]])
    d = lrn.decide(x, FixedRng(0.0))
    assert d.prediction == "c" and d.score == pytest.approx(0.5)  # gap between c (0.5) and b (0)


def test_cspaa_cost_sensitive_loss_and_adaptive_delta():
    lrn = learners.make("cspaa", n_features=1, classes=["ham", "spam"], rho=3.0, C=10.0)
    lrn.learn(np.array([1.0]), "spam")  # loss = rho - 0 = 3, tau = min(10, 3) = 3
    np.testing.assert_allclose(lrn.w, [3.0])
    ada = learners.make("cspaa-adaptive", n_features=1, classes=["ham", "spam"], delta=8.0)
    # Round t uses delta_0/(t+1): 4 at t=1, 8/3 at t=2.
    assert ada.decide(np.array([0.0]), FixedRng(0.0)).query_prob == 1.0
    ada.w[:] = 1.0
    assert ada.query_probability(np.array([1.0])) == pytest.approx((8 / 3) / (8 / 3 + 1))


@pytest.mark.parametrize("params,message", [
    ({"delta": 0}, "delta must be a number > 0"),
    ({"delta": -1}, "delta must be a number > 0"),
    ({"delta": float("nan")}, "delta must be"),
    ({"C": 0}, "C must be a number > 0"),
    ({"query": "sometimes"}, "query must be one of"),
    ({"bogus": 1}, "unknown parameter"),
])
def test_bad_parameters_name_the_parameter(params, message):
    with pytest.raises(ValueError, match=message):
        learners.make("paa-i", n_features=2, classes=[0, 1], **params)


def test_unknown_name_and_wrong_label():
    with pytest.raises(ValueError, match="unknown algorithm 'nope'"):
        learners.make("nope", n_features=2, classes=[0, 1])
    with pytest.raises(ValueError, match="exactly 2"):
        learners.make("paa-i", n_features=2, classes=[0, 1, 2])
    lrn = learners.make("paa-i", n_features=2, classes=["x", "y"])
    with pytest.raises(ValueError, match="label 'z' is not one of"):
        lrn.learn(np.ones(2), "z")


def test_state_file_refuses_pickle_and_garbage():
    import io

    buf = io.BytesIO()
    np.savez(buf, __meta__=np.frombuffer(b"{}", dtype=np.uint8), w=np.array([object()], dtype=object))
    with pytest.raises(ValueError, match="not a learner state file"):
        learners.base.state_from_bytes(buf.getvalue())
    with pytest.raises(ValueError, match="not a learner state file"):
        learners.base.state_from_bytes(b"PK\x03\x04 not a real npz")
