"""Retention: the content of old auto items goes, their decision log stays."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone

from annotator.labelling.engine.pipeline import update_project
from annotator.labelling.models import Item, Label, StreamStats
from annotator.labelling.projects import retention
from annotator.labelling.reporting.metrics import project_metrics
from annotator.labelling.worker import tasks
from tests.support.app import digits_project, member

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
