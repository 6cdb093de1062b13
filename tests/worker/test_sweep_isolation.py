"""The periodic sweep runs each project's work on its own (docs/operations.md, "A project whose
pipeline fails"): a project whose pipeline raises is logged with its id and shown to its admins,
and every other project's labels, and every later step of the same sweep, still run."""

from __future__ import annotations

import logging
from datetime import timedelta

import pytest
from django.utils import timezone

from annotator.labelling.engine.pipeline import update_project
from annotator.labelling.models import Item, Label, LearnerState, Membership
from annotator.labelling.worker import tasks
from tests.support.app import client_for, digits_project, member

pytestmark = pytest.mark.django_db


def _label_first_queued(project, user) -> Label:
    """A label with its gold class on the project's first queued item (stored, not applied)."""
    item = Item.objects.filter(project=project, status="queued").order_by("seq").first()
    Item.objects.filter(pk=item.pk).update(status="labelled")
    return Label.objects.create(item=item, project=project, annotator=user, value=item.gold)


def test_a_failing_project_stops_neither_another_projects_labels_nor_the_later_steps(caplog):
    broken = digits_project(30, params={"delta": 100.0}, look_ahead=5)  # swept first (lower id)
    fine = digits_project(60, look_ahead=1000, params={"query": "random", "p": 0.3}, retention_days=3)
    for project in (broken, fine):
        update_project(project.pk)
    bad = _label_first_queued(broken, member(broken, "ann"))
    Item.objects.filter(pk=bad.item_id).update(vector=b"\x01")  # a corrupt stored vector: decode raises
    good = _label_first_queued(fine, member(fine, "ann"))
    Item.objects.filter(project=fine).exclude(status="pending").update(
        decided_at=timezone.now() - timedelta(days=4))  # old enough for the retention step

    with caplog.at_level(logging.ERROR):
        tasks.sweep()

    good.refresh_from_db()
    assert good.applied_version is not None  # the other project's label was applied
    assert Item.objects.filter(project=fine, vector=None).exists()  # the later retention step ran
    bad.refresh_from_db()
    assert bad.applied_version is None  # nothing of the failed run was kept
    assert any(f"project {broken.pk}" in r.getMessage() and r.exc_info for r in caplog.records)
    state = LearnerState.objects.get(project=broken)
    assert "stored vector is truncated" in state.pipeline_error and state.pipeline_failed_at is not None
    assert LearnerState.objects.get(project=fine).pipeline_failed_at is None

    # its admins see it on the dashboard; its annotators do not
    admin = client_for(member(broken, "boss", Membership.Role.ADMIN))
    page = admin.get(f"/projects/{broken.pk}/dashboard/panel").content.decode()
    assert 'id="pipeline-failure"' in page and "stored vector is truncated" in page
    page = client_for(member(broken, "ann")).get(f"/projects/{broken.pk}/dashboard/panel").content.decode()
    assert 'id="pipeline-failure"' not in page

    # once the cause is gone, the next sweep applies the label and clears the record
    Item.objects.filter(pk=bad.item_id).update(vector=Item.objects.filter(project=broken, seq=1)
                                               .values_list("vector", flat=True).get())
    tasks.sweep()
    bad.refresh_from_db()
    assert bad.applied_version is not None
    state = LearnerState.objects.get(project=broken)
    assert (state.pipeline_error, state.pipeline_failed_at) == ("", None)
    assert 'id="pipeline-failure"' not in admin.get(f"/projects/{broken.pk}/dashboard/panel").content.decode()
