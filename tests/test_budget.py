"""Budget controller: the control law, its state, and the ratio it holds on long streams."""

from __future__ import annotations

import math

import numpy as np
import pytest
import scipy.sparse as sp

import learners
from learners.budget import BudgetController, knob_name
from learners.evaluation.engine import replay_per_item


def test_law_moves_log_knob_by_gain_times_error():
    ctl = BudgetController(0.2, 1.0, gain=0.1)
    assert ctl.update(False) == pytest.approx(math.exp(0.1 * 0.2))
    assert ctl.update(True) == pytest.approx(math.exp(0.1 * 0.2 - 0.1 * 0.8))
    assert (ctl.n_seen, ctl.n_queried, ctl.ratio) == (2, 1, 0.5)


def test_clamps_and_validation():
    ctl = BudgetController(0.5, 0.9, knob="p", gain=1.0)
    for _ in range(5):
        ctl.update(False)
    assert ctl.value == 1.0  # p never exceeds 1
    for bad in (dict(target=0.0), dict(target=1.5), dict(target=0.1, initial=0.0),
                dict(target=0.1, gain=-1.0), dict(target=0.1, knob="C")):
        with pytest.raises(ValueError):
            BudgetController(**bad)


def test_state_round_trip_continues_identically():
    a = BudgetController(0.1, 2.0)
    for z in (True, False, False, True):
        a.update(z)
    b = BudgetController.from_state(a.get_state())
    for z in (False, True, False):
        assert a.update(z) == b.update(z)
    assert a.get_state() == b.get_state()


def test_knob_name():
    assert knob_name("random") == "p" and knob_name("active") == "delta"


def test_holds_ratio_on_long_synthetic_margin_stream():
    # q = delta/(delta+|m|) with |m| drifting over time: the controller must follow it.
    rng = np.random.default_rng(3)
    ctl = BudgetController(0.1, 1.0)
    T = 100_000
    scale = np.linspace(0.5, 5.0, T)
    for t in range(T):
        m = abs(rng.normal()) * scale[t]
        q = ctl.value / (ctl.value + m)
        ctl.update(rng.random() < q)
    assert abs(ctl.ratio - 0.1) < 0.01


@pytest.mark.parametrize("algo,query", [("paa-i", "active"), ("paa-i", "random")])
def test_holds_ratio_with_a_real_learner(algo, query):
    rng = np.random.default_rng(0)
    n, d = 8000, 20
    X = sp.random(n, d, density=0.3, random_state=1, format="csr")
    y = (X @ rng.normal(size=d) > 0).astype(np.int64)
    lrn = learners.make(algo, n_features=d, classes=[0, 1], query=query)
    ctl = BudgetController(0.15, 1.0 if query == "active" else 0.5, knob=knob_name(query))
    trace = replay_per_item(lrn, X, y, np.random.default_rng(1), budget=ctl)
    assert abs(trace.queried.mean() - 0.15) < 0.01
