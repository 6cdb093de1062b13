"""The learner contract (learners/base.py), checked for every registered learner.

Every name in ``learners.REGISTRY`` is run (OASIS and KMC with small particle counts and
windows so that the battery stays fast), plus the configurations that change a learner's
arithmetic (SOAL's full covariance, OASIS with three classes):

* the state survives a round trip through an exported model file and the copy continues
  exactly as the original;
* a dense row and the same row as CSR give the same decisions and states, and the same
  seed gives the same run;
* ``decide_block`` gives the per-item decisions, and for learners that do not change between
  labels the block replay (``replay_fast``) makes the per-item replay's trajectory;
* where a learner has a compiled loop (``Learner.compiled_loop``), it makes the per-item
  decisions and leaves the same state and counters.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
import scipy.sparse as sp

import learners
from learners.evaluation.engine import replay_compiled, replay_fast, replay_per_item
from learners.features import make_featurizer
from tests.support.linear import FixedRng, trajectory

D = 6
#: parameters that keep the costly learners small (the contract does not depend on size)
SMALL: dict[str, dict[str, Any]] = {
    "oasis": {"m": 40, "tau": 15, "rule": "bernoulli", "seed": 3},
    # osis / os never query actively: labels reach them at random (the paper's protocol)
    "osis": {"m": 40, "tau": 15, "seed": 3, "query": "random", "p": 0.3},
    "os": {"m": 40, "tau": 15, "seed": 3, "query": "random", "p": 0.3},
    "kmc": {"window": 20, "max_iter": 8, "full_refit_every": 6, "freeze_width_after": 6},
}
#: (name, number of classes, extra parameters): every registered learner, plus variants
CONFIGS = [(name, 2 if "binary" in spec.tasks else 3, SMALL.get(name, {}))
           for name, spec in sorted(learners.REGISTRY.items())]
CONFIGS += [("soal", 2, {"covariance": "full"}), ("soal-m", 2, {"covariance": "full"}),
            ("oasis", 3, SMALL["oasis"]), ("auto", 3, {})]  # auto: the multiclass candidates too
IDS = [f"{n}-{k}" + ("-full" if p.get("covariance") == "full" else "") for n, k, p in CONFIGS]
STATIC = [(n, k, p) for n, k, p in CONFIGS if learners.get_spec(n).cls.static_between_labels]
COMPILED = [(n, k, p) for n, k, p in CONFIGS
            if learners.make(n, n_features=D, classes=range(k), **p).compiled_loop() is not None]


def test_the_whole_registry_is_covered():
    assert {n for n, _, _ in CONFIGS} == set(learners.REGISTRY)
    assert {"oasis", "osis", "os", "kmc"} <= {n for n, _, _ in CONFIGS}
    assert {"paa", "paa-i", "paa-ii", "d-ada", "d-amd"} <= {n for n, _, _ in COMPILED}


def classes(k: int) -> list[str]:
    return ["neg", "pos"] if k == 2 else ["a", "b", "c"][:k]


def build(name: str, k: int, params: dict[str, Any], **more: Any) -> learners.Learner:
    return learners.make(name, n_features=D, classes=classes(k), **{"delta": 0.5, **params, **more})


def stream(k: int, n: int, seed: int) -> tuple[np.ndarray, list[str]]:
    """Half-sparse Gaussian rows; labels from a fixed linear rule (so the learners learn)."""
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, D)) * (rng.random((n, D)) < 0.6)
    scores = X @ np.linspace(-1.0, 1.0, D * k).reshape(D, k)
    return X, [classes(k)[c] for c in scores.argmax(axis=1)]


def assert_same_run(a: list, b: list) -> None:
    """Two :func:`trajectory` outputs: equal decisions and equal states after every round."""
    assert len(a) == len(b)
    for (d1, s1), (d2, s2) in zip(a, b, strict=True):
        assert d1 == d2
        assert s1.keys() == s2.keys()
        for key in s1:
            np.testing.assert_array_equal(s1[key], s2[key], err_msg=key)


@pytest.mark.parametrize("name,k,params", CONFIGS, ids=IDS)
def test_state_round_trip_through_the_model_file(tmp_path, name, k, params):
    X, y = stream(k, 80, seed=1)
    u = np.random.default_rng(2).random(80)
    lrn = build(name, k, params)
    first = trajectory(lrn, list(X[:40]), y[:40], FixedRng(*u[:40]))
    assert any(d.queried for d, _ in first)
    path = tmp_path / "model.npz"
    learners.save_model(path, lrn, make_featurizer({"kind": "vectors", "n_features": D}), {})
    clone = learners.load_model(path).learner
    assert (clone.name, clone.classes, clone.get_params(), clone.n_seen, clone.n_labels) == (
        lrn.name, lrn.classes, lrn.get_params(), lrn.n_seen, lrn.n_labels)
    assert_same_run(trajectory(lrn, list(X[40:]), y[40:], FixedRng(*u[40:])),
                    trajectory(clone, list(X[40:]), y[40:], FixedRng(*u[40:])))


@pytest.mark.parametrize("name,k,params", CONFIGS, ids=IDS)
def test_dense_and_sparse_inputs_give_identical_trajectories(name, k, params):
    X, y = stream(k, 60, seed=3)
    u = np.random.default_rng(4).random(60)
    rows = sp.csr_matrix(X)
    dense = trajectory(build(name, k, params), list(X), y, FixedRng(*u))
    sparse = trajectory(build(name, k, params), [rows[i] for i in range(len(y))], y, FixedRng(*u))
    assert_same_run(dense, sparse)
    assert any(d.queried for d, _ in dense)


@pytest.mark.parametrize("name,k,params", CONFIGS, ids=IDS)
def test_same_seed_same_run(name, k, params):
    X, y = stream(k, 60, seed=9)
    runs = [trajectory(build(name, k, params), list(X), y, np.random.default_rng(42)) for _ in range(2)]
    assert_same_run(*runs)


@pytest.mark.parametrize("query", ["active", "random", "all"])
@pytest.mark.parametrize("name,k,params", CONFIGS, ids=IDS)
def test_decide_block_matches_per_item_decisions(name, k, params, query):
    X, y = stream(k, 70, seed=5)
    lrn = build(name, k, params, query=query, p=0.3)
    trajectory(lrn, list(X[:40]), y[:40], FixedRng(*np.zeros(40)))  # learn on every item
    block = lrn.decide_block(sp.csr_matrix(X[40:]))
    for i, x in enumerate(X[40:]):
        d = lrn.decide(x, FixedRng(1.0))  # u = 1: never queried, as the block assumes
        assert lrn.classes[block.codes[i]] == d.prediction
        assert block.scores[i] == pytest.approx(d.score, rel=1e-12, abs=1e-15)
        assert block.query_probs[i] == pytest.approx(d.query_prob, rel=1e-12)


@pytest.mark.parametrize("name,k,params", STATIC, ids=[IDS[CONFIGS.index(c)] for c in STATIC])
def test_block_replay_makes_the_per_item_trajectory(name, k, params):
    X, y = stream(k, 400, seed=6)
    codes = np.array([classes(k).index(v) for v in y])
    a, b = build(name, k, params, delta=0.2), build(name, k, params, delta=0.2)
    ref = replay_per_item(a, sp.csr_matrix(X), codes, np.random.default_rng(7))
    got = replay_fast(b, sp.csr_matrix(X), codes, np.random.default_rng(7), max_block=16)
    np.testing.assert_array_equal(got.queried, ref.queried)
    np.testing.assert_array_equal(got.pred, ref.pred)
    np.testing.assert_allclose(got.query_prob, ref.query_prob, rtol=1e-12)
    assert 0 < ref.queried.sum() < len(y)
    assert (a.n_seen, a.n_labels) == (b.n_seen, b.n_labels)
    for key, arr in a.get_state()["arrays"].items():
        np.testing.assert_allclose(b.get_state()["arrays"][key], arr, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("query", ["active", "random", "all"])
@pytest.mark.parametrize("name,k,params", COMPILED, ids=[IDS[CONFIGS.index(c)] for c in COMPILED])
def test_compiled_loop_makes_the_per_item_decisions(name, k, params, query):
    X, y = stream(k, 500, seed=8)
    codes = np.array([classes(k).index(v) for v in y])
    for delta in (0.05, 1.0):
        a = build(name, k, params, delta=delta, query=query, p=0.3)
        b = build(name, k, params, delta=delta, query=query, p=0.3)
        ref = replay_per_item(a, sp.csr_matrix(X), codes, np.random.default_rng(9))
        got = replay_compiled(b, sp.csr_matrix(X), codes, np.random.default_rng(9))
        np.testing.assert_array_equal(got.pred, ref.pred)
        np.testing.assert_array_equal(got.queried, ref.queried)
        np.testing.assert_array_equal(got.query_prob, ref.query_prob)
        assert ref.queried.any() and (query == "all" or not ref.queried.all())
        assert (a.n_seen, a.n_labels) == (b.n_seen, b.n_labels)
        for key, arr in a.get_state()["arrays"].items():
            np.testing.assert_array_equal(b.get_state()["arrays"][key], arr, err_msg=key)


def test_learners_without_a_compiled_loop_refuse_the_compiled_replay():
    lrn = build("soal", 2, {})
    assert lrn.compiled_loop() is None
    X, _ = stream(2, 10, seed=0)
    with pytest.raises(ValueError, match="no compiled loop"):
        replay_compiled(lrn, sp.csr_matrix(X), np.zeros(10, dtype=np.int64), np.random.default_rng(0))
