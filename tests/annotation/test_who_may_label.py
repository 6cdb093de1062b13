"""Who may label an item (docs/teams.md, "Who may label an item"), through the Django test client:
a label is taken only on an item offered to its sender; every other label gets one and the same
answer, whatever the item is (leased to another, another's honeypot, settled, disputed, pending,
decided alone, never leased to them, skipped, an overlapped item whose opinions are all in), and
stores nothing; the flows that were allowed still are."""

from __future__ import annotations

import json
from datetime import timedelta
from typing import Any

import pytest
from django.utils import timezone

from annotator.labelling.annotation.actions import NOT_OFFERED, lease_next
from annotator.labelling.engine.pipeline import update_project
from annotator.labelling.ingest import Record, import_records
from annotator.labelling.models import (
    Consensus,
    Honeypot,
    Item,
    Label,
    LapsedLease,
    Membership,
    Project,
    Skip,
)
from harness.chosen_labels import label_chosen, lease_chosen
from tests.support.app import client_for, leased_item_id, member, text_project
from tests.support.html import error_text

pytestmark = pytest.mark.django_db
HX = {"HTTP_HX_REQUEST": "true"}



def _expire(item_id: int) -> None:
    Item.objects.filter(pk=item_id).update(lease_expires=timezone.now() - timedelta(seconds=1))


def _state(project: Project) -> tuple[Any, ...]:
    """Everything a label could change: labels, items, consensus rows, honeypots, lapsed leases."""
    return (list(Label.objects.filter(project=project).order_by("pk").values_list()),
            list(Item.objects.filter(project=project).order_by("pk").values_list(
                "pk", "status", "n_opinions", "lease_owner_id", "lease_expires")),
            list(Consensus.objects.filter(project=project).order_by("pk").values_list()),
            list(Honeypot.objects.filter(project=project).order_by("pk").values_list()),
            list(LapsedLease.objects.order_by("pk").values_list("item_id", "annotator_id")))


@pytest.fixture
def refused():
    """A text project with one item in each state ``ann`` may not label, ``ann`` holding a lease
    of her own meanwhile. Returns (project, ann, a reviewer, {case: item id})."""
    project = text_project([f"text {i}" for i in range(12)])
    Item.objects.filter(project=project).update(status=Item.Status.QUEUED, queried=True)
    items = list(Item.objects.filter(project=project).order_by("seq").values_list("pk", flat=True))
    ann, bob, cat = member(project, "ann"), member(project, "bob"), member(project, "cat")
    rev = member(project, "rev", Membership.Role.REVIEWER)
    case = dict(zip(["leased to another", "settled", "agreed", "disputed", "honeypot of another",
                     "decided alone", "never leased to me", "skipped", "all opinions in", "mine"],
                    items, strict=False))
    assert lease_chosen(project, case["leased to another"], bob)
    label_chosen(project, case["settled"], bob, "ham")
    overlapped = [case["agreed"], case["disputed"], case["all opinions in"]]
    Item.objects.filter(pk__in=overlapped).update(overlap_k=2)
    for key, (b, c) in (("agreed", ("ham", "ham")), ("disputed", ("ham", "spam"))):
        label_chosen(project, case[key], bob, b)
        label_chosen(project, case[key], cat, c)
    Item.objects.filter(pk__in=[case["honeypot of another"], case["decided alone"]]).update(
        status=Item.Status.AUTO, gold="spam")
    Honeypot.objects.create(project=project, item_id=case["honeypot of another"], annotator=bob)
    assert lease_chosen(project, case["skipped"], ann)
    assert client_for(ann).post(f"/projects/{project.pk}/items/{case['skipped']}/skip").status_code == 302
    assert lease_chosen(project, case["all opinions in"], ann)  # her lease lapses, two others answer
    _expire(case["all opinions in"])
    label_chosen(project, case["all opinions in"], bob, "ham")
    label_chosen(project, case["all opinions in"], cat, "ham")
    assert lease_chosen(project, case["mine"], ann)
    import_records(project, [Record("later", "not decided yet")])
    case["pending"] = Item.objects.get(project=project, status=Item.Status.PENDING).pk
    update_project(project.pk)  # the consensus of the overlapped items
    Item.objects.filter(pk=case["pending"]).update(status=Item.Status.PENDING)  # still undecided
    statuses = dict(Consensus.objects.filter(project=project).values_list("item_id", "status"))
    assert statuses[case["agreed"]] == "agreed" and statuses[case["disputed"]] == "disputed"
    assert statuses[case["all opinions in"]] == "agreed"
    return project, ann, rev, case


def test_every_label_on_an_item_not_offered_gets_one_answer_and_stores_nothing(refused):
    project, ann, rev, case = refused
    others = {k: pk for k, pk in case.items() if k != "mine"}
    client = client_for(ann)
    before = _state(project)
    answers = {}
    for key, pk in others.items():
        for value in ("ham", "spam"):
            response = client.post(f"/projects/{project.pk}/items/{pk}/label", {"value": value})
            answers[key, value] = (response.status_code, response["Content-Type"], response.content)
    assert set(answers.values()) == {(409, "text/plain", NOT_OFFERED.encode())}, answers
    # a reviewer does not settle a disputed or agreed item from the queue's URL either
    reviewer = client_for(rev)
    for key in ("disputed", "agreed", "settled"):
        response = reviewer.post(f"/projects/{project.pk}/items/{case[key]}/label", {"value": "spam"})
        assert (response.status_code, response.content) == (409, NOT_OFFERED.encode())
    assert _state(project) == before
    # the queue's htmx answer: the same message beside the item she holds, whatever she tried
    for pk in others.values():
        response = client.post(f"/projects/{project.pk}/items/{pk}/label", {"value": "ham"}, **HX)
        assert (response.status_code, error_text(response.content)) == (409, NOT_OFFERED)
        assert leased_item_id(response) == case["mine"]
    assert _state(project) == before
    # the instant queue's burst: each refused the same way, the others stored
    labels = [[pk, "ham"] for pk in others.values()] + [[case["mine"], "spam"]]
    data = client.post(f"/projects/{project.pk}/desk", {"labels": json.dumps(labels)}).json()
    assert [(r["ok"], r["status"], r["error"]) for r in data["results"]] == (
        [(False, 409, NOT_OFFERED)] * len(others) + [(True, 200, "")])
    stored = Label.objects.filter(annotator=ann).values_list("item_id", "value")
    assert list(stored) == [(case["mine"], "spam")]


def test_the_flows_that_were_allowed_still_are():
    """Her lease, a double submission, undo and label again, a late label (her lease expired,
    nobody took the item; or it passed to someone else: an opinion while the item takes one, an
    extra opinion once it is labelled), her honeypot."""
    project = text_project([f"text {i}" for i in range(8)])
    Item.objects.filter(project=project).update(status=Item.Status.QUEUED, queried=True)
    first, second, third, fourth, gold = Item.objects.filter(project=project).order_by("seq")[:5]
    Item.objects.filter(pk=fourth.pk).update(overlap_k=2)
    ann, bob = member(project, "ann"), member(project, "bob")
    client, url = client_for(ann), f"/projects/{project.pk}/items/%d/label"
    # her lease; a double submission is the 409 it always was; undo leases it back, she labels again
    assert leased_item_id(client.get(f"/projects/{project.pk}/")) == first.pk
    assert client.post(url % first.pk, {"value": "ham"}).status_code == 302
    repeat = client.post(url % first.pk, {"value": "ham"})
    assert repeat.status_code == 409 and b"already labelled" in repeat.content
    assert client.post(f"/projects/{project.pk}/undo").status_code == 302
    assert client.post(url % first.pk, {"value": "spam"}).status_code == 302
    # her lease expired and nobody took the item: the late label is the item's label
    assert leased_item_id(client.get(f"/projects/{project.pk}/")) == second.pk
    _expire(second.pk)
    assert client.post(url % second.pk, {"value": "ham"}).status_code == 302
    assert Label.objects.get(item=second, annotator=ann).primary
    # her lease expired and bob took the item and labelled it: her late label is an extra opinion
    assert lease_next(project, ann).pk == third.pk
    _expire(third.pk)
    bob_client = client_for(bob)
    assert leased_item_id(bob_client.get(f"/projects/{project.pk}/")) == third.pk
    refused = client.post(url % third.pk, {"value": "spam"})  # while bob holds it: refused
    assert (refused.status_code, refused.content) == (409, NOT_OFFERED.encode())
    assert bob_client.post(url % third.pk, {"value": "ham"}).status_code == 302
    assert client.post(url % third.pk, {"value": "spam"}).status_code == 302
    assert not Label.objects.get(item=third, annotator=ann).primary
    # an overlapped item: her lease passed to bob, who gave his vote; hers still counts
    assert lease_next(project, ann).pk == fourth.pk
    _expire(fourth.pk)
    assert lease_next(project, bob).pk == fourth.pk
    assert bob_client.post(url % fourth.pk, {"value": "spam"}).status_code == 302
    assert Item.objects.get(pk=fourth.pk).status == Item.Status.QUEUED
    assert client.post(url % fourth.pk, {"value": "spam"}).status_code == 302
    assert Item.objects.values_list("status", "n_opinions").get(pk=fourth.pk) == (Item.Status.LABELLED, 2)
    # her honeypot (served to her: placed here, the draw is random)
    Item.objects.filter(pk=gold.pk).update(status=Item.Status.AUTO, gold="spam")
    Honeypot.objects.create(project=project, item=gold, annotator=ann)
    assert client.post(url % gold.pk, {"value": "spam"}).status_code == 302
    assert Honeypot.objects.get(item=gold).label.annotator == ann


def test_an_undo_leasing_an_overlapped_item_back_keeps_the_holders_late_vote():
    """Ann undoes her vote while bob holds the item: it is leased back to her (bob's label is refused
    meanwhile); once she voted again, bob's late vote is taken."""
    project = text_project(["a", "b", "c"], overlap_k=2, overlap_fraction=1.0)
    Item.objects.filter(project=project).update(status=Item.Status.QUEUED, queried=True, overlap_k=2)
    first = Item.objects.filter(project=project).order_by("seq").first()
    ann, bob = client_for(member(project, "ann")), client_for(member(project, "bob"))
    url = f"/projects/{project.pk}/items/{first.pk}/label"
    assert leased_item_id(ann.get(f"/projects/{project.pk}/")) == first.pk
    assert ann.post(url, {"value": "ham"}).status_code == 302
    assert leased_item_id(bob.get(f"/projects/{project.pk}/")) == first.pk
    assert ann.post(f"/projects/{project.pk}/undo").status_code == 302
    assert bob.post(url, {"value": "spam"}).status_code == 409  # ann holds it again
    assert ann.post(url, {"value": "spam"}).status_code == 302
    assert bob.post(url, {"value": "spam"}).status_code == 302
    assert Item.objects.values_list("status", "n_opinions").get(pk=first.pk) == (Item.Status.LABELLED, 2)


def test_a_skip_ends_the_offer():
    """A label after her skip is refused as on any item not offered (a skipped honeypot answers the
    same), even when her lease on it had lapsed before."""
    project = text_project(["a", "b"])
    Item.objects.filter(project=project).update(status=Item.Status.QUEUED, queried=True)
    first = Item.objects.filter(project=project).order_by("seq").first()
    user = member(project, "ann")
    LapsedLease.note(first.pk, user.pk)
    client = client_for(user)
    assert leased_item_id(client.get(f"/projects/{project.pk}/")) == first.pk
    assert client.post(f"/projects/{project.pk}/items/{first.pk}/skip").status_code == 302
    assert Skip.objects.filter(item=first).exists()
    response = client.post(f"/projects/{project.pk}/items/{first.pk}/label", {"value": "ham"})
    assert (response.status_code, response.content) == (409, NOT_OFFERED.encode())
    assert not Label.objects.exists()
