"""The outbox: an event becomes one :class:`~annotator.labelling.models.WebhookDelivery` row per
endpoint that subscribes to it, written in the caller's transaction (so the event and the thing
it tells about commit together, or neither), delivered later by a worker (:mod:`.delivery`).
Cheap enough for the label path: one indexed read of the project's endpoints, and an insert
only when one subscribes.

:func:`labels_created` is THE ``label.created`` event (docs/webhooks.md, "Events"): every path
that stores a person's label calls it with the labels it stored (the queue's label and a changed
label, :mod:`..annotation.actions`; a label from Label Studio, :mod:`..annotation.label_studio`;
a reviewer's or an admin's decision that stores a label, :mod:`..teams.consensus`; the labels an
import brings, :mod:`..ingest.opinions`)."""

from __future__ import annotations

import uuid
from collections.abc import Iterable
from typing import Any

from django.utils import timezone

from annotator.labelling.models import Label, WebhookDelivery, WebhookEndpoint, WebhookEvent

#: outbox rows one insert writes (an import's labels may make many)
INSERT_BATCH = 1000


def subscribers(project_id: int, event: str) -> list[int]:
    """Ids of the project's endpoints that receive ``event``."""
    rows = WebhookEndpoint.objects.filter(project_id=project_id).values_list("pk", "events")
    return [pk for pk, events in rows if event in events]


def emit(project_id: int, event: str, data: dict[str, Any]) -> int:
    """Queue ``event`` with ``data`` for every subscribed endpoint; the number of rows written.
    The body each receives is ``{"type": event, "timestamp": ..., "data": data}``."""
    return emit_many(project_id, event, [data])


def emit_many(project_id: int, event: str, datas: Iterable[dict[str, Any]]) -> int:
    """:func:`emit` for several events of one kind at once (one read of the subscribers; ``datas``
    is not read when nobody subscribes); the number of rows written."""
    targets = subscribers(project_id, event)
    if not targets:
        return 0
    now = timezone.now()
    rows = [WebhookDelivery(endpoint_id=pk, project_id=project_id, msg_id=f"msg_{uuid.uuid4().hex}",
                            event=event, payload={"type": event, "timestamp": now.isoformat(), "data": data},
                            created=now, next_attempt=now)
            for data in datas for pk in targets]
    WebhookDelivery.objects.bulk_create(rows, batch_size=INSERT_BATCH)
    return len(rows)


def label_data(label: Label) -> dict[str, Any]:
    """The ``data`` of ``label``'s ``label.created`` event (docs/webhooks.md): ``project``,
    ``label``, ``item``, ``class``, ``annotator`` (user name; None once the account is deleted),
    ``primary``, ``seconds`` (None when not timed), ``created``."""
    annotator = label.annotator.get_username() if label.annotator is not None else None
    return {"project": label.project_id, "label": label.pk, "item": label.item_id, "class": label.value,
            "annotator": annotator, "primary": label.primary, "seconds": label.seconds,
            "created": label.created.isoformat()}


def labels_created(project_id: int, labels: Iterable[Label]) -> int:
    """THE ``label.created`` event, one per label in ``labels`` (module docstring); the callers
    pass every person's label they stored and no honeypot answer (docs/webhooks.md: those are
    left out). Call in the transaction that stored the labels, after their last change (the
    event tells ``primary`` as it is then)."""
    return emit_many(project_id, WebhookEvent.LABEL_CREATED, (label_data(label) for label in labels))


def due(project_id: int) -> bool:
    """The project has a delivery waiting whose time has come."""
    return WebhookDelivery.objects.filter(project_id=project_id, status=WebhookDelivery.Status.PENDING,
                                          next_attempt__lte=timezone.now()).exists()


def projects_due() -> list[int]:
    """Projects with a delivery whose time has come (the sweep's safety net)."""
    return sorted(set(WebhookDelivery.objects.filter(status=WebhookDelivery.Status.PENDING,
                                                     next_attempt__lte=timezone.now())
                      .values_list("project_id", flat=True)))
