"""What one key press costs the server, and the queue's look-ahead: SQL statements per label
request and per pipeline run stay the same as a project grows; annotators left waiting make
the queue grow at once; the stream engine loads only the items it needs; leases skip rows
another transaction holds (PostgreSQL).

Statement counts are deterministic (no timing): the figures in benchmarks/RELIABILITY.md come
from ``benchmarks/load.py``.
"""

from __future__ import annotations

import threading

import pytest
from django.db import connection, transaction
from django.test import Client
from django.test.utils import CaptureQueriesContext

from annotator.labelling.annotation.actions import lease_next
from annotator.labelling.engine import bulk_writes as row_writer
from annotator.labelling.engine import queue_counts, stream
from annotator.labelling.engine.bulk_writes import save_fields
from annotator.labelling.engine.pipeline import update_project
from annotator.labelling.models import Item, Label, LearnerState, Membership
from annotator.labelling.reporting.simulation import simulate
from tests.support.app import digits_project, leased_item_id, member

HX = {"HTTP_HX_REQUEST": "true"}


def label_once(client: Client, project, page) -> tuple[int, object]:
    """POST the gold label of the item on ``page``; (statements it took, the answer)."""
    item = Item.objects.get(pk=leased_item_id(page))
    with CaptureQueriesContext(connection) as queries:
        answer = client.post(f"/projects/{project.pk}/items/{item.pk}/label", {"value": item.gold}, **HX)
    assert answer.status_code == 200 and leased_item_id(answer) is not None
    return len(queries.captured_queries), answer


def statement_costs(items: int, labelled: int, presses: int = 10) -> tuple[list[int], list[int]]:
    """A project of ``items`` digits with ``labelled`` labels applied already (the in-app oracle);
    then ``presses`` label requests by an annotator, each followed by the pipeline run it asks
    for. Returns the SQL statements of each request and of each run."""
    project = digits_project(items, params={"delta": 100.0})  # nearly everything is queried
    if labelled:
        simulate(project, max_labels=labelled)
    else:
        update_project(project.pk)
    client = Client()
    client.force_login(member(project, "ann"))
    page = client.get(f"/projects/{project.pk}/")
    requests, runs = [], []
    for _ in range(presses):
        n, page = label_once(client, project, page)
        requests.append(n)
        with CaptureQueriesContext(connection) as queries:
            outcome = update_project(project.pk)
        assert outcome is not None and outcome.applied == 1
        runs.append(len(queries.captured_queries))
    assert Label.objects.filter(project=project).count() == labelled + presses
    return requests, runs


@pytest.mark.django_db
def test_a_label_request_and_its_pipeline_run_cost_the_same_statements_as_the_project_grows():
    """Nothing scans the items or the labels: a new project and one ten times larger with 150
    labels applied cost the same statements per key press and per pipeline run, press by press
    (the first run of a session differs from the next ones, the same way in both)."""
    small_requests, small_runs = statement_costs(30, 0)
    large_requests, large_runs = statement_costs(300, 150)
    assert len(set(small_requests + large_requests)) == 1, (small_requests, large_requests)
    assert small_runs == large_runs, (small_runs, large_runs)
    assert len(set(small_runs[1:])) == 1, small_runs  # steady from the second run on


@pytest.mark.django_db
def test_annotators_left_waiting_make_the_queue_grow_at_once():
    project = digits_project(100, params={"delta": 100.0})
    update_project(project.pk)
    assert queue_counts.waiting_count(project) == 4  # nobody active yet: the minimum look-ahead
    users = [member(project, f"a{i}") for i in range(7)]
    leases = [lease_next(project, u) for u in users]
    assert sum(lease is not None for lease in leases) == 4
    waited = Membership.objects.filter(project=project, last_waited__isnull=False)
    assert sorted(waited.values_list("user__username", flat=True)) == ["a4", "a5", "a6"]
    assert queue_counts.active_annotators(project) == 7
    update_project(project.pk)  # one run, as the advance_stream their requests sent
    assert queue_counts.waiting_count(project) == 2 * 7
    assert all(lease_next(project, u) is not None for u in users[4:])


@pytest.mark.django_db
def test_a_waiting_annotator_stops_counting_after_the_window():
    from datetime import timedelta

    from django.utils import timezone

    project = digits_project(10, params={"delta": 100.0})
    user = member(project, "late")
    Membership.objects.filter(user=user).update(
        last_waited=timezone.now() - timedelta(seconds=queue_counts.WAITED_SECONDS + 1))
    assert queue_counts.active_annotators(project) == 0
    Membership.objects.filter(user=user).update(last_waited=timezone.now())
    assert queue_counts.active_annotators(project) == 1


def test_batch_size_divides_the_free_places_by_the_query_ratio():
    state = LearnerState(n_decided=99, n_queried=9)  # ratio (9 + 1) / (99 + 1) = 0.1
    assert stream.batch_size(state, 1) == 10
    assert stream.batch_size(state, 3) == 30
    assert stream.batch_size(state, 1000) == stream.BATCH
    assert stream.batch_size(LearnerState(n_decided=0, n_queried=0), 1) == 1  # starts at one
    assert stream.batch_size(LearnerState(n_decided=50, n_queried=50), 0) == 1


@pytest.mark.django_db
def test_a_low_query_ratio_still_fills_the_look_ahead():
    project = digits_project(600, params={"delta": 0.05}, look_ahead=6)
    simulate(project, max_labels=60)  # a trained model queries few items
    before = LearnerState.objects.get(project=project)
    Item.objects.filter(project=project, status__in=["queued", "leased"]).update(status="auto")
    update_project(project.pk)
    state = LearnerState.objects.get(project=project)
    decided, queried = state.n_decided - before.n_decided, state.n_queried - before.n_queried
    assert queried == 6 and decided > 2 * queried  # auto items on the way: several batches
    assert queue_counts.waiting_count(project) == 6


@pytest.mark.django_db
@pytest.mark.parametrize("rows", [1, 4, 5, 30])
def test_save_fields_writes_the_given_fields_only(rows, monkeypatch):
    """One set-wise statement per chunk of rows (4 here), whatever the number of rows in it."""
    monkeypatch.setattr(row_writer, "CHUNK", 4)
    project = digits_project(rows)
    items = list(Item.objects.filter(project=project).order_by("seq"))
    for k, item in enumerate(items):
        item.score, item.query_prob, item.text = float(k), 0.5, "not saved"
    with CaptureQueriesContext(connection) as queries:
        save_fields(items, ["score", "query_prob"])
    assert len(queries.captured_queries) == -(-rows // 4)
    stored = list(Item.objects.filter(project=project).order_by("seq")
                  .values_list("score", "query_prob", "text"))
    assert stored == [(float(k), 0.5, "") for k in range(rows)]
    save_fields([], ["score"])  # nothing to write: no statement


@pytest.mark.services
def test_a_lease_skips_the_row_another_transaction_is_taking(services, transactional_db):
    """PostgreSQL: while one annotator's lease transaction holds the head of the queue, a second
    annotator gets the next item at once instead of waiting for the first to commit."""
    project = digits_project(40, params={"delta": 100.0}, look_ahead=10)
    update_project(project.pk)
    first, second = member(project, "first"), member(project, "second")
    held, release = threading.Event(), threading.Event()
    taken: dict[str, int] = {}

    def hold_the_head() -> None:
        try:
            with transaction.atomic():
                taken["first"] = lease_next(project, first).pk
                held.set()
                release.wait(30)
        finally:
            connection.close()

    holder = threading.Thread(target=hold_the_head)
    holder.start()
    try:
        assert held.wait(30)
        with connection.cursor() as cursor:  # fail instead of waiting should a lock be awaited
            cursor.execute("SET lock_timeout = '2s'")
        taken["second"] = lease_next(project, second).pk
    finally:
        release.set()
        holder.join(30)
    head = Item.objects.filter(project=project, status="leased").order_by("seq")
    assert taken["first"] == head[0].pk and taken["second"] == head[1].pk


@pytest.mark.services
def test_the_lease_query_reads_the_queue_index_not_the_whole_stream(services, transactional_db):
    """PostgreSQL: the lease query finds its rows through the partial index that
    holds the queue only, so items that changed status earlier leave nothing for it to wade
    through (no dead entries of a (project, status) index)."""
    project = digits_project(600, params={"delta": 100.0}, look_ahead=10)
    update_project(project.pk)
    Item.objects.filter(project=project, status="pending", seq__lt=400).update(
        status="auto", queried=False, prediction=0, query_prob=0.5, model_version=0)
    with connection.cursor() as cursor:
        cursor.execute("ANALYZE labelling_item")
    user = member(project, "ann")
    with CaptureQueriesContext(connection) as queries:
        assert lease_next(project, user) is not None
    lease = next(q["sql"] for q in queries.captured_queries if "SKIP LOCKED" in q["sql"])
    with connection.cursor() as cursor:
        cursor.execute("EXPLAIN " + lease)
        plan = "\n".join(row[0] for row in cursor.fetchall())
    assert "item_queue" in plan, plan
