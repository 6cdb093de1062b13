"""Loading and saving a project's learner and stream RNG under the state row lock.

Every writer of a project's learner (label pipeline, stream engine, rebuild) goes through
:func:`locked`, which must run inside ``transaction.atomic()``: it locks the
:class:`~.models.LearnerState` row with ``select_for_update`` (so writers for one project
run one at a time, in any number of worker processes) and returns the learner, reusing
this process's cached copy when the stored revision still matches.

The cache entry is taken out while the lock is held and put back only after the commit
(``transaction.on_commit``): a rolled-back transaction cannot leave a half-updated learner
in the cache.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

import numpy as np
from django.db import transaction

import learners

from .models import LearnerState, Project

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


@dataclass
class Locked:
    """A locked state row with its live learner and RNG; call :meth:`save` to persist both."""

    state: LearnerState
    learner: learners.Learner
    rng: np.random.Generator

    @property
    def project(self) -> Project:
        return self.state.project

    def save(self) -> None:
        """Write learner and RNG, bump the revision; the cache is refreshed after commit."""
        state = self.state
        state.blob = learners.to_bytes(self.learner)
        state.rng_state = rng_to_json(self.rng)
        state.revision += 1
        state.save()
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
        learner = learners.from_bytes(bytes(state.blob))  # the deferred column: one more query
    return Locked(state, learner, rng_from_json(state.rng_state))
