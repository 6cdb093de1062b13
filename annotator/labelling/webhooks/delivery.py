"""Delivering the outbox (:mod:`.outbox`): the worker's side of the webhooks.

:func:`deliver_due` claims a project's due rows (taking them for :data:`CLAIM_SECONDS`, so
that several workers never post one row at once), posts each to its endpoint and records the
answer. Each post (:func:`post`) resolves the host again and connects to the checked address
(:mod:`.addresses`), follows no redirect, waits at most ``WEBHOOK_TIMEOUT_SECONDS`` and carries
the Standard Webhooks headers (``webhook-id``, ``webhook-timestamp``, ``webhook-signature``:
HMAC-SHA256 of ``id.timestamp.body`` with the endpoint's secret, by the ``standardwebhooks``
package). A 2xx answer delivers the row; anything else is retried after the waits of
``WEBHOOK_RETRY_SECONDS`` (10 s, 1 min, 5 min, 30 min, 2 h by default), then the row fails. An
address that became forbidden fails the row at once.
"""

from __future__ import annotations

import json
import logging
from datetime import UTC, datetime, timedelta
from typing import Any

import urllib3
from django.conf import settings
from django.db import transaction
from django.utils import timezone
from standardwebhooks.webhooks import Webhook

from annotator.labelling.models import WebhookDelivery

from . import addresses

log = logging.getLogger(__name__)
#: rows one claim takes
CLAIM_ROWS = 50
#: a claimed row is not taken again before this (a worker that died with it: taken again then)
CLAIM_SECONDS = 120
#: answer bytes read (and dropped) from a receiver
MAX_ANSWER_BYTES = 64 * 1024
USER_AGENT = "active-annotator-webhooks/1"
DELIVERED = WebhookDelivery.Status.DELIVERED


class DeliveryError(Exception):
    """A post that did not get a 2xx answer (the message goes to the delivery log)."""

    def __init__(self, message: str, status: int | None = None) -> None:
        super().__init__(message)
        self.status = status


def body_of(delivery: WebhookDelivery) -> str:
    """The exact JSON text posted (and signed) for ``delivery``."""
    return json.dumps(delivery.payload, separators=(",", ":"), sort_keys=True)


def signed_headers(secret: str, msg_id: str, body: str, now: datetime | None = None) -> dict[str, str]:
    """The Standard Webhooks headers for ``body``."""
    now = now or datetime.now(UTC)
    return {"webhook-id": msg_id, "webhook-timestamp": str(int(now.timestamp())),
            "webhook-signature": Webhook(secret).sign(msg_id, now, body),
            "content-type": "application/json", "user-agent": USER_AGENT}


def post(url: str, secret: str, msg_id: str, body: str) -> int:
    """Post ``body`` signed to ``url``; its 2xx status, else :class:`DeliveryError`
    (:class:`.addresses.ForbiddenAddressError` for a forbidden address)."""
    target = addresses.parse(url)
    ip = addresses.resolve_allowed(target.host, target.port)
    host_header = f"[{target.host}]" if ":" in target.host else target.host  # an IPv6 literal
    if target.port != addresses.SCHEMES[target.scheme]:
        host_header += f":{target.port}"
    headers = {**signed_headers(secret, msg_id, body), "host": host_header}
    timeout = urllib3.Timeout(total=settings.WEBHOOK_TIMEOUT_SECONDS)
    pool: urllib3.HTTPConnectionPool
    if target.scheme == "https":  # connect to the checked address; TLS checks the host name
        pool = urllib3.HTTPSConnectionPool(str(ip), target.port, server_hostname=target.host,
                                           assert_hostname=target.host, cert_reqs="CERT_REQUIRED",
                                           timeout=timeout, retries=False, maxsize=1)
    else:
        pool = urllib3.HTTPConnectionPool(str(ip), target.port, timeout=timeout, retries=False, maxsize=1)
    try:
        response = pool.urlopen("POST", target.path, body=body.encode(), headers=headers, redirect=False,
                                retries=False, preload_content=False, assert_same_host=False)
        response.read(MAX_ANSWER_BYTES)
        response.release_conn()
    except urllib3.exceptions.HTTPError as exc:
        raise DeliveryError(f"{type(exc).__name__}: {exc}"[:500]) from None
    finally:
        pool.close()
    if not 200 <= response.status < 300:
        raise DeliveryError(f"HTTP {response.status}", response.status)
    return int(response.status)


def claim(project_id: int, rows: int = CLAIM_ROWS) -> list[WebhookDelivery]:
    """Take up to ``rows`` of the project's due deliveries (oldest first) for this worker."""
    now = timezone.now()
    with transaction.atomic():
        due = (WebhookDelivery.objects.select_for_update(skip_locked=True)
               .filter(project_id=project_id, status=WebhookDelivery.Status.PENDING, next_attempt__lte=now)
               .order_by("next_attempt", "pk")[:rows])
        taken = list(due)
        WebhookDelivery.objects.filter(pk__in=[d.pk for d in taken]).update(
            next_attempt=now + timedelta(seconds=CLAIM_SECONDS))
    return taken


def attempt(delivery: WebhookDelivery, url: str, secret: str) -> None:
    """Post one claimed delivery and record the outcome on its row."""
    delivery.attempts += 1
    now = timezone.now()
    try:
        delivery.last_status = post(url, secret, delivery.msg_id, body_of(delivery))
    except addresses.ForbiddenAddressError as exc:
        delivery.status, delivery.next_attempt, delivery.last_error = (
            WebhookDelivery.Status.FAILED, None, str(exc)[:500])
    except DeliveryError as exc:
        delivery.last_status, delivery.last_error = exc.status, str(exc)[:500]
        waits = settings.WEBHOOK_RETRY_SECONDS
        if delivery.attempts > len(waits):
            delivery.status, delivery.next_attempt = WebhookDelivery.Status.FAILED, None
        else:
            delivery.next_attempt = now + timedelta(seconds=waits[delivery.attempts - 1])
    else:
        delivery.status, delivery.next_attempt = DELIVERED, None  # the last error stays in the log
        delivery.delivered_at = timezone.now()
    WebhookDelivery.objects.filter(pk=delivery.pk).update(
        attempts=delivery.attempts, status=delivery.status, next_attempt=delivery.next_attempt,
        last_status=delivery.last_status, last_error=delivery.last_error, delivered_at=delivery.delivered_at)


def deliver_due(project_id: int) -> float | None:
    """Post every due delivery of the project; then, if it posted any, the seconds until the
    next retry is due (None when nothing waits or it posted nothing: a run that found the rows
    taken leaves their retry to the run that took them, so runs do not multiply)."""
    posted = 0
    while True:
        taken = claim(project_id)
        posted += len(taken)
        if not taken:
            break
        endpoints: dict[int, Any] = {}
        for delivery in taken:
            endpoint = endpoints.get(delivery.endpoint_id) or delivery.endpoint
            endpoints[delivery.endpoint_id] = endpoint
            attempt(delivery, endpoint.url, endpoint.secret)
    if not posted:
        return None
    upcoming = (WebhookDelivery.objects.filter(project_id=project_id, status=WebhookDelivery.Status.PENDING)
                .order_by("next_attempt").values_list("next_attempt", flat=True).first())
    if upcoming is None:
        return None
    return max(0.0, (upcoming - timezone.now()).total_seconds())
