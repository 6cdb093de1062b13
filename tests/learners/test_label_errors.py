"""Suspected label errors: calibration and the posterior that a label is wrong
(learners/label_errors.py, docs/estimates.md)."""

from __future__ import annotations

import numpy as np
import pytest

from learners.label_errors import (
    calibrated_probabilities,
    platt_fit,
    suspicion,
    symmetric_confusion,
    top_fraction,
)


def test_platt_scaling_recovers_a_logistic_link():
    rng = np.random.default_rng(0)
    conf = rng.uniform(0, 4, 4000)
    agree = rng.random(4000) < 1 / (1 + np.exp(-(1.5 * conf - 1.0)))
    a, b = platt_fit(conf, agree)
    assert a == pytest.approx(1.5, abs=0.15) and b == pytest.approx(-1.0, abs=0.15)
    assert platt_fit(np.ones(5), np.array([1, 1, 0, 1, 1], bool))[0] == 0.0  # constant confidence


def test_probabilities_put_the_calibrated_mass_on_the_prediction():
    pred, score, given = np.array([0, 2, 1, 1]), np.array([3.0, 0.1, 2.0, 0.5]), np.array([0, 1, 1, 0])
    p = calibrated_probabilities(pred, score, given, 3)
    assert p.shape == (4, 3) and np.allclose(p.sum(axis=1), 1)
    for i in range(4):  # the rest of the mass is shared equally by the other classes
        others = np.delete(p[i], pred[i])
        assert np.allclose(others, others[0])
    assert p[0, 0] > p[3, 1]  # a larger score, a surer prediction


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
