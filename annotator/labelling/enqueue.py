"""The one place that sends Celery tasks, each after the current transaction commits.

Views, the API, the admin and management commands call these once the domain functions
(:mod:`.annotation`, :mod:`.ingest`, ...) have said what changed; the domain never sends
tasks itself (layers: models <- domain <- tasks/views). Outside a transaction the send
happens at once. A broker that cannot be reached is logged, not raised: the periodic sweep
(:func:`.tasks.sweep`) finds the work again.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from typing import Any

from django.db import transaction

from . import queue, tasks
from .models import Project

log = logging.getLogger(__name__)


def send(task: Any, *args: Any) -> None:
    """Send ``task`` with ``args`` now; if the broker is unreachable, log it (the sweep catches up)."""
    try:
        task.delay(*args)
    except Exception:  # any broker/connection error: the work is found again by the sweep
        log.exception("could not send %s%r; the periodic sweep will do it", task.name, args)


def after_commit(task: Any, *args: Any) -> None:
    """:func:`send` once the current transaction commits (at once outside a transaction)."""
    transaction.on_commit(lambda: send(task, *args))


def labels_changed(project_id: int) -> None:
    """A primary label was stored or undone: apply the labels (which also tops the queue up)."""
    after_commit(tasks.apply_labels, project_id)


def items_changed(project_id: int) -> None:
    """Items arrived, the project restarted or its learner changed: decide pending items."""
    after_commit(tasks.advance_stream, project_id)


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
    """Ask a worker to decide more items when the queue runs low (:func:`.queue.runs_low`)."""
    if queue.runs_low(project):
        items_changed(project.pk)


def import_upload(job_id: int) -> None:
    """An upload (:class:`.models.ImportJob`) was stored: import it."""
    after_commit(tasks.import_upload, job_id)


def cost_view_stale(project_id: int) -> None:
    """The dashboard's cost-per-accuracy view is missing or stale: a worker computes it."""
    after_commit(tasks.compute_cost_view, project_id)


def run_planner(run_id: int) -> None:
    """A delta-planner run (:class:`.models.PlannerRun`) was created: replay its candidates."""
    after_commit(tasks.run_planner, run_id)
