"""Loading and saving a project's learner and stream RNG under the state row lock.

Every writer of a project's learner (label pipeline, stream engine, rebuild) goes through
:func:`locked`, which must run inside ``transaction.atomic()``: it locks the
:class:`~.models.LearnerState` row with ``select_for_update`` (so writers for one project
run one at a time, in any number of worker processes) and returns the learner, reusing
this process's cached copy when the stored revision still matches.

The cache entry is taken out while the lock is held and put back only after the commit
(``transaction.on_commit``): a rolled-back transaction cannot leave a half-updated learner
in the cache.

The learner's blob is rewritten only when the model changed (a 2 MB blob per chunk of
decisions was half the decision engine's time): a learner that is ``static_between_labels``
changes between labels only in its round counter ``n_seen``, kept in its own column, and in the
budget knob, which the budget controller sets before every decision anyway (so a blob's knob
may lag until the next label; its weights never do).
"""

from __future__ import annotations

import json
from dataclasses import dataclass

import numpy as np
from django.db import transaction

import learners
from annotator.labelling.models import LearnerState, Project

#: project id -> (revision, learner): learners this worker process saved last.
_CACHE: dict[int, tuple[int, learners.Learner]] = {}


def rng_to_json(rng: np.random.Generator) -> str:
    """The generator's bit-generator state as a JSON string (keeps 128-bit integers exact)."""
    return json.dumps(rng.bit_generator.state)


def rng_from_json(text: str) -> np.random.Generator:
    """Inverse of :func:`rng_to_json`."""
    state = json.loads(text)
    bitgen = getattr(np.random, state["bit_generator"])()
    bitgen.state = state
    return np.random.Generator(bitgen)


def create_state(project: Project) -> LearnerState:
    """The initial state of a new project: an untrained learner and ``default_rng(rng_seed)``."""
    learner = project.new_learner(project.featurizer().n_features)
    return LearnerState.objects.create(
        project=project, blob=learners.to_bytes(learner),
        rng_state=rng_to_json(np.random.default_rng(project.rng_seed)))


def _model_params(learner: learners.Learner, state: LearnerState) -> dict:
    """The learner's parameters but the budget knob (which the controller sets per decision)."""
    knob = (state.budget_state or {}).get("knob")
    return {k: v for k, v in learner.get_params().items() if k != knob}


def stored_learner(state: LearnerState) -> learners.Learner:
    """The learner of a state row as last saved (its blob, with the round counter of the row)."""
    learner = learners.from_bytes(bytes(state.blob))
    if state.n_seen is not None:
        learner.n_seen = state.n_seen
    return learner


@dataclass
class Locked:
    """A locked state row with its live learner and RNG; call :meth:`save` to persist both."""

    state: LearnerState
    learner: learners.Learner
    rng: np.random.Generator

    def __post_init__(self) -> None:
        # what the stored blob holds, to tell at save time whether the model changed
        self._stored = (self.learner, self.learner.n_labels, _model_params(self.learner, self.state))

    def model_changed(self) -> bool:
        """True when the blob must be rewritten: another learner (a rebuild), a label learnt,
        a parameter changed (not the budget knob), or a learner that changes between labels."""
        learner, n_labels, params = self._stored
        return (self.learner is not learner or self.learner.n_labels != n_labels
                or not self.learner.static_between_labels
                or _model_params(self.learner, self.state) != params)

    @property
    def project(self) -> Project:
        return self.state.project

    def save(self) -> None:
        """Write learner (its blob only when :meth:`model_changed`) and RNG, bump the revision;
        the cache is refreshed after commit."""
        state = self.state
        fields = ["rng_state", "revision", "n_seen", "version", "needs_rebuild", "budget_state",
                  "n_decided", "n_queried", "untaught", "updated_at"]
        if self.model_changed():
            state.blob = learners.to_bytes(self.learner)
            fields.append("blob")
            self._stored = (self.learner, self.learner.n_labels, _model_params(self.learner, state))
        state.n_seen = self.learner.n_seen
        state.rng_state = rng_to_json(self.rng)
        state.revision += 1
        state.save(update_fields=fields)
        entry = (state.revision, self.learner)
        transaction.on_commit(lambda: _CACHE.__setitem__(state.project_id, entry))


def locked(project_id: int) -> Locked:
    """Lock the project's state row and return its learner (inside ``transaction.atomic``).

    Raises ``LearnerState.DoesNotExist`` for an unknown project.
    """
    # the blob (the largest column) is read only when this process has no copy of that revision
    state = (LearnerState.objects.select_for_update(of=("self",)).select_related("project").defer("blob")
             .get(project_id=project_id))
    cached = _CACHE.pop(project_id, None)
    if cached is not None and cached[0] == state.revision:
        learner = cached[1]
        unchanged = (state.revision, learner)
        # put it back if this transaction ends up not saving (the learner is then unchanged)
        transaction.on_commit(lambda: _CACHE.setdefault(project_id, unchanged))
    else:
        learner = stored_learner(state)  # the deferred column: one more query
    return Locked(state, learner, rng_from_json(state.rng_state))
