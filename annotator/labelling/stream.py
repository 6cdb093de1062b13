"""The stream engine: decide pending items in arrival order until the look-ahead is full.

For each pending item (``seq`` order) the project's learner gives
``decide(x, rng)`` -> prediction, score, query probability q and the Bernoulli outcome
(one uniform from the project's persisted RNG). The decision is logged on the item with the
model version it used. Queried items join the queue; the others are "auto" (done) and are
passed to ``learner.observe(x)`` right away, in order. The engine stops once
``look_ahead`` items wait in the queue, so later decisions use a model with more labels.
The queue queries it reads (waiting count, look-ahead) are :mod:`.queue`'s.

Called only from the label pipeline (:func:`.pipeline.update_project`) in a worker, with the
state row locked.
"""

from __future__ import annotations

import math

from django.utils import timezone

from . import budget
from .models import Item, LearnerState, Project
from .queue import look_ahead, waiting_count
from .rows import save_fields
from .state_store import Locked
from .vectors import decode

#: Most items loaded per database round trip while deciding (the first batch is the free places).
BATCH = 256
DECISION_FIELDS = ["status", "prediction", "score", "query_prob", "queried", "model_version", "decided_at"]


def batch_size(state: LearnerState, places: int) -> int:
    """Pending items to load to fill ``places`` free places in the queue: ``places`` divided by
    the query ratio so far (add-one smoothed), between 1 and :data:`BATCH`. Loading a whole
    BATCH to decide the one item a label frees would cost far more than the decision."""
    ratio = (state.n_queried + 1) / (state.n_decided + 1)
    return max(1, min(BATCH, math.ceil(places / ratio)))


def advance(lk: Locked) -> int:
    """Decide pending items until ``look_ahead`` items wait; returns the number decided.

    Does nothing while the project is paused. The caller saves ``lk`` afterwards.
    """
    project = lk.project
    if project.stream_state != Project.StreamState.RUNNING:
        return 0
    target = look_ahead(project)
    waiting = waiting_count(project)
    decided = 0
    learner, n = lk.learner, lk.learner.n_features
    ctl = budget.controller(project, lk.state, learner)
    while waiting < target:
        batch = list(Item.objects.filter(project=project).pending()
                     .order_by("seq").only("id", "seq", "vector")[:batch_size(lk.state, target - waiting)])
        if not batch:
            break
        done = []
        now = timezone.now()
        for item in batch:
            x = decode(item.vector, n)
            d = learner.decide(x, lk.rng, ctl)
            item.prediction, item.score, item.query_prob = d.prediction, d.score, d.query_prob
            item.queried, item.model_version, item.decided_at = d.queried, lk.state.version, now
            if d.queried:
                item.status = Item.Status.QUEUED
                waiting += 1
            else:
                item.status = Item.Status.AUTO
                learner.observe(x)
            done.append(item)
            if waiting >= target:
                break
        save_fields(done, DECISION_FIELDS)
        decided += len(done)
        lk.state.n_decided += len(done)
        lk.state.n_queried += sum(1 for it in done if it.queried)
    lk.state.budget_state = ctl.get_state() if ctl is not None else None
    return decided
