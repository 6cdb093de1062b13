"""The instant queue's request (``POST projects/<pk>/desk``, :mod:`.look_ahead`) through the Django
test client: the held items, a burst stored in order, a resend counted once, refusals reported
per label, malformed bodies refused with nothing stored."""

from __future__ import annotations

import json

import pytest

from annotator.labelling.annotation.actions import NOT_OFFERED
from annotator.labelling.annotation.look_ahead import HELD_ITEMS, held_items
from annotator.labelling.engine.pipeline import update_project
from annotator.labelling.models import Item, Label
from tests.support.app import digits_project, member

pytestmark = pytest.mark.django_db


def queued_digits_project():
    """30 demo digits, 20 of them queued (more than the page holds)."""
    project = digits_project(30, look_ahead=20, params={"delta": 100.0})
    update_project(project.pk)
    return project


def _desk(client, project, labels):
    response = client.post(f"/projects/{project.pk}/desk", {"labels": json.dumps(labels)})
    return response, (response.json() if response["Content-Type"] == "application/json" else None)


def test_the_page_holds_the_next_items_and_a_burst_is_stored_in_order(client):
    project = queued_digits_project()
    user = member(project, "ann")
    client.force_login(user)
    response, data = _desk(client, project, [])
    assert response.status_code == 200 and data["results"] == []
    items = [it["id"] for it in data["items"]]
    assert len(items) == HELD_ITEMS
    seqs = list(Item.objects.filter(pk__in=items).order_by("seq").values_list("pk", flat=True))
    assert items == seqs  # oldest first, as the page shows them
    assert all(f'data-item="{pk}"' in it["html"] for pk, it in zip(items, data["items"], strict=True))
    assert [it.pk for it in held_items(project, user)] == items
    burst = [[pk, Item.objects.get(pk=pk).gold] for pk in items[:4]]
    response, data = _desk(client, project, burst)
    assert [r["ok"] for r in data["results"]] == [True] * 4
    stored = list(Label.objects.filter(annotator=user).order_by("pk").values_list("item_id", "value"))
    assert stored == [tuple(p) for p in burst]
    assert data["items"][0]["id"] == items[4] and len(data["items"]) == HELD_ITEMS
    # the same labels again (the page could not tell whether they arrived): counted once
    response, data = _desk(client, project, burst[:2])
    assert [r["ok"] for r in data["results"]] == [True, True]
    assert Label.objects.filter(annotator=user).count() == 4


def test_refusals_are_reported_per_label_and_do_not_stop_the_others(client):
    project = queued_digits_project()
    other = member(project, "other")
    client.force_login(member(project, "ann"))
    _, data = _desk(client, project, [])
    a, b, c = (it["id"] for it in data["items"][:3])
    Item.objects.filter(pk=b).update(lease_owner=other)  # taken by someone else meanwhile
    _, data = _desk(client, project, [[a, 1], [b, 2], [c, "cat"], [999999, 1], [c, 3]])
    assert [(r["ok"], r["status"]) for r in data["results"]] == [
        (True, 200), (False, 409), (False, 400), (False, 404), (True, 200)]
    assert data["results"][1]["error"] == NOT_OFFERED
    assert set(Label.objects.values_list("item_id", flat=True)) == {a, c}


@pytest.mark.parametrize("body", ["not json", '{"a": 1}', "[[1]]", '[["1", 2]]', "[[true, 1]]",
                                  json.dumps([[1, 1]] * 51), '[[1, [2]]]',
                                  "[" * 100_000 + "]" * 100_000])
def test_a_malformed_burst_is_a_400_and_stores_nothing(client, body):
    project = queued_digits_project()
    client.force_login(member(project, "ann"))
    response = client.post(f"/projects/{project.pk}/desk", {"labels": body})
    assert response.status_code == 400 and "labels" in response.json()["error"]
    assert not Label.objects.exists()


def test_only_members_reach_the_desk(client):
    project = queued_digits_project()
    assert client.post(f"/projects/{project.pk}/desk", {"labels": "[]"}).status_code == 302  # login
    client.force_login(member(queued_digits_project(), "stranger"))
    assert client.post(f"/projects/{project.pk}/desk", {"labels": "[]"}).status_code == 404
