"""Celery tasks. All are idempotent and safe to run in any number of workers at once.

``apply_labels`` and ``advance_stream`` run the same pipeline
(:func:`annotator.labelling.engine.pipeline.update_project`: apply waiting labels, then decide
items until the look-ahead is full); two names so that the logs say why a run was asked for.
Labels always go in before new decisions, so a decision uses every label given so far. Tasks
are sent only through :mod:`.send`, which also holds their names.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from functools import partial
from typing import Any, TypeVar

from celery import shared_task
from django.db.models import OuterRef, Q

from annotator.labelling.engine import jobs, pipeline
from annotator.labelling.ingest import fanout
from annotator.labelling.models import (
    Consensus,
    ImportJob,
    Label,
    PlannerRun,
    Project,
    RefitRun,
    WorkerHeartbeat,
    pending_exists,
)
from annotator.labelling.projects import retention
from annotator.labelling.reporting import cost_view, planner, refit_runs, stop_rule
from annotator.labelling.teams import suspects
from annotator.labelling.webhooks import delivery, events, outbox

from . import send

log = logging.getLogger(__name__)
T = TypeVar("T")


def _isolated(step: str, fn: Callable[[], T]) -> T | None:
    """``fn()``, one ``step`` of a task (its text names the project id, or the kind of job); an
    exception is logged with the step and swallowed, so the projects and steps after it still run
    (docs/operations.md, "A project whose pipeline fails"). None then."""
    try:
        return fn()
    except Exception:  # whatever it is, the rest of the sweep goes on
        log.exception("%s failed; the other projects and steps go on", step)
        return None


def _run_pipeline(project_id: int) -> None:
    """The stop rule, the pipeline, then the webhook events of the run (a new model version, the
    budget reached) and a delivery task when the project's outbox has rows due (the labels' and
    the queried items' events, written where they happened). A failing step is logged (the
    pipeline's failure also recorded for the dashboard, :func:`.pipeline.update_project_recorded`)
    and the next steps still run."""
    _isolated(f"the stop rule of project {project_id}", partial(stop_rule.refresh, project_id))
    outcome = pipeline.update_project_recorded(project_id)
    if outcome is not None and outcome.applied:
        events.model_version(project_id, outcome.version, outcome.applied)
        events.budget_reached(project_id)
    if outbox.due(project_id):
        send.webhooks_due(project_id)


@shared_task(name=send.APPLY_LABELS)
def apply_labels(project_id: int) -> None:
    """A label was saved: apply every waiting label, then top up the queue (the stop rule first;
    :func:`_run_pipeline`)."""
    _run_pipeline(project_id)


@shared_task(name=send.ADVANCE_STREAM)
def advance_stream(project_id: int) -> None:
    """The queue runs low or items arrived: decide pending items (after applying labels; the stop
    rule first; :func:`_run_pipeline`)."""
    _run_pipeline(project_id)


@shared_task(name=send.IMPORT_UPLOAD)
def import_upload(job_id: int) -> None:
    """Import an uploaded file (an :class:`~annotator.labelling.models.ImportJob`), fanned out:
    validate it and stage its records in chunks (:func:`.fanout.stage`; the small first one is
    inserted here at once), each other featurized and inserted by an :func:`import_chunk` task on
    any heavy-queue worker. Its items are decided by the label queue's workers, never here. An
    import that ended here (failed, or small enough to be done) has its webhook event delivered."""
    job = fanout.stage(job_id, send.import_chunks, send.items_changed)
    _deliver_if_ended(job)


@shared_task(name=send.IMPORT_CHUNK)
def import_chunk(job_id: int, index: int) -> None:
    """Featurize one staged chunk of an import and insert the chunks now next in the file
    (:func:`.fanout.run_chunk`); inserted items ask for a stream advance (a finished import's
    last chunk too, so it is decided whatever notice came before)."""
    fanout.run_chunk(job_id, index, send.items_changed)
    _deliver_if_ended(ImportJob.objects.filter(pk=job_id).first())


def _deliver_if_ended(job: ImportJob | None) -> None:
    """Send the webhook deliveries of an import that ended (its ``import.finished`` event is
    written with the job's outcome, :func:`.ingest._close`); a repeat finds nothing due."""
    if job is not None and job.status in (job.Status.DONE, job.Status.FAILED):
        send.webhooks_due(job.project_id)


@shared_task(name=send.DELIVER_WEBHOOKS)
def deliver_webhooks(project_id: int) -> None:
    """Post the project's due webhook deliveries (:func:`.delivery.deliver_due`); when a retry
    waits, send this task again for its time (the sweep also finds it)."""
    wait = delivery.deliver_due(project_id)
    if wait is not None:
        send.webhooks_due(project_id, after=max(wait, 0.1))


@shared_task(name=send.COMPUTE_COST_VIEW)
def compute_cost_view(project_id: int) -> None:
    """The dashboard found the project's cost-per-accuracy view missing or stale: replay the
    baseline and store the view (:func:`.cost_view.refresh`; nothing when it is current)."""
    cost_view.refresh(project_id)


def projects_needing_work() -> list[int]:
    """Projects with unapplied labels or opinions waiting for their consensus, or running
    projects with pending items."""
    unapplied = Label.objects.filter(primary=True, applied_version__isnull=True).values("project_id")
    due = Consensus.objects.filter(due=True).values("project_id")
    pending = pending_exists(OuterRef("pk")) & Q(stream_state=Project.StreamState.RUNNING)
    return list(Project.objects.filter(Q(pk__in=unapplied) | Q(pk__in=due) | pending)
                .order_by("pk").values_list("pk", flat=True))


@shared_task(name=send.SWEEP)
def sweep() -> None:
    """Periodic safety net: run the pipeline for every project that has work waiting.

    Catches labels whose ``apply_labels`` message was never sent (broker down at the time)
    or lost with a killed worker, queues that ran dry while nobody asked, and imports,
    planner runs and refit jobs whose worker died or whose message was lost (:func:`.jobs.restart_stale`).
    Also drops the content of items past their project's retention window (:mod:`.retention`)
    and re-checks the stop rule of the projects that use it (:func:`.stop_rule.refresh`: an audit
    decided since may have contradicted the target) and sends the labels above their project's
    ``suspect_threshold`` to the reviewers (:func:`.suspects.auto_send`), and sends the delivery
    task of every project with webhook deliveries due (a retry, or a lost message).

    Each project's work and each step runs on its own (:func:`_isolated`): a project whose
    pipeline, stop rule, suspects or retention fails is logged with its id (a failed pipeline
    also recorded for its dashboard, :func:`.pipeline.update_project_recorded`) and every other
    project and every later step still runs.
    """
    for project_id in Project.objects.filter(stop_at_target=True).values_list("pk", flat=True):
        _isolated(f"the stop rule of project {project_id}", partial(stop_rule.refresh, project_id))
    for project in Project.objects.filter(suspect_threshold__isnull=False):
        _isolated(f"the suspects of project {project.pk}", partial(suspects.auto_send, project))
    for project_id in _isolated("the search for projects with work", projects_needing_work) or []:
        pipeline.update_project_recorded(project_id)
    for project in _isolated("the search for projects with retention", retention.retained_projects) or []:
        _isolated(f"the retention sweep of project {project.pk}",
                  partial(retention.drop_old_content, project))
    for job_id in _isolated("the restart of stale imports", partial(jobs.restart_stale, ImportJob)) or []:
        send.import_upload(job_id)
    for run_id in _isolated("the restart of stale planner runs",
                            partial(jobs.restart_stale, PlannerRun)) or []:
        send.run_planner(run_id)
    for run_id in _isolated("the restart of stale refit jobs", partial(jobs.restart_stale, RefitRun)) or []:
        send.run_refit(run_id)
    for project_id in _isolated("the search for webhook deliveries due", outbox.projects_due) or []:
        send.webhooks_due(project_id)


@shared_task(name=send.HEARTBEAT, bind=True)
def heartbeat(self: Any) -> None:
    """Periodic, sent to each queue: the worker that takes it records that it is alive and serves
    that queue (the dashboard shows the age per queue, :func:`.worker_health.queue_health`)."""
    from django.conf import settings
    from django.utils import timezone

    queue = (self.request.delivery_info or {}).get("routing_key") or settings.CELERY_TASK_DEFAULT_QUEUE
    WorkerHeartbeat.objects.update_or_create(hostname=self.request.hostname or "unknown", queue=queue,
                                             defaults={"last_seen": timezone.now()})


@shared_task(name=send.RUN_PLANNER)
def run_planner(run_id: int) -> None:
    """Replay the candidates of a delta-planner run (progress saved as it goes)."""
    planner.run(run_id)


@shared_task(name=send.RUN_REFIT)
def run_refit(run_id: int) -> None:
    """Fit a refit job's batch refit on every label of its project and store it
    (:func:`.refit_runs.run`; progress saved as it goes)."""
    refit_runs.run(run_id)
