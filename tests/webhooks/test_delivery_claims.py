"""Webhook delivery against real receivers on 127.0.0.1 (loopback allowed explicitly): a post
bounded by a wall-clock deadline however slowly the receiver answers, a row posted by one worker
at a time however two workers' claims interleave, and nothing posted to an endpoint deleted
after its rows were claimed (docs/webhooks.md, "Delivery: outbox, worker, retries")."""

from __future__ import annotations

import json
import threading
import time
from datetime import timedelta

import pytest
from django.db import connection
from django.test import Client
from django.utils import timezone

from annotator.labelling.models import WebhookDelivery
from annotator.labelling.webhooks import delivery, outbox
from harness.receiver import running_receiver
from tests.support.app import text_project

LOOPBACK = ["127.0.0.0/8"]


def _register(project, url: str) -> int:
    response = Client().post(f"/api/projects/{project.pk}/webhooks",
                             json.dumps({"url": url, "events": ["label.created"]}),
                             content_type="application/json", HTTP_AUTHORIZATION=f"Token {project.api_token}")
    assert response.status_code == 201, response.content
    return int(response.json()["id"])


def _event(project, n: int) -> None:
    outbox.emit(project.pk, "label.created", {"project": project.pk, "label": n})


def _in_thread(target, *args) -> threading.Thread:
    """``target(*args)`` in a thread with its own database connection (closed at its end)."""
    def run() -> None:
        try:
            target(*args)
        finally:
            connection.close()

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    return thread


def _msg_ids(receiver) -> list[str]:
    return [headers["webhook-id"] for _, headers, _ in receiver.received]


@pytest.mark.django_db
def test_a_receiver_trickling_its_answer_is_cut_at_the_deadline(settings):
    """A receiver that sends a header byte every 0.3 s (each read well within the timeout) is cut
    after WEBHOOK_TIMEOUT_SECONDS of wall-clock time: a failed attempt, retried later; the other
    endpoint's row is posted without waiting behind it."""
    settings.WEBHOOK_ALLOWED_NETWORKS = LOOPBACK
    settings.WEBHOOK_TIMEOUT_SECONDS = 1.0
    settings.WEBHOOK_RETRY_SECONDS = [60]
    project = text_project()
    with running_receiver() as slow, running_receiver() as fast:
        slow.drip = 0.3  # 40 bytes: 12 s in all
        slow_hook, fast_hook = _register(project, slow.url), _register(project, fast.url)
        _event(project, 1)
        started = time.monotonic()
        wait = delivery.deliver_due(project.pk)
        took = time.monotonic() - started
        assert len(slow.received) == 1 and len(fast.received) == 1
    assert took < 3.0, f"deliver_due took {took:.1f} s with a 1 s deadline"
    cut = WebhookDelivery.objects.get(endpoint_id=slow_hook)
    assert (cut.status, cut.attempts, cut.delivered_at) == ("pending", 1, None)
    assert "no complete answer within 1 s" in cut.last_error
    assert cut.next_attempt is not None and wait is not None and 50 < wait <= 60
    assert WebhookDelivery.objects.get(endpoint_id=fast_hook).status == "delivered"


@pytest.mark.django_db
def test_a_slow_but_timely_answer_is_delivered(settings):
    settings.WEBHOOK_ALLOWED_NETWORKS = LOOPBACK
    settings.WEBHOOK_TIMEOUT_SECONDS = 3.0
    project = text_project()
    with running_receiver() as receiver:
        receiver.drip = 0.02  # 40 bytes in 0.8 s
        _register(project, receiver.url)
        _event(project, 1)
        delivery.deliver_due(project.pk)
    row = WebhookDelivery.objects.get()
    assert (row.status, row.attempts, row.last_status, row.last_error) == ("delivered", 1, 200, "")


@pytest.mark.django_db(transaction=True)
def test_two_workers_never_post_one_row_while_it_is_being_posted(settings, monkeypatch):
    """Worker A claims two rows and posts the first to a receiver that answers after 1.5 s; the
    claim time (0.5 s here) runs out meanwhile. Worker B, started then, finds nothing to take:
    each row is posted once, and counted once."""
    settings.WEBHOOK_ALLOWED_NETWORKS = LOOPBACK
    settings.WEBHOOK_TIMEOUT_SECONDS = 5.0
    monkeypatch.setattr(delivery, "CLAIM_SECONDS", 0.5)
    project = text_project()
    with running_receiver() as receiver:
        receiver.delays = [1.5]
        _register(project, receiver.url)
        _event(project, 1)
        _event(project, 2)
        worker_a = _in_thread(delivery.deliver_due, project.pk)
        receiver.wait_for(lambda got: len(got) >= 1, 10, "worker A's first post")
        time.sleep(0.7)  # past A's first claim, while its post waits for the answer
        delivery.deliver_due(project.pk)  # worker B
        worker_a.join(30)
        ids = _msg_ids(receiver)
    assert sorted(ids) == sorted(set(ids)) and len(ids) == 2, ids
    assert list(WebhookDelivery.objects.values_list("status", "attempts")) == [("delivered", 1)] * 2


@pytest.mark.django_db
def test_a_row_taken_by_another_worker_is_not_posted_again(settings, monkeypatch):
    """Worker A's claim ran out before it reached the row (a long batch, a stalled process) and
    worker B took and delivered it: A's late attempt posts nothing and writes nothing."""
    settings.WEBHOOK_ALLOWED_NETWORKS = LOOPBACK
    project = text_project()
    with running_receiver() as receiver:
        _register(project, receiver.url)
        _event(project, 1)
        settings.WEBHOOK_TIMEOUT_SECONDS = 0.5
        monkeypatch.setattr(delivery, "CLAIM_SECONDS", 0)  # A's claim: over in 0.5 s
        (late,) = delivery.claim(project.pk)
        monkeypatch.undo()
        time.sleep(0.6)
        (taken,) = delivery.claim(project.pk)  # worker B
        assert delivery.attempt(taken)
        assert not delivery.attempt(late)
        assert len(receiver.received) == 1
    row = WebhookDelivery.objects.get()
    assert (row.status, row.attempts) == ("delivered", 1)


@pytest.mark.django_db(transaction=True)
def test_an_answer_after_another_worker_took_the_row_does_not_overwrite_it(settings):
    """Worker A's post outlives its claim (here the clock is moved: its claim is made to run out
    during the post) and worker B takes and delivers the row; A's 500, arriving last, must not
    put the delivered row back to pending (nor count its attempt over B's)."""
    settings.WEBHOOK_ALLOWED_NETWORKS = LOOPBACK
    settings.WEBHOOK_RETRY_SECONDS = [0.0]
    project = text_project()
    with running_receiver() as receiver:
        receiver.answers, receiver.delays = [500, 200], [1.5, 0.0]
        _register(project, receiver.url)
        _event(project, 1)
        worker_a = _in_thread(delivery.deliver_due, project.pk)
        receiver.wait_for(lambda got: len(got) >= 1, 10, "worker A's post")
        ran_out = timezone.now() - timedelta(seconds=1)
        WebhookDelivery.objects.update(next_attempt=ran_out)  # A's claim ran out
        delivery.deliver_due(project.pk)  # worker B: 200
        worker_a.join(30)
        assert len(receiver.received) == 2
    row = WebhookDelivery.objects.get()
    assert (row.status, row.attempts, row.last_status, row.next_attempt) == ("delivered", 1, 200, None)


@pytest.mark.django_db(transaction=True)
def test_an_endpoint_deleted_after_the_claim_gets_no_further_post(settings):
    """A worker claimed two rows of one endpoint; the endpoint is deleted through the API while
    the first post waits for its answer: the second row is never posted."""
    settings.WEBHOOK_ALLOWED_NETWORKS = LOOPBACK
    project = text_project()
    with running_receiver() as receiver:
        receiver.delays = [1.0]
        hook = _register(project, receiver.url)
        _event(project, 1)
        _event(project, 2)
        worker = _in_thread(delivery.deliver_due, project.pk)
        receiver.wait_for(lambda got: len(got) >= 1, 10, "the first post")
        deleted = Client().delete(f"/api/projects/{project.pk}/webhooks/{hook}",
                                  HTTP_AUTHORIZATION=f"Token {project.api_token}")
        assert deleted.status_code == 204
        worker.join(30)
        time.sleep(0.2)
        assert len(receiver.received) == 1
    assert not WebhookDelivery.objects.exists()
