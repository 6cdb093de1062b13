"""The learner contract (learners/base.py), checked by :mod:`learners.checks` for every registered
learner.

Every name in ``learners.REGISTRY`` is run (OASIS and KMC with small particle counts and
windows so that the battery stays fast), plus the configurations that change a learner's
arithmetic (SOAL's full covariance, OASIS with three classes). Each check of
:data:`learners.checks.CHECKS` is one test, so a failure names the learner and the check. The
checks themselves are shown to fail on a learner that breaks the contract.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
import scipy.sparse as sp

import learners
from learners.checks import CHECKS, check_learner, subject
from learners.evaluation.engine import replay_compiled
from learners.paa import PAA

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


def test_the_whole_registry_is_covered():
    assert {n for n, _, _ in CONFIGS} == set(learners.REGISTRY)
    assert {"oasis", "osis", "os", "kmc"} <= {n for n, _, _ in CONFIGS}
    compiled = {n for n, k, p in CONFIGS if subject(n, k, p).build().compiled_loop() is not None}
    assert {"paa", "paa-i", "paa-ii", "d-ada", "d-amd"} <= compiled
    static = {n for n, k, p in CONFIGS if type(subject(n, k, p).build()).static_between_labels}
    assert static and {"oasis", "kmc"}.isdisjoint(static)


@pytest.mark.parametrize("check", list(CHECKS))
@pytest.mark.parametrize("name,k,params", CONFIGS, ids=IDS)
def test_contract(name, k, params, check):
    check_learner(name, k, params, only=[check])


def test_a_learner_class_is_checked_without_the_registry():
    """The author's call: a class, not registered, its fixed arguments among the params."""
    check_learner(PAA, params={"variant": "PA-II", "C": 0.5})


class _ForgetfulPAA(PAA):
    """Breaks the contract: its state drops the weights (a reloaded copy starts from zero)."""

    def _load_arrays(self, arrays, extra) -> None:
        self.w = np.zeros(self.n_features)


class _MoodyPAA(PAA):
    """Breaks the contract: its block decisions disagree with its per-item ones."""

    def decide_block(self, X):
        out = super().decide_block(X)
        return type(out)(out.codes, out.scores + 1.0, out.query_probs)


class _LenientPAA(PAA):
    """Breaks the contract: learns from a label it does not know instead of refusing it."""

    def class_code(self, y):
        return 1 if y not in self.classes else super().class_code(y)


@pytest.mark.parametrize("cls,check", [(_ForgetfulPAA, "state_round_trip"), (_MoodyPAA, "decide_block"),
                                       (_LenientPAA, "shapes")])
def test_the_checks_catch_a_broken_learner(cls, check):
    with pytest.raises(AssertionError, match=f"check '{check}' failed for {cls.__name__}"):
        check_learner(cls, params={"variant": "PA-I"})
    check_learner(cls, params={"variant": "PA-I"}, only=[c for c in CHECKS if c != check])


def test_an_unknown_check_is_refused():
    with pytest.raises(KeyError):
        check_learner("paa", only=["no-such-check"])


def test_learners_without_a_compiled_loop_refuse_the_compiled_replay():
    lrn = learners.make("soal", n_features=6, classes=[0, 1])
    assert lrn.compiled_loop() is None
    X = np.random.default_rng(0).normal(size=(10, 6))
    with pytest.raises(ValueError, match="no compiled loop"):
        replay_compiled(lrn, sp.csr_matrix(X), np.zeros(10, dtype=np.int64), np.random.default_rng(0))
