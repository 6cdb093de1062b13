"""The learner contract battery: checks that a learner keeps the contract of :mod:`learners.base`
(docs/algorithms/common.md, "Checking a learner"), runnable on any learner class.

``tests/learners/test_learner_contract.py`` runs it over the whole registry; the author of a new
learner runs it on their class before registering it::

    from learners.checks import check_learner
    check_learner(MyLearner)                               # two classes, or three if not binary
    check_learner(MyLearner, n_classes=4, params={"C": 0.5})
    check_learner("paa-i")                                 # a registered name, built by learners.make

Each check builds fresh learners on a small synthetic stream (six features, half of them zero,
labels from a fixed linear rule) and raises ``AssertionError`` naming itself and the learner when
the contract breaks. :data:`CHECKS` names them; every check applies to every learner except
``block_replay`` (learners with ``static_between_labels``) and ``compiled_loop`` (learners with a
compiled loop), which pass when they do not apply:

* ``shapes``: what ``decide``, ``learn``, ``observe``, ``predict``, ``decision_function``,
  ``decide_block``, ``score`` and ``query_probability`` return, the round counters, a refused
  label or width;
* ``state_round_trip``: the state survives its bytes (through an exported model file for a
  registered learner) and the copy continues exactly as the original;
* ``dense_and_sparse``: a dense row and the same row as CSR give the same decisions and states;
* ``same_seed_same_run``: the same seed gives the same decisions and states;
* ``query_modes``: ``query="all"`` queries every item with q = 1, ``query="random"`` with q = p;
* ``decide_block``: for every query mode, the block's codes, scores and probabilities are the
  per-item decisions';
* ``block_replay``: the block replay (``replay_fast``) makes the per-item replay's trajectory;
* ``compiled_loop``: the compiled loop makes the per-item decisions and leaves the same state
  and counters, for every query mode and a small and a large delta.

This module runs the replay engine's loops on the learner, so it (like ``learners.replay``) may
import :mod:`learners.evaluation`; nothing in ``learners`` imports it.
"""

from __future__ import annotations

import tempfile
from collections.abc import Callable, Hashable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, cast

import numpy as np
import scipy.sparse as sp

from .base import QUERY_MODES, Decision, Learner, state_from_bytes, state_to_bytes
from .evaluation.engine import replay_compiled, replay_fast, replay_per_item
from .features import make_featurizer
from .model_file import load_model, save_model
from .registry import get_spec, make

__all__ = ["CHECKS", "FixedRng", "Subject", "check_learner", "subject", "trajectory"]

#: the width of the checks' synthetic items
D = 6


class FixedRng:
    """A stand-in Generator whose ``random()`` returns prepared uniforms in order, so that a
    caller chooses which rounds are queried (u below q) and which are not."""

    def __init__(self, *uniforms: float) -> None:
        self.values = list(uniforms)

    def random(self) -> float:
        return self.values.pop(0)


def _fixed(*uniforms: float) -> np.random.Generator:
    """A :class:`FixedRng` where a Generator is expected (it has the one method decide calls)."""
    return cast(np.random.Generator, FixedRng(*uniforms))


def trajectory(lrn: Learner, items: Sequence[Any], labels: Sequence[Any],
               rng: Any) -> list[tuple[Decision, dict[str, np.ndarray]]]:
    """The per-item protocol (``decide`` on every item, ``learn`` when queried, else ``observe``):
    the decision and a copy of the state arrays after every round."""
    out = []
    for x, y in zip(items, labels, strict=True):
        d = lrn.decide(x, rng)
        if d.queried:
            lrn.learn(x, y)
        else:
            lrn.observe(x)
        out.append((d, {k: np.array(v, copy=True) for k, v in lrn.get_state()["arrays"].items()}))
    return out


@dataclass(frozen=True)
class Subject:
    """What the checks run on. ``build(**more)`` makes a fresh learner for ``classes`` and
    :data:`D` features with the subject's parameters overlaid by ``more``; ``label`` names it
    in failures; ``registered``: built through the registry (so it can be exported)."""

    build: Callable[..., Learner]
    classes: tuple[Hashable, ...]
    label: str
    registered: bool

    @property
    def k(self) -> int:
        return len(self.classes)

    def stream(self, n: int, seed: int) -> tuple[np.ndarray, list[Hashable]]:
        """``n`` half-sparse Gaussian rows (n, D) and their class values from a fixed linear rule."""
        rng = np.random.default_rng(seed)
        X = rng.normal(size=(n, D)) * (rng.random((n, D)) < 0.6)
        scores = X @ np.linspace(-1.0, 1.0, D * self.k).reshape(D, self.k)
        return X, [self.classes[c] for c in scores.argmax(axis=1)]

    def codes(self, y: Sequence[Hashable]) -> np.ndarray:
        return np.array([self.classes.index(v) for v in y], dtype=np.int64)


def subject(learner: type[Learner] | str, n_classes: int | None = None,
            params: Mapping[str, Any] | None = None) -> Subject:
    """The :class:`Subject` of a learner class (built as ``cls(D, classes, **params)``) or of a
    registered name (built by :func:`learners.make`, which adds the registry's fixed arguments).

    n_classes: None = 2 for a binary learner, else 3. params: constructor parameters (``delta``
    defaults to 0.5 so that the small streams query some items but not all). ValueError for a
    name that is not registered.
    """
    cls = get_spec(learner).cls if isinstance(learner, str) else learner
    k = n_classes or (2 if cls.binary else 3)
    classes: tuple[Hashable, ...] = ("neg", "pos") if k == 2 else tuple(f"c{i}" for i in range(k))
    base = {"delta": 0.5, **(params or {})}
    if isinstance(learner, str):
        name = learner

        def build(**more: Any) -> Learner:
            return make(name, n_features=D, classes=classes, **{**base, **more})

        return Subject(build, classes, name, True)

    def build_class(**more: Any) -> Learner:
        return cls(D, classes, **{**base, **more})

    return Subject(build_class, classes, cls.__name__, False)


def _same_run(a: list, b: list) -> None:
    """Two :func:`trajectory` outputs: equal decisions and equal states after every round."""
    assert len(a) == len(b)
    for t, ((d1, s1), (d2, s2)) in enumerate(zip(a, b, strict=True)):
        assert d1 == d2, f"round {t}: {d1} != {d2}"
        assert s1.keys() == s2.keys(), f"round {t}: state arrays {sorted(s1)} != {sorted(s2)}"
        for key in s1:
            np.testing.assert_array_equal(s1[key], s2[key], err_msg=f"round {t}, array {key}")


def _queried_some(run: list, where: str) -> None:
    assert any(d.queried for d, _ in run), (
        f"no item was queried {where}: pass params that make the learner query at delta = 0.5")


def check_shapes(s: Subject) -> None:
    X, y = s.stream(30, seed=11)
    lrn = s.build()
    for t, (x, label) in enumerate(zip(X, y, strict=True)):
        d = lrn.decide(x, np.random.default_rng(t))
        assert isinstance(d, Decision) and d.prediction in s.classes, d
        assert isinstance(d.score, float) and np.isfinite(d.score), d
        assert isinstance(d.query_prob, float) and 0.0 <= d.query_prob <= 1.0, d
        assert isinstance(d.queried, bool), d
        if t % 3 == 0:
            lrn.learn(x, label)
        else:
            lrn.observe(x)
    assert (lrn.n_seen, lrn.n_labels) == (30, 10), (lrn.n_seen, lrn.n_labels)
    pred = lrn.predict(X)
    assert pred.shape == (30,) and set(pred) <= set(s.classes), pred
    scores = lrn.decision_function(sp.csr_matrix(X))
    assert scores.shape == ((30,) if lrn.binary else (30, s.k)) and np.all(np.isfinite(scores)), scores.shape
    one = lrn.score(X[0])
    assert isinstance(one, float) if lrn.binary else np.shape(one) == (s.k,), one
    assert 0.0 <= lrn.query_probability(X[0]) <= 1.0
    block = lrn.decide_block(sp.csr_matrix(X))
    assert block.codes.shape == block.scores.shape == block.query_probs.shape == (30,)
    assert block.codes.min() >= 0 and block.codes.max() < s.k
    assert np.all((block.query_probs >= 0) & (block.query_probs <= 1))
    assert (lrn.n_seen, lrn.n_labels) == (30, 10), "predict, scores and decide_block change no counter"
    for bad in (lambda: lrn.learn(X[0], "no such class"), lambda: lrn.decide(np.zeros(D + 1), _fixed(0.5)),
                lambda: lrn.predict(np.zeros((2, D + 1)))):
        try:
            bad()
        except ValueError:
            continue
        raise AssertionError("an unknown label or a row of the wrong width must raise ValueError")


def check_state_round_trip(s: Subject) -> None:
    X, y = s.stream(80, seed=1)
    u = np.random.default_rng(2).random(80)
    lrn = s.build()
    first = trajectory(lrn, list(X[:40]), y[:40], FixedRng(*u[:40]))
    _queried_some(first, "in the first 40 rounds")
    if s.registered:
        clone = _through_model_file(lrn)
        assert clone.name == lrn.name
    else:
        clone = s.build()
        clone.set_state(state_from_bytes(state_to_bytes(lrn.get_state())))
    assert (clone.classes, clone.get_params(), clone.n_seen, clone.n_labels) == (
        lrn.classes, lrn.get_params(), lrn.n_seen, lrn.n_labels)
    _same_run(trajectory(lrn, list(X[40:]), y[40:], FixedRng(*u[40:])),
              trajectory(clone, list(X[40:]), y[40:], FixedRng(*u[40:])))


def _through_model_file(lrn: Learner) -> Learner:
    """The learner after a round trip through an exported model file (a temporary folder)."""
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "model.npz"
        save_model(path, lrn, make_featurizer({"kind": "vectors", "n_features": D}), {})
        return load_model(path).learner


def check_dense_and_sparse(s: Subject) -> None:
    X, y = s.stream(60, seed=3)
    u = np.random.default_rng(4).random(60)
    rows = sp.csr_matrix(X)
    dense = trajectory(s.build(), list(X), y, FixedRng(*u))
    _same_run(dense, trajectory(s.build(), [rows[i] for i in range(len(y))], y, FixedRng(*u)))
    _queried_some(dense, "in 60 rounds")


def check_same_seed_same_run(s: Subject) -> None:
    X, y = s.stream(60, seed=9)
    _same_run(*(trajectory(s.build(), list(X), y, np.random.default_rng(42)) for _ in range(2)))


def check_query_modes(s: Subject) -> None:
    X, y = s.stream(60, seed=4)
    u = np.random.default_rng(5).random(60)
    full = trajectory(s.build(query="all"), list(X), y, FixedRng(*u))
    assert all(d.query_prob == 1.0 and d.queried for d, _ in full), "query='all' must query every item"
    rand = trajectory(s.build(query="random", p=0.25), list(X), y, FixedRng(*u))
    assert all(d.query_prob == 0.25 for d, _ in rand), "query='random' must query with probability p"
    assert [d.queried for d, _ in rand] == list(u < 0.25), "an item is queried iff its uniform is below q"


def check_decide_block(s: Subject) -> None:
    X, y = s.stream(70, seed=5)
    for query in QUERY_MODES:
        lrn = s.build(query=query, p=0.3)
        trajectory(lrn, list(X[:40]), y[:40], FixedRng(*np.zeros(40)))  # learn on every item
        block = lrn.decide_block(sp.csr_matrix(X[40:]))
        for i, x in enumerate(X[40:]):
            d = lrn.decide(x, _fixed(1.0))  # u = 1: never queried, as the block assumes
            where = f"query={query!r}, block row {i}"
            assert lrn.classes[block.codes[i]] == d.prediction, where
            np.testing.assert_allclose(block.scores[i], d.score, rtol=1e-12, atol=1e-15, err_msg=where)
            np.testing.assert_allclose(block.query_probs[i], d.query_prob, rtol=1e-12, err_msg=where)


def check_block_replay(s: Subject) -> None:
    if not type(s.build()).static_between_labels:
        return
    X, y = s.stream(400, seed=6)
    codes = s.codes(y)
    a, b = s.build(delta=0.2), s.build(delta=0.2)
    ref = replay_per_item(a, sp.csr_matrix(X), codes, np.random.default_rng(7))
    got = replay_fast(b, sp.csr_matrix(X), codes, np.random.default_rng(7), max_block=16)
    np.testing.assert_array_equal(got.queried, ref.queried)
    np.testing.assert_array_equal(got.pred, ref.pred)
    np.testing.assert_allclose(got.query_prob, ref.query_prob, rtol=1e-12)
    assert 0 < ref.queried.sum() < len(y), "at delta = 0.2 some items, not all, must be queried"
    assert (a.n_seen, a.n_labels) == (b.n_seen, b.n_labels)
    for key, arr in a.get_state()["arrays"].items():
        np.testing.assert_allclose(b.get_state()["arrays"][key], arr, rtol=1e-12, atol=1e-12, err_msg=key)


def check_compiled_loop(s: Subject) -> None:
    if s.build().compiled_loop() is None:
        return
    X, y = s.stream(500, seed=8)
    codes = s.codes(y)
    for query in QUERY_MODES:
        for delta in (0.05, 1.0):
            a, b = s.build(delta=delta, query=query, p=0.3), s.build(delta=delta, query=query, p=0.3)
            ref = replay_per_item(a, sp.csr_matrix(X), codes, np.random.default_rng(9))
            got = replay_compiled(b, sp.csr_matrix(X), codes, np.random.default_rng(9))
            where = f"query={query!r}, delta={delta}"
            np.testing.assert_array_equal(got.pred, ref.pred, err_msg=where)
            np.testing.assert_array_equal(got.queried, ref.queried, err_msg=where)
            np.testing.assert_array_equal(got.query_prob, ref.query_prob, err_msg=where)
            assert ref.queried.any() and (query == "all" or not ref.queried.all()), where
            assert (a.n_seen, a.n_labels) == (b.n_seen, b.n_labels), where
            for key, arr in a.get_state()["arrays"].items():
                np.testing.assert_array_equal(b.get_state()["arrays"][key], arr, err_msg=f"{where}, {key}")


#: every check by name, in the order :func:`check_learner` runs them
CHECKS: dict[str, Callable[[Subject], None]] = {
    "shapes": check_shapes,
    "state_round_trip": check_state_round_trip,
    "dense_and_sparse": check_dense_and_sparse,
    "same_seed_same_run": check_same_seed_same_run,
    "query_modes": check_query_modes,
    "decide_block": check_decide_block,
    "block_replay": check_block_replay,
    "compiled_loop": check_compiled_loop,
}


def check_learner(learner: type[Learner] | str, n_classes: int | None = None,
                  params: Mapping[str, Any] | None = None, only: Sequence[str] | None = None) -> None:
    """Run the contract checks (:data:`CHECKS`, or those named in ``only``) on a learner class or a
    registered name (see :func:`subject` for ``n_classes`` and ``params``).

    Returns None when the learner keeps the contract; raises ``AssertionError`` whose message
    names the first failing check and the learner, and ``KeyError`` for an unknown check name.
    """
    s = subject(learner, n_classes, params)
    for name in only or CHECKS:
        try:
            CHECKS[name](s)
        except AssertionError as exc:
            raise AssertionError(f"check {name!r} failed for {s.label} ({s.k} classes): {exc}") from exc
