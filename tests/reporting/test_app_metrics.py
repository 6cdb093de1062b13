"""Metrics from a hand-made decision log: exact and importance-weighted."""

from __future__ import annotations

import math
from datetime import timedelta

import pytest
from django.test import Client
from django.utils import timezone

from annotator.labelling.models import Item, Label, LabelsGiven, Membership, Project
from annotator.labelling.reporting.dashboard import curves
from annotator.labelling.reporting.metrics import project_metrics
from tests.support.app import member, text_project
from tests.support.decision_log import covered_accuracy, decision_log
from tests.support.html import parse

pytestmark = pytest.mark.django_db

# seq: (prediction, q, queried, gold, label or None, status)
LOG = [
    ("spam", 1.0, True, "spam", "spam", "labelled"),
    ("ham", 0.5, True, "spam", "spam", "labelled"),
    ("ham", 0.2, False, "ham", None, "auto"),
    ("spam", 0.25, True, "spam", "spam", "labelled"),
    ("ham", 0.1, False, "spam", None, "auto"),
    ("spam", 0.8, True, None, None, "queued"),  # waiting for a label: ends the IW prefix
    ("ham", 0.3, False, "ham", None, "auto"),
]


def hand_made_project() -> Project:
    """A project whose decided items are :data:`LOG` (plus one pending item)."""
    project = text_project([f"t{i}" for i in range(len(LOG) + 1)])  # last item stays pending
    user = member(project, "ann")
    items = list(Item.objects.filter(project=project).order_by("seq"))
    for item, (pred, q, queried, gold, label, status) in zip(items, LOG, strict=False):
        item.prediction, item.query_prob, item.queried = pred, q, queried
        item.gold, item.status, item.model_version = gold, status, 0
        item.save()
        if label is not None:
            Label.objects.create(item=item, project=project, annotator=user, value=label, seconds=3.0,
                                 applied_version=1)
            LabelsGiven.add(project.pk)  # as the app's actions count each label they store
    return project


def test_metrics_on_a_hand_made_log():
    m = project_metrics(hand_made_project())
    assert (m["items"], m["pending"], m["waiting"], m["seen"], m["queried"]) == (8, 1, 1, 7, 4)
    assert m["query_ratio"] == pytest.approx(4 / 7)
    assert (m["items_labelled"], m["labels_applied"], m["seconds_per_label"]) == (3, 3, 3.0)
    assert m["labels"] == m["items_labelled"]  # the earlier name, kept for API clients
    assert (m["labels_given"], m["label_cost"]) == (3, None)  # no price per label
    # exact: 6 decided items have gold; right at seq 0, 2, 3, 6
    assert m["accuracy_gold"] == {"value": pytest.approx(4 / 6), "n": 6}
    # plain accuracy on labelled queried items: seq 0 right, 1 wrong, 3 right
    assert m["accuracy_queried"] == {"value": pytest.approx(2 / 3), "n": 3}
    # IW over the prefix seq 0..4 (n = 5): correct queried items 0 (q=1) and 3 (q=0.25)
    iw = m["accuracy_iw"]
    value = (1 / 1.0 + 1 / 0.25) / 5
    half = 1.959963984540054 * math.sqrt((1 * 0 / 1.0 + 1 * 0.75 / 0.0625) / 25)
    assert iw["value"] == pytest.approx(value) and iw["n"] == 3 and iw["seen"] == 5
    assert iw["low"] == pytest.approx(max(0, value - half))
    assert iw["high"] == pytest.approx(min(1, value + half))


def test_the_dashboard_curve_and_the_metrics_use_one_prefix_rule():
    """The IW curve has a point wherever the estimate covers the checkpoint (seq 0..4 here),
    and its last point is the metrics' estimate."""
    project = hand_made_project()
    iw = project_metrics(project)["accuracy_iw"]
    points = curves(project)["iw"]
    assert [t for t, _ in points] == [1, 2, 3, 4, 5]
    assert points[-1][1] == pytest.approx(iw["value"])
    log = decision_log(project)
    assert [d.seq for d in log] == list(range(7))
    assert covered_accuracy(log).stop == 5 and covered_accuracy(log[:5]).stop == 5


def test_metrics_of_an_empty_project():
    m = project_metrics(text_project())
    assert m["seen"] == 0 and m["query_ratio"] is None
    assert m["accuracy_iw"]["value"] is None and m["accuracy_gold"]["value"] is None


def test_the_api_the_project_list_and_the_dashboard_count_the_same_waiting_items():
    """One definition of "waiting" (leasable now): queued, or leased with an expired lease."""
    project = text_project([f"t{i}" for i in range(6)])
    admin = member(project, "boss", Membership.Role.ADMIN)
    other = member(project, "ann")
    now = timezone.now()
    states = [("leased", other, now + timedelta(minutes=5)),  # live lease: not waiting
              ("leased", other, now - timedelta(seconds=1)),  # expired lease: waiting
              ("queued", None, None), ("queued", None, None),  # waiting
              ("labelled", None, None), ("auto", None, None)]
    for item, (status, owner, expires) in zip(Item.objects.filter(project=project).order_by("seq"), states,
                                              strict=True):
        item.status, item.lease_owner, item.lease_expires = status, owner, expires
        item.prediction, item.query_prob, item.queried, item.model_version = "ham", 0.5, status != "auto", 0
        item.save()
    client = Client()
    client.force_login(admin)
    api = client.get(f"/api/projects/{project.pk}/metrics").json()["waiting"]
    row = next(li for li in parse(client.get("/").content).find_all("li")
               if any(a.text == project.name for a in li.find_all("a")))
    listed = row.find("b", class_="waiting").text
    board = parse(client.get(f"/projects/{project.pk}/dashboard/panel").content).by_id("m-waiting").text
    assert api == int(listed) == int(board) == 3
