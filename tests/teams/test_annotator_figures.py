"""What annotators see of a project's figures while it serves honeypots or audits (docs/teams.md,
"Honeypots"): one snapshot shared by the project's annotators, rebuilt at most every
``ANNOTATOR_SNAPSHOT_SECONDS``, so that neither a real label nor a honeypot's answer moves the
dashboard or the metrics API they read; admins keep live figures."""

from __future__ import annotations

import re
from typing import Any

import pytest
from django.core.cache import cache
from django.test import Client, override_settings

from annotator.labelling.annotation.actions import lease_next
from annotator.labelling.engine.pipeline import update_project
from annotator.labelling.models import Honeypot, Item, Label, Membership, Project
from tests.support.app import client_for, digits_project, member, teach
from tests.support.html import parse

pytestmark = pytest.mark.django_db
HX = {"HTTP_HX_REQUEST": "true"}



def _metrics(client: Client, project: Project) -> dict[str, Any]:
    response = client.get(f"/api/projects/{project.pk}/metrics")
    assert response.status_code == 200, response.content
    return response.json()


def _panel(client: Client, project: Project) -> str:
    """The dashboard panel's HTML, the model's age (which runs on with the clock) masked."""
    response = client.get(f"/projects/{project.pk}/dashboard/panel", **HX)
    assert response.status_code == 200
    return re.sub(r"updated -?[\d,.]+ s ago", "updated N s ago", response.content.decode())


@pytest.fixture
def checked():
    """A digits project with items the model decided alone, its dashboard open to annotators;
    ``ann`` holds a queued item and a honeypot (an item decided alone, with a gold class), and the
    project serves honeypots."""
    project = digits_project(80, params={"delta": 0.3}, look_ahead=4)
    teach(project, member(project, "teacher"), until_auto=5)
    ann = member(project, "ann")
    real = lease_next(project, ann)
    assert real is not None and real.status == Item.Status.LEASED
    honeypot = Item.objects.filter(project=project, status=Item.Status.AUTO, gold__isnull=False).first()
    Honeypot.objects.create(project=project, item=honeypot, annotator=ann)
    Project.objects.filter(pk=project.pk).update(honeypot_rate=0.3, dashboard_for_annotators=True)
    project.refresh_from_db()
    admin = client_for(member(project, "boss", Membership.Role.ADMIN))
    return project, client_for(ann), admin, real, honeypot


def test_a_label_or_a_honeypot_answer_moves_no_figure_an_annotator_sees(checked):
    project, ann, admin, real, honeypot = checked
    before, panel = _metrics(ann, project), _panel(ann, project)
    admin_before = _metrics(admin, project)

    answer = ann.post(f"/projects/{project.pk}/items/{real.pk}/label", {"value": real.gold}, **HX)
    assert answer.status_code == 200
    update_project(project.pk)  # the worker learns the label: a new model version
    assert _metrics(admin, project)["items_labelled"] == admin_before["items_labelled"] + 1  # admins: live
    assert _metrics(admin, project)["model_version"] > admin_before["model_version"]
    assert _metrics(ann, project) == before
    assert _panel(ann, project) == panel

    answer = ann.post(f"/projects/{project.pk}/items/{honeypot.pk}/label", {"value": honeypot.gold}, **HX)
    assert answer.status_code == 200
    assert Label.objects.filter(item=honeypot, annotator__username="ann", primary=False).exists()
    update_project(project.pk)
    assert _metrics(ann, project) == before
    assert _panel(ann, project) == panel
    other = client_for(member(project, "ann2"))  # the snapshot is the project's, not one person's
    assert _metrics(other, project) == before

    cache.clear()  # the snapshot expired: the next read builds a new one
    after = _metrics(ann, project)
    assert after["items_labelled"] == before["items_labelled"] + 1
    assert after["model_version"] > before["model_version"]
    assert _panel(ann, project) != panel


def test_the_snapshot_lasts_the_setting(checked):
    project, ann, _, real, _ = checked
    with override_settings(ANNOTATOR_SNAPSHOT_SECONDS=0):  # 0: live
        before = _metrics(ann, project)
        ann.post(f"/projects/{project.pk}/items/{real.pk}/label", {"value": real.gold}, **HX)
        assert _metrics(ann, project)["items_labelled"] == before["items_labelled"] + 1


def test_without_honeypots_or_audits_annotators_see_live_figures(checked):
    project, ann, _, real, _ = checked
    Honeypot.objects.filter(project=project).delete()
    Project.objects.filter(pk=project.pk).update(honeypot_rate=0.0, audit_rate=0.0)
    before = _metrics(ann, project)
    ann.post(f"/projects/{project.pk}/items/{real.pk}/label", {"value": real.gold}, **HX)
    assert _metrics(ann, project)["items_labelled"] == before["items_labelled"] + 1


def test_annotators_see_no_admins_figures_and_are_told_the_snapshots_age(checked):
    project, ann, admin, _, _ = checked
    page = ann.get(f"/projects/{project.pk}/dashboard").content.decode()
    assert 'id="annotator-quality"' not in page and 'id="agreement-alpha"' not in page
    assert "renewed at most every 10 min" in page and 'id="snapshot-note"' in page
    admin_page = admin.get(f"/projects/{project.pk}/dashboard").content.decode()
    assert 'id="annotator-quality"' in admin_page and 'id="snapshot-note"' not in admin_page
    assert "refreshed every 2 s" in admin_page


def _waiting(html: bytes, **attrs: str) -> int:
    return int(parse(html).find("b", **attrs).text)


def test_the_project_list_and_the_queue_show_one_waiting_count_while_a_honeypot_is_held():
    """While an annotator holds a honeypot their queue counts one waiting item fewer (as a real
    lease would); the project list shows them the same count, so the two pages never differ by
    exactly one while a honeypot is held."""
    project = digits_project(80, params={"delta": 0.3}, look_ahead=8)
    teach(project, member(project, "teacher"), until_auto=5)
    ann = member(project, "ann")
    honeypot = Item.objects.filter(project=project, status=Item.Status.AUTO, gold__isnull=False).first()
    Honeypot.objects.create(project=project, item=honeypot, annotator=ann)
    client = client_for(ann)
    queue = client.get(f"/projects/{project.pk}/")
    assert f'data-item="{honeypot.pk}"' in queue.content.decode()  # the honeypot is what it shows
    shown = _waiting(queue.content, id="waiting")
    assert shown == Item.objects.filter(project=project).waiting().count() - 1 > 0  # as if leased
    assert _waiting(client.get("/").content, class_="waiting") == shown


def test_the_waiting_count_moves_with_neither_a_label_nor_a_honeypot_answer():
    """Live, the queue's waiting count fell by one after a real label (the next item leased) and
    not after a honeypot's answer (the item it stood in for leased at last); while the project
    serves honeypots or audits it is the snapshot's, on the queue and the project list alike.
    (Audits turn the snapshot on here, so that no random honeypot is served: the test places its
    own.)"""
    project = digits_project(80, params={"delta": 0.3}, look_ahead=4)
    teach(project, member(project, "teacher"), until_auto=5)
    Project.objects.filter(pk=project.pk).update(look_ahead=12, audit_rate=0.2)
    project.refresh_from_db()
    update_project(project.pk)
    ann, bob = member(project, "ann"), member(project, "bob")
    real = lease_next(project, ann)
    assert real is not None and real.status == Item.Status.LEASED
    honeypot = Item.objects.filter(project=project, status=Item.Status.AUTO, gold__isnull=False).first()
    Honeypot.objects.create(project=project, item=honeypot, annotator=bob)
    assert Item.objects.filter(project=project).waiting().count() >= 3
    for user, item in ((ann, real), (bob, honeypot)):
        client = client_for(user)
        shown = _waiting(client.get(f"/projects/{project.pk}/").content, id="waiting")
        answer = client.post(f"/projects/{project.pk}/items/{item.pk}/label", {"value": item.gold}, **HX)
        assert _waiting(answer.content, id="waiting") == shown, user.username
        assert _waiting(client.get("/").content, class_="waiting") == shown
    cache.clear()
    assert _waiting(client_for(ann).get("/").content, class_="waiting") == \
        Item.objects.filter(project=project).waiting().count()
