"""Retention: the content of old auto items goes, their decision log stays."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone

from annotator.labelling.annotation.relabel import relabel
from annotator.labelling.engine.pipeline import update_project
from annotator.labelling.models import Consensus, Item, Label, LearnerState, Membership, StreamStats
from annotator.labelling.projects import retention
from annotator.labelling.reporting.metrics import project_metrics
from annotator.labelling.worker import tasks
from tests.support.app import client_for, digits_project, member

pytestmark = pytest.mark.django_db
LOG = ("seq", "status", "prediction", "score", "query_prob", "queried", "model_version", "decided_at", "gold")


def test_the_sweep_drops_old_auto_content_and_keeps_the_log(monkeypatch):
    monkeypatch.setattr(retention, "CHUNK", 7)  # several transactions
    project = digits_project(60, look_ahead=1000, params={"query": "random", "p": 0.3}, retention_days=3)
    kept = digits_project(20, look_ahead=1000, params={"query": "random", "p": 0.3})  # no retention
    update_project(project.pk)
    update_project(kept.pk)
    long_ago = timezone.now() - timedelta(days=4)
    for p in (project, kept):
        Item.objects.filter(project=p, seq__lt=40).update(decided_at=long_ago)
    asked = Item.objects.filter(project=project, seq__lt=40, queried=True).order_by("seq").first()
    Label.objects.create(item=asked, project=project, annotator=member(project, "ann"), value=asked.gold)
    update_project(project.pk)
    log = list(Item.objects.filter(project=project).order_by("seq").values_list(*LOG))
    metrics = project_metrics(project)
    old_auto = set(Item.objects.filter(project=project, seq__lt=40, status="auto")
                   .values_list("seq", flat=True))
    assert 0 < len(old_auto) < 40

    tasks.sweep()  # the periodic task runs the retention sweep

    assert list(Item.objects.filter(project=project).order_by("seq").values_list(*LOG)) == log
    assert project_metrics(project) == metrics
    for seq, text, data, vector in Item.objects.filter(project=project).values_list("seq", "text", "data",
                                                                                      "vector"):
        if seq in old_auto:
            assert (text, data, vector) == ("", None, None)
        else:  # queried (labelled or waiting) or inside the window: everything stays
            assert data is not None and vector is not None
    assert not Item.objects.filter(project=kept, vector=None).exists()
    assert StreamStats.objects.get(project=project).retained_from == 40
    assert retention.drop_old_content(project) == 0  # nothing left to drop: it does not walk again
    # the learner can still be rebuilt from the labels (their items kept their vectors)
    project.params = {"query": "random", "p": 0.5, "delta": 2.0}
    project.save()
    assert update_project(project.pk).reconfigured


def _aged(project) -> None:
    """Every decided item of ``project`` was decided four days ago (outside a 3-day window)."""
    Item.objects.filter(project=project).exclude(status="pending").update(
        decided_at=timezone.now() - timedelta(days=4))


def test_the_sweep_keeps_the_content_of_an_auto_item_an_admin_relabelled():
    """docs/operations.md, "Retention": a relabelled auto item stays ``auto`` but its label is
    replayed by every rebuild, so its vector stays; a rebuild after the sweep still works."""
    project = digits_project(60, look_ahead=1000, params={"query": "random", "p": 0.3}, retention_days=3)
    update_project(project.pk)
    item = Item.objects.filter(project=project, status="auto").order_by("seq").first()
    relabel(project, item.pk, next(c for c in project.classes if c != item.prediction),
            member(project, "boss", Membership.Role.ADMIN))
    update_project(project.pk)
    _aged(project)

    assert retention.drop_old_content(project) > 0  # the other old auto items go

    item.refresh_from_db()
    assert item.status == "auto" and item.vector is not None and item.data is not None
    LearnerState.objects.filter(project=project).update(needs_rebuild=True)  # an undo's rebuild
    assert update_project(project.pk).reconfigured  # replays the relabel on its vector


def test_a_relabel_of_an_item_whose_content_was_dropped_is_refused_and_later_labels_apply():
    project = digits_project(60, look_ahead=1000, params={"query": "random", "p": 0.3}, retention_days=3)
    update_project(project.pk)
    _aged(project)
    tasks.sweep()
    dropped = Item.objects.filter(project=project, status="auto", vector=None).order_by("seq").first()
    assert dropped is not None
    admin = client_for(member(project, "boss", Membership.Role.ADMIN))
    labels, consensus = Label.objects.count(), Consensus.objects.count()

    response = admin.post(f"/projects/{project.pk}/items/{dropped.pk}/relabel", {"value": "3"})

    assert response.status_code == 409, response.content
    assert "retention" in response.content.decode()  # says why
    assert (Label.objects.count(), Consensus.objects.count()) == (labels, consensus)
    # the project's pipeline goes on: an annotator's label is applied
    asked = Item.objects.filter(project=project, status="queued").order_by("seq").first()
    Label.objects.create(item=asked, project=project, annotator=member(project, "ann"), value=asked.gold)
    version = LearnerState.objects.get(project=project).version
    assert update_project(project.pk).applied == 1
    assert LearnerState.objects.get(project=project).version == version + 1


def test_a_label_on_an_item_without_its_vector_is_skipped_not_raised_forever():
    """A database written before the retention sweep kept labelled items: a relabel on an auto
    item whose vector was then dropped. The pipeline marks it applied without teaching it (no new
    model version), counts it on the learner state, and applies the labels after it; a rebuild
    replays the other labels."""
    project = digits_project(60, look_ahead=1000, params={"query": "random", "p": 0.3}, retention_days=3)
    update_project(project.pk)
    item = Item.objects.filter(project=project, status="auto").order_by("seq").first()
    relabel(project, item.pk, item.prediction, member(project, "boss", Membership.Role.ADMIN))
    Item.objects.filter(pk=item.pk).update(vector=None, text="", data=None)  # what the old sweep did
    asked = Item.objects.filter(project=project, status="queued").order_by("seq").first()
    Label.objects.create(item=asked, project=project, annotator=member(project, "ann"), value=asked.gold)
    version = LearnerState.objects.get(project=project).version

    outcome = update_project(project.pk)

    assert outcome.applied == 2 and outcome.version == version + 1  # one taught, one skipped
    skipped = Label.objects.get(item=item, primary=True)
    assert skipped.applied_version == version  # processed, no model version of its own
    state = LearnerState.objects.get(project=project)
    assert state.untaught == 1
    assert not Label.objects.filter(project=project, primary=True, applied_version=None).exists()
    LearnerState.objects.filter(project=project).update(needs_rebuild=True)
    assert update_project(project.pk).reconfigured  # the rebuild's replay skips it too
    assert LearnerState.objects.get(project=project).untaught == 1  # counted once
