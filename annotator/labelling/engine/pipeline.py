"""The label pipeline: bring a project's learner up to date, then top up its queue.

:func:`update_project` is what the Celery tasks run. In one transaction per chunk of
decisions, holding the project's learner-state row lock (``select_for_update``):

0. aggregate the overlapped items whose opinions are all in (:func:`.consensus.settle`): their
   consensus becomes their primary label, and one that overturns a label the learner had asks
   for the rebuild of step 1 (an item without a majority waits for the reviewers: its
   disagreement review opens in the same transaction, :func:`.consensus.sync_reviews`);
1. follow the project's configuration: a changed ``delta``/``p``/``query`` is set on the
   learner (``set_params``); a changed algorithm or other parameter rebuilds the learner by
   replaying the applied labels in the order they were applied;
2. apply every unapplied primary label in label order (``learn``), each one making a new
   model version (``version + 1``) recorded on the label as ``applied_version`` (a label whose
   item lost its vector is skipped, :func:`apply_labels`);
3. run the stream engine (:func:`.stream.advance`) with the fresh model;
4. save learner, RNG, counters and the log's aggregates (:mod:`.running_totals`).

Idempotent: a label with an ``applied_version`` is never applied again, and the lock makes
concurrent runs (two workers, a task delivered twice) take turns, the second one finding
nothing left to apply.
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass

from django.conf import settings
from django.db import connection, transaction
from django.utils import timezone

import learners
from annotator.labelling.models import Label, LearnerState, StreamStats
from annotator.labelling.teams.consensus import settle

from . import running_totals, stream
from .bulk_writes import save_fields
from .faults import hold_point
from .learner_state import Locked, locked
from .stored_vectors import decode

log = logging.getLogger(__name__)

#: Most decisions per transaction.
DECIDE_CHUNK = 10_000
#: Seconds a chunk's decisions should take: each chunk has fixed costs (saving the learner, 2 MB
#: for hashed text features, took 0.25 s on a loaded machine), which longer chunks share out.
CHUNK_SECONDS = 1.0
#: The first step's decisions before a look for a waiting label (a label stops the chunk), the
#: most decisions in a transaction that applied labels and the first chunk's size: a label's
#: top-up (the queue lost one item) needs about 1 / query ratio decisions.
AFTER_LABELS = 100
#: Seconds of decisions between two looks for a waiting label once a chunk is under way.
STEP_SECONDS = 0.2
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
    """Teach ``learner`` every applied primary label of the project, in applied order, but the
    ones whose item has no vector (:func:`apply_labels` skipped them; docs/operations.md,
    "Retention")."""
    labels = (Label.objects.filter(project_id=lk.state.project_id, primary=True,
                                   applied_version__isnull=False)
              .order_by("applied_version").values_list("pk", "value", "item__vector"))
    for pk, value, vector in labels.iterator(chunk_size=500):
        if vector is None:
            log.warning("project %s: label %s not replayed: its item's vector was dropped by the "
                        "retention sweep", lk.state.project_id, pk)
            continue
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


def apply_labels(lk: Locked, counts: StreamStats) -> int:
    """Apply the unapplied primary labels in ``id`` order, counting them in ``counts``; returns how many.

    A label whose item has no vector (the retention sweep dropped it; a database written before
    the sweep kept labelled items, docs/operations.md "Retention") cannot be taught: it is
    applied without a new model version (``applied_version`` = the version then, which does not
    include it), logged and counted in ``LearnerState.untaught`` (the dashboard shows it), so it
    never holds back the labels after it."""
    labels = list(Label.objects.filter(project_id=lk.state.project_id, primary=True,
                                       applied_version__isnull=True)
                  .order_by("id").select_related("item")
                  .only("id", "value", "seconds", "drawn", "item__vector", "item__prediction",
                        "item__queried"))
    for label in labels:
        if label.item.vector is None:
            lk.state.untaught += 1
            log.warning("project %s: label %s not taught: its item %s's vector was dropped by the "
                        "retention sweep", lk.state.project_id, label.pk, label.item_id)
        else:
            lk.learner.learn(decode(label.item.vector, lk.learner.n_features), label.value)
            lk.state.version += 1
        label.applied_version = lk.state.version
        running_totals.record_applied(counts, label.value, label.item.prediction, label.seconds,
                                      label.drawn, queried=bool(label.item.queried))
    save_fields(labels, ["applied_version"])
    return len(labels)


def update_project(project_id: int) -> Outcome | None:
    """Steps 0-4 of the module docstring; None if the project is gone.

    A backlog is decided in chunks, one transaction each, sized to decide for about
    :data:`CHUNK_SECONDS` at the decision rate of the chunk before (between :data:`AFTER_LABELS`
    and :data:`DECIDE_CHUNK` items); a chunk stops early when a label waits (:func:`_decide`) and
    applies it before its commit, so the new model version commits after at most
    :data:`AFTER_LABELS` more decisions rather than after a whole chunk (label -> new
    model version within a second while a backlog is decided).
    """
    total: Outcome | None = None
    limit = AFTER_LABELS
    while True:
        ran = _run_once(project_id, limit)
        if ran is None:
            return total
        step, seconds, more = ran
        total = step if total is None else Outcome(
            total.applied + step.applied, total.decided + step.decided,
            total.reconfigured or step.reconfigured, step.version)
        if not more:
            return total  # the look-ahead is full or nothing is pending
        # the rate of the decisions alone: a chunk's fixed costs (the learner's save) must not
        # shrink the next chunk, which would then cost more of them per item
        rate = step.decided / max(seconds, 1e-3)
        limit = max(AFTER_LABELS, min(DECIDE_CHUNK, int(rate * CHUNK_SECONDS)))


def update_project_recorded(project_id: int) -> Outcome | None:
    """:func:`update_project` as the worker's tasks run it: a failure is logged with the project
    id and its traceback and recorded on the project's learner state (``pipeline_error``,
    ``pipeline_failed_at``: the dashboard shows it to the project's admins), not raised, so one
    failing project stops neither another project's run nor a later step of the sweep; a run that
    succeeds clears the record. None after a failure, as for a project that is gone
    (docs/operations.md, "A project whose pipeline fails")."""
    try:
        outcome = update_project(project_id)
    except Exception as exc:  # whatever it is, the other projects' work goes on
        log.exception("project %s: the label pipeline failed", project_id)
        _record_failure(project_id, f"{type(exc).__name__}: {exc}")
        return None
    LearnerState.objects.filter(project_id=project_id, pipeline_failed_at__isnull=False).update(
        pipeline_error="", pipeline_failed_at=None)
    return outcome


def _record_failure(project_id: int, error: str) -> None:
    """Write ``error`` (cut to the field's length) and the time on the project's learner state, in
    a transaction of its own after the failed run rolled back; a failure to write it is logged."""
    size = LearnerState._meta.get_field("pipeline_error").max_length or 500
    try:
        LearnerState.objects.filter(project_id=project_id).update(
            pipeline_error=error[:size], pipeline_failed_at=timezone.now())
    except Exception:  # the database itself may be what failed
        log.exception("project %s: could not record the pipeline's failure", project_id)


def async_commit() -> None:
    """PostgreSQL, ``DECIDE_ASYNC_COMMIT`` on: the current (outermost) transaction's commit returns before
    its WAL is on disk (``SET LOCAL synchronous_commit = off``; a chunk's commit waited for an
    fsync, 10-40 ms on the loaded machine). A crash can lose the last such commits
    (at most 3 x ``wal_writer_delay``), each whole: its decisions together with the learner
    state, RNG and counters saved in the same transaction, so the next run decides the same
    items again from the state before them; any transaction that saw them and committed
    synchronously (a label on a queued item) flushed them first. docs/operations.md."""
    if settings.DECIDE_ASYNC_COMMIT and connection.vendor == "postgresql":
        with connection.cursor() as cursor:
            cursor.execute("SET LOCAL synchronous_commit = off")


def _run_once(project_id: int, limit: int) -> tuple[Outcome, float, bool] | None:
    """Steps 0-4 in one transaction, deciding at most ``limit`` items (:data:`AFTER_LABELS`
    when it applied labels); the outcome, the seconds step 3 took and whether more may be left
    to decide. Labels given while it decided (:func:`_decide` stops for them) are applied before
    the commit, so their model version commits with the chunk."""
    outermost = not connection.in_atomic_block
    with transaction.atomic():
        if outermost:  # SET LOCAL would last to the end of a caller's transaction
            async_commit()
        try:
            lk = locked(project_id)
        except LearnerState.DoesNotExist:
            log.warning("project %s has no learner state (deleted?); nothing to do", project_id)
            return None
        counts = running_totals.load(project_id)
        settle(lk, counts)
        reconfigured = follow_config(lk)
        applied = apply_labels(lk, counts)
        if applied:
            hold_point("APPLY")
        started = time.perf_counter()
        decided, more = _decide(lk, counts, min(limit, AFTER_LABELS) if applied else limit)
        seconds = time.perf_counter() - started
        applied += apply_labels(lk, counts)  # the labels it stopped for (none otherwise)
        if reconfigured or applied or decided:
            running_totals.advance_frontier(counts, lk.state.n_decided)
            counts.save()
            lk.save()
        return Outcome(applied, decided, reconfigured, lk.state.version), seconds, more


def _decide(lk: Locked, counts: StreamStats, limit: int) -> tuple[int, bool]:
    """Step 3: :func:`.stream.advance` at most ``limit`` items in steps, stopping early when a label
    waits to be applied (the caller applies it and commits). The first step is
    :data:`AFTER_LABELS` decisions, the next ones are sized to take :data:`STEP_SECONDS` at the
    rate of the step before (at most :data:`.stream.BATCH`, one read and one write each), so a
    label given during a chunk waits for about that long and one commit, and a long backlog
    costs few statements per decision (100-decision steps cost six round trips per
    100 decisions, most of the decide time). The look-ahead's room is counted once per chunk
    (leases and labels given meanwhile are seen by the next chunk, within a second). Returns the
    items decided and whether more may be left (``limit`` reached or a label)."""
    decided, step = 0, AFTER_LABELS
    free = stream.room(lk.project)  # counted once per chunk, then less what the steps queued
    while decided < limit:
        step = min(step, limit - decided)
        started, queried = time.perf_counter(), lk.state.n_queried
        done = stream.advance(lk, counts, step, free)
        free -= lk.state.n_queried - queried
        decided += done
        if done < step:
            return decided, False  # the look-ahead is full or nothing is pending
        if Label.objects.filter(project_id=lk.state.project_id, primary=True,
                                applied_version__isnull=True).exists():
            return decided, True
        rate = done / max(time.perf_counter() - started, 1e-3)
        step = max(AFTER_LABELS, min(stream.BATCH, int(rate * STEP_SECONDS)))
    return decided, True
