"""Properties of the linear learners (PAA, SOAL, D-ADA/D-AMD and baseline families) beyond the
contract battery (:mod:`learners.checks`, every learner, query modes included): all-zero items,
extreme values and a huge delta. OASIS and KMC have no such linear properties (their
query rules do not reach 1 with delta, their scores are not margins).
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import learners
from learners.checks import FixedRng, trajectory

MODULES = ("learners.paa", "learners.soal", "learners.dada", "learners.baselines")
NAMES = sorted(n for n, s in learners.REGISTRY.items() if s.cls.__module__ in MODULES)
#: (name, extra params): every learner, plus SOAL's second covariance.
CONFIGS = [(n, {}) for n in NAMES] + [(n, {"covariance": "full"}) for n in ("soal", "soal-m")]
IDS = [n + ("-full" if p else "") for n, p in CONFIGS]
D = 6


def test_the_families_are_registered():
    assert {"paa", "paa-i", "paa-ii", "mpaa", "mpaa-i", "mpaa-ii", "cspaa", "cspaa-adaptive",
            "soal", "soal-m", "d-ada", "d-amd", "md-ada", "md-amd", "pea", "mpea"} <= set(NAMES)
    for name in NAMES:
        desc = learners.get_spec(name).describe()
        assert desc["summary"] and desc["tasks"]
        assert all(p["help"] and p["range"] for p in desc["params"])
        assert desc["params"][0]["name"] == "delta"


def classes_of(name):
    return ["neg", "pos"] if learners.get_spec(name).cls.binary else ["a", "b", "c"]


def build(name, params, **more):
    return learners.make(name, n_features=D, classes=classes_of(name), **{**params, **more})


def stream(name, n, seed):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, D)) * (rng.random((n, D)) < 0.5)
    labels = classes_of(name)
    y = [labels[i] for i in rng.integers(0, len(labels), n)]
    return X, y, rng.random(n)


def states_equal(a, b):
    assert a.keys() == b.keys()
    for k in a:
        np.testing.assert_array_equal(a[k], b[k])


@pytest.mark.parametrize("name,params", CONFIGS, ids=IDS)
def test_all_zero_item_changes_nothing(name, params):
    lrn = build(name, params)
    X, y, _ = stream(name, 10, seed=6)
    trajectory(lrn, list(X), y, FixedRng(*np.zeros(10)))
    before = {k: v.copy() for k, v in lrn.get_state()["arrays"].items()}
    d = lrn.decide(np.zeros(D), FixedRng(0.5))
    assert 0.0 <= d.query_prob <= 1.0
    lrn.learn(np.zeros(D), y[0])
    states_equal(before, lrn.get_state()["arrays"])


#: PA's step l/||x||^2 is unbounded as ||x|| -> 0 (paa.md Eq. 1): an item of norm 1e-38 sets a
#: weight near 1e38, whose margins no finite delta outweighs; such items are EXTREME's business.
MODERATE = st.floats(-10, 10).filter(lambda v: v == 0.0 or abs(v) >= 1e-3)
EXTREME = st.sampled_from([0.0, 0.0, 1e6, -1e6, 1e-12, -1e-12, 1.0, -0.5])
ROWS = st.lists(st.lists(EXTREME, min_size=D, max_size=D), min_size=1, max_size=12)


@pytest.mark.parametrize("name,params", CONFIGS, ids=IDS)
@settings(max_examples=12, deadline=None)
@given(rows=ROWS, delta_exp=st.integers(-20, 20), seed=st.integers(0, 2**16))
def test_extreme_values_keep_everything_finite(name, params, rows, delta_exp, seed):
    X = np.array(rows, dtype=float)
    labels = classes_of(name)
    y = [labels[(seed + i) % len(labels)] for i in range(len(X))]
    lrn = build(name, params, delta=2.0 ** delta_exp)
    for d, state in trajectory(lrn, list(X), y, np.random.default_rng(seed)):
        assert 0.0 <= d.query_prob <= 1.0 and np.isfinite(d.score)
        assert all(np.all(np.isfinite(a)) for a in state.values())


@pytest.mark.parametrize("name,params", CONFIGS, ids=IDS)
@settings(max_examples=10, deadline=None)
@given(rows=st.lists(st.lists(MODERATE, min_size=D, max_size=D), min_size=1, max_size=15),
       seed=st.integers(0, 2**16))
def test_huge_delta_queries_everything(name, params, rows, seed):
    X = np.array(rows, dtype=float)
    labels = classes_of(name)
    y = [labels[(seed + i) % len(labels)] for i in range(len(X))]
    lrn = build(name, params, delta=1e12)
    got = trajectory(lrn, list(X), y, FixedRng(*np.full(len(X), 1.0 - 1e-6)))
    assert all(d.query_prob > 1.0 - 1e-6 and d.queried for d, _ in got)
