"""Suspected label errors in the app: ranking, one click to the review queue, the automatic
threshold on the sweep, a reviewer's decision as the final label, and bad input
(annotator/labelling/teams/suspects.py, docs/estimates.md)."""

from __future__ import annotations

import pytest
from django.test import Client

from annotator.labelling.annotation.actions import submit_label, undo_last_label, undoable_label
from annotator.labelling.engine.pipeline import update_project
from annotator.labelling.ingest import Record, import_records
from annotator.labelling.models import Consensus, Item, Label, Membership, Review
from annotator.labelling.teams.reviews import decide
from annotator.labelling.teams.suspects import ranked_suspects
from annotator.labelling.worker import tasks
from harness.chosen_labels import label_chosen
from tests.support.app import SPAM, member, text_project
from tests.support.html import parse

pytestmark = pytest.mark.django_db
HAMS = ["see you at the station", "call me when you get home", "are we still on for lunch"]


def labelled_project(n=90, wrong_every=15, **fields):
    """A ham/spam project whose every item is queried and labelled by one annotator, with gold;
    the annotator gets every ``wrong_every``-th item wrong. Returns (project, wrong item ids)."""
    project = text_project(params={"delta": 0.5, "query": "all"}, **fields)
    texts = [f"{SPAM[i % 3 * 2]} {i}" if i % 3 == 0 else f"{HAMS[i % 3]} {i}" for i in range(n)]
    golds = ["spam" if i % 3 == 0 else "ham" for i in range(n)]
    pairs = enumerate(zip(texts, golds, strict=True))
    import_records(project, [Record(f"line {i}", t, g) for i, (t, g) in pairs])
    user = member(project, "ann")
    wrong = set()
    while True:
        update_project(project.pk)
        queued = list(Item.objects.filter(project=project, status=Item.Status.QUEUED)
                      .values_list("pk", "seq", "gold"))
        if not queued:
            return project, wrong
        for pk, seq, gold in queued:
            if seq % wrong_every == wrong_every - 1 and seq > 30:  # once the model knows the classes
                wrong.add(pk)
                gold = "ham" if gold == "spam" else "spam"
            label_chosen(project, pk, user, gold)


def test_the_wrong_labels_rank_first_and_go_to_the_review_queue_with_one_click(client):
    project, wrong = labelled_project()
    ranked = ranked_suspects(project)
    assert len(ranked) == 90 and all(0 <= r["suspicion"] <= 1 for r in ranked)
    top = {r["item_id"] for r in ranked[:len(wrong)]}
    assert len(top & wrong) >= len(wrong) - 1, (top, wrong)
    client.force_login(member(project, "boss", Membership.Role.ADMIN))
    page = parse(client.get(f"/projects/{project.pk}/suspects").content)
    first = page.find_all(class_="suspect")[0]
    item = int(first.attrs["data-item"])
    assert item == ranked[0]["item_id"]
    response = client.post(f"/projects/{project.pk}/suspects/send", {"item": str(item)})
    assert response.status_code == 302
    review = Review.objects.get(project=project, reason=Review.Reason.SUSPECT)
    assert review.item_id == item
    assert "in review" in parse(client.get(f"/projects/{project.pk}/suspects").content).find_all(
        class_="suspect")[0].text
    # the reviewer's decision is the item's final label
    gold = Item.objects.get(pk=item).gold
    decide(project, review.pk, member(project, "rev", Membership.Role.REVIEWER), gold)
    assert Label.objects.get(item_id=item, primary=True).value == gold


def test_bad_sends_are_refused_and_change_nothing(client):
    project, _ = labelled_project(40, wrong_every=100)
    other, _ = labelled_project(10, wrong_every=100)
    client.force_login(member(project, "boss", Membership.Role.ADMIN))
    url = f"/projects/{project.pk}/suspects/send"
    theirs = Item.objects.filter(project=other).values_list("pk", flat=True).first()
    mine = Item.objects.filter(project=project).values_list("pk", flat=True).first()
    for form, needle in (({}, "at least one"), ({"item": "x"}, "whole number"),
                         ({"item": [str(mine), str(theirs)]}, f"no item {theirs}")):
        response = client.post(url, form)
        assert response.status_code == 400 and needle in response.content.decode()
    assert not Review.objects.exists()
    client.force_login(member(project, "ann2"))
    assert client.get(f"/projects/{project.pk}/suspects").status_code == 403
    assert client.post(url, {"item": str(mine)}).status_code == 403


def test_the_sweep_sends_the_labels_above_the_threshold():
    project, wrong = labelled_project(suspect_threshold=0.6)
    expected = {r["item_id"] for r in ranked_suspects(project) if r["suspicion"] >= 0.6}
    assert expected & wrong  # the wrong labels are among those above it
    tasks.sweep()
    sent = set(Review.objects.filter(project=project, reason=Review.Reason.SUSPECT)
               .values_list("item_id", flat=True))
    assert sent == expected
    tasks.sweep()  # once per item
    assert Review.objects.filter(project=project, reason=Review.Reason.SUSPECT).count() == len(sent)


@pytest.mark.slow
def test_with_overlap_the_careless_annotators_labels_are_the_suspect_ones():
    """Every queried item labelled by 3 of 4 annotators, one of them answering at random: their
    Dawid-Skene confusion matrices are used, and the careless one's labels rank as more suspect."""
    import numpy as np

    from annotator.labelling.annotation.actions import lease_next
    from annotator.labelling.projects.creation import create_project

    project = create_project(name="overlap suspects", task="binary", item_kind="vectors",
                             classes=[0, 1],
                             algorithm="paa-i", params={"delta": 100.0, "C": 0.1}, rng_seed=1,
                             featurizer_config={"kind": "vectors", "n_features": 8},
                             overlap_fraction=1.0, overlap_k=3, look_ahead=6)
    rng = np.random.default_rng(1)
    golds = rng.integers(2, size=80)
    import_records(project, [Record(f"item {i}", [[j, float(v)] for j, v in enumerate(
        rng.normal(0.0, 1.0, 8) + (0.8 if y else -0.8))], int(y)) for i, y in enumerate(golds)])
    users = [member(project, f"sim{i}") for i in range(4)]  # sim3 answers at random
    update_project(project.pk)
    while True:
        given = 0
        for index in rng.permutation(4):
            item = lease_next(project, users[index])
            if item is not None:
                right = rng.random() < (0.95 if index < 3 else 0.5)
                submit_label(project, item.pk, users[index], item.gold if right else 1 - item.gold)
                given += 1
        update_project(project.pk)
        waiting = Item.objects.filter(project=project, status__in=["pending", "queued", "leased"])
        if not given and not waiting.exists():
            break
    ranked = ranked_suspects(project)
    assert ranked and all(r["confusion"] for r in ranked)
    gold = dict(Item.objects.filter(project=project).values_list("pk", "gold"))
    careless = [r["suspicion"] for r in ranked
                if r["annotator"] == "sim3" and r["value"] != gold[r["item_id"]]]
    right = [r["suspicion"] for r in ranked if r["value"] == gold[r["item_id"]]]
    assert careless and np.mean(careless) > np.mean(right)
    assert np.mean([r["suspicion"] for r in ranked if r["annotator"] == "sim3"]) > np.mean(
        [r["suspicion"] for r in ranked if r["annotator"] != "sim3"])


def test_only_an_item_the_list_could_rank_can_be_sent(client):
    """The list's own rule (:func:`.reviews.suspect_opinions`): a standing label on a queried item.
    An item not labelled yet (pending), one whose label was undone: 400 naming it, nothing queued,
    even beside an item that could be sent."""
    project, _ = labelled_project(40, wrong_every=100)
    ann = member(project, "ann")
    import_records(project, [Record("late", "a message the stream has not reached")])
    pending = Item.objects.get(project=project, text="a message the stream has not reached")
    undone = undo_last_label(project, ann)
    sendable = Label.objects.filter(undone_at__isnull=True).values_list("item_id", flat=True)[0]
    client.force_login(member(project, "boss", Membership.Role.ADMIN))
    url = f"/projects/{project.pk}/suspects/send"
    for item in (pending, undone):
        for form in ({"item": str(item.pk)}, {"item": [str(sendable), str(item.pk)]}):
            response = client.post(url, form)
            assert response.status_code == 400, response.content
            assert f"item #{item.seq} has no label to review" in response.content.decode()
    assert not Review.objects.exists()
    assert client.post(url, {"item": str(sendable)}).status_code == 302
    assert Review.objects.get().item_id == sendable


def _sent_then_undone(client):
    """A project whose annotator's last label was sent to review, then undone: (project, the item,
    the review, the reviewer's client)."""
    project, _ = labelled_project(40, wrong_every=100)
    ann = member(project, "ann")
    item = undoable_label(project, ann).item
    client.force_login(member(project, "boss", Membership.Role.ADMIN))
    assert client.post(f"/projects/{project.pk}/suspects/send", {"item": str(item.pk)}).status_code == 302
    review = Review.objects.get(item=item, reason=Review.Reason.SUSPECT)
    reviewer = Client()
    reviewer.force_login(member(project, "rev", Membership.Role.REVIEWER))
    return project, item, review, reviewer


def test_deciding_a_suspect_review_whose_label_was_undone_is_a_409_that_decides_nothing(client):
    project, item, review, reviewer = _sent_then_undone(client)
    assert reviewer.get(f"/projects/{project.pk}/review/").status_code == 200  # leased to the reviewer
    assert Review.objects.get(pk=review.pk).lease_owner is not None
    undo_last_label(project, member(project, "ann"))  # the label sent is taken back meanwhile
    labels = list(Label.objects.filter(item=item).values_list("pk", "undone_at", "primary"))
    consensus = list(Consensus.objects.filter(item=item).values_list("status", "value"))
    response = reviewer.post(f"/projects/{project.pk}/reviews/{review.pk}/decide", {"value": "spam"})
    assert response.status_code == 409
    assert "review was withdrawn and nothing was decided" in response.content.decode()
    assert not Review.objects.filter(pk=review.pk).exists()
    assert list(Label.objects.filter(item=item).values_list("pk", "undone_at", "primary")) == labels
    assert list(Consensus.objects.filter(item=item).values_list("status", "value")) == consensus
    assert not Label.objects.filter(kind=Label.Kind.ADJUDICATION).exists()
    assert reviewer.get(f"/projects/{project.pk}/review/").status_code == 200  # the queue goes on


def test_a_suspect_review_whose_label_was_undone_leaves_the_queue_and_can_be_sent_again(client):
    project, item, review, reviewer = _sent_then_undone(client)
    ann = member(project, "ann")
    undo_last_label(project, ann)
    page = reviewer.get(f"/projects/{project.pk}/review/")
    assert page.status_code == 200 and not Review.objects.filter(pk=review.pk).exists()
    submit_label(project, item.pk, ann, "spam")  # labelled again: a suspect again
    assert client.post(f"/projects/{project.pk}/suspects/send", {"item": str(item.pk)}).status_code == 302
    again = Review.objects.get(item=item, reason=Review.Reason.SUSPECT)
    decided = reviewer.post(f"/projects/{project.pk}/reviews/{again.pk}/decide", {"value": "ham"})
    assert decided.status_code == 302 and Review.objects.get(pk=again.pk).value == "ham"
