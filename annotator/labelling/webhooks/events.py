"""The events the worker notices after its runs, each emitted through :func:`.outbox.emit`:
a new model version, an import that ended, a label budget reached (docs/webhooks.md)."""

from __future__ import annotations

from datetime import timedelta
from math import ceil

from django.utils import timezone

from annotator.labelling.engine import label_budget
from annotator.labelling.models import (
    ImportJob,
    Label,
    Project,
    WebhookDelivery,
    WebhookEvent,
)

from . import outbox


def model_version(project_id: int, version: int, applied: int) -> int:
    """Labels were applied: the model's new version (``labels_applied`` since the last one)."""
    return outbox.emit(project_id, WebhookEvent.MODEL_VERSION,
                       {"project": project_id, "version": version, "labels_applied": applied})


def import_finished(job: ImportJob) -> int:
    """An import ended (done or failed)."""
    return outbox.emit(job.project_id, WebhookEvent.IMPORT_FINISHED, {
        "project": job.project_id, "import": job.pk, "filename": job.filename, "status": job.status,
        "items": job.done, "error": job.error or None})


def budget_reached(project_id: int) -> int:
    """Once the project's label budget is spent, tell the subscribers, once per budget period.

    ``budget_per_day``: the primary labels of the last 24 hours reach it (again at most once a
    day). ``budget_ratio``: the labels given reach the ratio times the stream's expected length
    (:func:`.label_budget.expected_length`), once per expected length. Nothing without a budget
    or without a subscriber (checked first: one small read)."""
    if not outbox.subscribers(project_id, WebhookEvent.BUDGET_REACHED):
        return 0
    project = Project.objects.filter(pk=project_id).first()
    if project is None:
        return 0
    sent = WebhookDelivery.objects.filter(project_id=project_id, event=WebhookEvent.BUDGET_REACHED)
    labels = Label.objects.filter(project_id=project_id, primary=True, undone_at__isnull=True)
    if project.budget_per_day:
        since = timezone.now() - timedelta(days=1)
        given = labels.filter(created__gte=since).count()
        if given < project.budget_per_day or sent.filter(created__gte=since).exists():
            return 0
        return outbox.emit(project_id, WebhookEvent.BUDGET_REACHED, {
            "project": project_id, "budget_per_day": project.budget_per_day, "labels_last_24h": given})
    if project.budget_ratio is not None:
        length = label_budget.expected_length(project)
        allowed = ceil(float(project.budget_ratio) * length)
        given = labels.count()
        if given < allowed or sent.filter(payload__data__expected_items=length).exists():
            return 0
        return outbox.emit(project_id, WebhookEvent.BUDGET_REACHED, {
            "project": project_id, "budget_ratio": float(project.budget_ratio), "expected_items": length,
            "labels": given, "labels_allowed": allowed})
    return 0
