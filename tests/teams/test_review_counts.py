"""The review queue follows the consensus (docs/teams.md, "Review"): a disputed item has an open
disagreement review from the moment its consensus is computed, a settled one none, so the reviews
API, the opinions export and the dataset export count the same disagreements without anyone
opening the review queue; a reviewer's decisions are not counted as their labels."""

from __future__ import annotations

import json

import pytest
from django.test import Client

from annotator.labelling.engine.pipeline import update_project
from annotator.labelling.models import Consensus, Item, Label, Membership, Review
from harness.chosen_labels import lease_chosen, user_of
from tests.support.app import client_for, digits_project, member
from tests.support.html import parse

pytestmark = pytest.mark.django_db
HX = {"HTTP_HX_REQUEST": "true"}



def body(response) -> str:
    assert response.status_code == 200, response.content
    return b"".join(response.streaming_content).decode()


@pytest.fixture
def team():
    """A digits project whose first four queued items need two opinions each; annotators ``a`` and
    ``b`` and reviewer ``rev``, with their clients and the admin's."""
    project = digits_project(20, params={"delta": 100.0}, look_ahead=6)
    update_project(project.pk)
    items = list(Item.objects.filter(project=project, status=Item.Status.QUEUED).order_by("seq")[:4])
    assert len(items) == 4
    Item.objects.filter(pk__in=[i.pk for i in items]).update(overlap_k=2)
    users = {name: member(project, name) for name in ("a", "b")}
    users["rev"] = member(project, "rev", Membership.Role.REVIEWER)
    users["boss"] = member(project, "boss", Membership.Role.ADMIN)
    clients = {name: client_for(user) for name, user in users.items()}
    return project, items, users, clients


def label(client: Client, project, item, value) -> None:
    """The client's user labels ``item``, leased to them first (the queue offers the oldest)."""
    lease_chosen(project, item.pk, user_of(client))
    answer = client.post(f"/projects/{project.pk}/items/{item.pk}/label", {"value": value}, **HX)
    assert answer.status_code == 200, [e.text for e in parse(answer.content).find_all("p")]


def open_disagreements(client: Client, project) -> list[int]:
    """Item ids of the open disagreement reviews, as the reviews API gives them."""
    answer = client.get(f"/api/projects/{project.pk}/reviews")
    assert answer.status_code == 200
    return sorted(r["item_id"] for r in answer.json()["reviews"]
                  if r["reason"] == "disagreement" and r["decided_at"] is None)


def disputed_in_exports(client: Client, project) -> tuple[list[int], list[int]]:
    """Item ids disputed in the opinions export and in the dataset export."""
    opinions = [json.loads(line) for line in body(client.get(f"/projects/{project.pk}/export/opinions.jsonl"))
                .splitlines()]
    dataset = [json.loads(line) for line in body(client.get(
        f"/projects/{project.pk}/export/dataset.jsonl?provenance=disputed")).splitlines()]
    return (sorted({r["item_id"] for r in opinions if r["consensus_status"] == "disputed"}),
            sorted(r["id"] for r in dataset))


def test_the_reviews_api_counts_the_disputed_items_without_anyone_opening_the_review_queue(team):
    project, items, _, clients = team
    a, b, boss = clients["a"], clients["b"], clients["boss"]
    # each in queue order, as the queue serves them (the answer to a label leases the next item)
    for item, value in zip(items, [1, 3, 4, 6], strict=True):
        label(a, project, item, value)
    for item, value in zip(items[:3], [2, 3, 5], strict=True):  # item 3: one opinion of two, waiting
        label(b, project, item, value)
    assert open_disagreements(boss, project) == []  # the opinions are in, not aggregated yet
    update_project(project.pk)  # what the worker runs after the labels
    disputed = sorted([items[0].pk, items[2].pk])
    assert open_disagreements(boss, project) == disputed
    assert disputed_in_exports(boss, project) == (disputed, disputed)
    assert open_disagreements(clients["rev"], project) == disputed  # the reviewers' view of it too
    # b undoes their opinion on item 2: its consensus is withdrawn and its review closes at once
    assert b.post(f"/projects/{project.pk}/undo", **HX).status_code == 200
    assert open_disagreements(boss, project) == [items[0].pk]
    assert disputed_in_exports(boss, project) == ([items[0].pk], [items[0].pk])
    label(b, project, items[2], 4)  # now both say 4
    # its opinions are in, not aggregated yet: nobody counts it disputed (nor settled)
    assert open_disagreements(boss, project) == [items[0].pk]
    assert disputed_in_exports(boss, project) == ([items[0].pk], [items[0].pk])
    update_project(project.pk)
    assert open_disagreements(boss, project) == [items[0].pk]
    assert disputed_in_exports(boss, project) == ([items[0].pk], [items[0].pk])
    assert not Review.objects.filter(item=items[2]).exists()
    # nobody opened /review/: no review was ever leased
    assert not Review.objects.filter(project=project, lease_owner__isnull=False).exists()


def test_a_disagreement_the_annotators_settle_closes_even_while_a_reviewer_holds_it(team):
    project, items, users, clients = team
    label(clients["a"], project, items[0], 1)
    label(clients["b"], project, items[0], 2)
    update_project(project.pk)
    rev = clients["rev"]
    panel = parse(rev.get(f"/projects/{project.pk}/review/").content).find_all(id="queue-item")[0]
    assert panel.attrs["data-item"] == str(items[0].pk)  # rev holds the disagreement
    review = int(panel.attrs["data-review"])
    # b changes their mind to 1: the item is agreed, its review closes though rev holds it
    mine = Label.objects.get(item=items[0], annotator=users["b"])
    answer = clients["b"].post(f"/projects/{project.pk}/labels/{mine.pk}/change", {"value": 1}, **HX)
    assert answer.status_code == 200
    update_project(project.pk)
    assert Consensus.objects.get(item=items[0]).status == "agreed"
    assert open_disagreements(clients["boss"], project) == []
    # rev's decision on it is refused with a plain reason, and the panel moves on
    answer = rev.post(f"/projects/{project.pk}/reviews/{review}/decide", {"value": 2}, **HX)
    assert answer.status_code == 404
    assert "settled by its annotators" in answer.content.decode()
    assert parse(answer.content).find_all(id="queue-item")[0].attrs.get("data-idle") == "reviewed"
    assert Label.objects.get(item=items[0], primary=True).value == 1  # the annotators' class stands


def test_a_reviewers_decisions_are_not_counted_as_their_labels(team):
    project, items, users, clients = team
    rev = clients["rev"]
    label(clients["a"], project, items[0], 1)
    label(clients["b"], project, items[0], 2)
    label(rev, project, items[3], 3)  # rev also labels, as an annotator (a and b hold items 1 and 2)
    update_project(project.pk)
    panel = parse(rev.get(f"/projects/{project.pk}/review/").content).find_all(id="queue-item")[0]
    review = int(panel.attrs["data-review"])
    answer = rev.post(f"/projects/{project.pk}/reviews/{review}/decide", {"value": 7}, **HX)  # nobody said 7
    assert answer.status_code == 200
    decision = Label.objects.get(item=items[0], annotator=users["rev"])
    assert (decision.kind, decision.primary) == ("adjudication", True)
    progress = parse(rev.get(f"/projects/{project.pk}/").content).find_all(id="progress")[0].text
    assert "my labels here: 1 ·" in progress  # the one opinion, not the decision
    update_project(project.pk)
    page = parse(clients["boss"].get(f"/projects/{project.pk}/dashboard").content)
    rows = {tr.find_all("td")[0].text: [td.text for td in tr.find_all("td")[1:3]]
            for tr in page.find_all("table", id="annotator-labels")[0].find_all("tr")[1:]}
    assert rows == {"a": ["1", "0"], "b": ["1", "0"], "rev": ["1", "1"]}  # labels, review decisions
