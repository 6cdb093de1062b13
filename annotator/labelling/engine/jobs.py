"""The life cycle of background jobs that must survive a dead worker: imports
(:class:`.models.ImportJob`), delta-planner runs (:class:`.models.PlannerRun`) and refit jobs
(:class:`.models.RefitRun`).

* :func:`claim` takes a WAITING job (RUNNING, ``attempt`` + 1) under its row lock, so two
  deliveries of one task never both run it.
* :func:`beat` records progress and the time (``heartbeat``) at every step, for this attempt
  only; it says when the job was cancelled (:func:`cancel`) or taken over, and the worker stops.
* :func:`finishing` opens the transaction that writes a job's outcome; it says whether this
  attempt still holds the job. A restarted job's older attempt (a slow, not dead, worker) then
  writes nothing, so nothing is stored twice.
* :func:`restart_stale` (called by the sweep) puts back to WAITING every RUNNING job without a
  beat for ``JOB_STALE_SECONDS`` (its worker died) and returns it, with every WAITING job not
  sent for as long (its message was lost), for the caller to send again.
* :attr:`.models.BackgroundJob.shown_status`: the pages show such a job as stalled, never as
  running.

Docs: ``docs/operations.md`` (workers, queues, what survives what).
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any, TypeVar

from django.db import transaction
from django.utils import timezone

from annotator.labelling.models import ImportJob, PlannerRun, RefitRun, job_stale_cutoff

Job = TypeVar("Job", ImportJob, PlannerRun, RefitRun)
Status = ImportJob.Status  # PlannerRun and RefitRun share it


def claim(model: type[Job], pk: int) -> Job | None:
    """The job, now RUNNING under a new attempt, or None when it is not WAITING (done, failed,
    running elsewhere, or missing)."""
    with transaction.atomic():
        job = model._default_manager.select_for_update().filter(pk=pk, status=Status.WAITING).first()
        if job is None:
            return None
        job.status, job.attempt, job.heartbeat = Status.RUNNING, job.attempt + 1, timezone.now()
        job.save(update_fields=["status", "attempt", "heartbeat"])
    return job


def beat(job: Any, **fields: Any) -> bool:
    """Record ``fields`` (progress) and the time, if this attempt still holds the job; False when
    it does not (cancelled, or restarted by the sweep): the caller should stop."""
    held = type(job)._default_manager.filter(pk=job.pk, status=Status.RUNNING, attempt=job.attempt)
    return bool(held.update(heartbeat=timezone.now(), **fields))


def cancel(model: type[Job], pk: int) -> bool:
    """Mark a WAITING or RUNNING job CANCELLED (its worker stops at its next :func:`beat`);
    False when it had already ended."""
    return bool(model._default_manager.filter(pk=pk, status__in=[Status.WAITING, Status.RUNNING])
                .update(status=Status.CANCELLED))


def live(model: type[Job]) -> Any:
    """RUNNING jobs whose worker beat within ``JOB_STALE_SECONDS`` (a worker is busy with them)."""
    return model._default_manager.filter(status=Status.RUNNING, heartbeat__gte=job_stale_cutoff())


@contextmanager
def finishing(job: Any) -> Iterator[bool]:
    """A transaction with the job's row locked; yields True when this attempt still holds it
    (write the outcome inside), False when the job was restarted or finished by another one."""
    with transaction.atomic():
        held = list(type(job)._default_manager.select_for_update().filter(
            pk=job.pk, status=Status.RUNNING, attempt=job.attempt).values_list("pk", flat=True))
        yield bool(held)


def restart_stale(model: type[Job]) -> list[int]:
    """Ids of jobs to send again: RUNNING ones whose worker stopped beating (set back to WAITING)
    and WAITING ones not sent for ``JOB_STALE_SECONDS``. Each is stamped, so a job is sent again
    at most once per ``JOB_STALE_SECONDS``."""
    with transaction.atomic():
        stale = list(model._default_manager.select_for_update(skip_locked=True)
                     .filter(status__in=[Status.WAITING, Status.RUNNING], heartbeat__lt=job_stale_cutoff())
                     .values_list("pk", flat=True))
        model._default_manager.filter(pk__in=stale).update(status=Status.WAITING, heartbeat=timezone.now())
    return stale

