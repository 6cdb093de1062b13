"""``auto`` (learners/auto.py, docs/algorithms/auto.md): unbiased estimates, the leader they pick.

The contract battery (state round trip, same seed same run, block replay) runs ``auto`` with
every other learner in test_learner_contract.py.
"""

from __future__ import annotations

import numpy as np
import pytest

import learners
from learners.auto import CANDIDATES
from learners.base import sparse_row

D = 8


def stream(n: int, seed: int, noise: float) -> tuple[np.ndarray, list[str]]:
    """Gaussian rows labelled by a fixed linear rule, ``noise`` of the labels flipped."""
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, D))
    y = (X @ np.linspace(-1.0, 1.5, D) > 0.3).astype(int)
    flip = rng.random(n) < noise
    y[flip] = 1 - y[flip]
    return X, [("neg", "pos")[c] for c in y]


def run(seed: int, n: int = 300, **params) -> tuple[learners.Learner, np.ndarray]:
    """Replay one stream item by item; return the learner and each candidate's true count of
    correct predictions over every item (the prediction made before the item's label)."""
    X, y = stream(n, seed, noise=0.1)
    lrn = learners.make("auto", n_features=D, classes=["neg", "pos"], **params)
    rng = np.random.default_rng(1000 + seed)
    truth = np.zeros(len(lrn.candidates))
    for x, label in zip(X, y, strict=True):
        idx, vals = sparse_row(x, D)
        code = lrn.class_code(label)
        truth += [c._decision_parts(idx, vals, predict_only=True)[0] == code for c in lrn.candidates]
        d = lrn.decide(x, rng)
        if d.queried:
            lrn.learn(x, label)
    return lrn, truth


def test_the_estimates_are_unbiased_for_every_candidate():
    """Each candidate's weighted count of correct labels has the expectation of its count of
    correct predictions on every item (queried or not), known here from the gold labels."""
    errors, ratios = [], []
    for seed in range(60):
        lrn, truth = run(seed, delta=0.3)
        errors.append((lrn.correct - truth) / lrn.n_seen)
        ratios.append(lrn.n_labels / lrn.n_seen)
    errors_a = np.asarray(errors)  # (runs, candidates)
    assert 0.05 < np.mean(ratios) < 0.6  # a real sample of the labels, not all of them
    mean, se = errors_a.mean(axis=0), errors_a.std(axis=0, ddof=1) / np.sqrt(len(errors_a))
    assert np.all(np.abs(mean) < 3 * se + 1e-3), (mean, se)
    assert np.all(errors_a.std(axis=0) > 0.0)  # the estimate does vary with the draws
    # counting the queried items alone (no 1/q) would be biased far below the truth
    unweighted = []
    for seed in range(10):
        lrn, truth = run(seed, delta=0.3)
        unweighted.append(lrn.n_labels / truth.max())
    assert np.mean(unweighted) < 0.7


def test_another_candidate_leads_only_when_clearly_ahead_of_the_first():
    lrn = learners.make("auto", n_features=D, classes=["neg", "pos"])
    lrn.correct[:] = [10.0, 30.0, 25.0]
    lrn.spread[:] = [0.0, 64.0, 1.0]  # both ahead by more than Z = 2 standard errors: the larger leads
    assert lrn._choose() == 1
    lrn.spread[:] = [0.0, 400.0, 1.0]  # 20 ahead, but 2 x 20 is the noise: only the third is ahead
    assert lrn._choose() == 2
    lrn.spread[:] = [0.0, 400.0, 400.0]
    assert lrn._choose() == 0
    lrn.correct[:] = [10.0, 5.0, 10.0]
    lrn.spread[:] = [0.0, 0.0, 0.0]  # a tie is not ahead
    assert lrn._choose() == 0


def test_the_leader_decides():
    lrn, _ = run(3, delta=0.3)
    assert lrn.leader_name == CANDIDATES["binary"][lrn.leader]
    x = np.linspace(-1.0, 1.0, D)
    leader = lrn.candidates[lrn.leader]
    assert lrn.predict([x])[0] == leader.predict([x])[0]
    assert lrn.query_probability(x) == leader.query_probability(x)


def test_every_label_reaches_every_candidate_and_the_knob_moves_them_all():
    X, y = stream(50, 0, noise=0.0)
    lrn = learners.make("auto", n_features=D, classes=["neg", "pos"], delta=0.5)
    for x, label in zip(X[:20], y[:20], strict=True):
        lrn.learn(x, label)
    assert [c.n_labels for c in lrn.candidates] == [20] * len(lrn.candidates)
    lrn.set_budget_knob("delta", 0.125)
    assert {c.delta for c in lrn.candidates} == {0.125} and lrn.delta == 0.125


@pytest.mark.parametrize("k,task", [(2, "binary"), (4, "multiclass")])
def test_candidates_are_registered_static_learners_of_the_task(k, task):
    lrn = learners.make("auto", n_features=D, classes=[f"c{i}" for i in range(k)])
    assert lrn.candidate_names == CANDIDATES[task]
    for name in CANDIDATES[task]:
        spec = learners.get_spec(name)
        assert task in spec.tasks and spec.cls.static_between_labels


def test_a_state_with_other_candidates_is_refused():
    lrn = learners.make("auto", n_features=D, classes=["neg", "pos"])
    state = lrn.get_state()
    state["meta"]["extra"]["candidates"][0]["name"] = "paa-i"
    with pytest.raises(ValueError, match="candidates"):
        learners.from_state(state)
