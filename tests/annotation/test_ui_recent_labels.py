"""My last labels beside the queue's item, through the Django test client: listed newest first
(at most 10), each changeable; a change corrects the learner exactly as an undo does (a rebuild
from the remaining labels, a new model version) and then learns the new class; refusals store
nothing."""

from __future__ import annotations

import re
from datetime import timedelta

import numpy as np
import pytest
from django.utils import timezone

import learners
from annotator.labelling.annotation.actions import RECENT_LABELS, lease_next, submit_label
from annotator.labelling.engine.pipeline import update_project
from annotator.labelling.engine.stored_vectors import decode
from annotator.labelling.models import Honeypot, Item, Label, LearnerState, StreamStats
from tests.support.app import digits_project, leased_item_id, member, queued_digits_project
from tests.support.html import parse

pytestmark = pytest.mark.django_db
HX = {"HTTP_HX_REQUEST": "true"}


@pytest.fixture
def project():
    return queued_digits_project()


def _label(client, project, values):
    """Label the next items with ``values`` through the queue; their item ids in order."""
    ids = []
    item = leased_item_id(client.get(f"/projects/{project.pk}/"))
    for value in values:
        if item is None:  # the look-ahead ran out: the worker decides more items
            update_project(project.pk)
            item = leased_item_id(client.get(f"/projects/{project.pk}/"))
        ids.append(item)
        response = client.post(f"/projects/{project.pk}/items/{item}/label", {"value": value}, **HX)
        assert response.status_code == 200
        item = leased_item_id(response)
    return ids


def _change(client, project, label_pk, value, **headers):
    return client.post(f"/projects/{project.pk}/labels/{label_pk}/change", {"value": value}, **headers)


def _rows(html):
    """``(form action, selected class)`` of each row of the list beside the item, top to bottom."""
    aside = parse(html).by_id("recent-labels")
    return [(form.attrs["action"], next(o.attrs["value"] for o in form.find_all("option", has="selected")))
            for form in aside.find_all("form")]


def _weights(state):
    return learners.from_bytes(bytes(state.blob)).get_state()["arrays"]["W"]


def test_the_list_shows_my_last_ten_labels_newest_first_and_is_swapped_out_of_band(client, project):
    client.force_login(member(project, "ann"))
    values = [str(k % 10) for k in range(12)]
    ids = _label(client, project, values)
    update_project(project.pk)
    page = client.get(f"/projects/{project.pk}/")
    rows = _rows(page.content)
    assert len(rows) == RECENT_LABELS == 10
    mine = {lab.item_id: lab.pk for lab in Label.objects.filter(item_id__in=ids)}
    want = [(f"/projects/{project.pk}/labels/{mine[i]}/change", v) for i, v in zip(ids, values, strict=True)]
    assert rows == want[::-1][:10]
    # each select has a label a screen reader reads, naming the item
    aside = parse(page.content).by_id("recent-labels")
    for select in aside.find_all("select"):
        assert aside.find("label", **{"for": select.attrs["id"]}).text.startswith("Label of item ")
    # an htmx answer carries the list out of band, so it stays current after each key press
    item = leased_item_id(page)
    response = client.post(f"/projects/{project.pk}/items/{item}/label", {"value": "4"}, **HX)
    aside = parse(response.content).by_id("recent-labels")
    assert aside.attrs.get("hx-swap-oob") == "true"
    assert _rows(response.content)[0][1] == "4"


def test_changing_an_applied_label_corrects_the_learner_as_an_undo_then_learns_the_new_class(client, project):
    client.force_login(member(project, "ann"))
    ids = _label(client, project, ["1", "2", "3"])
    update_project(project.pk)  # the worker applies the three labels
    assert LearnerState.objects.get(project=project).version == 3
    first = Label.objects.get(item_id=ids[0])
    response = client.post(f"/projects/{project.pk}/labels/{first.pk}/change", {"value": "7"}, **HX)
    assert response.status_code == 200
    seq = Item.objects.get(pk=ids[0]).seq
    assert parse(response.content).find(class_="notice").text == f"Item {seq} is now labelled “7”."
    # the panel still shows my current lease
    assert leased_item_id(response) == Item.objects.get(project=project, status="leased").pk
    first.refresh_from_db()
    assert first.undone_at is not None and not first.primary  # retracted as an undo retracts
    new = Label.objects.get(item_id=ids[0], primary=True)
    assert new.value == 7 and new.undone_at is None and new.seconds == first.seconds
    assert Item.objects.get(pk=ids[0]).status == Item.Status.LABELLED
    assert LearnerState.objects.get(project=project).needs_rebuild
    assert StreamStats.objects.get(project=project).labels == 2  # the old label is uncounted
    update_project(project.pk)
    state = LearnerState.objects.get(project=project)
    # a rebuild without the old label (version 4), then the new label learnt (version 5)
    assert not state.needs_rebuild and state.version == 5
    assert Label.objects.get(pk=new.pk).applied_version == 5
    want = project.new_learner(learners.from_bytes(bytes(state.blob)).n_features)
    for pk, value in ((ids[1], 2), (ids[2], 3), (ids[0], 7)):  # the remaining ones, then the change
        want.learn(decode(Item.objects.get(pk=pk).vector, want.n_features), value)
    np.testing.assert_array_equal(_weights(state), want.get_state()["arrays"]["W"])
    assert StreamStats.objects.get(project=project).labels == 3
    # the list now shows the new class for that item
    rows = _rows(client.get(f"/projects/{project.pk}/").content)
    assert (f"/projects/{project.pk}/labels/{new.pk}/change", "7") in rows


def test_changing_a_label_not_applied_yet_needs_no_rebuild(client, project):
    client.force_login(member(project, "ann"))
    ids = _label(client, project, ["1", "2"])
    second = Label.objects.get(item_id=ids[1])
    assert client.post(f"/projects/{project.pk}/labels/{second.pk}/change", {"value": "5"}).status_code == 302
    assert not LearnerState.objects.get(project=project).needs_rebuild
    update_project(project.pk)
    state = LearnerState.objects.get(project=project)
    assert state.version == 2
    primary = Label.objects.filter(project=project, primary=True)
    assert sorted(primary.values_list("value", flat=True)) == [1, 5]


def test_same_class_changes_nothing(client, project):
    client.force_login(member(project, "ann"))
    ids = _label(client, project, ["1"])
    label = Label.objects.get(item_id=ids[0])
    assert _change(client, project, label.pk, "1", **HX).status_code == 200
    assert list(Label.objects.filter(item_id=ids[0]).values_list("pk", "undone_at")) == [(label.pk, None)]


def test_refusals_store_nothing(client, project):
    ann = member(project, "ann")
    client.force_login(ann)
    ids = _label(client, project, ["1", "2"])
    mine = Label.objects.get(item_id=ids[0])
    before = list(Label.objects.order_by("pk").values_list("pk", "value", "primary", "undone_at"))
    # not a class: 400 in the panel
    response = client.post(f"/projects/{project.pk}/labels/{mine.pk}/change", {"value": "eleven"}, **HX)
    assert response.status_code == 400 and "not one of the classes" in parse(response.content).find(
        class_="error").text
    # someone else's label: 404
    other = member(project, "bob")
    theirs = submit_label(project, lease_next(project, other).pk, other, 3)
    assert client.post(f"/projects/{project.pk}/labels/{theirs.pk}/change", {"value": "4"}).status_code == 404
    # a label of another project: 404 (and a project I am not in: 403/404)
    elsewhere = digits_project(12, name="elsewhere")
    assert _change(client, elsewhere, mine.pk, "4").status_code in (403, 404)
    # an undone label cannot be changed
    client.post(f"/projects/{project.pk}/undo", **HX)
    undone = Label.objects.get(item_id=ids[1])
    # an undone label: changed or undone already (a repeat of a change that happened answers as it did)
    assert client.post(f"/projects/{project.pk}/labels/{undone.pk}/change", {"value": "4"}).status_code == 409
    # GET is not allowed
    assert client.get(f"/projects/{project.pk}/labels/{mine.pk}/change").status_code == 405
    after = list(Label.objects.filter(pk__in=[p for p, *_ in before]).order_by("pk")
                 .values_list("pk", "value", "primary", "undone_at"))
    assert [r[:3] for r in after if r[0] != undone.pk] == [r[:3] for r in before if r[0] != undone.pk]


def test_changing_an_extra_opinion_keeps_it_an_opinion_and_leaves_the_learner(client, project):
    client.force_login(member(project, "ann"))
    ann, bob = member(project, "ann"), member(project, "bob")
    first = lease_next(project, ann)  # ann's lease expires, bob takes the item and labels it
    Item.objects.filter(pk=first.pk).update(lease_expires=timezone.now() - timedelta(seconds=1))
    assert lease_next(project, bob).pk == first.pk
    submit_label(project, first.pk, bob, 1)  # bob's label is the item's
    update_project(project.pk)
    opinion = submit_label(project, first.pk, ann, 2)  # ann's late label: an extra opinion
    assert not opinion.primary
    version = LearnerState.objects.get(project=project).version
    assert _change(client, project, opinion.pk, "6", **HX).status_code == 200
    new = Label.objects.get(item=first, annotator__username="ann", undone_at__isnull=True)
    assert new.value == 6 and not new.primary
    state = LearnerState.objects.get(project=project)
    assert not state.needs_rebuild and state.version == version
    assert Label.objects.get(item=first, primary=True).value == 1


def _masked_rows(html, rows):
    """Each ``(label, item)`` row of the list in ``html`` (newest first) as its HTML with the
    row's own content masked (label id, item number and file name, thumbnail, selected class):
    what is left is how the row renders, which must not depend on what the label was."""
    block = html.decode().split('<ol class="recent-list">')[1].split("</ol>")[0]
    out = []
    for li, (label, item) in zip((part.split("</li>")[0] for part in block.split("<li>")[1:]), rows,
                                 strict=True):
        li = li.replace(f"/labels/{label.pk}/", "/labels/L/").replace(f"recent-{label.pk}", "recent-L")
        li = li.replace(f"item {item.seq}", "item N").replace(f"#{item.seq}<", "#N<")
        li = li.replace(item.filename, "NAME").replace(" selected", "")
        out.append(re.sub(r'src="[^"]*"', 'src="S"', li))
    return out


def test_a_honeypot_answer_is_listed_exactly_as_a_real_label(client, project):
    """The rows of a honeypot's answer and of a real label differ in nothing but their content
    (docs/teams.md, "Honeypots": no channel tells a honeypot apart), though one is primary and the
    other is not."""
    ann = member(project, "ann")
    client.force_login(ann)
    real = _label(client, project, ["3"])[0]
    # an item the model decided alone, served to ann as a honeypot (the draw is random: placed here)
    gold = Item.objects.filter(project=project, status="pending").order_by("seq").first()
    Item.objects.filter(pk=gold.pk).update(status=Item.Status.AUTO)
    Honeypot.objects.create(project=project, item=gold, annotator=ann)
    assert client.post(f"/projects/{project.pk}/items/{gold.pk}/label", {"value": "5"}).status_code == 302
    answer, label = Label.objects.get(item=gold), Label.objects.get(item_id=real)
    assert (answer.primary, label.primary) == (False, True)
    page = client.get(f"/projects/{project.pk}/").content
    hp_row, real_row = _masked_rows(page, [(answer, gold), (label, Item.objects.get(pk=real))])
    assert hp_row == real_row
    assert "opinion" not in hp_row
