"""Per-class figures, exact and importance-weighted (learners/evaluation/per_class.py,
docs/estimates.md)."""

from __future__ import annotations

import math

import numpy as np
import pytest
from sklearn.metrics import balanced_accuracy_score, f1_score, precision_recall_fscore_support

from learners.evaluation.coverage import Scenario, coverage, simulate
from learners.evaluation.metrics import importance_weighted_accuracy
from learners.evaluation.per_class import (
    Cells,
    auto_label_error,
    confusion,
    estimated_figures,
    exact_figures,
    logit_t_interval,
    satterthwaite_df,
    stream_figures,
)

CLASSES = ["ham", "spam", "other"]


def stream(seed: int = 0, n: int = 600):
    return simulate(np.random.default_rng(seed), Scenario(n=n))


def test_exact_figures_agree_with_scikit_learn():
    truth, pred, _, _ = stream()
    fig = exact_figures(confusion(truth, pred, 3), CLASSES)
    p, r, f, support = precision_recall_fscore_support(truth, pred, labels=[0, 1, 2], zero_division=0)
    for k, row in enumerate(fig["classes"]):
        assert row["precision"] == pytest.approx(p[k]) and row["recall"] == pytest.approx(r[k])
        assert row["f1"] == pytest.approx(f[k]) and row["support"] == support[k]
    assert fig["macro_f1"] == pytest.approx(f1_score(truth, pred, average="macro"))
    assert fig["balanced_accuracy"] == pytest.approx(balanced_accuracy_score(truth, pred))
    major = np.zeros_like(truth)  # class 0 is the most frequent of the scenario
    assert fig["baseline"]["class"] == "ham"
    assert fig["baseline"]["accuracy"] == pytest.approx(np.mean(truth == 0))
    expected = f1_score(truth, major, average="macro", zero_division=0)
    assert fig["baseline"]["macro_f1"] == pytest.approx(expected)
    assert fig["baseline"]["balanced_accuracy"] == pytest.approx(balanced_accuracy_score(truth, major))


def test_the_estimates_equal_the_exact_figures_when_every_item_is_queried():
    truth, pred, _, _ = stream(1)
    exact = exact_figures(confusion(truth, pred, 3), CLASSES)
    est = estimated_figures(Cells.of(truth, pred, np.ones(len(truth)), 3), len(truth), CLASSES)
    for t, e in zip(exact["classes"], est["classes"], strict=True):
        for f in ("precision", "recall", "f1"):
            assert e[f].value == pytest.approx(t[f]) and e[f].low == e[f].high == pytest.approx(t[f])
    for f in ("accuracy", "macro_f1", "balanced_accuracy"):
        assert est[f].value == pytest.approx(exact[f])
        assert est["baseline"][f].value == pytest.approx(exact["baseline"][f])
    assert est["baseline"]["class"] == exact["baseline"]["class"]
    flat = stream_figures(truth, pred, np.ones(len(truth)), np.ones(len(truth), bool), CLASSES)
    for name in ("macro_f1", "balanced_accuracy", "baseline_macro_f1", "precision[spam]", "recall[other]"):
        assert flat[f"{name}_iw"] == pytest.approx(flat[name])
        assert flat[f"{name}_iw_low"] == pytest.approx(flat[name]) == pytest.approx(flat[f"{name}_iw_high"])


def test_rounds_that_could_never_be_queried_change_no_estimate():
    """Rounds drawn at q = 0 (a budget's hard cap) are outside what the estimates cover: adding
    them to a stream leaves every ``_iw`` figure as it was (the exact figures do count them)."""
    truth, pred, q, queried = stream(2)
    held = np.arange(len(truth)) % 3 == 0  # a third of the rounds, held at q = 0
    truth_h, pred_h = np.concatenate([truth, truth[held]]), np.concatenate([pred, (pred[held] + 1) % 3])
    q_h = np.concatenate([q, np.zeros(int(held.sum()))])
    queried_h = np.concatenate([queried, np.zeros(int(held.sum()), bool)])
    base = stream_figures(truth, pred, q, queried, CLASSES)
    with_held = stream_figures(truth_h, pred_h, q_h, queried_h, CLASSES)
    estimated = [k for k in base if "_iw" in k]
    assert estimated and all(with_held[k] == pytest.approx(base[k]) for k in estimated)
    assert with_held["macro_f1"] != pytest.approx(base["macro_f1"])


def test_nothing_queried_gives_no_estimate_and_a_perfect_sample_a_non_empty_interval():
    est = estimated_figures(Cells.empty(3), 100, CLASSES)
    assert est["macro_f1"].value is None and est["classes"][0]["precision"].value is None
    truth = np.array([0] * 40 + [1] * 10)
    perfect = estimated_figures(Cells.of(truth, truth, np.full(50, 0.5), 3), 100, CLASSES)
    recall = perfect["classes"][1]["recall"]
    assert recall.value == 1.0 and recall.high == 1.0 and 0.5 < recall.low < 1.0


def test_the_intervals_cover_the_truth_near_the_nominal_rate():
    """The fast version of benchmarks/interval_coverage.py: 300 streams, a looser band."""
    cov = coverage(300, seed=3, scenario=Scenario(n=1500))
    for name in ("precision:2", "recall:2", "f1:1", "macro_f1", "balanced_accuracy", "baseline_accuracy"):
        assert 0.89 <= cov[name] <= 0.99, (name, cov[name])


def test_the_model_labels_error_estimate_is_unbiased():
    rng = np.random.default_rng(5)
    s = Scenario(n=1000)
    estimates, truths = [], []
    for _ in range(300):
        truth, pred, q, queried = simulate(rng, s)
        auto = ~queried
        cells = Cells.of(truth[queried], pred[queried], q[queried], 3)
        out = auto_label_error(cells, np.bincount(pred[auto], minlength=3).astype(float), CLASSES)
        estimates.append(out["error"].value)
        truths.append(float(np.mean(truth[auto] != pred[auto])))
        assert out["auto"] == int(auto.sum())
    assert np.mean(estimates) == pytest.approx(np.mean(truths), abs=0.004)


def test_a_class_without_model_labels_has_no_error_estimate():
    truth = np.array([0, 1, 1])
    out = auto_label_error(Cells.of(truth, truth, np.full(3, 0.5), 3), np.array([5.0, 0.0, 0.0]), CLASSES)
    assert out["classes"][1]["error"].value is None
    assert out["classes"][0]["error"].value == 0.0 and out["classes"][0]["error"].high > 0


def test_the_logit_t_interval_widens_with_few_degrees_of_freedom_and_stays_inside_0_1():
    wide = logit_t_interval(0.9, 0.002, 3.0, None, 10)
    narrow = logit_t_interval(0.9, 0.002, math.inf, None, 10)
    assert 0.0 < wide.low < narrow.low < 0.9 < narrow.high < wide.high < 1.0
    assert logit_t_interval(1.0, 0.0, math.inf, 40.0, 10).high == 1.0  # Wilson where g is 1


def test_satterthwaite_counts_the_labels_of_the_cells_that_drive_the_variance():
    cells = Cells.of(np.array([0] * 50 + [1] * 3), np.array([0] * 50 + [1] * 3), np.full(53, 0.2), 2)
    only_rare = np.array([[0.0, 0.0], [0.0, 1.0]])
    assert satterthwaite_df(only_rare, cells) == pytest.approx(2.0)
    assert satterthwaite_df(np.zeros((2, 2)), cells) == math.inf


def test_heavy_weights_still_cover_near_the_nominal_rate():
    cov = coverage(300, seed=5, scenario=Scenario(power=2.0))
    for name in ("precision:0", "recall:2", "macro_f1", "balanced_accuracy"):
        assert 0.90 <= cov[name] <= 0.99, (name, cov[name])


def test_the_accuracy_estimate_never_passes_one():
    """A few right items drawn at a small q can make the Horvitz-Thompson sum pass n: the
    estimate and its interval are clipped to [0, 1] (docs/estimates.md); an unclipped sum below n
    is reported as it is."""
    over = importance_weighted_accuracy(np.ones(3), np.array([0.1, 0.1, 0.5]), n_seen=10)
    assert (over.value, over.high) == (1.0, 1.0) and 0.0 <= over.low <= 1.0
    under = importance_weighted_accuracy(np.array([1.0, 0.0, 1.0]), np.array([0.5, 0.5, 1.0]), n_seen=10)
    assert under.value == pytest.approx(0.3)
