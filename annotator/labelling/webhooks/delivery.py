"""Delivering the outbox (:mod:`.outbox`): the worker's side of the webhooks (docs/webhooks.md,
"Delivery: outbox, worker, retries").

:func:`deliver_due` claims a project's due rows in batches (:func:`claim`: each row taken for
:func:`claim_seconds`), then posts them one at a time (:func:`attempt`). Just before its post a
row is claimed again (:func:`_renew`), which also checks that the row is still pending, still
this worker's (its claim did not run out and go to another worker) and that its endpoint still
exists; the endpoint's URL and secret are read then. A row that fails any of these is left
alone, unposted. The answer is recorded only while the row is still this worker's: the update
is conditional on the claim (a compare-and-set on ``next_attempt``, which holds the claim's
end while a row is claimed), so two workers never both record one attempt.

Each post (:func:`post`) resolves the host again and connects to the checked address
(:mod:`.addresses`), follows no redirect and carries the Standard Webhooks headers
(``webhook-id``, ``webhook-timestamp``, ``webhook-signature``: HMAC-SHA256 of
``id.timestamp.body`` with the endpoint's secret, by the ``standardwebhooks`` package). The
whole exchange (connecting, sending, the answer's status line, headers and body) must end within
``WEBHOOK_TIMEOUT_SECONDS`` of wall-clock time: a watchdog cuts the connection then, however
slowly the receiver trickles its answer. A 2xx answer delivers the row; anything else (another
status, a cut, a refused connection) is retried after the waits of ``WEBHOOK_RETRY_SECONDS``
(10 s, 1 min, 5 min, 30 min, 2 h by default), then the row fails. An address that became
forbidden fails the row at once.
"""

from __future__ import annotations

import contextlib
import http.client
import json
import logging
import socket
import threading
import time
from datetime import UTC, datetime, timedelta

import urllib3
from django.conf import settings
from django.db import transaction
from django.utils import timezone
from standardwebhooks.webhooks import Webhook
from urllib3.connection import HTTPConnection, HTTPSConnection
from urllib3.util.ssl_match_hostname import CertificateError

from annotator.labelling.models import WebhookDelivery, WebhookEndpoint

from . import addresses

log = logging.getLogger(__name__)
#: rows one claim takes
CLAIM_ROWS = 50
#: a claimed row is not taken again before this plus one post's deadline (a worker that died
#: with it: taken again then); renewed just before each post (:func:`claim_seconds`)
CLAIM_SECONDS = 120
#: answer bytes read (and dropped) from a receiver
MAX_ANSWER_BYTES = 64 * 1024
USER_AGENT = "active-annotator-webhooks/1"
DELIVERED = WebhookDelivery.Status.DELIVERED
PENDING = WebhookDelivery.Status.PENDING


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


#: what a failed exchange raises (a certificate for another host: urllib3's CertificateError)
FAILURES = (urllib3.exceptions.HTTPError, http.client.HTTPException, OSError, CertificateError)


class _Watchdog:
    """Cuts a connection's socket (``shutdown``: a blocked read or write returns at once) when
    ``seconds`` of wall-clock time have passed, at whatever point of the exchange: a socket made
    after that is cut as soon as it exists. ``fired`` tells that the time ran out."""

    def __init__(self, seconds: float) -> None:
        self.fired = False
        self.sock: socket.socket | None = None
        self.lock = threading.Lock()
        self.timer = threading.Timer(seconds, self._fire)
        self.timer.daemon = True

    def _cut(self) -> None:
        if self.sock is not None:
            with contextlib.suppress(OSError):  # closed already
                self.sock.shutdown(socket.SHUT_RDWR)

    def _fire(self) -> None:
        with self.lock:
            self.fired = True
            self._cut()

    def attach(self, sock: socket.socket) -> None:
        """The connection's raw socket, as soon as it is connected (before a TLS handshake)."""
        with self.lock:
            self.sock = sock
            if self.fired:
                self._cut()

    def __enter__(self) -> _Watchdog:
        self.timer.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.timer.cancel()
        self.timer.join()  # never cut a socket after it was closed (its number may be reused)


class _Watched:
    """Mixin for urllib3's connections: hands the raw socket to its :class:`_Watchdog`."""

    watchdog: _Watchdog

    def _new_conn(self) -> socket.socket:
        sock: socket.socket = super()._new_conn()  # type: ignore[misc]
        self.watchdog.attach(sock)
        return sock


class _WatchedHTTPConnection(_Watched, HTTPConnection):
    pass


class _WatchedHTTPSConnection(_Watched, HTTPSConnection):
    pass


def post(url: str, secret: str, msg_id: str, body: str) -> int:
    """Post ``body`` signed to ``url``; its 2xx status, else :class:`DeliveryError`
    (:class:`.addresses.ForbiddenAddressError` for a forbidden address). The exchange ends within
    ``WEBHOOK_TIMEOUT_SECONDS`` of wall-clock time (module docstring), else DeliveryError."""
    target = addresses.parse(url)
    ip = addresses.resolve_allowed(target.host, target.port)
    host_header = f"[{target.host}]" if ":" in target.host else target.host  # an IPv6 literal
    if target.port != addresses.SCHEMES[target.scheme]:
        host_header += f":{target.port}"
    headers = {**signed_headers(secret, msg_id, body), "host": host_header}
    seconds = float(settings.WEBHOOK_TIMEOUT_SECONDS)
    conn: _WatchedHTTPConnection | _WatchedHTTPSConnection
    if target.scheme == "https":  # connect to the checked address; TLS checks the host name
        conn = _WatchedHTTPSConnection(str(ip), target.port, timeout=seconds, server_hostname=target.host,
                                       assert_hostname=target.host, cert_reqs="CERT_REQUIRED")
    else:
        conn = _WatchedHTTPConnection(str(ip), target.port, timeout=seconds)
    late = f"no complete answer within {seconds:g} s (WEBHOOK_TIMEOUT_SECONDS)"
    started = time.monotonic()
    conn.watchdog = watchdog = _Watchdog(seconds)
    try:
        with watchdog:
            try:
                conn.request("POST", target.path, body=body.encode(), headers=headers, preload_content=False)
                response = conn.getresponse()
                response.read(MAX_ANSWER_BYTES)
                status = int(response.status)
            except FAILURES as exc:
                if watchdog.fired or time.monotonic() - started >= seconds:
                    raise DeliveryError(late) from None
                raise DeliveryError(f"{type(exc).__name__}: {exc}"[:500]) from None
    finally:
        conn.close()
    if watchdog.fired:  # the answer came, but not within the deadline
        raise DeliveryError(late, status)
    if not 200 <= status < 300:
        raise DeliveryError(f"HTTP {status}", status)
    return status


def claim_seconds() -> float:
    """How long a claim keeps a row from other workers: :data:`CLAIM_SECONDS` plus one post's
    deadline (``WEBHOOK_TIMEOUT_SECONDS``), so that a row claimed again just before its post stays
    this worker's until its answer is recorded."""
    return float(CLAIM_SECONDS) + float(settings.WEBHOOK_TIMEOUT_SECONDS)


def claim(project_id: int, rows: int = CLAIM_ROWS) -> list[WebhookDelivery]:
    """Take up to ``rows`` of the project's due deliveries (oldest first) for this worker, each
    for :func:`claim_seconds`; each returned row's ``next_attempt`` is its claim (what
    :func:`attempt` checks it still holds)."""
    now = timezone.now()
    until = now + timedelta(seconds=claim_seconds())
    with transaction.atomic():
        due = (WebhookDelivery.objects.select_for_update(skip_locked=True)
               .filter(project_id=project_id, status=PENDING, next_attempt__lte=now)
               .order_by("next_attempt", "pk")[:rows])
        taken = list(due)
        WebhookDelivery.objects.filter(pk__in=[d.pk for d in taken]).update(next_attempt=until)
    for d in taken:
        d.next_attempt = until
    return taken


def _renew(delivery: WebhookDelivery) -> WebhookEndpoint | None:
    """Claim ``delivery`` again just before its post, for :func:`claim_seconds` from now: only
    while it is still pending, still this worker's (its ``next_attempt`` is the claim this worker
    wrote) and its endpoint still exists. The endpoint as it is now (URL, secret), else None:
    leave the row alone."""
    until = timezone.now() + timedelta(seconds=claim_seconds())
    renewed = WebhookDelivery.objects.filter(  # a deleted endpoint took its rows with it
        pk=delivery.pk, status=PENDING, next_attempt=delivery.next_attempt).update(next_attempt=until)
    endpoint = WebhookEndpoint.objects.filter(pk=delivery.endpoint_id).first() if renewed else None
    if endpoint is None:
        return None
    delivery.next_attempt = until
    return endpoint


def attempt(delivery: WebhookDelivery) -> bool:
    """Post one delivery :func:`claim` returned, to its endpoint as it is now, and record the
    outcome on its row, if the row is still this worker's then; False (nothing posted, nothing
    written) when it is no longer this worker's to post (:func:`_renew`)."""
    endpoint = _renew(delivery)
    if endpoint is None:
        log.info("webhook delivery %s skipped: taken by another worker, done, or its endpoint deleted",
                 delivery.pk)
        return False
    claimed = delivery.next_attempt
    delivery.attempts += 1
    try:
        delivery.last_status = post(endpoint.url, endpoint.secret, delivery.msg_id, body_of(delivery))
    except addresses.ForbiddenAddressError as exc:
        delivery.status, delivery.next_attempt, delivery.last_error = (
            WebhookDelivery.Status.FAILED, None, str(exc)[:500])
    except DeliveryError as exc:
        delivery.last_status, delivery.last_error = exc.status, str(exc)[:500]
        waits = settings.WEBHOOK_RETRY_SECONDS
        if delivery.attempts > len(waits):
            delivery.status, delivery.next_attempt = WebhookDelivery.Status.FAILED, None
        else:
            delivery.next_attempt = timezone.now() + timedelta(seconds=waits[delivery.attempts - 1])
    else:
        delivery.status, delivery.next_attempt = DELIVERED, None  # the last error stays in the log
        delivery.delivered_at = timezone.now()
    recorded = WebhookDelivery.objects.filter(pk=delivery.pk, status=PENDING, next_attempt=claimed).update(
        attempts=delivery.attempts, status=delivery.status, next_attempt=delivery.next_attempt,
        last_status=delivery.last_status, last_error=delivery.last_error, delivered_at=delivery.delivered_at)
    if not recorded:
        log.warning("webhook delivery %s: its claim ran out during the post; the answer (%s) is not "
                    "recorded", delivery.pk, delivery.last_status)
    return True


def deliver_due(project_id: int) -> float | None:
    """Post every due delivery of the project; then, if it posted any, the seconds until the
    next retry is due (None when nothing waits or it posted nothing: a run that found the rows
    taken leaves their retry to the run that took them, so runs do not multiply)."""
    posted = 0
    while True:
        taken = claim(project_id)
        if not taken:
            break
        posted += sum(attempt(delivery) for delivery in taken)
    if not posted:
        return None
    upcoming = (WebhookDelivery.objects.filter(project_id=project_id, status=WebhookDelivery.Status.PENDING)
                .order_by("next_attempt").values_list("next_attempt", flat=True).first())
    if upcoming is None:
        return None
    return max(0.0, (upcoming - timezone.now()).total_seconds())
