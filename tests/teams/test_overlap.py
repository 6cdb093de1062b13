"""Overlap: k distinct annotators for a logged random fraction of the queried
items; nobody gets an item twice; the look-ahead and leases account for it. Through the Django
test client, the pipeline run in-process; the concurrent run on PostgreSQL with a real Celery
worker and 20 annotators in threads is marked ``services``."""

from __future__ import annotations

import threading
import time
from collections import Counter

import pytest
from django.db import connection
from django.test import Client

import learners
from annotator.labelling.engine.pipeline import update_project
from annotator.labelling.engine.queue_counts import fresh_count
from annotator.labelling.models import Consensus, Item, Label, LearnerState, Membership
from annotator.labelling.teams import overlap
from annotator.labelling.worker.send import items_changed
from tests.support.app import Worker, digits_project, leased_item_id, member

HX = {"HTTP_HX_REQUEST": "true"}


def _team(project, n):
    clients = []
    for i in range(n):
        client = Client()
        client.force_login(member(project, f"a{i}"))
        clients.append(client)
    return clients


def _label(client, project, item_id, value):
    return client.post(f"/projects/{project.pk}/items/{item_id}/label", {"value": str(value)}, **HX)


@pytest.mark.django_db
def test_the_console_sets_overlap_and_refuses_a_k_out_of_range(client):
    from annotator.labelling.models import ProjectChange
    from tests.support.html import parse

    project = digits_project(0)
    client.force_login(member(project, "boss", Membership.Role.ADMIN))
    url = f"/projects/{project.pk}/console"
    page = parse(client.get(url).content)
    assert page.find("input", name="overlap_k").attrs["max"] == "5"
    assert page.find("input", name="consensus_method", value="dawid-skene") is not None
    set_ = client.post(url, {"action": "settings", "overlap_fraction": "0.25", "overlap_k": "3",
                             "consensus_method": "dawid-skene"})
    assert set_.status_code == 302
    project.refresh_from_db()
    assert (project.overlap_fraction, project.overlap_k, project.consensus_method) == (0.25, 3, "dawid-skene")
    assert set(ProjectChange.objects.filter(project=project).values_list("field", flat=True)) >= {
        "overlap_fraction", "overlap_k", "consensus_method"}  # in the history
    for bad in ({"overlap_k": "7"}, {"overlap_k": "1"}, {"overlap_fraction": "1.5"},
                {"consensus_method": "vote"}):
        refused = client.post(url, {"action": "settings", **bad})
        assert refused.status_code == 400, bad
        name = next(iter(bad))
        assert parse(refused.content).by_id(f"field-{name}").find(class_="error") is not None
    project.refresh_from_db()
    assert (project.overlap_fraction, project.overlap_k, project.consensus_method) == (0.25, 3, "dawid-skene")


@pytest.mark.django_db
def test_the_draw_is_logged_reproducible_and_off_by_default():
    project = digits_project(0, overlap_fraction=0.3, overlap_k=4)
    draws = [overlap.draw(project, seq) for seq in range(4000)]
    assert {p for _, p in draws} == {0.3}
    assert {k for k, _ in draws} == {1, 4}
    assert abs(sum(k == 4 for k, _ in draws) / 4000 - 0.3) < 0.03
    assert draws == [overlap.draw(project, seq) for seq in range(4000)]
    project.overlap_fraction = 0.0
    assert overlap.draw(project, 5) == (1, None)


@pytest.mark.django_db
def test_overlap_changes_no_decision_of_the_learner():
    plain = digits_project(60, params={"delta": 0.5}, look_ahead=100)
    overlapped = digits_project(60, params={"delta": 0.5}, look_ahead=100, overlap_fraction=0.5, overlap_k=3)
    for p in (plain, overlapped):
        update_project(p.pk)

    def log(p):
        return list(Item.objects.filter(project=p).order_by("seq").values_list("queried", "query_prob"))

    assert log(plain) == log(overlapped)
    queried = Item.objects.filter(project=overlapped, queried=True)
    assert {(i.overlap_k, i.overlap_prob) for i in queried} == {(1, 0.5), (3, 0.5)}
    assert not Item.objects.filter(project=overlapped, queried=False, overlap_prob__isnull=False).exists()
    assert set(Item.objects.filter(project=plain).values_list("overlap_k", "overlap_prob")) == {(1, None)}


@pytest.mark.django_db
def test_an_overlapped_item_stays_queued_until_k_distinct_annotators_labelled_it():
    project = digits_project(12, params={"delta": 100.0}, overlap_fraction=1.0, overlap_k=3, look_ahead=2)
    update_project(project.pk)
    a, b, c = _team(project, 3)
    first = leased_item_id(a.get(f"/projects/{project.pk}/"))
    nxt = leased_item_id(_label(a, project, first, 1))
    assert nxt != first  # never the same item twice
    item = Item.objects.get(pk=first)
    assert (item.status, item.n_opinions, item.lease_owner_id) == ("queued", 1, None)
    assert not Label.objects.get(item=item).primary  # no opinion is primary before the consensus
    assert leased_item_id(b.get(f"/projects/{project.pk}/")) == first  # the oldest, for the others
    _label(b, project, first, 1)
    assert Item.objects.get(pk=first).status == "queued"
    assert leased_item_id(c.get(f"/projects/{project.pk}/")) == first
    assert _label(c, project, first, 2).status_code == 200
    item = Item.objects.get(pk=first)
    assert (item.status, item.n_opinions) == ("labelled", 3)
    assert Consensus.objects.get(item=item).due
    from annotator.labelling.worker.tasks import projects_needing_work

    Item.objects.filter(project=project, status="pending").update(status="auto")  # nothing else to do
    assert project.pk in projects_needing_work()  # the sweep settles it if the task was lost
    # a late extra submission by someone who already gave an opinion is refused
    assert _label(a, project, first, 1).status_code == 409
    update_project(project.pk)
    row = Consensus.objects.get(item=item)
    assert (row.value, row.status, row.method, row.due) == (1, "majority", "majority", False)
    primary = Label.objects.get(item=item, primary=True)
    assert primary.annotator.username == "a0" and primary.applied_version is not None


@pytest.mark.django_db
def test_the_look_ahead_keeps_deciding_for_an_annotator_whose_items_wait_for_others():
    project = digits_project(30, params={"delta": 100.0}, overlap_fraction=1.0, overlap_k=3, look_ahead=3)
    update_project(project.pk)
    (a,) = _team(project, 1)
    seen = []
    for _ in range(8):
        item = leased_item_id(a.get(f"/projects/{project.pk}/"))
        assert item is not None  # the lone annotator is never left without work
        seen.append(item)
        _label(a, project, item, 0)
        update_project(project.pk)  # the worker the label request asked for
        assert fresh_count(project) == 3  # the look-ahead counts the items nobody labelled yet
    assert len(set(seen)) == 8
    waiting = Item.objects.filter(project=project).waiting()
    assert set(waiting.filter(n_opinions=1).values_list("pk", flat=True)) == set(seen)  # for the others
    assert not Label.objects.filter(project=project, primary=True).exists()


@pytest.mark.django_db
def test_undoing_an_opinion_withdraws_the_consensus_and_the_learner_forgets_it():
    project = digits_project(10, params={"delta": 100.0}, overlap_fraction=1.0, overlap_k=2, look_ahead=2)
    update_project(project.pk)
    a, b = _team(project, 2)
    item = leased_item_id(a.get(f"/projects/{project.pk}/"))
    _label(a, project, item, 4)
    assert leased_item_id(b.get(f"/projects/{project.pk}/")) == item
    _label(b, project, item, 4)
    update_project(project.pk)
    state = LearnerState.objects.get(project=project)
    assert state.version == 1 and Consensus.objects.get(item_id=item).status == "agreed"
    assert leased_item_id(b.post(f"/projects/{project.pk}/undo", **HX)) == item
    assert not Consensus.objects.filter(item_id=item).exists()
    assert not Label.objects.filter(item_id=item, primary=True).exists()
    assert Item.objects.get(pk=item).n_opinions == 1
    update_project(project.pk)
    state = LearnerState.objects.get(project=project)
    assert state.version == 2  # a new model version
    assert learners.from_bytes(bytes(state.blob)).n_labels == 0  # rebuilt without the label
    _label(b, project, item, 5)  # a disagreement now: no majority of 2
    update_project(project.pk)
    assert Consensus.objects.get(item_id=item).status == "disputed"
    assert not Label.objects.filter(item_id=item, primary=True).exists()


@pytest.mark.django_db
def test_changing_an_opinion_aggregates_the_item_again():
    project = digits_project(10, params={"delta": 100.0}, overlap_fraction=1.0, overlap_k=2, look_ahead=2)
    update_project(project.pk)
    a, b = _team(project, 2)
    item = leased_item_id(a.get(f"/projects/{project.pk}/"))
    _label(a, project, item, 4)
    leased_item_id(b.get(f"/projects/{project.pk}/"))
    _label(b, project, item, 4)
    update_project(project.pk)
    assert LearnerState.objects.get(project=project).version == 1
    mine = Label.objects.get(item_id=item, annotator__username="a0")
    response = a.post(f"/projects/{project.pk}/labels/{mine.pk}/change", {"value": "7"}, **HX)
    assert response.status_code == 200
    assert Item.objects.get(pk=item).n_opinions == 2 and Consensus.objects.get(item_id=item).due
    update_project(project.pk)
    row = Consensus.objects.get(item_id=item)
    assert (row.value, row.status) == (None, "disputed")  # 7 against 4: no majority of two
    state = LearnerState.objects.get(project=project)
    assert state.version == 2 and learners.from_bytes(bytes(state.blob)).n_labels == 0


@pytest.mark.django_db
def test_the_waiting_count_from_the_counters_still_equals_the_rows_with_overlap(monkeypatch):
    """The running counters (queue_counts.awaiting_label) through overlapped items: opinions that leave
    an item in the queue, a complete item waiting for its consensus, a disputed one, a settled
    one, an adjudicated one and an undone opinion."""
    from annotator.labelling.annotation.actions import lease_next, submit_label, undo_last_label
    from annotator.labelling.engine import queue_counts
    from annotator.labelling.teams import consensus

    monkeypatch.setattr(queue_counts, "COUNT_CAP", 2)  # every count below goes through the counters
    project = digits_project(80, params={"delta": 100.0}, overlap_fraction=0.5, overlap_k=2, look_ahead=30)
    update_project(project.pk)
    a, b = member(project, "a"), member(project, "b")

    def check(what):
        rows = Item.objects.filter(project=project).waiting().count()
        assert rows > queue_counts.COUNT_CAP and queue_counts.waiting_count(project) == rows, what
        fresh = Item.objects.filter(project=project, n_opinions=0).waiting().count()
        assert queue_counts.fresh_count(project) == fresh, what

    check("decided")
    for user, values in ((a, [1, 2, 3, 4, 5, 6]), (b, [1, 9, 3, 8, 5, 6])):
        for value in values:
            item = lease_next(project, user)
            submit_label(project, item.pk, user, value)
            check(f"{user.username} said {value}")
    update_project(project.pk)
    check("consensuses settled")
    assert Consensus.objects.filter(project=project).exists()
    disputed = consensus.disagreements(project).first()
    if disputed is not None:
        consensus.resolve(disputed.item, 0, by=a)
        check("adjudicated")
    undo_last_label(project, b)
    check("an opinion undone")
    update_project(project.pk)
    check("rebuilt")


@pytest.mark.services
@pytest.mark.slow
def test_twenty_annotators_at_once_k3_nobody_twice_nothing_lost(services, transactional_db, tmp_path):
    """20 annotators in threads, each its own client session, label through the queue's htmx
    requests while a real Celery worker (PostgreSQL + Redis) applies labels and decides items."""
    project = digits_project(60, params={"delta": 100.0}, overlap_fraction=1.0, overlap_k=3,
                             lease_seconds=600)
    users = [member(project, f"t{i}", Membership.Role.ANNOTATOR) for i in range(20)]
    worker = Worker(tmp_path / "worker.log")
    try:
        items_changed(project.pk)
        worker.wait_for(lambda: Item.objects.filter(project=project, status="queued").exists(), 60,
                        "the first decisions")
        given: list[tuple[str, int]] = []
        errors: list[str] = []
        barrier = threading.Barrier(len(users))

        def annotate(user) -> None:
            client = Client()
            client.force_login(user)
            try:
                barrier.wait()
                deadline = time.monotonic() + 240
                item = leased_item_id(client.get(f"/projects/{project.pk}/", **HX))
                idle = 0
                while time.monotonic() < deadline:
                    if item is None:
                        if not Item.objects.filter(project=project,
                                                   status__in=["pending", "queued", "leased"]).exists():
                            return
                        idle += 1
                        time.sleep(0.05)
                        item = leased_item_id(client.get(f"/projects/{project.pk}/", **HX))
                        continue
                    gold = Item.objects.get(pk=item).gold
                    response = client.post(f"/projects/{project.pk}/items/{item}/label",
                                           {"value": str(gold)}, **HX)
                    if response.status_code != 200:
                        errors.append(f"{user.username} item {item}: {response.status_code}")
                        return
                    given.append((user.username, item))
                    item = leased_item_id(response)
                errors.append(f"{user.username} ran out of time")
            except Exception as exc:  # reported by the assertion below
                errors.append(f"{user.username}: {exc!r}")
            finally:
                connection.close()

        threads = [threading.Thread(target=annotate, args=(u,)) for u in users]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert not errors, errors
        worker.wait_for(lambda: not Consensus.objects.filter(project=project, due=True).exists()
                        and not Label.objects.filter(project=project, primary=True,
                                                     applied_version__isnull=True).exists(), 60,
                        "the consensuses")
    finally:
        worker.stop()
    assert len(given) == len(set(given))  # nobody labelled an item twice
    labels = Label.objects.filter(project=project)
    stored = sorted(labels.values_list("annotator__username", "item_id"))
    assert stored == sorted(given)  # nothing lost, nothing invented
    queried = Item.objects.filter(project=project, queried=True)
    assert queried.count() == 60 and not Item.objects.filter(project=project, status__in=[
        "pending", "queued", "leased"]).exists()
    per_item = Counter(item for _, item in given)
    assert set(per_item.values()) == {3} and set(per_item) == set(queried.values_list("pk", flat=True))
    assert len({u for u, _ in given}) > 3  # the work was shared
    assert Consensus.objects.filter(project=project, status="agreed").count() == 60
    state = LearnerState.objects.get(project=project)
    assert state.version == labels.filter(primary=True).count() == 60
