"""The label pipeline: bring a project's learner up to date, then top up its queue.

:func:`update_project` is what the Celery tasks run. In ONE transaction, holding the
project's learner-state row lock (``select_for_update``):

1. follow the project's configuration: a changed ``delta``/``p``/``query`` is set on the
   learner (``set_params``); a changed algorithm or other parameter rebuilds the learner by
   replaying the applied labels in the order they were applied;
2. apply every unapplied primary label in label order (``learn``), each one making a new
   model version (``version + 1``) recorded on the label as ``applied_version``;
3. run the stream engine (:func:`.stream.advance`) with the fresh model;
4. save learner, RNG and counters.

Idempotent: a label with an ``applied_version`` is never applied again, and the lock makes
concurrent runs (two workers, a task delivered twice) take turns, the second one finding
nothing left to apply.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass

from django.db import transaction

import learners

from . import stream
from .faults import hold_point
from .models import Label, LearnerState
from .rows import save_fields
from .state_store import Locked, locked
from .vectors import decode

log = logging.getLogger(__name__)

#: Parameters a learner can change mid-stream (``Learner.set_params``); others need a rebuild.
MID_STREAM = ("delta", "p", "query")


@dataclass(frozen=True)
class Outcome:
    """What one pipeline run did: labels applied, items decided, whether the learner was
    reconfigured (parameters set or rebuilt), and the model version afterwards."""

    applied: int
    decided: int
    reconfigured: bool
    version: int


def replay_labels(lk: Locked, learner: learners.Learner) -> None:
    """Teach ``learner`` every applied primary label of the project, in applied order."""
    labels = (Label.objects.filter(project_id=lk.state.project_id, primary=True,
                                   applied_version__isnull=False)
              .order_by("applied_version").values_list("value", "item__vector"))
    for value, vector in labels.iterator(chunk_size=500):
        learner.learn(decode(vector, learner.n_features), value)


def rebuild(lk: Locked, why: str) -> None:
    """Replace the learner by a fresh one of the project's configuration taught every applied
    primary label in applied order (undone labels are not primary). ``observe`` calls on past
    auto items are not replayed (only OASIS uses them; it then restarts from the labels)."""
    fresh = lk.project.new_learner(lk.learner.n_features)
    replay_labels(lk, fresh)
    fresh.n_seen = lk.learner.n_seen
    lk.learner = fresh
    log.info("project %s: learner rebuilt (%s) as %s from %d labels", lk.project.pk, why,
             lk.project.algorithm, fresh.n_labels)


def follow_config(lk: Locked) -> bool:
    """Make the learner match the project's algorithm and params, and rebuild it after an undo
    of an applied label (a new model version); True if anything changed."""
    project = lk.project
    wanted = project.learner_params()
    current = lk.learner.get_params()
    if lk.state.needs_rebuild:
        rebuild(lk, "a label was undone")
        lk.state.needs_rebuild = False
        lk.state.version += 1
        return True
    if lk.learner.name != project.algorithm or any(
            current.get(k) != v for k, v in wanted.items() if k not in MID_STREAM):
        rebuild(lk, "configuration changed")
        return True
    changed = {k: wanted[k] for k in MID_STREAM if k in wanted and current.get(k) != wanted[k]}
    if changed:
        lk.learner.set_params(**changed)
    return bool(changed)


def apply_labels(lk: Locked) -> int:
    """Apply the unapplied primary labels in ``id`` order; returns how many."""
    labels = list(Label.objects.filter(project_id=lk.state.project_id, primary=True,
                                       applied_version__isnull=True)
                  .order_by("id").select_related("item").only("id", "value", "item__vector"))
    for label in labels:
        lk.learner.learn(decode(label.item.vector, lk.learner.n_features), label.value)
        lk.state.version += 1
        label.applied_version = lk.state.version
    save_fields(labels, ["applied_version"])
    return len(labels)


def update_project(project_id: int) -> Outcome | None:
    """Steps 1-4 of the module docstring in one transaction; None if the project is gone."""
    with transaction.atomic():
        try:
            lk = locked(project_id)
        except LearnerState.DoesNotExist:
            log.warning("project %s has no learner state (deleted?); nothing to do", project_id)
            return None
        reconfigured = follow_config(lk)
        applied = apply_labels(lk)
        if applied:
            hold_point("APPLY")
        decided = stream.advance(lk)
        if reconfigured or applied or decided:
            lk.save()
        return Outcome(applied, decided, reconfigured, lk.state.version)
