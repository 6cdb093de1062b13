"""The stream engine: decide pending items in arrival order until the look-ahead is full.

For each pending item (``seq`` order) the project's learner gives
``decide(x, rng)`` -> prediction, score, query probability q and the Bernoulli outcome
(one uniform from the project's persisted RNG). The decision is logged on the item with the
model version it used. Queried items join the queue, each with its overlap draw (how many
distinct annotators it needs, :mod:`.overlap`); the others are "auto" (done) and are
passed to ``learner.observe(x)`` right away, in order. The engine stops once
``look_ahead`` items nobody labelled yet wait in the queue (:func:`.queue_counts.fresh_count`), so
later decisions use a model with more labels.
The queue queries it reads (waiting count, look-ahead) are :mod:`.queue_counts`'s.

An item that arrived with labels given elsewhere (:mod:`..ingest.opinions`) is decided and
logged like any other but becomes ``labelled``: never queued, never observed (its label is
taught by the pipeline).

Called only from the label pipeline (:func:`.pipeline.update_project`) in a worker, with the
state row locked.
"""

from __future__ import annotations

import math

from django.utils import timezone

from annotator.labelling.models import Item, LearnerState, Project, StreamStats, WebhookEvent
from annotator.labelling.teams.audit_sampling import open_audits, sampled
from annotator.labelling.teams.overlap import draw as draw_overlap
from annotator.labelling.webhooks import outbox

from . import label_budget
from .bulk_writes import update_rows
from .decision_log import unasked_cause
from .learner_state import Locked
from .queue_counts import fresh_count, look_ahead
from .running_totals import record_decisions
from .stored_vectors import decode_row
from .table_stats import after_commit

#: Most items loaded per database round trip while deciding (the first batch is the free places).
BATCH = 2000
DECISION_FIELDS = ["status", "prediction", "score", "query_prob", "queried", "model_version", "decided_at",
                   "audit_prob", "overlap_k", "overlap_prob"]


def batch_size(state: LearnerState, places: int) -> int:
    """Pending items to load to fill ``places`` free places in the queue: ``places`` divided by
    the query ratio so far (add-one smoothed), between 1 and :data:`BATCH`. Loading a whole
    BATCH to decide the one item a label frees would cost far more than the decision."""
    ratio = (state.n_queried + 1) / (state.n_decided + 1)
    return max(1, min(BATCH, math.ceil(places / ratio)))


def room(project: Project) -> int:
    """Items the engine may queue before the look-ahead is full: ``look_ahead`` less the fresh
    waiting items (:func:`.queue_counts.fresh_count`); zero or less when full."""
    return look_ahead(project) - fresh_count(project)


def advance(lk: Locked, stats: StreamStats, limit: int | None = None, free: int | None = None) -> int:
    """Decide pending items until ``look_ahead`` items wait, or ``limit`` items were decided
    (None = no limit); returns the number decided. ``free``: the :func:`room` the caller counted
    (at the start of a chunk, less what it queued since: counting the queue again per step read
    every queued row when the planner's statistics were stale); None = count it now.
    The decisions of a batch are written by one
    set-wise statement per chunk (:func:`.bulk_writes.update_rows`) and counted in ``stats``
    (:func:`.running_totals.record_decisions`; the caller saves it). Items decided alone may be sampled
    for the audit (:mod:`.audit_sampling`, outside the learner's random generator).

    While the stop rule holds (``project.asking_stopped``, docs/estimates.md "Stop rule") the
    learner decides as always but nobody is asked: an item it would have queried is decided alone,
    logged with query probability 0 (nobody could be asked: the importance-weighted estimates
    leave such items out) and may be sampled for the audit like any other.

    Does nothing while the project is paused. The caller saves ``lk`` afterwards.
    """
    project = lk.project
    if project.stream_state != Project.StreamState.RUNNING:
        return 0
    places = room(project) if free is None else free
    taken = 0  # places this call's queried items took
    decided = 0
    learner, n = lk.learner, lk.learner.n_features
    ctl = label_budget.controller(project, lk.state, learner)
    while taken < places and (limit is None or decided < limit):
        size = batch_size(lk.state, places - taken)
        if limit is not None:
            size = min(size, limit - decided)
        # the next ``size`` items by seq, the first undecided one being seq = n_decided (items are
        # decided in seq order and seq runs 0, 1, 2, ...): a bounded range of the (project, seq)
        # index, whatever the plan (with "seq >= n_decided" alone and stale statistics
        # the planner read the whole backlog and sorted it, on every batch)
        first = lk.state.n_decided
        batch = list(Item.objects.filter(project=project, seq__gte=first, seq__lt=first + size).pending()
                     .order_by("seq").values_list("id", "seq", "vector", "gold", "n_opinions"))
        if not batch:
            break
        rows = []
        now = timezone.now()
        queried = 0
        asked: list[dict] = []
        counted = []
        audits = []
        for pk, seq, vector, gold, opinions in batch:
            idx, vals = decode_row(vector, n)  # no sparse matrix per item
            capped = ctl is not None and ctl.capped()  # the hard cap holds this item (q 0)
            d = learner.decide_row(idx, vals, lk.rng, ctl)
            audit_prob, k, overlap_prob = None, 1, None
            ask, q = d.queried, d.query_prob
            if project.asking_stopped:
                ask, q = False, 0.0
            if opinions:
                # labelled before it was decided (ingest/opinions.py: a Label Studio label): its
                # decision is logged, nobody is asked (q 0: the importance-weighted estimates
                # leave it out, as while asking is stopped), and the pipeline teaches its label
                status, ask, q = Item.Status.LABELLED, False, 0.0
            elif ask:
                status = Item.Status.QUEUED
                taken += 1
                queried += 1
                asked.append({"id": pk, "seq": seq, "query_prob": q})
                k, overlap_prob = draw_overlap(project, seq)
            else:
                status = Item.Status.AUTO
                learner.observe_row(idx, vals)
                audit_prob, chosen = sampled(project, seq)
                if chosen:
                    audits.append((pk, audit_prob))
            rows.append((pk, status, d.prediction, d.score, q, ask, lk.state.version, now,
                         audit_prob, k, overlap_prob))
            counted.append((gold, d.prediction, ask, unasked_cause(
                q, labelled=bool(opinions), stopped=project.asking_stopped, capped=capped)))
            if taken >= places:
                break
        update_rows(Item, DECISION_FIELDS, rows)
        if asked:  # one event per step of decisions, in the same transaction (the outbox)
            outbox.emit(project.pk, WebhookEvent.ITEM_QUERIED, {
                "project": project.pk, "model_version": lk.state.version, "items": asked})
        open_audits(project, audits)
        record_decisions(stats, lk.state.n_decided, lk.state.n_queried, counted)
        decided += len(rows)
        lk.state.n_decided += len(rows)
        lk.state.n_queried += queried
    lk.state.budget_state = ctl.get_state() if ctl is not None else None
    after_commit(Item, decided)  # a large backlog decided changes every row's queue status
    return decided
