"""Repeated and concurrent state-changing requests (docs/architecture.md, "Repeated and concurrent
requests"): undo, skip, label, change, review decisions and planner starts raced by threads
through real requests on PostgreSQL; nothing applies twice, nothing answered is lost, and the
database invariants (:mod:`.invariants`) hold afterwards."""

from __future__ import annotations

import pytest

from annotator.labelling.annotation.actions import RECENT_LABELS, changeable_ids, recent_labels
from annotator.labelling.annotation.invariants import violations
from annotator.labelling.engine.pipeline import update_project
from annotator.labelling.models import Item, Label
from harness import races
from harness.chosen_labels import label_chosen
from tests.support.app import digits_project, member


@pytest.mark.services
@pytest.mark.parametrize("name", list(races.SCENARIOS))
def test_a_race_applies_each_action_once(services, transactional_db, name):
    outcome = races.SCENARIOS[name]()
    assert (outcome.server_errors, outcome.doubled, outcome.lost, outcome.broken) == (0, 0, 0, []), outcome
    assert set(outcome.statuses) <= {200, 302, 409}, outcome


@pytest.mark.services
def test_concurrent_undos_on_an_overlapped_item_undo_once(services, transactional_db):
    """The reported case: 2 opinions, one annotator undoes 3 times at once: one 200, two 409,
    the other opinion stands and ``n_opinions`` is 1."""
    outcome = races.undo_twice_over(n=3, k=2)
    assert sorted(outcome.statuses) == [200, 409, 409], outcome
    item = Label.objects.get(annotator__username="ub").item
    assert Item.objects.get(pk=item.pk).n_opinions == 1 and not violations(item.project_id)


@pytest.mark.django_db
def test_only_the_last_labels_can_be_changed(client):
    """One rule (``actions.RECENT_LABELS``): the list beside the item and the server agree."""
    project = digits_project(RECENT_LABELS + 3, params={"delta": 100.0}, look_ahead=100)
    update_project(project.pk)
    user = member(project, "old")
    queued = Item.objects.filter(project=project, status=Item.Status.QUEUED).order_by("seq")
    for item in queued[:RECENT_LABELS + 1]:
        label_chosen(project, item.pk, user, 1)
    oldest, newest = Label.objects.filter(annotator=user).order_by("id")[:: RECENT_LABELS]
    assert changeable_ids(project, user) == {lab.pk for lab in recent_labels(project, user)}
    assert oldest.pk not in changeable_ids(project, user)
    client.force_login(user)
    url = f"/projects/{project.pk}/labels/{{}}/change"
    refused = client.post(url.format(oldest.pk), {"value": "2"})
    assert refused.status_code == 409 and f"last {RECENT_LABELS} labels".encode() in refused.content
    assert Label.objects.get(pk=oldest.pk).undone_at is None
    assert client.post(url.format(newest.pk), {"value": "2"}).status_code == 302
    # a repeat of that change answers as the change did; another value is refused
    assert client.post(url.format(newest.pk), {"value": "2"}).status_code == 302
    assert client.post(url.format(newest.pk), {"value": "3"}).status_code == 409
    assert Label.objects.filter(annotator=user, undone_at__isnull=True).count() == RECENT_LABELS + 1
