"""A project's webhook endpoints: register, rotate the secret, delete, describe (docs/webhooks.md).

The secret is shown once: :func:`register` and :func:`rotate` return it, nothing reads it back
out (:func:`describe` leaves it out)."""

from __future__ import annotations

import base64
import secrets
from typing import Any

from django.db.models import QuerySet

from annotator.labelling.models import Project, WebhookDelivery, WebhookEndpoint, WebhookEvent

from . import addresses

#: endpoints one project may have
MAX_ENDPOINTS = 20
#: delivery log rows :func:`describe` gives per endpoint
LOG_ROWS = 20
EVENTS = [e.value for e in WebhookEvent]


def new_secret() -> str:
    """A Standard Webhooks secret: ``whsec_`` and the base64 of 24 random bytes."""
    return "whsec_" + base64.b64encode(secrets.token_bytes(24)).decode()


def checked_events(events: Any) -> list[str]:
    """``events`` as a sorted list of known event names (ValueError naming the unknown one)."""
    if isinstance(events, str):
        events = [e.strip() for e in events.split(",") if e.strip()]
    if not isinstance(events, list | tuple) or not events:
        raise ValueError(f"choose at least one event of: {', '.join(EVENTS)}")
    for event in events:
        if event not in EVENTS:
            raise ValueError(f"unknown event {str(event)[:50]!r}; the events are: {', '.join(EVENTS)}")
    return sorted(set(events))


def register(project: Project, url: Any, events: Any, user: Any = None) -> tuple[WebhookEndpoint, str]:
    """A new endpoint of ``project`` for ``url`` and ``events`` and its secret (shown once).
    ValueError (:class:`.addresses.ForbiddenAddressError` for the URL) with the reason; nothing
    is stored then."""
    chosen = checked_events(events)
    addresses.check(url)
    if WebhookEndpoint.objects.filter(project=project).count() >= MAX_ENDPOINTS:
        raise ValueError(f"a project has at most {MAX_ENDPOINTS} webhooks; delete one first")
    secret = new_secret()
    endpoint = WebhookEndpoint.objects.create(project=project, url=url.strip(), events=chosen, secret=secret,
                                              created_by=user if getattr(user, "pk", None) else None)
    return endpoint, secret


def rotate(endpoint: WebhookEndpoint) -> str:
    """A new secret for ``endpoint`` (deliveries sign with it from now on), returned once."""
    endpoint.secret = new_secret()
    endpoint.save(update_fields=["secret"])
    return endpoint.secret


def of_project(project: Project) -> QuerySet[WebhookEndpoint]:
    return WebhookEndpoint.objects.filter(project=project).order_by("pk")


def log_row(d: WebhookDelivery) -> dict[str, Any]:
    """One delivery as the log shows it."""
    return {"id": d.pk, "msg_id": d.msg_id, "event": d.event, "status": d.status, "attempts": d.attempts,
            "created": d.created.isoformat(),
            "next_attempt": d.next_attempt.isoformat() if d.next_attempt else None,
            "last_status": d.last_status, "last_error": d.last_error,
            "delivered_at": d.delivered_at.isoformat() if d.delivered_at else None}


def describe(endpoint: WebhookEndpoint, log_rows: int = LOG_ROWS) -> dict[str, Any]:
    """The endpoint without its secret, with its newest deliveries (the delivery log)."""
    recent = endpoint.deliveries.order_by("-created", "-pk")[:log_rows]
    return {"id": endpoint.pk, "url": endpoint.url, "events": endpoint.events,
            "created": endpoint.created.isoformat(), "deliveries": [log_row(d) for d in recent]}
