"""PEA / MPEA: hand-computed rounds; two-class multiclass learners vs their binary counterparts."""

from __future__ import annotations

import numpy as np
import pytest

import learners
from learners.checks import FixedRng
from tests.support.linear import assert_two_class_matches_binary


def test_pea_hand_computed_rounds():
    lrn = learners.make("pea", n_features=2, classes=["neg", "pos"], delta=1.0)
    # Round 1: p = 0 -> "pos", q = 1; label "pos": y p = 0 <= 0 counts as a mistake (module
    # decision), so w += y x.
    x1 = np.array([1.0, 2.0])
    d = lrn.decide(x1, FixedRng(0.999))
    assert (d.prediction, d.score, d.query_prob, d.queried) == ("pos", 0.0, 1.0, True)
    lrn.learn(x1, "pos")
    np.testing.assert_array_equal(lrn.w, [1.0, 2.0])
    # Round 2: x = (0, 1): p = 2, q = 1/3; u = 0.9: not queried.
    d = lrn.decide(np.array([0.0, 1.0]), FixedRng(0.9))
    assert (d.prediction, d.queried) == ("pos", False) and d.query_prob == pytest.approx(1 / 3)
    # Round 3: x = (0.5, 0): p = 0.5, q = 2/3, queried; label "pos": correct (y p > 0), so no
    # update although the hinge loss 1 - y p = 0.5 is positive (a perceptron, not PA).
    x3 = np.array([0.5, 0.0])
    d = lrn.decide(x3, FixedRng(0.1))
    assert d.query_prob == pytest.approx(2 / 3) and d.queried
    lrn.learn(x3, "pos")
    np.testing.assert_array_equal(lrn.w, [1.0, 2.0])
    # Round 4: x = (1, 0) labelled "neg": p = 1, a mistake, w -= x.
    lrn.learn(np.array([1.0, 0.0]), "neg")
    np.testing.assert_array_equal(lrn.w, [0.0, 2.0])


def test_mpea_hand_computed_rounds():
    lrn = learners.make("mpea", n_features=2, classes=["a", "b", "c"], delta=1.0)
    x1 = np.array([1.0, 1.0])
    # Round 1: all scores 0 -> "a", gap 0, q = 1; label "a": gamma = 0 - 0 <= 0 is a mistake:
    # w_a += x, w_b (first best wrong class) -= x.
    d = lrn.decide(x1, FixedRng(0.5))
    assert (d.prediction, d.score, d.query_prob) == ("a", 0.0, 1.0)
    lrn.learn(x1, "a")
    np.testing.assert_array_equal(lrn.W, [[1, 1], [-1, -1], [0, 0]])
    # Round 2: x = (1, 0): scores (1, -1, 0) -> "a", gap 1, q = 1/2; u = 0.9: not queried.
    d = lrn.decide(np.array([1.0, 0.0]), FixedRng(0.9))
    assert (d.prediction, d.score, d.query_prob, d.queried) == ("a", 1.0, 0.5, False)
    # Round 3: queried with label "a": gamma = 1 - 0 > 0, no update.
    lrn.learn(np.array([1.0, 0.0]), "a")
    np.testing.assert_array_equal(lrn.W, [[1, 1], [-1, -1], [0, 0]])
    # Round 4: label "c" on x = (1, 0): best wrong class "a": w_c += x, w_a -= x.
    lrn.learn(np.array([1.0, 0.0]), "c")
    np.testing.assert_array_equal(lrn.W, [[0, 1], [-1, -1], [1, 0]])


def _binary_stream(n=150, d=5, seed=21):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d)) * (rng.random((n, d)) < 0.6)
    y = np.where(X @ rng.normal(size=d) + 0.3 * rng.normal(size=n) >= 0, "pos", "neg")
    return X, list(y), rng.random(n)


@pytest.mark.parametrize("multi,binary,multi_params,binary_params,scale", [
    # W[1] - W[0] moves by 2 y x per mistake, twice the PEA step: the gap is 2|w.x|, so
    # MPEA(2 delta) has PEA(delta)'s query probabilities; both update iff y w.x <= 0.
    ("mpea", "pea", {"delta": 0.6}, {"delta": 0.3}, 2.0),
    # Two rows move by tau = l/(2||x||^2) each: W[1] - W[0] moves by l/||x||^2 (PA);
    # PA-I caps each row at C (the difference at 2C), PA-II gives l/(||x||^2 + 1/(4C)).
    ("mpaa", "paa", {"delta": 0.3}, {"delta": 0.3}, 1.0),
    ("mpaa-i", "paa-i", {"delta": 0.3, "C": 0.05}, {"delta": 0.3, "C": 0.1}, 1.0),
    ("mpaa-ii", "paa-ii", {"delta": 0.3, "C": 0.05}, {"delta": 0.3, "C": 0.1}, 1.0),
])
def test_two_class_multiclass_tracks_binary(multi, binary, multi_params, binary_params, scale):
    X, y, u = _binary_stream()
    kw = dict(n_features=5, classes=["neg", "pos"])
    assert_two_class_matches_binary(learners.make(multi, **kw, **multi_params),
                                    learners.make(binary, **kw, **binary_params), scale, X, y, u)
