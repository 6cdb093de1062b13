"""Signed webhooks against a real receiver (an http.server thread on 127.0.0.1, loopback allowed
explicitly): each event's signature checked with standardwebhooks' own ``Webhook.verify``, a
retry after a 500, the secret rotated, URLs refused by the SSRF rules with a clear 400 (nothing
stored), the address checked again at delivery, the console page with its delivery log, and a
real Celery worker delivering the label path's events."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest
from django.test import Client
from standardwebhooks.webhooks import Webhook, WebhookVerificationError

from annotator.labelling.models import Item, Membership, WebhookDelivery, WebhookEndpoint
from annotator.labelling.webhooks import addresses, delivery, events
from annotator.labelling.worker import tasks
from harness.chosen_labels import lease_chosen
from harness.receiver import running_receiver
from tests.support.app import Worker, member, queued_digits_project

ALL = ["label.created", "item.queried", "model.version", "import.finished", "budget.reached"]
LOOPBACK = ["127.0.0.0/8"]


def _register(project, url: str, events_: list[str] | None = None) -> tuple[int, dict]:
    body = json.dumps({"url": url, "events": ALL if events_ is None else events_})
    response = Client().post(f"/api/projects/{project.pk}/webhooks", body,
                             content_type="application/json", HTTP_AUTHORIZATION=f"Token {project.api_token}")
    return response.status_code, response.json()


def _label_one(project, user) -> Item:
    client = Client()
    client.force_login(user)
    item = Item.objects.filter(project=project, status=Item.Status.QUEUED).order_by("seq").first()
    assert lease_chosen(project, item.pk, user)  # offered to them, as the queue offers the oldest
    response = client.post(f"/projects/{project.pk}/items/{item.pk}/label", {"value": str(item.gold)})
    assert response.status_code == 302, response.content
    return item


def _verified(secret: str, received: list) -> list[dict]:
    return [Webhook(secret).verify(body, headers) for _, headers, body in received]


@pytest.mark.django_db
def test_events_arrive_signed_and_verify(settings):
    settings.WEBHOOK_ALLOWED_NETWORKS = LOOPBACK
    project = queued_digits_project()
    user = member(project, "ann")
    with running_receiver() as receiver:
        status, made = _register(project, receiver.url)
        assert status == 201 and made["secret"].startswith("whsec_") and made["events"] == sorted(ALL)
        item = _label_one(project, user)
        tasks.apply_labels(project.pk)  # the worker's task, in process: model version, then deliver
        tasks.deliver_webhooks(project.pk)
        bodies = _verified(made["secret"], receiver.received)
        with pytest.raises(WebhookVerificationError):  # another secret does not verify
            _verified("whsec_" + "A" * 32, receiver.received[:1])
    kinds = {b["type"] for b in bodies}
    assert {"label.created", "model.version", "item.queried"} <= kinds
    label = next(b for b in bodies if b["type"] == "label.created")["data"]
    assert (label["item"], label["class"], label["annotator"], label["primary"]) == (
        item.pk, item.gold, "ann", True)
    version = next(b for b in bodies if b["type"] == "model.version")["data"]
    assert version["labels_applied"] == 1 and version["version"] >= 1
    assert set(WebhookDelivery.objects.values_list("status", flat=True)) == {"delivered"}
    # the secret is never read back out
    listed = Client().get(f"/api/projects/{project.pk}/webhooks",
                          HTTP_AUTHORIZATION=f"Token {project.api_token}")
    assert made["secret"] not in listed.content.decode() and listed.json()["webhooks"][0]["deliveries"]


@pytest.mark.django_db
def test_a_500_is_retried_with_back_off_and_logged(settings):
    settings.WEBHOOK_ALLOWED_NETWORKS = LOOPBACK
    settings.WEBHOOK_RETRY_SECONDS = [0.3, 5]
    project = queued_digits_project()
    with running_receiver() as receiver:
        _, made = _register(project, receiver.url, ["label.created"])
        receiver.answers = [500]
        _label_one(project, member(project, "ann"))
        wait = delivery.deliver_due(project.pk)
        row = WebhookDelivery.objects.get()
        assert (row.status, row.attempts, row.last_status, row.last_error) == ("pending", 1, 500, "HTTP 500")
        assert wait is not None and 0 < wait <= 0.3
        assert delivery.deliver_due(project.pk) is None  # not due yet: nothing posted
        time.sleep(wait + 0.05)
        delivery.deliver_due(project.pk)
        assert len(receiver.received) == 2
        first, second = _verified(made["secret"], receiver.received)
        assert first == second  # the same message (same webhook-id) again
        assert receiver.received[0][1]["webhook-id"] == receiver.received[1][1]["webhook-id"]
    row.refresh_from_db()
    assert (row.status, row.attempts, row.last_status, row.last_error) == ("delivered", 2, 200, "HTTP 500")


@pytest.mark.django_db
def test_every_attempt_failing_ends_failed(settings):
    settings.WEBHOOK_ALLOWED_NETWORKS = LOOPBACK
    settings.WEBHOOK_RETRY_SECONDS = [0.0]
    project = queued_digits_project()
    with running_receiver() as receiver:
        _register(project, receiver.url, ["label.created"])
        receiver.answers = [503, 503, 503]
        _label_one(project, member(project, "ann"))
        assert delivery.deliver_due(project.pk) is None
        assert len(receiver.received) == 2  # the first attempt and its one retry
    row = WebhookDelivery.objects.get()
    assert (row.status, row.attempts, row.next_attempt, row.last_error) == ("failed", 2, None, "HTTP 503")


@pytest.mark.django_db
def test_rotation_signs_with_the_new_secret(settings):
    settings.WEBHOOK_ALLOWED_NETWORKS = LOOPBACK
    project = queued_digits_project()
    token = f"Token {project.api_token}"
    with running_receiver() as receiver:
        _, made = _register(project, receiver.url, ["label.created"])
        rotated = Client().post(f"/api/projects/{project.pk}/webhooks/{made['id']}/secret",
                                HTTP_AUTHORIZATION=token)
        assert rotated.status_code == 200 and rotated.json()["secret"] != made["secret"]
        _label_one(project, member(project, "ann"))
        delivery.deliver_due(project.pk)
        assert _verified(rotated.json()["secret"], receiver.received)
        with pytest.raises(WebhookVerificationError):
            _verified(made["secret"], receiver.received)
    deleted = Client().delete(f"/api/projects/{project.pk}/webhooks/{made['id']}", HTTP_AUTHORIZATION=token)
    assert deleted.status_code == 204 and not WebhookEndpoint.objects.exists()


REFUSED = [
    ("ftp://example.org/hook", "http:// or https://"),
    ("javascript:alert(1)", "http:// or https://"),
    ("file:///etc/passwd", "http:// or https://"),
    ("http://169.254.169.254/latest/meta-data/", "link-local"),
    ("http://[fe80::1]/hook", "link-local"),
    ("http://10.1.2.3/hook", "private"),
    ("http://192.168.0.10:8080/hook", "private"),
    ("http://127.0.0.1:9/hook", "loopback"),
    ("http://localhost:9/hook", "loopback"),
    ("http://[::1]/hook", "loopback"),
    ("http://[::ffff:127.0.0.1]/hook", "loopback"),
    ("http://0.0.0.0/hook", "unspecified"),
    ("http://100.64.0.1/hook", "not a public address"),
    ("http://user:pw@example.org/hook", "user name or password"),
    ("http:///hook", "no host"),
]


@pytest.mark.django_db
@pytest.mark.parametrize("url,reason", REFUSED)
def test_forbidden_urls_are_refused_with_a_clear_400(url, reason):
    project = queued_digits_project()
    status, body = _register(project, url)
    assert status == 400 and reason in body["error"], body
    admin = member(project, "padmin", Membership.Role.ADMIN)
    client = Client()
    client.force_login(admin)
    page = client.post(f"/projects/{project.pk}/webhooks", {"url": url, "event": ALL})
    assert page.status_code == 400 and reason in page.content.decode()
    assert not WebhookEndpoint.objects.exists()


@pytest.mark.django_db
def test_the_allow_list_opens_loopback_but_not_metadata(settings):
    settings.WEBHOOK_ALLOWED_NETWORKS = LOOPBACK
    assert addresses.check("http://localhost:9/hook").port == 9
    with pytest.raises(addresses.ForbiddenAddressError, match="link-local"):
        addresses.check("http://169.254.169.254/")
    project = queued_digits_project()
    refused = _register(project, "http://127.0.0.1:9/hook", ["nope"])[1]
    assert refused["error"].startswith("unknown event 'nope'")
    assert _register(project, "http://127.0.0.1:9/hook", [])[0] == 400
    assert not WebhookEndpoint.objects.exists()


@pytest.mark.django_db
def test_the_address_is_checked_again_at_delivery(settings):
    """A host that resolved to an allowed address when registered and to a forbidden one at
    delivery (DNS rebinding, here: the allow-list changed) is not posted to."""
    settings.WEBHOOK_ALLOWED_NETWORKS = LOOPBACK
    project = queued_digits_project()
    with running_receiver() as receiver:
        _register(project, receiver.url.replace("127.0.0.1", "localhost"), ["label.created"])
        _label_one(project, member(project, "ann"))
        settings.WEBHOOK_ALLOWED_NETWORKS = []
        delivery.deliver_due(project.pk)
        assert not receiver.received
    row = WebhookDelivery.objects.get()
    assert row.status == "failed" and "loopback" in row.last_error


@pytest.mark.django_db
def test_console_page_shows_the_secret_once_and_the_log(settings):
    settings.WEBHOOK_ALLOWED_NETWORKS = LOOPBACK
    settings.WEBHOOK_RETRY_SECONDS = [60]
    project = queued_digits_project()
    client = Client()
    client.force_login(member(project, "padmin", Membership.Role.ADMIN))
    with running_receiver() as receiver:
        made = client.post(f"/projects/{project.pk}/webhooks",
                           {"url": receiver.url, "event": ["label.created"]})
        assert made.status_code == 200
        secret = WebhookEndpoint.objects.get().secret
        assert secret in made.content.decode()
        receiver.answers = [500]
        _label_one(project, member(project, "ann"))
        delivery.deliver_due(project.pk)
    page = client.get(f"/projects/{project.pk}/webhooks").content.decode()
    assert secret not in page
    assert "label.created" in page and "pending" in page and "HTTP 500" in page
    hook = WebhookEndpoint.objects.get()
    rotated = client.post(f"/projects/{project.pk}/webhooks/{hook.pk}/rotate")
    hook.refresh_from_db()
    assert hook.secret != secret and hook.secret in rotated.content.decode()
    assert client.post(f"/projects/{project.pk}/webhooks/{hook.pk}/delete").status_code == 302
    assert not WebhookEndpoint.objects.exists() and not WebhookDelivery.objects.exists()


@pytest.mark.django_db
def test_budget_reached_once_per_day(settings):
    project = queued_digits_project()
    WebhookEndpoint.objects.create(project=project, url="http://127.0.0.1:9/", events=["budget.reached"],
                                   secret="whsec_" + "A" * 32)
    project.budget_per_day = 1
    project.save(update_fields=["budget_per_day"])
    assert events.budget_reached(project.pk) == 0  # no label yet
    _label_one(project, member(project, "ann"))
    assert events.budget_reached(project.pk) == 1
    assert events.budget_reached(project.pk) == 0  # once a day
    assert WebhookDelivery.objects.get().payload["data"]["labels_last_24h"] == 1


@pytest.mark.django_db
def test_no_webhook_no_outbox_row():
    project = queued_digits_project()
    _label_one(project, member(project, "ann"))
    tasks.apply_labels(project.pk)
    assert not WebhookDelivery.objects.exists()


@pytest.mark.django_db(transaction=True)
def test_a_real_worker_delivers_the_label_path_events(tmp_path: Path):
    """The web label path writes the outbox; a real Celery worker process (the default and the
    heavy queue) applies the label and posts the events, retrying after a 500."""
    project = queued_digits_project()
    with running_receiver() as receiver:
        from django.test import override_settings

        with override_settings(WEBHOOK_ALLOWED_NETWORKS=LOOPBACK):
            _, made = _register(project, receiver.url, ["label.created", "model.version"])
        receiver.answers = [500]
        worker = Worker(tmp_path / "worker.log", env={"WEBHOOK_ALLOWED_NETWORKS": "127.0.0.0/8",
                                                      "WEBHOOK_RETRY_SECONDS": "0.5"})
        try:
            _label_one(project, member(project, "ann"))
            receiver.wait_for(lambda got: sum(json.loads(b)["type"] == "label.created"
                                              for _, _, b in got) >= 2,
                              30, "the label event and its retry")
            receiver.wait_for(lambda got: any(json.loads(b)["type"] == "model.version" for _, _, b in got),
                              30, "the model version event")
            assert all(_verified(made["secret"], receiver.received))
        finally:
            worker.stop()
    label_row = WebhookDelivery.objects.get(event="label.created")
    assert (label_row.status, label_row.attempts, label_row.last_error) == ("delivered", 2, "HTTP 500")


@pytest.mark.django_db(transaction=True)
def test_the_page_in_a_browser(live_server, chromium_page, settings):
    """The console's webhooks page in Chromium: add a webhook through the form, the secret shown
    once, a delivery in the log after the receiver answered 500."""
    from tests.support.browser import log_in, screenshot

    settings.WEBHOOK_ALLOWED_NETWORKS = LOOPBACK
    settings.WEBHOOK_RETRY_SECONDS = [60]
    project = queued_digits_project()
    member(project, "padmin", Membership.Role.ADMIN, password="pw-admin-1")
    page = chromium_page
    log_in(page, live_server.url, "padmin", "pw-admin-1")
    page.goto(f"{live_server.url}/projects/{project.pk}/console")
    page.click("#webhooks-link")
    with running_receiver() as receiver:
        page.fill("#webhook-url", receiver.url)
        page.click("#webhook-form button[type=submit]")
        secret = WebhookEndpoint.objects.get().secret
        assert secret in page.inner_text("#webhook-secret")
        receiver.answers = [500]
        _label_one(project, member(project, "ann"))
        delivery.deliver_due(project.pk)
    page.goto(f"{live_server.url}/projects/{project.pk}/webhooks")
    assert secret not in page.content()
    assert "HTTP 500" in page.inner_text(".delivery-log")
    screenshot(page, "webhooks-page")
