"""The one place that sends Celery tasks, each after the current transaction commits, and the
names the tasks are registered under (:mod:`.tasks` imports them from here, never the reverse).

Views, the API, the admin, management commands and the tasks themselves call these once the
domain functions (:mod:`annotator.labelling.annotation`, :mod:`annotator.labelling.ingest`,
...) have said what changed; the domain never sends tasks itself (layers: models <- domain <-
worker/web/api). Outside a transaction the send happens at once. A broker that cannot be
reached is logged, not raised: the periodic sweep (:func:`.tasks.sweep`) finds the work again.
Tasks are sent by name (``send_task``), which applies the same routes (``CELERY_TASK_ROUTES``)
as calling the task object would.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable

from celery import current_app, group
from django.db import transaction

from annotator.labelling.engine import queue_counts
from annotator.labelling.models import Project

log = logging.getLogger(__name__)

# The tasks' registered names: unchanged since the app had one flat module (``tasks.py``), so
# that messages already in a broker are still understood by new workers; ``settings.py`` routes
# and schedules them by the same strings (it is read before the app can be imported).
_PREFIX = "annotator.labelling.tasks."
APPLY_LABELS = _PREFIX + "apply_labels"
ADVANCE_STREAM = _PREFIX + "advance_stream"
IMPORT_UPLOAD = _PREFIX + "import_upload"
IMPORT_CHUNK = _PREFIX + "import_chunk"
COMPUTE_COST_VIEW = _PREFIX + "compute_cost_view"
SWEEP = _PREFIX + "sweep"
HEARTBEAT = _PREFIX + "heartbeat"
RUN_PLANNER = _PREFIX + "run_planner"
RUN_REFIT = _PREFIX + "run_refit"
DELIVER_WEBHOOKS = _PREFIX + "deliver_webhooks"


def send(task_name: str, *args: int, countdown: float | None = None) -> None:
    """Send the task named ``task_name`` with ``args`` now (to run after ``countdown`` seconds
    when given); if the broker is unreachable, log it (the sweep catches up)."""
    try:
        current_app.send_task(task_name, args=args, countdown=countdown)
    except Exception:  # any broker/connection error: the work is found again by the sweep
        log.exception("could not send %s%r; the periodic sweep will do it", task_name, args)


def after_commit(task_name: str, *args: int) -> None:
    """:func:`send` once the current transaction commits (at once outside a transaction)."""
    transaction.on_commit(lambda: send(task_name, *args))


def labels_changed(project_id: int) -> None:
    """A primary label was stored or undone: apply the labels (which also tops the queue up)."""
    after_commit(APPLY_LABELS, project_id)


def items_changed(project_id: int) -> None:
    """Items arrived, the project restarted or its learner changed: decide pending items."""
    after_commit(ADVANCE_STREAM, project_id)


#: least time between two requests, by one import, to decide its new items
DECIDE_NOTICE_SECONDS = 1.0


def items_arriving(project_id: int | None) -> Callable[[], None]:
    """A callable for an import to call after each committed chunk: :func:`items_changed` at most
    once per :data:`DECIDE_NOTICE_SECONDS`, however small the chunks (None: a missing project,
    nothing is sent)."""
    last = [-DECIDE_NOTICE_SECONDS]

    def notice() -> None:
        if project_id is not None and time.monotonic() - last[0] >= DECIDE_NOTICE_SECONDS:
            last[0] = time.monotonic()
            items_changed(project_id)
    return notice


def top_up_if_low(project: Project) -> None:
    """Ask a worker to decide more items when the queue runs low (:func:`.queue_counts.runs_low`)."""
    if queue_counts.runs_low(project):
        items_changed(project.pk)


def import_upload(job_id: int) -> None:
    """An upload (:class:`.models.ImportJob`) was stored: import it."""
    after_commit(IMPORT_UPLOAD, job_id)


def import_chunks(job_id: int, indexes: list[int]) -> None:
    """Chunks of an import were staged (:func:`..ingest.fanout.stage`): featurize them, one task
    each, as one Celery ``group`` spread over the heavy queue's workers (at once: called after
    the staging committed); a broker error is logged, the sweep restarts the silent job."""
    try:
        group(current_app.signature(IMPORT_CHUNK, args=(job_id, index)) for index in indexes).apply_async()
    except Exception:  # any broker/connection error: the sweep restarts the job, which sends them again
        log.exception("could not send the chunks %s of import %s; the sweep will", indexes, job_id)


def cost_view_stale(project_id: int) -> None:
    """The dashboard's cost-per-accuracy view is missing or stale: a worker computes it."""
    after_commit(COMPUTE_COST_VIEW, project_id)


def run_planner(run_id: int) -> None:
    """A delta-planner run (:class:`.models.PlannerRun`) was created: replay its candidates."""
    after_commit(RUN_PLANNER, run_id)


def run_refit(run_id: int) -> None:
    """A refit job (:class:`.models.RefitRun`) was created: fit it on every label."""
    after_commit(RUN_REFIT, run_id)


def webhooks_due(project_id: int, after: float | None = None) -> None:
    """The project has webhook deliveries waiting (:mod:`..webhooks.outbox`): a worker posts them,
    at once or ``after`` seconds (the next retry)."""
    transaction.on_commit(lambda: send(DELIVER_WEBHOOKS, project_id, countdown=after))
