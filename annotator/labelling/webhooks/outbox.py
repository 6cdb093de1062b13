"""The outbox: an event becomes one :class:`~annotator.labelling.models.WebhookDelivery` row per
endpoint that subscribes to it, written in the caller's transaction (so the event and the thing
it tells about commit together, or neither), delivered later by a worker (:mod:`.delivery`).
Cheap enough for the label path: one indexed read of the project's endpoints, and an insert
only when one subscribes."""

from __future__ import annotations

import uuid
from typing import Any

from django.utils import timezone

from annotator.labelling.models import WebhookDelivery, WebhookEndpoint


def subscribers(project_id: int, event: str) -> list[int]:
    """Ids of the project's endpoints that receive ``event``."""
    rows = WebhookEndpoint.objects.filter(project_id=project_id).values_list("pk", "events")
    return [pk for pk, events in rows if event in events]


def emit(project_id: int, event: str, data: dict[str, Any]) -> int:
    """Queue ``event`` with ``data`` for every subscribed endpoint; the number of rows written.
    The body each receives is ``{"type": event, "timestamp": ..., "data": data}``."""
    targets = subscribers(project_id, event)
    if not targets:
        return 0
    now = timezone.now()
    payload = {"type": event, "timestamp": now.isoformat(), "data": data}
    WebhookDelivery.objects.bulk_create([
        WebhookDelivery(endpoint_id=pk, project_id=project_id, msg_id=f"msg_{uuid.uuid4().hex}", event=event,
                        payload=payload, created=now, next_attempt=now) for pk in targets])
    return len(targets)


def due(project_id: int) -> bool:
    """The project has a delivery waiting whose time has come."""
    return WebhookDelivery.objects.filter(project_id=project_id, status=WebhookDelivery.Status.PENDING,
                                          next_attempt__lte=timezone.now()).exists()


def projects_due() -> list[int]:
    """Projects with a delivery whose time has come (the sweep's safety net)."""
    return sorted(set(WebhookDelivery.objects.filter(status=WebhookDelivery.Status.PENDING,
                                                     next_attempt__lte=timezone.now())
                      .values_list("project_id", flat=True)))
