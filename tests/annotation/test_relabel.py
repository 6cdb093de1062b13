"""An admin's relabel (docs/dataset.md, docs/dataset.md): the label teaches the learner like any
other, is marked as not drawn by the query rule and stays out of the importance-weighted estimate
and the label counts; refused relabels (a class that does not exist, an item of another project,
a pending item, an annotator) get a clear 4xx and change nothing."""

from __future__ import annotations

import pytest
from django.test import Client

from annotator.labelling.annotation.actions import lease_next, submit_label
from annotator.labelling.annotation.invariants import violations
from annotator.labelling.engine import queue_counts, running_totals
from annotator.labelling.engine.pipeline import update_project
from annotator.labelling.models import Consensus, Item, Label, LearnerState, Membership
from annotator.labelling.reporting.metrics import model_metrics
from tests.support.app import digits_project, member, teach
from tests.support.decision_log import covered_accuracy, decision_log

pytestmark = pytest.mark.django_db


def _taught() -> tuple:
    project = digits_project(80, params={"delta": 0.3}, look_ahead=4)
    teach(project, member(project, "ann"), until_auto=10)
    admin = Client()
    admin.force_login(member(project, "boss", Membership.Role.ADMIN))
    return project, admin


def _estimate_figures(project) -> tuple:
    m = model_metrics(project)
    iw = m["accuracy_iw"]
    return iw["value"], iw["n"], iw["seen"], m["items_labelled"], m["labels_applied"], m["accuracy_queried"]


def test_a_relabel_of_a_model_label_teaches_the_learner_and_leaves_the_estimates_alone():
    project, admin = _taught()
    item = Item.objects.filter(project=project, status="auto").order_by("seq").first()
    before = _estimate_figures(project)
    version = LearnerState.objects.get(project=project).version
    new = next(c for c in project.classes if c != item.prediction)
    response = admin.post(f"/projects/{project.pk}/items/{item.pk}/relabel",
                          {"value": str(new), "back": f"/projects/{project.pk}/items/?status=auto"})
    assert response.status_code == 302 and response["Location"].endswith("?status=auto")
    update_project(project.pk)
    label = Label.objects.get(item=item, primary=True)
    assert label.value == new and label.drawn is False and label.applied_version is not None
    assert LearnerState.objects.get(project=project).version >= version + 1  # the learner learnt it
    assert Consensus.objects.get(item=item).method == "relabel"
    assert _estimate_figures(project) == before
    # the same after the aggregates are rebuilt from the log
    stats = running_totals.rebuild(project.pk)
    assert (stats.labels, stats.iw_m) == (before[4], before[1])


def test_a_relabelled_queried_item_leaves_the_estimate_as_a_skipped_one_does():
    project, admin = _taught()
    item = (Item.objects.filter(project=project, status="labelled", seq__lt=running_totals.load(project.pk)
                                .frontier).order_by("seq").first())
    human = Label.objects.get(item=item, primary=True)
    before = model_metrics(project)["accuracy_iw"]
    new = next(c for c in project.classes if c != human.value)
    response = admin.post(f"/projects/{project.pk}/items/{item.pk}/relabel", {"value": str(new)})
    assert response.status_code == 302
    update_project(project.pk)
    after = model_metrics(project)["accuracy_iw"]
    assert (after["n"], after["seen"]) == (before["n"] - 1, before["seen"] - 1)
    # exactly the estimate over the log without that item (the log reads drawn labels only)
    log = decision_log(project)
    assert next(d for d in log if d.seq == item.seq).label is None
    assert after["value"] == pytest.approx(covered_accuracy(log).estimate.value)
    human.refresh_from_db()
    assert human.primary is False and human.undone_at is None  # the annotator's answer is kept


@pytest.mark.parametrize("case", ["no such class", "another project", "pending item", "annotator",
                                  "no value"])
def test_a_refused_relabel_changes_nothing(case):
    project, admin = _taught()
    other = digits_project(3)
    item = Item.objects.filter(project=project, status="auto").first()
    value, expected = "3", 400
    if case == "no such class":
        value = "eleven"
    elif case == "another project":
        item, expected = Item.objects.filter(project=other).first(), 404
    elif case == "pending item":
        item = Item.objects.filter(project=project, status="pending").first()
    elif case == "annotator":
        admin = Client()
        admin.force_login(member(project, "ann"))
        expected = 403
    labels, consensus = Label.objects.count(), Consensus.objects.count()
    data = {} if case == "no value" else {"value": value}
    response = admin.post(f"/projects/{project.pk}/items/{item.pk}/relabel", data)
    assert response.status_code == expected, response.content
    if expected == 400:
        assert response.content.decode().strip()  # says why
    assert (Label.objects.count(), Consensus.objects.count()) == (labels, consensus)


def test_the_waiting_count_from_the_counters_follows_relabels_of_queued_and_labelled_items(monkeypatch):
    """A relabel takes a queued item out of the queue (its label is not drawn, so the label counts
    leave it out): the waiting count read from the counters (queues longer than COUNT_CAP) must
    still equal the waiting rows, before and after the labels are applied, after a relabel of a
    labelled item, and after the aggregates are rebuilt from the log."""
    monkeypatch.setattr(queue_counts, "COUNT_CAP", 2)  # every count below goes through the counters
    project = digits_project(80, params={"delta": 100.0}, look_ahead=30)
    update_project(project.pk)
    admin = Client()
    admin.force_login(member(project, "boss", Membership.Role.ADMIN))
    ann = member(project, "ann")

    def check(what: str) -> None:
        rows = Item.objects.filter(project=project).waiting().count()
        assert rows > queue_counts.COUNT_CAP and queue_counts.waiting_count(project) == rows, what

    item = lease_next(project, ann)
    submit_label(project, item.pk, ann, item.gold)
    update_project(project.pk)
    check("labelled one")
    queued = list(Item.objects.filter(project=project, status="queued").order_by("seq")[:3])
    for it in queued:
        response = admin.post(f"/projects/{project.pk}/items/{it.pk}/relabel", {"value": "1"})
        assert response.status_code == 302
        check(f"relabelled queued item {it.seq}, not applied yet")
    update_project(project.pk)
    check("relabels applied")
    assert running_totals.load(project.pk).undrawn_queried == 3
    response = admin.post(f"/projects/{project.pk}/items/{item.pk}/relabel",
                          {"value": str((item.gold + 1) % 10)})
    assert response.status_code == 302
    check("relabelled a labelled item, not applied yet")
    update_project(project.pk)
    check("that relabel applied")
    assert running_totals.load(project.pk).undrawn_queried == 4
    running_totals.rebuild(project.pk)
    check("aggregates rebuilt")
    auto = Item.objects.filter(project=project, status="auto").first()
    if auto is not None:  # a relabel of an item nobody was asked about takes no place in the queue
        admin.post(f"/projects/{project.pk}/items/{auto.pk}/relabel", {"value": "2"})
        check("relabelled an auto item")
        update_project(project.pk)
        check("that relabel applied")
    assert not violations(project)
