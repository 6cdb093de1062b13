"""Suspected label errors: calibration and the posterior that a label is wrong
(learners/label_errors.py, docs/estimates.md)."""

from __future__ import annotations

import numpy as np
import pytest

from learners.label_errors import (
    calibrated_probabilities,
    platt_fit,
    spread,
    suspicion,
    symmetric_confusion,
    top_fraction,
    top_probability,
)


def test_platt_scaling_recovers_a_logistic_link():
    rng = np.random.default_rng(0)
    conf = rng.uniform(0, 4, 4000)
    agree = rng.random(4000) < 1 / (1 + np.exp(-(1.5 * conf - 1.0)))
    a, b = platt_fit(conf, agree)
    assert a == pytest.approx(1.5, abs=0.15) and b == pytest.approx(-1.0, abs=0.15)
    assert platt_fit(np.ones(5), np.array([1, 1, 0, 1, 1], bool))[0] == 0.0  # constant confidence


def test_the_weighted_fit_is_the_hand_computed_one_and_equal_weights_change_nothing():
    # two confidences: the fit is saturated, so each one's fitted probability is its weighted
    # agreement rate: 1 / (1 + 3) at confidence 0, 4 / (4 + 1) at confidence 1
    conf, agree = np.array([0.0, 0.0, 1.0, 1.0]), np.array([True, False, True, False])
    a, b = platt_fit(conf, agree, np.array([1.0, 3.0, 4.0, 1.0]), ridge=0.0)
    assert b == pytest.approx(np.log(0.25 / 0.75), abs=1e-9)
    assert a + b == pytest.approx(np.log(0.8 / 0.2), abs=1e-9)
    rng = np.random.default_rng(2)
    x, y = rng.uniform(0, 3, 50), rng.random(50) < 0.7
    assert platt_fit(x, y, np.full(50, 7.0)) == pytest.approx(platt_fit(x, y), abs=1e-12)


def test_weights_of_one_over_q_recover_the_streams_calibration_from_a_biased_sample():
    """The stream's P(correct | s) is sigmoid(1.5 s - 1); the query rule asks items of a hidden
    group (more often right, at equal score) with q = 0.05 and the others with q = 0.5, so the
    labelled sample is more often wrong than the stream at every score. Weighting by 1/q recovers
    the stream's link; the unweighted fit does not."""
    rng = np.random.default_rng(0)
    n = 40_000
    s = rng.uniform(0, 4, n)
    correct = rng.random(n) < 1 / (1 + np.exp(-(1.5 * s - 1.0)))
    hidden = rng.random(n) < np.where(correct, 0.7, 0.2)
    q = np.where(hidden, 0.05, 0.5)
    asked = rng.random(n) < q
    a, b = platt_fit(s[asked], correct[asked], 1 / q[asked])
    assert a == pytest.approx(1.5, abs=0.15) and b == pytest.approx(-1.0, abs=0.25)
    grid = np.linspace(0, 4, 41)
    truth = 1 / (1 + np.exp(-(1.5 * grid - 1.0)))
    assert np.abs(top_probability((a, b), grid) - truth).max() < 0.05
    unweighted = platt_fit(s[asked], correct[asked])
    assert np.abs(top_probability(unweighted, grid) - truth).max() > 0.1  # the bias the weights remove


def test_probabilities_put_the_calibrated_mass_on_the_prediction():
    pred, score, given = np.array([0, 2, 1, 1]), np.array([3.0, 0.1, 2.0, 0.5]), np.array([0, 1, 1, 0])
    p = calibrated_probabilities(pred, score, given, 3)
    assert p.shape == (4, 3) and np.allclose(p.sum(axis=1), 1)
    for i in range(4):  # the rest of the mass is shared equally by the other classes
        others = np.delete(p[i], pred[i])
        assert np.allclose(others, others[0])
    assert p[0, 0] > p[3, 1]  # a larger score, a surer prediction
    binary = spread(np.array([1, 0]), np.array([0.9, 0.6]), 2)
    assert np.allclose(binary, [[0.1, 0.9], [0.6, 0.4]])


def test_with_a_symmetric_confusion_the_ranking_is_the_models_probability_of_the_given_label():
    rng = np.random.default_rng(1)
    probs = rng.dirichlet(np.ones(4), size=200)
    given = rng.integers(4, size=200)
    s = suspicion(probs, given, default_accuracy=0.9)
    given_prob = probs[np.arange(200), given]
    assert np.array_equal(np.argsort(s, kind="stable"), np.argsort(-given_prob, kind="stable"))
    assert np.all((s >= 0) & (s <= 1))


def test_an_annotators_confusion_changes_the_suspicion_of_labels_they_are_known_to_confuse():
    probs = np.array([[0.8, 0.2], [0.8, 0.2]])
    given = np.array([1, 1])
    careless = np.array([[0.5, 0.5], [0.02, 0.98]])  # says 1 for half the true 0s
    s = suspicion(probs, given, np.array([0, -1]), careless[None], default_accuracy=0.95)
    assert s[0] > s[1]  # a "1" from the careless annotator is more likely wrong
    assert s[1] == pytest.approx(1 - 0.2 * 0.95 / (0.2 * 0.95 + 0.8 * 0.05))
    assert np.allclose(symmetric_confusion(3, 0.7).sum(axis=1), 1)


def test_top_fraction_takes_the_highest_scores():
    assert list(top_fraction(np.array([0.1, 0.9, 0.5, 0.9]), 0.5)) == [1, 3]
    assert len(top_fraction(np.arange(101.0), 0.05)) == 6
