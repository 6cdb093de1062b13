"""End to end with a REAL Celery worker process: SQLite file + filesystem broker (default suite)
and PostgreSQL + Redis (marker ``services``). Labels go in through the Django test client; the
worker applies them and decides new items; nothing calls the pipeline directly.
"""

from __future__ import annotations

import pytest
from django.db.models import Count
from django.test import Client

from annotator.labelling.models import CostView, Item, Label, LearnerState, Membership
from annotator.labelling.worker.send import items_changed, labels_changed
from tests.support.app import Worker, digits_project, label_everything, member


@pytest.fixture
def worker(tmp_path):
    w = Worker(tmp_path / "worker.log")
    yield w
    w.stop()


def run_labelling(project, worker, n_annotators: int) -> None:
    clients = []
    for i in range(n_annotators):
        client = Client()
        client.force_login(member(project, f"annotator{i}", Membership.Role.ANNOTATOR))
        clients.append(client)
    items_changed(project.pk)  # what the upload task does after an import
    given = label_everything(project, clients, worker)

    labels = Label.objects.filter(project=project)
    assert given == labels.count() > 0
    assert not Item.objects.filter(project=project, status__in=["pending", "queued", "leased"]).exists()
    state = LearnerState.objects.get(project=project)
    assert state.version == labels.count()  # one new model version per label
    applied = sorted(labels.values_list("applied_version", flat=True))
    assert applied == list(range(1, labels.count() + 1))  # each label applied exactly once
    assert not labels.values("applied_version").annotate(n=Count("id")).filter(n__gt=1).exists()
    assert state.n_decided == Item.objects.filter(project=project).count()
    if n_annotators > 1:
        by = set(labels.values_list("annotator__username", flat=True))
        assert by == {f"annotator{i}" for i in range(n_annotators)}


@pytest.mark.slow
def test_real_worker_on_sqlite_and_filesystem_broker(transactional_db, worker):
    project = digits_project(40, params={"delta": 0.5})
    run_labelling(project, worker, 1)


@pytest.mark.services
@pytest.mark.slow
def test_real_worker_on_postgresql_and_redis(services, transactional_db, worker):
    project = digits_project(300, params={"delta": 1.0})
    run_labelling(project, worker, 2)


@pytest.mark.services
def test_the_worker_keeps_its_database_connection_between_tasks(services, transactional_db, worker):
    """Celery closes Django's connections after every task unless told otherwise; the app keeps
    them (closing only broken or CONN_MAX_AGE-old ones), so the worker's PostgreSQL backend
    outlives the tasks it served instead of one backend per label."""
    from django.db import connection

    from annotator.labelling.annotation.actions import lease_next, submit_label

    project = digits_project(40, params={"delta": 100.0}, look_ahead=4)
    user = member(project, "ann")
    items_changed(project.pk)
    worker.wait_for(lambda: Item.objects.filter(project=project, status="queued").exists(), 60, "decisions")
    with connection.cursor() as cursor:
        cursor.execute("SELECT now()")
        first_task_done = cursor.fetchone()[0]
    for n in range(1, 6):  # five labels: five apply_labels tasks
        item = lease_next(project, user)
        submit_label(project, item.pk, user, item.gold)
        labels_changed(project.pk)  # what the label view asks for after a primary label
        worker.wait_for(lambda n=n: LearnerState.objects.get(project=project).version == n, 60, f"label {n}")
    with connection.cursor() as cursor:
        cursor.execute("SELECT backend_start FROM pg_stat_activity WHERE datname = current_database() "
                       "AND pid <> pg_backend_pid() AND backend_type = 'client backend'")
        others = [row[0] for row in cursor.fetchall()]
    assert others and min(others) < first_task_done, (others, first_task_done)


@pytest.mark.slow
def test_a_real_worker_computes_the_dashboard_cost_view_the_page_asked_for(transactional_db, worker):
    """The dashboard never replays the cost view's baseline: its first poll shows
    "computing…" and asks a worker once; the worker stores the view with its inputs'
    fingerprint and the next poll shows it."""
    project = digits_project(40, params={"delta": 0.5}, look_ahead=100)  # gold on every item
    items_changed(project.pk)
    worker.wait_for(lambda: not Item.objects.filter(project=project, status="pending").exists(), 60,
                    "the items to be decided")
    admin = Client()
    admin.force_login(member(project, "boss", Membership.Role.ADMIN))
    panel = admin.get(f"/projects/{project.pk}/dashboard/panel", HTTP_HX_REQUEST="true").content.decode()
    assert "Computing…" in panel and "On the first" not in panel
    worker.wait_for(lambda: CostView.objects.filter(project=project, computed_at__isnull=False).exists(), 60,
                    "the worker to store the cost view")
    stored = CostView.objects.get(project=project)
    assert stored.fingerprint == stored.requested and stored.view["items"] == 40
    panel = admin.get(f"/projects/{project.pk}/dashboard/panel", HTTP_HX_REQUEST="true").content.decode()
    assert "On the first 40 decided items with a gold class" in panel and "Computing…" not in panel
