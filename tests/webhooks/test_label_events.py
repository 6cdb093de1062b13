"""``label.created`` from every path that stores a person's label (docs/webhooks.md, "Events"),
posted to a real receiver on 127.0.0.1 and checked with standardwebhooks' own ``Webhook.verify``:
the queue's label and a changed label, a reviewer's decision, an admin's relabel, Label Studio's
annotations (on an item not decided yet and on a decided one) and the labels an import brings.
A honeypot's answer, changed or not, is never told."""

from __future__ import annotations

import io
import json

import pytest
from django.test import Client
from standardwebhooks.webhooks import Webhook

from annotator.labelling.annotation.label_studio import backend_token
from annotator.labelling.engine.pipeline import update_project
from annotator.labelling.ingest import run_job
from annotator.labelling.models import Honeypot, ImportJob, Item, Label, Membership, Review
from annotator.labelling.webhooks import delivery
from harness.chosen_labels import lease_chosen
from harness.receiver import running_receiver
from tests.support.app import SPAM, client_for, member, queued_digits_project, text_project

pytestmark = pytest.mark.django_db
LOOPBACK = ["127.0.0.0/8"]
FIELDS = {"project", "label", "item", "class", "annotator", "primary", "seconds", "created"}


@pytest.fixture
def receiver(settings):
    settings.WEBHOOK_ALLOWED_NETWORKS = LOOPBACK
    with running_receiver() as running:
        yield running


def _subscribe(project, receiver) -> str:
    response = Client().post(f"/api/projects/{project.pk}/webhooks",
                             json.dumps({"url": receiver.url, "events": ["label.created"]}),
                             content_type="application/json", HTTP_AUTHORIZATION=f"Token {project.api_token}")
    assert response.status_code == 201, response.content
    return str(response.json()["secret"])


def _told(project, receiver, secret: str) -> list[dict]:
    """The ``data`` of every label.created the receiver got so far (signatures checked)."""
    delivery.deliver_due(project.pk)
    bodies = [Webhook(secret).verify(body, headers) for _, headers, body in receiver.received]
    assert all(b["type"] == "label.created" and set(b["data"]) == FIELDS for b in bodies), bodies
    return [b["data"] for b in bodies]


def _as_told(label: Label) -> dict:
    return {"project": label.project_id, "label": label.pk, "item": label.item_id, "class": label.value,
            "annotator": label.annotator.username, "primary": label.primary, "seconds": label.seconds,
            "created": label.created.isoformat()}


def _label(project, user, item: Item, value) -> Label:
    assert lease_chosen(project, item.pk, user)
    response = client_for(user).post(f"/projects/{project.pk}/items/{item.pk}/label", {"value": str(value)})
    assert response.status_code == 302, response.content
    return Label.objects.filter(item=item, annotator=user).latest("id")


def _queued(project) -> list[Item]:
    return list(Item.objects.filter(project=project, status=Item.Status.QUEUED).order_by("seq"))


def test_a_label_and_its_change_are_both_told(receiver):
    project = queued_digits_project()
    secret = _subscribe(project, receiver)
    ann = member(project, "ann")
    item = _queued(project)[0]
    first = _label(project, ann, item, item.gold)
    other = next(c for c in project.classes if c != item.gold)
    changed = client_for(ann).post(f"/projects/{project.pk}/labels/{first.pk}/change", {"value": str(other)})
    assert changed.status_code == 302, changed.content
    first.refresh_from_db()
    new = Label.objects.get(item=item, annotator=ann, undone_at__isnull=True)
    assert first.undone_at is not None and new.value == other and new.primary
    told = _told(project, receiver, secret)
    assert [(t["label"], t["class"], t["primary"]) for t in told] == [
        (first.pk, item.gold, True), (new.pk, other, True)]
    assert told[1] == _as_told(new)


def test_a_honeypot_answer_changed_or_not_is_never_told(receiver):
    project = queued_digits_project()
    secret = _subscribe(project, receiver)
    ann = member(project, "ann")
    item = _queued(project)[-1]
    Honeypot.objects.create(project=project, item=item, annotator=ann)  # served to ann
    ann_client = client_for(ann)
    answered = ann_client.post(f"/projects/{project.pk}/items/{item.pk}/label", {"value": str(item.gold)})
    assert answered.status_code == 302
    answer = Honeypot.objects.get(item=item).label
    other = next(c for c in project.classes if c != item.gold)
    changed = ann_client.post(f"/projects/{project.pk}/labels/{answer.pk}/change", {"value": str(other)})
    assert changed.status_code == 302
    assert Honeypot.objects.get(item=item).label.value == other
    assert _told(project, receiver, secret) == []


def test_a_reviewers_decision_and_an_admins_relabel_are_told(receiver):
    project = queued_digits_project()
    secret = _subscribe(project, receiver)
    ann, boss = member(project, "ann"), member(project, "boss", Membership.Role.ADMIN)
    reviewer = member(project, "rev", Membership.Role.REVIEWER)
    first, second = _queued(project)[:2]
    _label(project, ann, first, first.gold)
    other = next(c for c in project.classes if c != first.gold)
    relabel = client_for(boss).post(f"/projects/{project.pk}/items/{first.pk}/relabel", {"value": str(other)})
    assert relabel.status_code == 302, relabel.content
    by_admin = Label.objects.get(item=first, annotator=boss)
    review = Review.objects.create(project=project, item=second, reason=Review.Reason.DISAGREEMENT)
    decided = client_for(reviewer).post(f"/projects/{project.pk}/reviews/{review.pk}/decide",
                                        {"value": str(second.gold)})
    assert decided.status_code in (200, 302), decided.content
    by_reviewer = Label.objects.get(item=second, annotator=reviewer)
    told = _told(project, receiver, secret)
    assert [t["label"] for t in told] == [Label.objects.get(item=first, annotator=ann).pk, by_admin.pk,
                                          by_reviewer.pk]
    assert told[1] == _as_told(by_admin) and told[1]["primary"] and told[1]["annotator"] == "boss"
    assert told[2] == _as_told(by_reviewer) and told[2]["annotator"] == "rev"


def _choice(value: str) -> list[dict]:
    """A Label Studio annotation's result: the class ``value`` of a <Choices> control."""
    return [{"from_name": "label", "to_name": "text", "type": "choices", "value": {"choices": [value]}}]


def _annotate(project, action: str, annotation_id: int, task: dict, value: str):
    url = f"/api/label-studio/{project.pk}/{backend_token(project)}/webhook"
    body = {"action": action, "task": task, "project": {"id": 1},
            "annotation": {"id": annotation_id, "completed_by": 7, "result": _choice(value)}}
    response = Client().post(url, json.dumps(body), content_type="application/json")
    assert response.status_code == 200, response.content
    return response


def test_label_studio_annotations_are_told(receiver):
    """ANNOTATION_CREATED on a task the app has not decided yet (stored directly) and
    ANNOTATION_UPDATED once it is decided (stored as the item's final decision): two labels of
    ``labelstudio+user_7``, each told."""
    project = text_project(params={"delta": 1.0})
    secret = _subscribe(project, receiver)
    task = {"id": 501, "data": {"text": "lottery winner claim"}}
    _annotate(project, "ANNOTATION_CREATED", 9010, task, "spam")
    update_project(project.pk)  # the item is decided (labelled) now
    _annotate(project, "ANNOTATION_UPDATED", 9010, task, "ham")
    labels = list(Label.objects.filter(project=project).order_by("id"))
    assert [lab.value for lab in labels] == ["spam", "ham"]
    told = _told(project, receiver, secret)
    assert told == [{**_as_told(labels[0]), "primary": True}, _as_told(labels[1])]  # the first as it was
    assert {t["annotator"] for t in told} == {"labelstudio+user_7"} and not labels[0].primary


def test_the_labels_an_import_brings_are_told(receiver):
    project = text_project()
    secret = _subscribe(project, receiver)
    alice = {"id": 1, "email": "alice@example.com"}
    tasks = [{"id": 11, "data": {"text": SPAM[0]}, "annotations": [
                 {"id": 1, "completed_by": alice, "result": _choice("spam")},
                 {"id": 2, "completed_by": 2, "result": _choice("ham")}]},
             {"id": 12, "data": {"text": SPAM[1]}}]
    upload = io.BytesIO(json.dumps(tasks).encode())
    upload.name = "project-1-at-2026.json"
    boss = member(project, "boss", Membership.Role.ADMIN)
    assert client_for(boss).post(f"/projects/{project.pk}/upload", {"file": upload}).status_code == 302
    assert run_job(ImportJob.objects.get(project=project).pk).status == "done"
    labels = list(Label.objects.filter(project=project).order_by("id"))
    assert len(labels) == 2
    assert _told(project, receiver, secret) == [_as_told(lab) for lab in labels]
